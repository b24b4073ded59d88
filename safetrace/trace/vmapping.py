"""``torch.vmap`` in exported code.

vmap's batching runs beneath the tracer (functorch's dispatcher layer), where no op can be
recorded.  While exporting, ``torch.vmap`` / ``torch.func.vmap`` are replaced: the function
is applied to each slice of the batch and the results stacked along ``out_dims``, which is
what vmap computes, as ordinary recorded ops.  A batch of static size up to
``UNROLL_LIMIT`` is unrolled, one call per slice; a dynamic (or larger) batch becomes one
``map`` over the mapped dims moved first (the function traced once, on a slice), its
stacked results moved to ``out_dims``.  Either way the function is held to what vmap runs
once per slice (no in-place write, random op or data read), and a result that views an
input is marked so that a later write to either is refused.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any, Callable

import torch
from torch.utils import _pytree as pytree

from safetrace.errors import below_tracer, shape_error, vmap_not_per_slice
from safetrace.trace.current import active_tracer, exporting
from safetrace.trace.hops import ops as hop_ops
from safetrace.trace.hops import submodules
from safetrace.trace.mutation import storage_root
from safetrace.trace.proxy import Proxy
from safetrace.trace.source import short, stack_trace
from safetrace.trace.torch_own import Originals

UNROLL_LIMIT = 64  # slices recorded one by one: the graph grows with the batch
_REAL = Originals()  # torch's own vmap (known by its code: trace/torch_own.py)
_REAL.learn("vmap", torch.vmap)
_RANK = {torch.channels_last: 4, torch.channels_last_3d: 5}  # the formats tied to a rank


class _Depth(threading.local):
    levels = 0  # vmaps whose function is running on a slice now (this thread)


_DEPTH = _Depth()


def slice_format(x: torch.Tensor, memory_format: Any) -> bool:
    """Whether `memory_format` (of a cast or copy of `x`) is one eager's vmap applies to the
    batched tensor, not to the slice traced here: channels_last on a 3-d slice of one vmap
    (eager's tensor has the batch dim too).  The slice then gets the op without the format
    (the values are the same; its layout is not known).  A format whose rank fits neither
    is refused as eager refuses it."""
    rank = _RANK.get(memory_format)
    if rank is None or not _DEPTH.levels:
        return False
    if x.dim() + _DEPTH.levels != rank:
        raise shape_error("to", f"required rank {rank} tensor to use "
                                f"{str(memory_format).split('.')[-1]} format (the batched "
                                f"tensor of torch.vmap has {x.dim() + _DEPTH.levels} dims)"
                          ).at(short(stack_trace(3)))
    return True


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error",
         *, chunk_size: int | None = None) -> Callable:
    """torch.vmap; while exporting, the slices' results stacked (see the module)."""
    if not exporting():
        return _REAL["vmap"](func, in_dims, out_dims, randomness, chunk_size=chunk_size)

    @functools.wraps(func)
    def batched(*args: Any, **kwargs: Any) -> Any:
        tr = active_tracer()
        if tr is None:
            return _per_slice(func, in_dims, out_dims, args, kwargs)[0]
        graph, symbols = tr.scope.graph, set(tr.env.symbols)
        before = {id(n) for n in graph.nodes}
        out, slices = _per_slice(func, in_dims, out_dims, args, kwargs)
        new = [n for n in graph.nodes if id(n) not in before]
        _only_per_slice_ops(_with_bodies(graph, new), set(tr.env.symbols) - symbols, tr.env,
                            randomness)
        if slices is None:  # one map: its body's results that view a body input
            _mark_mapped_views(graph, new, args, out)
        else:
            _mark_lost_views(slices, out, before)
        for o in pytree.tree_leaves(out):  # (eager's strides follow its batching rules,
            if isinstance(o, Proxy):  # not the stack's: layout queries are refused)
                o.st_contig = o.st_layout = None
                o.st_node.meta["st_vmap_layout"] = True  # (mutation.reads_own_memory)
                tr.vmapped = True  # (layout.py: a view of it must not depend on strides)
        return out
    return batched


def _only_per_slice_ops(nodes: list, new_symbols: set, env: Any, randomness: str) -> None:
    """Refuse what the per-slice calls did that vmap does not do once per slice: an
    in-place write (vmap runs it once, on the whole batch, or raises for a tensor from
    outside the function), a random op (``randomness="error"`` raises, ``"same"`` draws
    once for the batch) and a read of tensor data (vmap raises)."""
    source = short(stack_trace(3))
    for n in nodes:
        target = n.target
        schema = getattr(target, "_schema", None)
        if schema is None:
            continue
        if schema.is_mutable:
            raise vmap_not_per_slice(f"writes a tensor in place ({target})", source)
        if randomness != "different" and torch.Tag.nondeterministic_seeded in target.tags:
            raise vmap_not_per_slice(
                f"calls a random op ({target}) with randomness={randomness!r}", source)
    if any(not env.symbols[s].backed for s in new_symbols):
        raise vmap_not_per_slice("reads tensor data (.item(), a data-dependent size)", source)


def _per_slice(func: Callable, in_dims: Any, out_dims: Any, args: tuple, kwargs: dict) -> Any:
    leaves, spec = pytree.tree_flatten(args)
    if in_dims is None or isinstance(in_dims, int):
        dims: list | None = [in_dims] * len(leaves)
    else:  # a tuple matching the arguments (each entry broadcast over its pytree)
        dims = pytree._broadcast_to_and_flatten(in_dims, spec)
    if dims is None:
        raise ValueError(f"vmap: in_dims {in_dims!r} is not compatible with the structure "
                         f"of the inputs")
    dims = [None if d is None or not isinstance(x, torch.Tensor) else d % max(x.dim(), 1)
            for x, d in zip(leaves, dims)]
    sizes = [x.shape[d] for x, d in zip(leaves, dims) if d is not None]
    # (compared, not hashed: a set of symbolic sizes would fix each one to its example)
    if not sizes or any(not bool(s == sizes[0]) for s in sizes[1:]):
        raise ValueError(f"vmap: expected all mapped inputs to have one size in the mapped "
                         f"dim, got {sorted(set(map(str, sizes)))}")
    size = sizes[0]
    tr = active_tracer()
    if tr is not None and not (isinstance(size, int) and size <= UNROLL_LIMIT):
        return _mapped(tr, func, leaves, dims, spec, out_dims, kwargs), None
    if not isinstance(size, int) or not 0 < size <= UNROLL_LIMIT:
        raise below_tracer("torch.vmap", short(stack_trace(3)))  # (a dynamic batch)
    results = []
    _DEPTH.levels += 1
    try:
        for i in range(size):
            sliced = [x.select(d, i) if d is not None else x for x, d in zip(leaves, dims)]
            results.append(func(*pytree.tree_unflatten(sliced, spec), **kwargs))
    finally:
        _DEPTH.levels -= 1
    outs, out_spec = pytree.tree_flatten(results[0])
    per_leaf = zip(*(pytree.tree_leaves(r) for r in results))
    where = [out_dims] * len(outs) if isinstance(out_dims, int) else \
        pytree._broadcast_to_and_flatten(out_dims, out_spec)
    if where is None or not all(isinstance(o, torch.Tensor) for o in outs):
        raise below_tracer("torch.vmap", short(stack_trace(3)))
    stacked = [torch.stack(list(parts), dim=d) for parts, d in zip(per_leaf, where)]
    return pytree.tree_unflatten(stacked, out_spec), results


def _mapped(tr: Any, func: Callable, leaves: list, dims: list, spec: Any, out_dims: Any,
            kwargs: dict) -> Any:
    """vmap over a batch of dynamic size as one ``map``: the mapped dims moved first, the
    function traced once on a slice (every other argument as it is), and each stacked
    result's batch dim moved to its ``out_dims``."""
    mapped = [x.movedim(d, 0) if d else x for x, d in zip(leaves, dims) if d is not None]

    def body(slices: list) -> Any:
        it = iter(slices)
        flat = [next(it) if d is not None else x for x, d in zip(leaves, dims)]
        _DEPTH.levels += 1
        try:
            return func(*pytree.tree_unflatten(flat, spec), **kwargs)
        finally:
            _DEPTH.levels -= 1

    body.__wrapped__ = func  # (where the map's refusals say the body was written)
    # (a map cannot take an empty batch; eager's vmap takes one for some functions and
    # sizes and raises for others, `r * 2` on 0-d slices, `torch.cat` of empty ones:
    # "select(): index 0 out of range", so it stays refused, as a requirement)
    if not bool(mapped[0].shape[0] >= 1):
        raise below_tracer("torch.vmap over an empty batch", short(stack_trace(4)))
    out = hop_ops.map_(tr, body, mapped)
    outs, out_spec = pytree.tree_flatten(out)
    where = [out_dims] * len(outs) if isinstance(out_dims, int) else \
        pytree._broadcast_to_and_flatten(out_dims, out_spec)
    if where is None:
        raise below_tracer("torch.vmap", short(stack_trace(4)))
    moved = [o.movedim(0, d) if d else o for o, d in zip(outs, where)]
    return pytree.tree_unflatten(moved, out_spec)


def _with_bodies(graph: Any, nodes: list) -> list:
    """`nodes` and, for each subgraph one of them reads (a map's body), that graph's nodes
    (and so on down)."""
    out, subs = [], submodules(graph)
    for n in nodes:
        out.append(n)
        sub = subs.get(n.target) if n.op == "get_attr" else None
        if sub is not None and hasattr(sub, "graph"):
            out += _with_bodies(sub.graph, list(sub.graph.nodes))
    return out


def _mark_mapped_views(graph: Any, new: list, args: Any, out: Any) -> None:
    """The map's body returns (a view of) one of its inputs: eager's vmap returns a view
    of that argument, the map a new tensor, so the arguments and the results are marked
    as ``_mark_lost_views`` marks them."""
    subs = submodules(graph)
    bodies = [subs[n.target] for n in new if n.op == "get_attr" and n.target in subs]
    viewing = False
    for body in bodies:
        ret = next(n for n in reversed(body.graph.nodes) if n.op == "output")
        for leaf in pytree.tree_leaves(ret.args[0]):
            root = storage_root(leaf)
            if getattr(root, "target", None) is torch.ops.aten.clone.default:
                root = storage_root(root.args[0])  # (map copies a result that is an input)
            viewing |= isinstance(root, torch.fx.Node) and root.op == "placeholder"
    if not viewing:
        return
    what = "an output of torch.vmap that eager returns as a view of another tensor, or that tensor"
    for leaf in pytree.tree_leaves((args, out)):
        node = getattr(leaf, "st_node", None)
        if node is not None:
            storage_root(node).meta["st_picked"] = what


def _mark_lost_views(slices: list, out: Any, before: set) -> None:
    """A slice's result that views a tensor from outside the function (its input, a
    captured one): eager's vmap returns a view of it, the stack a new tensor, so a later
    write to either is refused (``mutation.writes_a_pick``)."""
    what = "an output of torch.vmap that eager returns as a view of another tensor, or that tensor"
    for result in slices:
        for leaf in pytree.tree_leaves(result):
            node = getattr(leaf, "st_node", None)
            root = storage_root(node) if node is not None else None
            if isinstance(root, torch.fx.Node) and id(root) not in before:
                continue  # (a tensor the function made: the stack is eager's new tensor)
            if root is not None:
                root.meta["st_picked"] = what
            for o in pytree.tree_leaves(out):
                if getattr(o, "st_node", None) is not None:
                    storage_root(o.st_node).meta["st_picked"] = what


# what `patches` reads that may change: (module name, attribute) (trace/session.py)
WATCHED = (("torch", "vmap"), ("torch.func", "vmap"))


def patches() -> list[tuple[Any, str, Any]]:
    """The exporting torch.vmap, for the export session to install where torch's own is in
    place (a user's replacement is left to be traced as Python)."""
    out: list[tuple[Any, str, Any]] = []
    for owner in (torch, sys.modules.get("torch.func")):
        current = getattr(owner, "vmap", None)
        if owner is not None and (current is vmap or _REAL.learn("vmap", current)):
            out.append((owner, "vmap", vmap))
    return out
