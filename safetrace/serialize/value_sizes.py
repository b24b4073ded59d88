"""Sizes a kernel reads from its operands' values, checked before the kernel runs.

``bincount(x)`` allocates ``max(x) + 1`` counts, ``one_hot(x)`` ``numel(x) * (max(x) + 1)``
values, ``repeat_interleave(r)`` ``sum(r)`` elements, ``nonzero(m)`` one row per nonzero:
the caller supplies ``x``, but a file chooses the arithmetic in front of it
(``bincount(x * 10**9)``), and a view can hold more elements than memory
(``nonzero(x.expand(10**6, 10**6))``).  No shape in the graph bounds these sizes, so the
loader puts a check before each such node (``guard``): it computes from the operands the
bytes the kernel is about to allocate (a reduction over them, what the kernel itself
reads) and refuses the call over the budget, an ``InputMismatchError`` naming the node,
the bytes and the budget.  Sizes read by ``.item()`` and given to a factory are checked
by ``allocations.guard_sizes``; sizes read from the program's own constants are bounded at load
(``memory.py``).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from safetrace.errors.load import memory_from_values
from safetrace.trace.current import active_tracer
from safetrace.trace.graph import run_time_check

aten = torch.ops.aten


def _compact(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """``x`` less its broadcast dims (stride 0: one element stands for all of them), and
    how many times each element of it is repeated in ``x``: a count or a maximum over an
    expanded view costs what its storage holds, not what the view spans."""
    times = 1
    for d in range(x.dim()):
        if x.stride(d) == 0 and x.shape[d] > 1:
            times *= x.shape[d]
            x = x.narrow(d, 0, 1)
    return x, times


def _count(x: torch.Tensor) -> int:
    compact, times = _compact(x)
    return int(torch.count_nonzero(compact)) * times


def _max_plus_one(x: torch.Tensor) -> int:
    return int(_compact(x)[0].max()) + 1 if x.numel() else 0


def _bincount(x: Any, weights: Any = None, minlength: Any = 0) -> int:
    n = max(_max_plus_one(x), int(minlength or 0)) if isinstance(x, torch.Tensor) else 0
    return n * 8  # (int64 counts, or double sums of the weights)


def _one_hot(x: Any, classes: Any = -1) -> int:
    if not isinstance(x, torch.Tensor):
        return 0
    classes = _max_plus_one(x) if classes is None or int(classes) < 0 else int(classes)
    return x.numel() * classes * 8


def _repeats(repeats: Any, output_size: Any = None) -> int:
    if output_size is not None or not isinstance(repeats, torch.Tensor):
        return 0  # (a given size: held to the budget as any size argument)
    compact, times = _compact(repeats)
    return int(compact.sum(dtype=torch.float64)) * times * 8 if repeats.numel() else 0


def _repeat_self(x: Any, repeats: Any, dim: Any = None, output_size: Any = None) -> int:
    if output_size is not None or not isinstance(x, torch.Tensor):
        return 0
    r = repeats if isinstance(repeats, torch.Tensor) else torch.tensor(int(repeats))
    shape = list(x.shape) if dim is not None else [x.numel()]
    d = 0 if dim is None else int(dim) % max(len(shape), 1)
    shape = shape or [1]
    compact, times = _compact(r)
    n = int(compact.sum(dtype=torch.float64)) * times if r.numel() != 1 else \
        int(r.reshape(())) * shape[d]
    return n * math.prod(shape[:d] + shape[d + 1:]) * x.element_size()


def _nonzero(x: Any) -> int:
    if not isinstance(x, torch.Tensor):
        return 0
    return _count(x) * max(x.dim(), 1) * 8


def _masked_select(x: Any, mask: Any) -> int:
    if not isinstance(x, torch.Tensor) or not isinstance(mask, torch.Tensor):
        return 0
    shape = torch.broadcast_shapes(x.shape, mask.shape)
    total, own = math.prod(shape), mask.numel()
    count = _count(mask) * (total // own) if own else 0
    return count * x.element_size()


def _index(x: Any, indices: Any) -> int:
    """``x[mask]``: a bool index selects one slice per true element (an int index's
    result has the shape of the indices, known from the shapes: not guarded)."""
    if not isinstance(x, torch.Tensor) or not isinstance(indices, (list, tuple)) or not any(
            isinstance(ix, torch.Tensor) and ix.dtype in (torch.bool, torch.uint8)
            for ix in indices):
        return 0
    shapes, kept, d = [], 1, 0
    for ix in indices:
        if isinstance(ix, torch.Tensor) and ix.dtype in (torch.bool, torch.uint8):
            shapes.append((_count(ix),))
            d += ix.dim()
        elif isinstance(ix, torch.Tensor):
            shapes.append(tuple(ix.shape))
            d += 1
        else:  # (None: the whole dim, kept)
            kept *= x.shape[d] if d < x.dim() else 1
            d += 1
    picked = math.prod(torch.broadcast_shapes(*shapes))
    return picked * kept * math.prod(x.shape[d:]) * x.element_size()


def _arange(start: Any, end: Any = None, step: Any = 1) -> int:
    """``arange(end)``, ``arange(start, end[, step])``: ceil((end - start) / step) values."""
    if end is None:
        start, end = 0, start
    start, end, step = (float(v) for v in (start, end, 1 if step is None else step))
    if step == 0 or not all(math.isfinite(v) for v in (start, end, step)):
        return 0  # (the kernel refuses it)
    return max(0, math.ceil((end - start) / step)) * 8


def _unique(x: Any, *_: Any) -> int:
    # values, the inverse and the counts: at most one each per element
    return x.numel() * (x.element_size() + 16) if isinstance(x, torch.Tensor) else 0


# overload -> (what it reads, the schema arguments passed to it, in order)
GUARDED: dict[Any, tuple[str, tuple[str, ...]]] = {}
NEEDS: dict[str, Callable[..., int]] = {
    "bincount": _bincount, "one_hot": _one_hot, "repeats": _repeats,
    "repeat_self": _repeat_self, "nonzero": _nonzero, "masked_select": _masked_select,
    "index": _index, "unique": _unique, "arange": _arange}
# overloads whose size is a number they are given: checked where that number is read from
# data as the program runs (an ``.item()``), not where it is a constant (held to the budget
# at load) or a size of the inputs (the memory bound's call check)
RANGES: dict[Any, tuple[str, ...]] = {}
for _op, _args in (("arange.default", ("end",)), ("arange.start", ("start", "end")),
                   ("arange.start_step", ("start", "end", "step")),
                   ("range.default", ("start", "end")),
                   ("range.step", ("start", "end", "step"))):
    _packet, _, _overload = _op.partition(".")
    _target = getattr(getattr(aten, _packet, None), _overload, None)
    if isinstance(_target, torch._ops.OpOverload):
        RANGES[_target] = _args
for _op, _kind, _args in (
        ("bincount.default", "bincount", ("self", "weights", "minlength")),
        ("one_hot.default", "one_hot", ("self", "num_classes")),
        ("repeat_interleave.Tensor", "repeats", ("repeats", "output_size")),
        ("repeat_interleave.self_Tensor", "repeat_self", ("self", "repeats", "dim",
                                                          "output_size")),
        ("nonzero.default", "nonzero", ("self",)), ("argwhere.default", "nonzero", ("self",)),
        ("masked_select.default", "masked_select", ("self", "mask")),
        ("index.Tensor", "index", ("self", "indices")),
        ("_unique.default", "unique", ("self",)), ("_unique2.default", "unique", ("self",)),
        ("unique_dim.default", "unique", ("self",)),
        ("unique_consecutive.default", "unique", ("self",)),
        ("unique_dim_consecutive.default", "unique", ("self",))):
    _packet, _, _overload = _op.partition(".")
    _target = getattr(getattr(aten, _packet, None), _overload, None)
    if isinstance(_target, torch._ops.OpOverload):
        GUARDED[_target] = (_kind, _args)


@run_time_check
def check(kind: str, node: str, limit: int, *args: Any) -> None:
    """Run time: refuse the call if the kernel of ``node`` would allocate over ``limit``
    bytes for these operands."""
    fn = NEEDS.get(kind)
    if fn is None or isinstance(limit, bool) or not isinstance(limit, int) or \
            active_tracer() is not None:
        return  # (a loaded program's module traced by st.export: its operands have no values)
    try:
        need = fn(*args)
    except (RuntimeError, ValueError, TypeError, IndexError, OverflowError):
        return  # operands the kernel itself refuses: its own error, when it runs
    if need > limit:
        raise memory_from_values(node, kind, need, limit)


def guard(graph: torch.fx.Graph, limit: int, dtypes: dict,
          is_sized: Callable[[Any], bool]) -> None:
    """Insert ``check`` before each node of ``graph`` whose kernel sizes its result by
    its operands' values.  The checks a file holds (a program saved after a load) are
    dropped first: the loader's own, with this load's budget, replace them (a file's check
    with a limit of its choosing would otherwise stand in for it).  ``dtypes``: node -> its
    dtype as the loader's own shape rules work it out (``memory.StaticMemory``; not the
    file's metadata): an index whose indices are known not to be masks sizes its result by
    their shapes, and is not guarded; ``is_sized(node)``: whether that evaluation bounds a
    number by the input sizes (an ``arange`` of one is not guarded)."""
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is check and not node.users:
            graph.erase_node(node)
    for node in list(graph.nodes):
        entry = GUARDED.get(node.target) if node.op == "call_function" else None
        if node.op == "call_function" and node.target in RANGES:
            entry = ("arange", RANGES[node.target])
            if all(is_sized(a) for a in node.args):
                continue
        if entry is None or (entry[0] == "index" and _no_masks(node, dtypes)):
            continue
        kind, names = entry
        given = {**dict(zip([a.name for a in node.target._schema.arguments], node.args)),
                 **node.kwargs}
        with graph.inserting_before(node):
            guard_node = graph.call_function(check, (kind, node.name, limit,
                                                     *(given.get(n) for n in names)))
        guard_node.meta["val"] = None
        guard_node.meta["stack_trace"] = node.meta.get("stack_trace", "")


def _no_masks(node: torch.fx.Node, dtypes: dict) -> bool:
    indices = node.args[1] if len(node.args) > 1 else node.kwargs.get("indices")
    if not isinstance(indices, (list, tuple)):
        return False
    return all(ix is None or (isinstance(ix, torch.fx.Node) and dtypes.get(ix) is not None
                              and dtypes[ix] not in (torch.bool, torch.uint8))
               for ix in indices)
