"""Index checks moved before the program's first state write.

An indexing op checks its indices when it runs: transformers' StaticCache writes
``index_copy_(2, arange(seq) + cumulative_length, key)`` after it wrote the length
(``cumulative_length.copy_(cache_position[0])``, then ``add_(seq)``), so positions past the
cache (``cache_position`` 60..66 in 64 slots) raise IndexError with the length already
written, in eager and in the program.  Where the op's indices are ``arange(n)`` plus one
value, and that value is known before the first write (an input, or a copy of one into
the state), the program asserts the op's own condition -- ``0 <= v`` and ``v + n <= L``
(``-L <= v`` for ops taking negative indices) -- before that write: a call the op would
refuse is refused with every buffer untouched.  Nothing is clamped; a call the op accepts
passes the check (it is the op's own).

Sound by construction: only the main graph (every successful call runs it), only indices
`index_relations` proves are checked against a static dim, only ``n`` with ``n >= 1`` on
the whole declared space (no index, no check in eager), and only values whose memory no
op writes between where they are read here and where the op reads them (the one write
allowed is the state copy whose source is read instead).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.errors import index_out_of_bounds
from safetrace.exporter.index_bounds import index_relations
from safetrace.meta.tensor import TensorMeta
from safetrace.trace.graph import one_line
from safetrace.trace.mutation import mutates, storage_root, written_args
from safetrace.trace.proxy import Proxy
from safetrace.trace.source import short

aten = torch.ops.aten


def check_indices_first(ep: Any) -> Any:
    """`ep` with the index checks of its state writes asserted before the first write."""
    graph = ep.graph
    relations = index_relations(graph)
    if not relations:  # (most programs: no walk of every node's schema)
        return ep
    order = {n: i for i, n in enumerate(graph.nodes)}
    memory = _Memory(graph)
    first = next((w for w, t in memory.written if memory.root(t).op == "placeholder"), None)
    if first is None or memory.opaque:
        return ep
    lows = {s.name: s.lo for s in ep.contract.symbols}
    added: set = set()
    for _, most, node, _ in relations:
        if order[node] <= order[first]:
            continue
        found = _arange_plus(_index_of(node))
        if found is None:
            continue
        count, offset, index = found
        if not _positive(count, lows) or isinstance(count, torch.fx.Node) and \
                order[count] >= order[first]:
            continue
        value = _value_at(offset, index, first, order, memory)
        if value is None:
            continue
        negative = node.target in (aten.index_put.default, aten.index_put_.default,
                                   aten.index.Tensor)  # (indices in [-L, L))
        size = most.value // 2 if negative else most.value
        lo = -size if negative else 0
        if (value, count, lo, size) in added:
            continue  # (the keys' and the values' caches: one check)
        added.add((value, count, lo, size))
        with graph.inserting_before(first):
            _assert(ep, value, count, lo, size, node)
    if added:
        ep._gm = None  # (its code is generated again from the graph)
    return ep


def _assert(ep: Any, value: Any, count: Any, lo: Any, size: Any, node: Any) -> None:
    graph = ep.graph
    meta = value.meta["val"].st_meta
    message = one_line(str(_refused(ep, node.meta.get("stack_trace", ""), value, count, lo,
                                    size)))  # (ep.module() shows the catalogue's: refusal)

    def call(target: Any, args: tuple, dtype: Any) -> Any:
        out = graph.call_function(target, args)
        out.meta.update(val=Proxy(TensorMeta(tuple(meta.shape), dtype, meta.device), out),
                        stack_trace=node.meta.get("stack_trace", ""))
        return out

    above = call(aten.ge.Scalar, (value, lo), torch.bool)
    end = call(aten.add.Tensor, (value, count), meta.dtype)
    below = call(aten.le.Scalar, (end, size), torch.bool)
    ok = call(aten.logical_and.default, (above, below), torch.bool)
    done = graph.call_function(aten._assert_async.msg, (ok, message))
    done.meta.update(val=None, stack_trace=node.meta.get("stack_trace", ""))


def refusal(ep: Any, err: RuntimeError, leaves: list) -> Exception | None:
    """The catalogue's error for `err`, raised by one of `ep`'s index checks on the call's
    input `leaves` (with the offset and count this call gave, where they are inputs' own),
    or None: another error.  Read from the graph only when a call fails (a saved and
    loaded program's graph holds the same nodes and message)."""
    text = str(err)
    for node in ep.graph.find_nodes(op="call_function", target=aten._assert_async.msg):
        if len(node.args) != 2 or node.args[1] != text:
            continue
        found = _checked(node.args[0])
        if found is not None:
            value, count, lo, size = found
            try:
                at = (_input_value(ep, value, leaves), _input_count(ep, count, leaves))
            except Exception:  # noqa: BLE001 - the message without this call's values
                at = (None, None)
            return _refused(ep, node.meta.get("stack_trace", ""), value, count, lo, size,
                            None if None in at else at)  # type: ignore[arg-type]
    return None


def _refused(ep: Any, trace: str, value: Any, count: Any, lo: int, size: int,
             values: tuple[int, int] | None = None) -> Exception:
    return index_out_of_bounds(short(trace) if trace else "an indexing op",
                               _value_name(ep, value), _count_name(ep, count), lo, size,
                               values)


def _checked(ok: Any) -> tuple | None:
    """(value, count, lo, size) of the condition `_assert` builds, else None."""
    if not isinstance(ok, torch.fx.Node) or ok.target is not aten.logical_and.default:
        return None
    above, below = ok.args
    if not (isinstance(above, torch.fx.Node) and above.target is aten.ge.Scalar and
            isinstance(below, torch.fx.Node) and below.target is aten.le.Scalar):
        return None
    end = below.args[0]
    if not isinstance(end, torch.fx.Node) or end.target is not aten.add.Tensor or \
            end.args[0] is not above.args[0]:
        return None
    return above.args[0], end.args[1], above.args[1], below.args[1]


def _user_input(ep: Any, node: Any) -> int | None:
    """The flat input index of a user input's placeholder, else None."""
    if not isinstance(node, torch.fx.Node) or node.op != "placeholder":
        return None
    places = ep.graph.find_nodes(op="placeholder")
    for spec, ph in zip(ep.graph_signature.input_specs, places):
        if ph is node:
            return spec.leaf if spec.kind == "user_input" else None
    return None


def _selected(ep: Any, value: Any) -> tuple[int, int, int] | None:
    """(input index, dim, index) where `value` is ``x.select(dim, index)`` of an input."""
    if value.target is aten.select.int and len(value.args) == 3:
        leaf = _user_input(ep, value.args[0])
        dim, index = value.args[1], value.args[2]
        if leaf is not None and type(dim) is int and type(index) is int:
            return leaf, dim, index
    return None


def _value_name(ep: Any, value: Any) -> str:
    picked = _selected(ep, value)
    if picked is not None:
        leaf, dim, index = picked
        path = ep.contract.inputs[leaf].path
        return f"{path}[{index}]" if dim == 0 else f"{path}.select({dim}, {index})"
    whole = _user_input(ep, value)
    if whole is not None:
        return f"{ep.contract.inputs[whole].path}.item()"
    return "the offset"


def _count_name(ep: Any, count: Any) -> str:
    if type(count) is int:
        return str(count)
    expr = getattr(count.meta.get("val"), "expr", None)
    for s in ep.contract.symbols:
        if expr is not None and expr.op == "sym" and s.name == expr.name and s.where:
            return str(s.where)
    return "the count"


def _input_value(ep: Any, value: Any, leaves: list) -> int | None:
    picked = _selected(ep, value)
    if picked is not None:
        leaf, dim, index = picked
        return int(leaves[leaf].select(dim, index))
    whole = _user_input(ep, value)
    return None if whole is None else int(leaves[whole].reshape(()))


def _input_count(ep: Any, count: Any, leaves: list) -> int | None:
    if type(count) is int:
        return count
    if count.target is aten.sym_size.int and type(count.args[1]) is int:
        leaf = _user_input(ep, count.args[0])
        if leaf is not None:
            return int(leaves[leaf].shape[count.args[1]])
    return None


def _index_of(node: Any) -> Any:
    if node.target in (aten.index_put.default, aten.index_put_.default, aten.index.Tensor):
        given = [i for i in node.args[1] if i is not None]
        return given[0] if len(given) == 1 else None
    return node.args[2]


def _arange_plus(index: Any) -> tuple[Any, Any, Any] | None:
    """(n, v, the index node) for ``arange(n) + v`` (either order), v a tensor."""
    if not isinstance(index, torch.fx.Node) or index.target is not aten.add.Tensor or \
            index.kwargs or len(index.args) != 2:
        return None
    a, b = index.args
    for ar, v in ((a, b), (b, a)):
        if isinstance(ar, torch.fx.Node) and ar.target is aten.arange.default and \
                len(ar.args) == 1 and isinstance(v, torch.fx.Node) and \
                _one_element(_meta(v)):
            return ar.args[0], v, index
    return None


def _one_element(meta: Any) -> bool:
    return isinstance(meta, TensorMeta) and all(type(s) is int and s == 1 for s in meta.shape)


def _meta(node: Any) -> Any:
    val = node.meta.get("val")
    return getattr(val, "st_meta", None)


def _positive(count: Any, lows: dict) -> bool:
    """Whether ``n >= 1`` wherever the contract admits the call."""
    if type(count) is int:
        return count >= 1
    val = count.meta.get("val") if isinstance(count, torch.fx.Node) else None
    expr = getattr(val, "expr", None)
    if expr is None or expr.op != "sym":
        return False
    low = lows.get(expr.name)
    return low is not None and low >= 1


def _value_at(x: Any, at: Any, first: Any, order: dict, memory: Any) -> Any:
    """A node read before `first` that holds the value `x` holds when `at` reads it;
    None when no such node is known."""
    writes = [w for w in memory.writes_of(x) if order[w] < order[at]]
    if not writes:
        return x if x.op == "placeholder" or order[x] < order[first] else None
    if x.op != "placeholder" or len(writes) != 1:
        return None
    (w,) = writes
    if w.target is not aten.copy_.default or w.args[0] is not x or len(w.args) != 2 or \
            not isinstance(w.args[1], torch.fx.Node):
        return None
    src, mine = _meta(w.args[1]), _meta(x)
    if src is None or mine is None or src.dtype != mine.dtype or \
            tuple(src.shape) != tuple(mine.shape):
        return None
    return _value_at(w.args[1], w, first, order, memory)


class _Memory:
    """Every write of the graph with the tensor it writes (``trace/mutation``'s reading of
    the schemas), and `root`, the storage a chain of views or in-place results starts
    from (``mutation.storage_root``: split/unbind elements included); `opaque` when a call
    (control flow) may write what this does not see."""

    root = staticmethod(storage_root)

    def __init__(self, graph: Any) -> None:
        self.written: list = []  # (write node, the argument it writes), in graph order
        self.opaque = False
        for node in graph.nodes:
            target = node.target
            if node.op != "call_function":
                continue
            if isinstance(target, torch._ops.HigherOrderOperator):
                self.opaque = True
            elif isinstance(target, torch._ops.OpOverload) and mutates(target):
                for v in written_args(target, node.args, node.kwargs):
                    for t in v if isinstance(v, (list, tuple)) else (v,):
                        if isinstance(t, torch.fx.Node):
                            self.written.append((node, t))

    def writes_of(self, node: Any) -> list:
        r = self.root(node)
        return [w for w, t in self.written if self.root(t) is r]


__all__ = ["check_indices_first", "refusal"]
