"""Operands a kernel trusts, checked before a loaded graph calls it.

Some kernels take their operands' values or memory on trust; a file chooses them (a
constant of its own, or arithmetic in front of the kernel), so the loader puts a check
before each such node (``guard``), made by each load and never saved (``saving.py``):

* ``as_strided(x, size, stride, offset)`` (and ``as_strided_copy``) takes its offset into
  ``x``'s storage, not into ``x``: on a tensor the caller sliced from a larger one
  (``batch[i]``, ``buf[4:8]``) it views, and through ``add_`` writes, the caller's memory
  around it, which the caller never gave.  The view's elements must lie within the
  tensor's own (its lowest to its highest element, no gaps between its elements there);
  ``as_strided_scatter`` writes such a view of a copy of ``x``'s whole storage (the
  caller's buffer around it): its view is held to the same rule;
* ``ctc_loss`` reads ``log_probs`` at each target's class without a bounds check: a
  target of ``10**9`` crashes the process, one of ``-5`` reads memory before it.  Each
  target a length makes it read must be a class of ``log_probs``;
* ``embedding_bag`` (and ``_embedding_bag``) reads ``indices`` between consecutive
  ``offsets`` and checks only the first and the last: ``[0, -10**9]`` crashes the process,
  ``[0, -5]`` reads memory before ``indices`` (with ``include_last_offset``, silently).
  The offsets must be non-decreasing, within ``[0, len(indices)]``;
* ``_weight_norm(v, g, dim)`` with ``dim`` 0 or ``v``'s last (its fused kernel) reads
  ``g`` and writes its norms (a tensor of ``g``'s shape) at ``v.size(dim)`` elements
  unchecked: a ``g`` of one element for a ``[300, 4]`` ``v`` corrupted the heap
  (``malloc_consolidate(): invalid chunk size``, session 34).  ``g`` must hold
  ``v.size(dim)`` elements there;
* ``grid_sampler`` (2d, 3d) given an ``interpolation_mode`` or ``padding_mode`` other than
  0, 1 or 2 writes no output and returns its fresh allocation: whatever the heap held
  (``1e+18``, ``4.6e-41``: session 34).  The modes must be 0, 1 or 2;
* the loss kernels' ``reduction`` (0 none, 1 mean, 2 sum) and the FFT kernels'
  ``normalization`` (``_fft_r2c``, ``_fft_c2c``, ``_fft_c2r``: 0 none, 1 by the root of
  n, 2 by n) are ints the kernels trust: another value ran, each kernel falling to one
  of its cases of its own (``soft_margin_loss`` at 3 returned a number no reduction
  gives; ``_fft_c2c`` at ``2**40`` did not normalize, at 3 divided by n), a result
  no torch function computes (session 35).  They must be 0, 1 or 2;
* the upsample kernels given both an output size and a scale (the ``.default``
  overloads: ``upsample_nearest2d(x, [9, 11], 1e-30, 1e-30)``) map each output index to
  ``index / scale`` in the input and cast that to an int64 before clamping it to the
  input: a tiny scale overflows the cast, and on a uint8 tensor the read lands ~2**63
  bytes away (the process crashed, session 34; float tensors read element 0 by
  accident).  Each positive scale must keep ``output size / scale`` below ``2**52``.
  The anti-aliased kernels (``_upsample_bilinear2d_aa``, ``_upsample_bicubic2d_aa``) also
  size their window by ``1 / scale``: a scale of ``1e-7`` for a ``5 x 7`` uint8 image
  made the kernel allocate 3-6 GiB (float32: minutes of work); their ``output size /
  scale`` must stay within ``4 * (input size + output size)`` (an exported
  ``F.interpolate(..., antialias=True)`` records ``.vec``, whose scales make the sizes);
* the splits into pieces (``unbind``, ``split``, ``chunk``, ``tensor_split``, ``hsplit``,
  ``vsplit``, ``dsplit`` and their copies) make one tensor per piece, and how many is a
  size or a count of the file: ``chunk(x, 2**30)`` of a zero-size dim, or ``unbind`` of
  a zero-byte ``[2**25, 0]`` tensor, made 2**25-2**30 tensors (minutes, then a
  MemoryError; session 38).  The count of pieces must be within ``max_repeat`` (the
  budget of a list's length in a graph call), checked from the operand's size before
  the kernel runs (where it is not a number at load);

Checked in a subprocess and found checked by torch itself (session 25, torch 2.11):
indices, targets, pivots and sorters out of range in embedding, embedding_renorm_,
index_select, index/index_put (hacked_twin too), index_add/copy/fill/reduce, gather,
scatter (src, value, reduce, add, scatter_reduce), take, put(_), take_along_dim (wraps),
nll_loss (1d, 2d, nd, forward, weights), cross_entropy_loss (label smoothing),
multi_margin_loss, multilabel_margin_loss, one_hot, bincount, searchsorted and bucketize
(sorter, unsorted, NaN), max_unpool2d/3d, lu_unpack, lu_solve, linalg_lu_solve,
linalg_ldl_solve, repeat_interleave (output_size, negative repeats), ctc_loss's lengths,
narrow.Tensor, split_with_sizes (unsafe, copy), tensor_split, fractional_max_pool2d/3d
(samples outside [0, 1) are clamped), grid_sampler 2d/3d and the upsample kernels (NaN,
infinite, huge coordinates and scales of float tensors), col2im/im2col, unfold, pads.

A check that fails raises a ``RuntimeAssertionError`` naming the node before it runs.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from safetrace.errors import RuntimeAssertionError
from safetrace.errors.load import operand_refused, over_budget, view_outside
from safetrace.trace.current import active_tracer
from safetrace.trace.graph import run_time_check

aten = torch.ops.aten
# op -> (check kind, its argument names in schema order)
GUARDED: dict = {
    aten.as_strided.default: ("view", ("self", "size", "stride", "storage_offset")),
    aten.as_strided_copy.default: ("view", ("self", "size", "stride", "storage_offset")),
    aten.as_strided_scatter.default: ("scatter", ("self", "size", "stride",
                                                   "storage_offset")),
    aten.embedding_bag.default: ("bags", ("indices", "offsets")),
    aten.embedding_bag.padding_idx: ("bags", ("indices", "offsets")),
    aten._embedding_bag.default: ("bags", ("indices", "offsets")),
    aten.ctc_loss.IntList: ("ctc", ("log_probs", "targets", "input_lengths",
                                    "target_lengths")),
    aten.ctc_loss.Tensor: ("ctc", ("log_probs", "targets", "input_lengths",
                                   "target_lengths")),
}
_SCALES = {1: ("scales",), 2: ("scales_h", "scales_w"), 3: ("scales_d", "scales_h", "scales_w")}
for _op, _dims in (("upsample_nearest1d", 1), ("upsample_nearest2d", 2),
                   ("upsample_nearest3d", 3), ("_upsample_nearest_exact1d", 1),
                   ("_upsample_nearest_exact2d", 2), ("_upsample_nearest_exact3d", 3),
                   ("upsample_linear1d", 1), ("upsample_bilinear2d", 2),
                   ("upsample_bicubic2d", 2), ("_upsample_bilinear2d_aa", 2),
                   ("_upsample_bicubic2d_aa", 2), ("upsample_trilinear3d", 3)):
    GUARDED[getattr(aten, _op).default] = ("scales", ("output_size", *_SCALES[_dims]))
for _op in ("_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa"):  # (window: 1 / scale)
    GUARDED[getattr(aten, _op).default] = ("window", ("self", "output_size", *_SCALES[2]))
GUARDED[aten._weight_norm.default] = ("norms", ("v", "g", "dim"))
for _op in (aten.grid_sampler.default, aten.grid_sampler_2d.default,
            aten.grid_sampler_3d.default):
    GUARDED[_op] = ("modes", ("interpolation_mode", "padding_mode"))
# (the int arguments whose valid values are 0, 1 and 2: the loss kernels' reduction,
# at::Reduction, and the FFT kernels' normalization, fft_norm_mode)
for _op in ("binary_cross_entropy", "binary_cross_entropy_with_logits",
            "cosine_embedding_loss", "cross_entropy_loss", "hinge_embedding_loss",
            "huber_loss", "kl_div", "l1_loss", "margin_ranking_loss", "mse_loss",
            "multi_margin_loss", "multilabel_margin_loss", "multilabel_margin_loss_forward",
            "nll_loss", "nll_loss2d", "nll_loss2d_forward", "nll_loss_forward", "nll_loss_nd",
            "poisson_nll_loss", "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss"):
    GUARDED[getattr(aten, _op).default] = ("enum", ("reduction",))
for _op in (aten.ctc_loss.IntList, aten.ctc_loss.Tensor):  # (and its targets: ``ctc``)
    GUARDED[_op] = ("ctc", ("log_probs", "targets", "input_lengths", "target_lengths",
                            "reduction"))
for _op in ("_fft_r2c", "_fft_c2c", "_fft_c2r"):
    GUARDED[getattr(aten, _op).default] = ("enum", ("normalization",))
for _op in (aten.unbind.int, aten.unbind_copy.int):
    GUARDED[_op] = ("pieces", ("self", "dim"))
for _op in (aten.split.Tensor, aten.unsafe_split.Tensor, aten.split_copy.Tensor):
    GUARDED[_op] = ("pieces", ("self", "split_size", "dim"))
for _op in (aten.chunk.default, aten.unsafe_chunk.default):
    GUARDED[_op] = ("pieces", ("self", "chunks", "dim"))
for _op in (aten.tensor_split.sections, aten.tensor_split.tensor_indices_or_sections,
            aten.hsplit.int, aten.vsplit.int, aten.dsplit.int):
    GUARDED[_op] = ("pieces", ("self", *[a.name for a in _op._schema.arguments][1:2]))
ENUMS = (0, 1, 2)
SCALE_REACH = 2 ** 52  # (an int64 cast of an index up to it is exact and in range)
WINDOW_REACH = 4  # (a scale of output / input gives output / scale = input)


def _span(offset: int, size: Any, stride: Any) -> tuple[int, int] | None:
    """The lowest and highest storage element a view reaches (None: no element)."""
    lo = hi = offset
    for n, st in zip(size, stride):
        if n == 0:
            return None
        lo += min(0, (n - 1) * st)
        hi += max(0, (n - 1) * st)
    return lo, hi


def _view(node: str, x: Any, size: Any, stride: Any, offset: Any = None,
          target: str = "aten.as_strided") -> None:
    if not isinstance(x, torch.Tensor):
        return
    try:
        size, stride = [int(n) for n in size], [int(s) for s in stride]
        view = _span(x.storage_offset() if offset is None else int(offset), size, stride)
    except (TypeError, ValueError):
        return  # arguments the kernel itself refuses: its own error, when it runs
    if view is None:
        return
    own = _span(x.storage_offset(), x.shape, x.stride())
    gaps = own is not None and own[1] - own[0] + 1 > x.numel()
    if own is None or gaps or view[0] < own[0] or view[1] > own[1]:
        raise view_outside(node, target, view,
                           own[:2] + (gaps,) if own is not None else (0, -1, False))


def _ctc(node: str, log_probs: Any, targets: Any, input_lengths: Any,
         target_lengths: Any, reduction: Any = None) -> None:
    _enum(node, "aten.ctc_loss", "reduction", reduction)
    if not isinstance(log_probs, torch.Tensor) or not isinstance(targets, torch.Tensor) or \
            log_probs.dim() not in (2, 3) or targets.is_floating_point():
        return  # (the kernel's own checks refuse these)
    classes = log_probs.shape[-1]
    lengths = [int(n) for n in (target_lengths.reshape(-1).tolist() if isinstance(
        target_lengths, torch.Tensor) else target_lengths)]
    if targets.dim() == 2:  # padded: row i's first lengths[i] entries
        used = [targets[i, :max(0, min(n, targets.shape[1]))]
                for i, n in enumerate(lengths[:targets.shape[0]])]
    else:  # concatenated: the lengths' sum of entries
        used = [targets.reshape(-1)[:max(0, sum(lengths))]]
    for t in used:
        if t.numel() and (int(t.min()) < 0 or int(t.max()) >= classes):
            raise operand_refused(node, "aten.ctc_loss", f"a target class outside [0, "
                                  f"{classes}) (log_probs has {classes} classes; its kernel "
                                  "reads them unchecked)")


def _bags(node: str, indices: Any, offsets: Any) -> None:
    if not isinstance(indices, torch.Tensor) or not isinstance(offsets, torch.Tensor) or \
            offsets.dim() != 1 or offsets.is_floating_point() or offsets.is_complex() or \
            not offsets.numel():
        return  # (the kernel's own checks refuse these)
    n = indices.numel()  # (2-d indices with offsets given: read flat, [0, -10**9] crashed)
    if bool((offsets < 0).any()) or bool((offsets > n).any()) or \
            bool((offsets[1:] < offsets[:-1]).any()):
        shown = offsets[:8].tolist()
        raise operand_refused(node, "aten.embedding_bag", f"offsets {shown}"
                              f"{'...' if offsets.numel() > 8 else ''} that are not "
                              f"non-decreasing within [0, {n}] (indices has {n} elements; its "
                              "kernel reads between them unchecked)")


def _norms(node: str, v: Any, g: Any, dim: Any = 0) -> None:
    dim = 0 if dim is None else dim  # (the schema's default)
    if not isinstance(v, torch.Tensor) or not isinstance(g, torch.Tensor) or \
            not isinstance(dim, int) or isinstance(dim, bool) or v.dim() == 0:
        return  # (the kernel's own checks refuse these)
    if dim in (0, v.dim() - 1) and g.numel() != v.shape[dim]:
        raise operand_refused(node, "aten._weight_norm", f"g of shape {list(g.shape)} for v of "
                              f"shape {list(v.shape)} at dim {dim} (its fused kernel reads g "
                              f"and writes its norms at {v.shape[dim]} elements unchecked)")


def _norms_fit(v: Any, g: Any, dim: Any) -> bool:
    """Whether ``_weight_norm``'s operands' evaluated shapes (the load's, ``meta["val"]``)
    are static and fit at every call (a weight-normed layer's parameters)."""
    shapes = [getattr(getattr(a, "meta", {}).get("val"), "shape", None) for a in (v, g)]
    if any(sh is None or not all(type(n) is int for n in sh) for sh in shapes):
        return False
    try:
        _norms("", torch.empty(shapes[0], device="meta"), torch.empty(shapes[1], device="meta"),
               dim)
    except RuntimeAssertionError:
        return False
    return True


def _scales_fit(output_size: Any, *scales: Any) -> bool:
    if all(s is None for s in scales):
        return True  # (no scale: the kernel divides the sizes, i / o)
    if not isinstance(output_size, (list, tuple)) or \
            any(type(n) is not int for n in output_size) or \
            any(s is not None and type(s) not in (int, float) for s in scales):
        return False
    try:
        _scales("", output_size, *scales)
    except RuntimeAssertionError:
        return False
    return True


def _scales(node: str, output_size: Any, *scales: Any) -> None:
    try:
        sizes = [int(n) for n in output_size]
    except (TypeError, ValueError):
        return  # (the kernel's own checks refuse these)
    for n, s in zip(sizes, scales):
        if s is None or isinstance(s, bool) or not isinstance(s, (int, float)):
            continue
        s = float(s)
        if s > 0 and n > 0 and not n / s < SCALE_REACH:  # (the kernels ignore s <= 0, NaN)
            raise operand_refused(node, "aten.upsample_*", f"a scale of {s!r} for an output "
                                  f"size of {n} (its kernel casts index / scale, up to "
                                  f"{n / s:.3g}, to an int64 unchecked: keep it below 2**52)")


def _modes(node: str, interpolation: Any, padding: Any) -> None:
    for what, mode in (("interpolation_mode", interpolation), ("padding_mode", padding)):
        if type(mode) is not int or mode not in (0, 1, 2):
            raise operand_refused(node, "aten.grid_sampler", f"{what}={mode!r}, not 0, 1 or 2 "
                                  "(its kernel writes no output for another and returns the "
                                  "memory it was given: uninitialized)")


def _enum(node: str, target: str, what: str, value: Any) -> None:
    if value is not None and (type(value) is not int or value not in ENUMS):
        raise operand_refused(node, target, f"{what}={value!r}, not 0, 1 or 2 (its kernel "
                              "takes another value as one of its own cases: a result no "
                              "torch function computes)")


def _window(node: str, x: Any, output_size: Any, *scales: Any) -> None:
    _scales(node, output_size, *scales)
    try:
        sizes = [int(n) for n in output_size]
    except (TypeError, ValueError):
        return  # (the kernel's own checks refuse these)
    if not isinstance(x, torch.Tensor) or x.dim() < len(scales):
        return
    for i, n, s in zip(x.shape[x.dim() - len(scales):], sizes, scales):
        if type(s) in (int, float) and s > 0 and n > 0 and n / s > WINDOW_REACH * (i + n):
            raise operand_refused(node, "aten._upsample_*_aa", f"a scale of {s!r} for an "
                                  f"output size of {n} from {i} (its anti-aliasing window "
                                  f"spans 1 / scale input elements, {1 / s:.3g}: its kernel "
                                  "allocates and reads that much for each output element; "
                                  f"keep output size / scale within {WINDOW_REACH} * (input "
                                  "size + output size))")


def pieces(op: str, shape: Any, arg: Any, dim: Any = None) -> int | None:
    """How many tensors the split ``op`` (``unbind``, ``split``, ...: its name) of a tensor
    of ``shape`` makes (None: not known here; the kernel refuses what is not defined)."""
    if op in ("tensor_split", "hsplit", "vsplit", "dsplit"):
        if isinstance(arg, torch.Tensor):  # (tensor_indices_or_sections: a count or indices)
            return None if arg.dim() > 1 else int(arg) if arg.dim() == 0 else arg.numel() + 1
        return arg if type(arg) is int else None
    if not shape or type(arg if op != "unbind" else 0) is not int:
        return None
    d = (0 if arg is None else arg) if op == "unbind" else 0 if dim is None else dim
    if type(d) is not int or not -len(shape) <= d < len(shape) or type(shape[d]) is not int:
        return None
    n = shape[d]
    if op == "unbind":
        return n
    if arg <= 0:
        return None
    if op == "chunk":
        if n == 0:
            return arg  # (each piece of size 0)
        arg = -(-n // arg)  # (chunk splits into pieces of ceil(n / chunks))
    return max(1, -(-n // arg))


def _pieces(node: str, limit: int, op: str, x: Any, arg: Any = None, dim: Any = None) -> None:
    if not isinstance(x, torch.Tensor):
        return
    count = pieces(op, list(x.shape), arg, dim)
    if count is not None and count > limit:
        raise operand_refused(node, f"aten.{op}", _too_many(count, list(x.shape), limit))


def _too_many(count: int, shape: list, limit: int) -> str:
    return (f"a tensor of shape {shape} split into {count} pieces, one tensor each, "
            f"{limit} allowed (the budget max_repeat: st.load(path, budgets="
            f"{{'max_repeat': {count}}}) if you trust the file)")


def _pieces_fit(node: str, limit: int, op: str, x: Any, arg: Any = None,
                dim: Any = None) -> bool:
    """Whether the split's count of pieces is known at load, from its operand's evaluated
    shape (``meta["val"]``) and constant arguments, and within ``limit`` (over it: the
    file is refused, a ``LoadError``)."""
    shape = getattr(getattr(x, "meta", {}).get("val"), "shape", None)
    if shape is None or not all(type(n) is int for n in shape) or \
            isinstance(arg, torch.fx.Node) or isinstance(dim, torch.fx.Node):
        return False
    count = pieces(op, list(shape), arg, dim)
    if count is not None and count > limit:
        raise over_budget(f"node {node!r} (aten.{op})", _too_many(count, list(shape), limit),
                          "max_repeat", count)
    return count is not None


_KINDS = {"view": _view, "pieces": _pieces, "ctc": _ctc, "bags": _bags, "scales": _scales,
          "norms": _norms, "window": _window, "modes": _modes, "enum": _enum,
          "scatter": functools.partial(_view, target="aten.as_strided_scatter")}


@run_time_check
def check(kind: str, node: str, *args: Any) -> None:
    """Run time: refuse the call of ``node`` if its operands are ones its kernel trusts."""
    fn = _KINDS.get(kind)
    if fn is None or active_tracer() is not None:
        return  # (a loaded program's module traced by st.export: its operands have no values)
    if any(isinstance(a, torch.Tensor) and a.is_meta for a in args):
        return
    fn(node, *args)


def guard(graph: torch.fx.Graph, max_repeat: int) -> None:
    """Insert ``check`` before each node of ``graph`` that ``GUARDED`` names (the checks
    a file holds are dropped first: the loader's own replace them); ``max_repeat``: the
    most pieces a split may make."""
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is check and not node.users:
            graph.erase_node(node)
    for node in list(graph.nodes):
        entry = GUARDED.get(node.target) if node.op == "call_function" else None
        if entry is None:
            continue
        kind, names = entry
        given = {**dict(zip([a.name for a in node.target._schema.arguments], node.args)),
                 **node.kwargs}
        if kind == "enum":  # (the op's name and the argument's: the message names them)
            value = given.get(names[0])
            if value is None or type(value) is int and value in ENUMS:
                continue  # (the schema's default, or a constant the kernel knows)
            args: tuple = (f"aten.{node.target._schema.name.split('::')[-1]}", names[0], value)
        elif kind == "pieces":  # (the op's name, the budget: the message names them)
            args = (max_repeat, node.target._schema.name.split("::")[-1].removesuffix(
                "_copy").removeprefix("unsafe_"), *(given.get(n) for n in names))
            if _pieces_fit(node.name, *args):
                continue  # (a count known at load and within the budget)
        else:
            args = tuple(given.get(n) for n in names)
        if kind == "modes" and all(type(given.get(n)) is int and given.get(n) in (0, 1, 2)
                                   for n in names):
            continue  # (constant modes the kernel knows: never needed)
        if kind == "window" and all(given.get(n) is None for n in names[2:]):
            continue  # (no scale: the kernel divides the sizes, i / o)
        if kind == "scales" and _scales_fit(*(given.get(n) for n in names)):
            continue  # (no scale, or constant sizes and scales that fit: never needed)
        if kind == "norms" and _norms_fit(given.get("v"), given.get("g"), given.get("dim")):
            continue  # (static shapes that fit: every call's, the check is never needed)
        with graph.inserting_before(node):
            guard_node = graph.call_function(check, (kind, node.name, *args))
        guard_node.meta["val"] = None
        guard_node.meta["stack_trace"] = node.meta.get("stack_trace", "")


__all__ = ["GUARDED", "check", "guard"]
