"""Memory layout while tracing: which traced tensors are known to be contiguous.

The graph's values never depend on strides, but Python code can branch on them
(``if x.is_contiguous()``, ``x.stride(0)``).  Each proxy carries ``st_contig``: True when
the tensor is known to have exactly row-major strides with storage offset 0; ``LOOSE`` when
it is only known contiguous to ``is_contiguous()`` (dims of size 0 or 1 may carry any
stride, the offset may be anything: an input given so, ``x.t().contiguous()``, which
returns ``x.t()`` itself when that is contiguous, an elementwise op of such a tensor, which
keeps its strides); None when its layout is not known (a transpose, slice or other view,
or anything computed from such a tensor).  Layout queries answer for known tensors and
record that the program depends on the inputs' layout (the input checks then require
contiguous inputs, with row-major strides on every dim where strides were read); on a
tensor of unknown layout they raise, naming the line and the fix, instead of guessing
(``stride()`` and ``storage_offset()`` on a ``LOOSE`` one too).
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from safetrace.errors import (layout_of_view, strides_of_loose, strides_of_small_dim,
                              view_dtype_of_strided, view_of_strided, view_of_vmap_output)
from safetrace.meta import contiguous_strides
from safetrace.meta.symtypes import SYM_CLASSES, TorchSymInt
from safetrace.rules.common import cond_true, normalize_dim
from safetrace.trace.index_ranges import CHECKS
from safetrace.trace.mutation import vmap_strides
from safetrace.trace.proxy import Proxy
from safetrace.trace.raising import program_catches
from safetrace.trace.small_strides import full_strides
from safetrace.trace.source import short, stack_trace
from safetrace.trace.strides import (COPIES, concatenated, derive, exact_strides, pointwise,
                                    strided, view_layout)
from safetrace.trace.recorder import Recorder

COMPUTE, UNKNOWN, FOLLOW, CONTIGUOUS, CONTIGUOUS_SELF = 0, 1, 2, 3, 4
_CAT = torch.ops.aten.cat.default
# ``constant_pad_nd`` (``F.pad``'s constant mode) allocates its result in its input's
# ``suggest_memory_format``: row-major unless 4- or 5-d (channels-last may be suggested)
_PADS = frozenset({torch.ops.aten.constant_pad_nd.default, torch.ops.aten.pad.default})
LOOSE = "loose"  # contiguous to is_contiguous(), strides of dims of size 0 / 1 and offset not

# Views that keep a contiguous tensor contiguous (same storage offset too); ``to`` is the
# tensor itself where nothing changes, else a copy in ``preserve_format``: a dense
# tensor's strides (a ``memory_format`` argument is read first).
_KEEPS_CONTIGUITY = frozenset({
    "view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "flatten", "unflatten",
    "alias", "detach", "lift_fresh", "view_as", "reshape_as", "to", "type_as",
})
# Matrix products: a new row-major result whatever their operands' layout (``linear``:
# addmm of a reshape, or matmul's mm / bmm of one, viewed back, then an in-place bias add;
# a 1-dim result is dense too); ``x.new_ones(size)`` and its kin: a new tensor of the
# given sizes, whatever ``x``'s layout (``new_empty_strided`` takes strides: not here);
# ``masked_fill`` (out of place): a ``clone(contiguous_format)`` of its input, filled.
_FRESH = frozenset({"mm", "addmm", "bmm", "baddbmm", "_addmm_activation", "linear",
                    "new_empty", "new_zeros", "new_ones", "new_full", "masked_fill"})
# Not views (or views the schema does not declare: unsafe_split), yet their results may
# have their own strides: LAPACK's column-major outputs, explicit strides, nonzero's
# (n, ndim) written column by column, FFTs' permuted outputs, einsum's and rot90's
# permutations, empty_permuted.
_OWN_STRIDES = ("linalg_", "_linalg_", "svd", "qr", "eig", "cholesky", "lu", "geqrf",
                "triangular_solve", "lstsq", "empty_strided", "new_empty_strided",
                "nonzero", "argwhere", "_fft_", "fft_", "stft", "istft", "einsum", "rot90",
                "empty_permuted", "unsafe_split", "unsafe_chunk")


def layout_kind(op: Any) -> tuple[int, int | None]:
    """How an op's result layout follows from its inputs, and where its memory_format
    argument sits (index in the schema's arguments, or None)."""
    schema = op._schema
    fmt = next((i for i, a in enumerate(schema.arguments) if a.name == "memory_format"), None)
    name = op._opname
    if name == "contiguous":  # (itself when already contiguous, else a row-major copy)
        return CONTIGUOUS_SELF, fmt
    if name in _FRESH:
        return CONTIGUOUS, fmt
    if name in _KEEPS_CONTIGUITY:
        return FOLLOW, fmt
    if name.startswith(_OWN_STRIDES):
        return UNKNOWN, fmt
    if any(r.alias_info is not None for r in schema.returns) and not schema.is_mutable:
        return UNKNOWN, fmt  # a view: a transpose, slice, expand, ...
    return COMPUTE, fmt


def result_contiguity(kind: int, fmt: int | None, args: tuple, kwargs: dict,
                      inputs_known: bool) -> bool | str | None:
    """True when the op's result is known contiguous with row-major strides, LOOSE when
    only to ``is_contiguous()``, else None."""
    contig = _result_contiguity(kind, fmt, args, kwargs, inputs_known)
    if contig is True and kind != CONTIGUOUS and _any_loose(args):
        return LOOSE  # (clone, empty_like, x * 2 keep a dense operand's strides)
    return contig


def _any_loose(args: Any) -> bool:
    for a in args:
        if type(a) is Proxy:
            if a.st_contig is LOOSE:
                return True
        elif isinstance(a, (list, tuple)) and _any_loose(a):
            return True
    return False


def _result_contiguity(kind: int, fmt: int | None, args: tuple, kwargs: dict,
                       inputs_known: bool) -> bool | str | None:
    if kind == CONTIGUOUS_SELF:
        mf = kwargs.get("memory_format", args[fmt] if fmt is not None and fmt < len(args)
                        else None)
        if mf is not None and mf not in (torch.contiguous_format, torch.preserve_format):
            return None
        first = args[0] if args else None
        return True if getattr(first, "st_contig", True) is True else LOOSE
    if fmt is not None:
        mf = kwargs.get("memory_format", args[fmt] if fmt < len(args) else None)
        if mf is torch.contiguous_format:
            return True
        if mf is not None and mf is not torch.preserve_format:
            return None  # channels_last: not contiguous in the default sense
    if kind == UNKNOWN:
        return None
    if kind == CONTIGUOUS:
        return True
    if kind == FOLLOW:
        first = args[0] if args else None
        if isinstance(first, Proxy):
            return first.st_contig
        return inputs_known or None  # (a real tensor: the model's state, a constant)
    return True if inputs_known else None


def exact_contiguous(t: torch.Tensor) -> bool:
    """A real tensor (the model's state, a constant) is contiguous with offset 0 and has
    exactly row-major strides: one whose size-1 dims carry other strides is contiguous to
    ``is_contiguous()`` yet may steer a kernel to channels-last (a 1x1 conv's weight
    converted with ``to(memory_format=torch.channels_last)`` gives a channels-last
    output): its layout is not known."""
    if not t.is_contiguous() or t.storage_offset() != 0:
        return False
    shape = t.shape
    # (is_contiguous() compared every stride but those of size-1 dims, and none at all
    # when a size is 0: only then can the strides differ from row-major)
    return (1 not in shape and 0 not in shape) or \
        tuple(t.stride()) == contiguous_strides(tuple(shape))


def input_layout(t: torch.Tensor) -> Any:
    """An input's ``st_contig``: True for row-major strides and storage offset 0, LOOSE for
    other tensors ``is_contiguous()`` accepts, else None."""
    if not t.is_contiguous():
        return None
    return True if exact_contiguous(t) else LOOSE


def dense_vector(kind: int, fmt: int | None, meta: Any) -> bool:
    """A result of at most one dim computed by an op without a ``memory_format`` argument
    is contiguous whatever its inputs' layout: such results are allocated dense (stride 1:
    elementwise ops, reductions, ``mv``, ``cat``).  (Ops taking ``memory_format``, such as
    ``empty_like`` and ``clone``, may copy an input's strides; views are not computed.)"""
    return kind == COMPUTE and fmt is None and len(meta.shape) <= 1


def vector_contiguity(kind: int, fmt: int | None, meta: Any) -> bool | str | None:
    """The layout of a result of an op whose operands' layout is unknown: None, or for a
    ``dense_vector`` True where its one dim is known >= 2, else LOOSE (an op allocating
    like its operand, ``flip``, keeps a dense operand's stride on a dim of size 1: eager's
    ``y[::2].flip(0).stride(0)`` is 4 for a 1-element ``y[::2]``; fuzz seed 292)."""
    if not dense_vector(kind, fmt, meta):
        return None
    return True if all(cond_true(s >= 2) for s in meta.shape) else LOOSE


def set_layout(kind: int, fmt: int | None, op: Any, args: tuple, kwargs: dict,
               known: bool, result: Any) -> None:
    """Give an op's result(s) their layout (``st_contig``, and ``st_layout`` where a view's
    exact strides follow from its input's: ``strides.py``)."""
    x = args[0] if args else None
    if (kind == UNKNOWN or (type(x) is Proxy and x.st_contig is None)) and \
            derive(op, args, kwargs, result):
        return
    if op in _PADS and _new_padded(args, kwargs, result):
        result.st_contig = True
        return
    if not known and kind == COMPUTE and fmt is None:
        if op is _CAT and concatenated(args, result):
            return
        if torch.Tag.pointwise in op.tags and pointwise(args, kwargs, result):
            return
    contig = result_contiguity(kind, fmt, args, kwargs, known)
    if contig is None:
        for p in (result if isinstance(result, (tuple, list)) else (result,)):
            if type(p) is Proxy:
                p.st_contig = vector_contiguity(kind, fmt, p.st_meta)
    elif contig is not True:
        for p in (result if isinstance(result, (tuple, list)) else (result,)):
            if type(p) is Proxy:
                p.st_contig = contig


def _new_padded(args: tuple, kwargs: dict, result: Any) -> bool:
    """``constant_pad_nd`` (``pad``'s constant mode) with pads >= 0, not all 0 (those: a
    ``clone`` of the input), below 4 or above 5 dims: a new row-major tensor."""
    pads = args[1] if len(args) > 1 else kwargs.get("pad")
    mode = args[2] if len(args) > 2 else kwargs.get("mode", "constant")
    return type(result) is Proxy and mode == "constant" and result.st_meta.ndim not in (4, 5) and \
        isinstance(pads, (list, tuple)) and all(type(p) is int and p >= 0 for p in pads) \
        and any(pads)


def _require_known(tr: Recorder, x: Proxy, what: str, strides: bool = False,
                   known: bool = False) -> None:
    trace = stack_trace(4)
    if x.st_contig is None and not known:
        raise layout_of_view(what, short(trace))
    if strides:  # (is_contiguous() ignores the strides of dims of size 0 / 1; stride() not)
        if x.st_contig is not True and not (what == "x.stride()" and _no_dim_below_two(x)):
            raise strides_of_loose(what, short(trace))
        tr.strides_queried = True
    if tr.layout_queried is None:
        tr.layout_queried = trace


def _no_dim_below_two(x: Proxy) -> bool:
    """Every dim is known >= 2: then a tensor ``is_contiguous()`` accepts has row-major
    strides (its storage offset may still be any)."""
    return all(cond_true(s >= 2) for s in x.st_meta.shape)


def is_contiguous(tr: Recorder, x: Proxy, memory_format: Any = torch.contiguous_format) -> Any:
    if x.st_contig is None and memory_format is torch.contiguous_format and strided(x):
        _require_known(tr, x, "x.is_contiguous()", known=True)
        return False
    _require_known(tr, x, "x.is_contiguous()")
    if memory_format in (torch.contiguous_format, torch.preserve_format):
        return True
    # A contiguous tensor is also channels-last contiguous exactly when its strides agree
    # on every dim of size != 1 (or it is empty): that depends only on which dims are 0
    # or 1 (guarded here), so a probe with the same 0s and 1s answers.
    probe_shape = [0 if s == 0 else 1 if s == 1 else 2 for s in x.st_meta.shape]
    probe = torch.empty(probe_shape, device="meta")
    with torch._C.DisableTorchFunction():
        return probe.is_contiguous(memory_format=memory_format)


def stride(tr: Recorder, x: Proxy, dim: int | None = None) -> Any:
    exact = exact_strides(x)  # (a view's own strides, where every one of them is exact)
    full = None
    if exact is None and x.st_contig is not True and not (
            x.st_contig is LOOSE and _no_dim_below_two(x)):  # (that one: row-major)
        exact = full = full_strides(x)  # (its dims of size 0 / 1 too, by eager's rules)
    if exact is None and x.st_contig is None and x.st_layout is not None:
        small = [f"dim {d} (size {s})" for d, s in enumerate(x.st_meta.shape)
                 if not cond_true(s >= 2)]  # (strides traced, exact on dims >= 2 only)
        raise strides_of_small_dim("x.stride()", short(stack_trace(3)), ", ".join(small))
    _require_known(tr, x, "x.stride()", full is None, known=exact is not None)
    if full is not None:  # (from a row-major tensor: an input's strides are then checked)
        tr.strides_queried = True
    strides = exact if exact is not None else contiguous_strides(x.st_meta.shape)
    if dim is None:
        return strides
    return strides[normalize_dim(dim, len(strides), "Tensor.stride")]


def storage_offset(tr: Recorder, x: Proxy) -> int:
    _require_known(tr, x, "x.storage_offset()", True)
    return 0


# -- eager's view check on a tensor of unknown layout ---------------------------------------

def _hint(v: Any) -> Any:
    """A value as eager has it at the example inputs (sizes at their hints), or raise
    LookupError where that is unknown (a tensor argument, an unbacked size)."""
    if type(v) not in SYM_CLASSES:  # (a size: none of these; its type tests may run Python)
        if isinstance(v, torch.fx.Node):
            v = v.meta.get("val")
        if isinstance(v, (list, tuple)):
            return type(v)(_hint(a) for a in v)
        if isinstance(v, torch.Tensor):
            raise LookupError(v)
    if hasattr(v, "expr") and hasattr(type(v), "hint"):  # (not v: the property may raise)
        try:
            return v.hint
        except Exception as exc:  # (an unbacked size: no example value)
            raise LookupError(v) from exc
    return v


# Small examples replay on CPU tensors (`_cpu`): the first computed op on meta tensors
# makes torch import its Python meta kernels (sympy included, seconds); CPU kernels give
# the same strides (TensorIterator), at the cost of computing on the example's sizes.
# Every tensor the replay starts from must be small too: a small view of ``linear(x, W)``
# replays from ``W`` (a 4096 x 4096 weight: 64 MB of zeros and a matmul, ~20 ms a view
# at Llama-8B's sizes), so a large one sends the whole replay to meta tensors.
_ON_CPU = "on cpu"
_TOO_LARGE = "too large for cpu"
_CPU_NUMEL = 1 << 16


def _numel(shape: tuple) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _cpu(t: torch.Tensor) -> torch.Tensor:
    """A CPU example's values: zeros where values can be indices (integer and bool
    tensors: in range for an index op), else left as allocated. Only the strides are read,
    and filling an example of more than 32768 elements runs on torch's thread pool, whose
    wake-up costs ~40 ms a fill on a machine whose cores are busy (a GPT-2's split q/k/v
    views replay from the (1, 16, 2304) projection)."""
    return t.zero_() if not (t.is_floating_point() or t.is_complex()) else t


def _example(node: Any, depth: int, memo: dict | None = None) -> Any:
    """A tensor (meta, or CPU for a small example) with the strides that
    ``node``'s value has at the example inputs, found by replaying the ops between it and
    tensors of known (contiguous) layout: views, and computed ops too (eager's elementwise
    ops, ``clone`` and ``*_like`` keep an operand's layout: ``(x.t() * 2)`` is as strided
    as ``x.t()``); None where that chain holds anything else (a write, a higher-order op,
    a custom op, a size read from data)."""
    memo = {} if memo is None else memo
    if isinstance(node, torch.fx.Node) and node in memo:  # (a node several ops read)
        return memo[node]
    memo[node] = found = _example_of(node, depth, memo)
    return found


def _example_of(node: Any, depth: int, memo: dict) -> Any:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    if not isinstance(val, Proxy):
        return None
    if val.st_contig or val.st_strides is not None:
        meta = val.st_meta
        shape = _hint(tuple(meta.shape))
        if memo.get(_ON_CPU) and _numel(shape) > _CPU_NUMEL:
            memo[_TOO_LARGE] = True
            raise LookupError(node)
    if val.st_contig:
        if memo.get(_ON_CPU):
            return _cpu(torch.empty(shape, dtype=meta.dtype))
        return torch.empty(shape, dtype=meta.dtype, device="meta")
    if val.st_strides is not None:  # (a strided buffer, an input's strided example)
        if memo.get(_ON_CPU):
            return _cpu(torch.empty_strided(shape, val.st_strides, dtype=meta.dtype))
        return torch.empty_strided(shape, val.st_strides, dtype=meta.dtype, device="meta")
    op = node.target
    if depth > 16 or node.op != "call_function" or not node.args:
        return None
    if op is operator.getitem:  # (one result of a multi-result op: max.dim, sort, ...)
        base = _replayed(node.args[0], depth + 1, memo)
        return base[node.args[1]] if isinstance(base, (tuple, list)) and \
            isinstance(node.args[1], int) else None
    return _replayed(node, depth, memo)


def _replayed(node: Any, depth: int, memo: dict) -> Any:
    """``node``'s op run on the meta examples of its arguments (None where unknown)."""
    op = node.target
    if not isinstance(op, torch._ops.OpOverload) or op.namespace != "aten" or \
            op._schema.is_mutable or torch.Tag.nondeterministic_seeded in op.tags:
        return None  # (a custom op's kernel is the user's code: not run again here)
    try:
        args = tuple(_replay_arg(a, depth, memo) for a in node.args)
        kwargs = {k: _replay_arg(a, depth, memo) for k, a in node.kwargs.items()}
        with torch._C.DisableTorchFunction():
            return op(*args, **kwargs)
    except Exception:  # (LookupError: no example; a meta kernel that is missing or asks
        return None    # for data; any other: not replayed, eager's check left to run time)


def _replay_arg(a: Any, depth: int, memo: dict) -> Any:
    if isinstance(a, (list, tuple)):
        return type(a)(_replay_arg(b, depth, memo) for b in a)
    if isinstance(a, torch.fx.Node) and isinstance(a.meta.get("val"), torch.Tensor):
        example = _example(a, depth + 1, memo)
        if example is None:
            raise LookupError(a)
        return example
    return _hint(a)


def _check_view(tr: Recorder, args: tuple, kwargs: dict) -> None:
    """``x.view(shape)`` of a view whose layout is not known contiguous (``x.t().view(-1)``):
    replayed on meta tensors with the example's strides, eager's refusal ("view size is not
    compatible with input tensor's size and stride") is raised at export, where the program
    would have raised at run time."""
    x = args[0] if args else None
    if not isinstance(x, Proxy) or len(args) < 2:
        return
    if x.st_contig is not None:
        contiguous_view(tr, x, args[1])
        return
    if tr.vmapped and vmap_strides(x.st_node):  # (the program's strides are not eager's)
        if not splits_only(tuple(x.st_meta.shape), args[1]):
            raise view_of_vmap_output(short(stack_trace(4)))
        return
    if view_proven(x, args[1]):  # (exact strides: decided)
        return
    try:
        memo = {_ON_CPU: _numel(_hint(tuple(x.st_meta.shape))) <= _CPU_NUMEL}
        example = _example(x.st_node, 0, memo)
        if example is None and memo.get(_TOO_LARGE):  # (a large tensor it starts from)
            example = _example(x.st_node, 0, {})
        shape = _hint(args[1])
    except LookupError:  # (a size read from data: no example strides to replay)
        return
    if example is not None:
        try:
            with torch._C.DisableTorchFunction():
                example.view(shape)
        except RuntimeError as exc:
            raise view_of_strided(str(exc), short(stack_trace(4))) from None
    if program_catches():   # (valid at the example, or not known there: at other sizes
        # eager may raise, and the program's except side would not run)
        raise view_of_strided("", short(stack_trace(4)), caught=True)


_SIZE_TYPES = (int, TorchSymInt)


def view_sizes(func: Any, args: tuple, kwargs: dict) -> list | None:
    """The sizes ``aten.view.default`` gets from ``x.view(*sizes)``, ``x.view(sizes)`` or
    ``aten.view.default(x, sizes)``: ints and sizes of this export only; None for any other
    form (``view_as``, a dtype, keywords, a tensor among the sizes)."""
    if kwargs or len(args) < 2 or func is torch.Tensor.view_as:
        return None
    sizes = args[1] if len(args) == 2 and type(args[1]) in (list, tuple, torch.Size) \
        else args[1:] if func is torch.Tensor.view else None
    if sizes is None or not all(type(s) in _SIZE_TYPES for s in sizes):
        return None
    return list(sizes)


UNREAD = "unread"  # (view_check: a form it does not read)


def view_check(func: Any, args: tuple, kwargs: dict) -> Any:
    """The check a replayed view of a tensor known contiguous runs (a function of the memo
    key, memo.py keeps it): None when the view fits any strides (it only splits dims, or
    keeps the element size); ``caught_view`` for one by sizes, ``contiguous_view_dtype``
    for one to another element size (inside a ``try`` they make the program depend on its
    inputs' layout); ``UNREAD`` for a form not read here."""
    x = args[0]
    new = view_sizes(func, args, kwargs)
    if new is None:
        other = args[1] if len(args) == 2 and not kwargs else None
        if isinstance(other, torch.dtype):
            if other.itemsize == x.st_meta.dtype.itemsize or not x.st_meta.shape:
                return None
            return contiguous_view_dtype if x.st_contig is True else UNREAD
        if func is not torch.Tensor.view_as or not isinstance(other, torch.Tensor):
            return UNREAD
        new = list(other.st_meta.shape if type(other) is Proxy else other.shape)
    return None if splits_only(tuple(x.st_meta.shape), new) else caught_view


def contiguous_view(tr: Recorder, x: Proxy, new: Any) -> None:
    """``x.view(new)`` of a tensor known contiguous: valid for any contiguous input, but on
    one of other strides eager raises where the traced graph's view raises too, unless the
    line is inside a ``try``: there eager runs the ``except`` side, so the inputs x's layout
    follows from must have the traced layout (``layout_queried``: the input checks require
    contiguous inputs).  A view that only splits dims fits any strides (memo.py replays
    this check: the ``try`` is not in the key)."""
    if tr.layout_queried is None and not splits_only(tuple(x.st_meta.shape), new):
        caught_view(tr, x)


def caught_view(tr: Recorder, x: Proxy) -> None:
    """A view of `x` that fits contiguous strides only: inside a ``try``, the program
    depends on the layout of the inputs x's follows from."""
    if tr.layout_queried is None and program_catches() and from_inputs(x.st_node):
        tr.layout_queried = stack_trace(2)  # (the first frame outside safetrace)


def contiguous_view_dtype(tr: Recorder, x: Proxy) -> None:
    """``x.view(dtype)`` to another element size of a row-major tensor with storage offset
    0: eager also requires ``stride(-1) == 1`` and an offset its element size divides,
    which an input ``is_contiguous()`` accepts may break; inside a ``try`` (eager runs the
    ``except`` side there) the inputs x's layout follows from must have row-major strides
    and offset 0 (``strides_queried``)."""
    if not tr.strides_queried and program_catches() and from_inputs(x.st_node):
        tr.strides_queried = True
        if tr.layout_queried is None:
            tr.layout_queried = stack_trace(2)


def from_inputs(node: Any) -> bool:
    """Whether the layout of `node`'s value may follow from a program input's (an input
    placeholder, or a subgraph's, reached through ops other than those making a fresh
    contiguous tensor: matrix products, ``contiguous()``, a computed tensor of at most one
    dim); True too where the walk is too long to finish."""
    seen: set = set()
    todo = [node]
    while todo:
        n = todo.pop()
        if not isinstance(n, torch.fx.Node) or n in seen:
            continue
        seen.add(n)
        if len(seen) > 4096:
            return True
        if n.op == "placeholder":
            if n.meta.get("kind") not in ("parameter", "buffer", "constant"):
                return True
            continue
        if n.op != "call_function":
            continue  # (get_attr: a constant or a subgraph; output)
        op = n.target
        if isinstance(op, torch._ops.OpOverload):
            kind, fmt = layout_kind(op)
            val = n.meta.get("val")
            if kind == CONTIGUOUS or (isinstance(val, Proxy) and
                                      dense_vector(kind, fmt, val.st_meta)) or \
                    (fmt is not None and  # (contiguous(), clone(memory_format=...))
                     _result_contiguity(kind, fmt, n.args, n.kwargs, False) is not None):
                continue
        for a in (*n.args, *n.kwargs.values()):
            if isinstance(a, (list, tuple)):
                todo.extend(a)
            else:
                todo.append(a)
    return False


def view_proven(x: Proxy, new: Any) -> bool:
    """Whether ``x.view(new)`` is proven valid for every size from x's exact strides
    (``st_layout``): eager's view check then needs no example, and the answer is a function
    of x's sizes and strides and of `new` alone (memo.py keeps it per call key)."""
    return x.st_layout is not None and _viewable(x, new)


def _viewable(x: Proxy, new: Any) -> bool:
    """Whether ``x.view(new)`` is proven valid for every size from x's exact strides."""
    if not isinstance(new, (list, tuple)):
        return False
    new = list(new)
    wild = [i for i, s in enumerate(new) if type(s) is int and s == -1]
    if wild:
        rest: Any = 1
        for i, s in enumerate(new):
            if i != wild[0]:
                rest = rest * s
        if not cond_true(rest >= 1):
            return False
        new[wild[0]] = x.st_meta.numel() // rest
    found = view_layout(tuple(x.st_meta.shape), x.st_layout[0], tuple(new))
    return found is not None and found is not COPIES


def splits_only(old: tuple, new: Any) -> bool:
    """Whether viewing sizes ``old`` as ``new`` only splits dims and adds or drops dims of
    size 1, for every size of the symbols: eager's view then succeeds whatever the strides
    (a merge of two dims needs the first's stride to span the second)."""
    if not isinstance(new, (list, tuple)):
        return False
    new = list(new)
    wild = [i for i, s in enumerate(new) if type(s) is int and s == -1]
    if wild:  # (-1: what the other sizes leave of the elements)
        numel, rest = 1, 1
        for s in old:
            numel = numel * s
        for i, s in enumerate(new):
            if i != wild[0]:
                rest = rest * s
        if not cond_true(rest >= 1):
            return False
        new[wild[0]] = numel // rest
    olds = [s for s in old if not (type(s) is int and s == 1)]
    news = [s for s in new if not (type(s) is int and s == 1)]
    i = 0
    for o in olds:  # each old dim is the product of the next new dims
        p: Any = 1
        while not cond_true(p == o):
            if i == len(news):
                return False
            p, i = p * news[i], i + 1
    return i == len(news)


def _check_view_as(tr: Recorder, args: tuple, kwargs: dict) -> None:
    """``x.view_as(other)``: eager views x as other's sizes (``x.view(other.size())``),
    checked as that view is (``_check_view``)."""
    other = args[1] if len(args) > 1 else kwargs.get("other")
    if isinstance(other, Proxy):
        _check_view(tr, (args[0], list(other.st_meta.shape)), {})
    elif isinstance(other, torch.Tensor):  # (a real tensor: the model's state, a constant)
        _check_view(tr, (args[0], list(other.shape)), {})


def _check_view_dtype(tr: Recorder, args: tuple, kwargs: dict) -> None:
    """``x.view(dtype)`` to another element size: eager requires ``x.stride(-1) == 1`` (the
    rule checks the sizes). Where x's layout is not row-major and that stride is not
    proven 1, eager's check is replayed on the example's strides (a view of unknown layout;
    a ``LOOSE`` tensor's example strides are not kept: not replayed), and inside a ``try``
    the view is refused, as ``_check_view`` refuses a view whose fit depends on the sizes."""
    x = args[0] if args else None
    dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
    if not isinstance(x, Proxy) or not isinstance(dtype, torch.dtype) \
            or dtype.itemsize == x.st_meta.dtype.itemsize or not x.st_meta.shape:
        return
    if x.st_contig is True:
        contiguous_view_dtype(tr, x)
        return
    lay = x.st_layout  # (exact strides: stride 1 on a last dim of size >= 2 decides it)
    if lay is not None and type(lay[0][-1]) is int and lay[0][-1] == 1 and \
            cond_true(x.st_meta.shape[-1] >= 2):
        return
    if x.st_contig is None and not (tr.vmapped and vmap_strides(x.st_node)):
        try:
            memo = {_ON_CPU: _numel(_hint(tuple(x.st_meta.shape))) <= _CPU_NUMEL}
            example = _example(x.st_node, 0, memo)
            if example is None and memo.get(_TOO_LARGE):
                example = _example(x.st_node, 0, {})
        except LookupError:
            example = None
        if example is not None:
            try:
                with torch._C.DisableTorchFunction():
                    example.view(dtype)
            except RuntimeError as exc:
                raise view_dtype_of_strided(str(exc), short(stack_trace(4))) from None
    if program_catches():
        raise view_dtype_of_strided("", short(stack_trace(4)), caught=True)


CHECKS[torch.ops.aten.view.default] = _check_view
CHECKS[torch.ops.aten.view_as.default] = _check_view_as
CHECKS[torch.ops.aten.view.dtype] = _check_view_dtype
