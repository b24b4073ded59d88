"""What a loaded program's ops allocate, and the checks before allocations of sizes read
from data.

``result_bytes`` is the loader's count of one op's allocation (``memory.StaticMemory``
sums them over a graph); ``guard_sizes`` puts a budget check before each allocating op
whose size is read from data as the program runs.
"""

from __future__ import annotations

import math
import operator
import re
from typing import Any

import torch

from safetrace.meta import TensorMeta
from safetrace.serialize.allowlist import ALLOCATING, SIZE_ARGS
from safetrace.serialize.work import MAY_COPY as _MAY_COPY
from safetrace.serialize.work import leaves as _leaves, loop_bytes, numel
from safetrace.trace.asserts import assert_sym

_STRIDED = frozenset(("empty_strided", "new_empty_strided", "as_strided"))


def result_bytes(op: Any, out: Any, args: Any, kwargs: dict) -> int:
    """What the op allocates for its results: views of inputs (a schema alias) nothing,
    a strided result the storage its strides span."""
    returns = op._schema.returns
    if returns and all(r.alias_info is not None for r in returns) and \
            op._opname not in _MAY_COPY:
        return 0
    if op._opname in _STRIDED and isinstance(out, TensorMeta):
        size = args[1] if len(args) > 1 else kwargs.get("size")
        stride = args[2] if len(args) > 2 else kwargs.get("stride")
        if op._opname == "empty_strided":
            size, stride = args[0] if args else kwargs.get("size"), size
        span = _extent(size, stride)
        if span is not None:
            return span * out.dtype.itemsize
    return out_bytes(out) + _workspace(op, args)


def _workspace(op: Any, args: Any) -> Any:
    """Memory an op's kernel takes besides its results: attention's scores and their
    softmax ([..., L, S] each, in the query's dtype) on the math path; mvlgamma's terms."""
    name = op._opname
    if name in ("mvlgamma", "mvlgamma_"):
        return loop_bytes(op, args)
    if not (name.startswith("scaled_dot_product") or name.startswith("_scaled_dot_product")) \
            or len(args) < 2 or not isinstance(args[0], TensorMeta) or \
            not isinstance(args[1], TensorMeta) or not args[0].shape or len(args[1].shape) < 2:
        return 0
    q, k = args[0], args[1]
    return 2 * math.prod(q.shape[:-1]) * k.shape[-2] * q.dtype.itemsize


def out_bytes(out: Any) -> Any:
    """Bytes of the tensors in ``out`` (an int, or a symbolic int of the input sizes)."""
    total: Any = 0
    for t in _leaves(out):
        if isinstance(t, TensorMeta):
            total = total + numel(t) * t.dtype.itemsize
    return total


def _extent(size: Any, stride: Any) -> int | None:
    if not isinstance(size, (list, tuple)) or not isinstance(stride, (list, tuple)) or \
            not all(isinstance(x, int) for x in (*size, *stride)):
        return None  # (symbolic: counted as the result's size)
    if any(x == 0 for x in size):
        return 0
    return 1 + sum((x - 1) * abs(st) for x, st in zip(size, stride))


def guard_sizes(graph: torch.fx.Graph, max_numel: int, is_sized: Any) -> None:
    """Before each allocation of a size read from data as the program runs
    (``zeros(n.item())``), a check that it asks for at most ``4 * max_numel`` elements: the
    call is refused (a RuntimeAssertionError naming the budget) before allocating.
    ``is_sized(node)``: whether the loader's own evaluation (``StaticMemory.is_sized``)
    found the node's int bounded by the input sizes (not the file's metadata, which could
    claim so for an ``.item()``)."""
    limit = 4 * max_numel
    for node in list(graph.nodes):
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload) or \
                target._opname not in ALLOCATING:
            continue
        names = [a.name for a in target._schema.arguments if not a.kwarg_only]
        ints = {a.name for a in target._schema.arguments
                if "int" in str(a.real_type).lower() and "Tensor" not in str(a.real_type)}
        given = {**dict(zip(names, node.args)), **node.kwargs}
        sizes = _leaves([v for k, v in given.items() if k in SIZE_ARGS and k in ints])
        if all(is_sized(s) for s in sizes):
            continue  # constant sizes are held to the budget at load (allowlist.AllocBudget),
            # sizes of the inputs' shapes to the ranges the caller declared
        with graph.inserting_before(node):
            total: Any = 1
            for s in sizes:
                if isinstance(s, torch.fx.Node):
                    s = call_node(graph, operator.abs, (s,))
                elif not isinstance(s, int) or s == 1:
                    continue
                total = call_node(graph, operator.mul, (total, s))
            ok = call_node(graph, operator.le, (total, limit))
            check = graph.call_function(assert_sym, (ok, (
                f"node {node.name!r} ({target}): a size computed as the program runs asks "
                f"for more than {limit} elements, over the budget (max_alloc_numel = "
                f"{max_numel}); if you trust the file, st.load(path, budgets="
                f"{{'max_alloc_numel': <larger>}})")))
            check.meta["val"] = None
            check.meta["stack_trace"] = node.meta.get("stack_trace", "")


# (how ``guard_sizes``' checks read: a loaded program saved again holds them, and its
# loader drops them, ``requirements.strip``, as it makes its own with its budget; kept,
# each save and load added one more, and one over an argument the file misuses, ``abs`` of
# the tensor given to ``full`` as its size, made the saved file refused)
_GUARD = re.compile(r"node '[A-Za-z_][A-Za-z0-9_]*' \([^\n]*\): a size computed as the program "
                    r"runs asks for more than \d+ elements, over the budget \(max_alloc_numel "
                    r"= \d+\); if you trust the file, st\.load\(path, budgets=\{'max_alloc_numel'"
                    r": <larger>\}\)")


def is_guard(node: torch.fx.Node) -> bool:
    """Whether ``node`` is a check ``guard_sizes`` put in a graph."""
    return node.op == "call_function" and node.target is assert_sym and \
        len(node.args) == 2 and isinstance(node.args[1], str) and \
        _GUARD.fullmatch(node.args[1]) is not None


def call_node(graph: torch.fx.Graph, fn: Any, args: tuple) -> torch.fx.Node:
    """A node of Python arithmetic, its value (a symbolic int or bool) computed from its
    arguments' as the tracer would have recorded it."""
    node = graph.call_function(fn, args)
    vals = [a.meta.get("val") if isinstance(a, torch.fx.Node) else a for a in args]
    try:
        node.meta["val"] = fn(*vals) if all(v is not None for v in vals) else None
    except Exception:  # noqa: BLE001 - a value that cannot be computed here: unknown
        node.meta["val"] = None
    return node
