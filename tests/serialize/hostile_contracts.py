"""Hostile files whose contract admits what their graph cannot run (category ``contracts``).

The exporter writes only programs whose contract implies every kernel's requirement; a
file can declare sizes or kinds of value its graph fails on.  Each case is a real saved
program with a node inserted or a field changed so that a kernel fails at some declared
sizes (refused before any op runs: an InputMismatchError, not torch's own error, at the
sizes the case calls with), at every declared size, or on an input of another kind than
the contract declares (refused at load).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

import safetrace as st
from tests.serialize import hostile
from tests.serialize.hostile_audit import _chain, _l
from tests.serialize import surgery

A = "torch.ops.aten."
MISMATCH = r"^InputMismatchError: .*would fail: it needs"


class CondModel(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> Any:
        return torch.cond(x.sum() > 0, lambda a: a * 2, lambda a: a - 1, (x,))


class LoopModel(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> Any:
        from torch._higher_order_ops.while_loop import while_loop

        return while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2),
                          (torch.zeros((), dtype=torch.int64), x))


class MapModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(3))

    def forward(self, xs: torch.Tensor) -> Any:
        from torch._higher_order_ops.map import map as hop_map

        return hop_map(lambda x, w: (x * w).sum(0, keepdim=True), xs, self.w)


class ScanModel(torch.nn.Module):
    def forward(self, init: torch.Tensor, xs: torch.Tensor) -> Any:
        from torch._higher_order_ops.scan import scan

        return scan(lambda c, x: (c + x, (c * x).sum(0)), init, xs)


class StateModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("acc", torch.zeros(5))
        self.register_buffer("n", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> Any:
        self.acc.add_(x.sum(0))
        self.n.add_(1)
        return x + self.acc


class IntModel(torch.nn.Module):
    def forward(self, x: torch.Tensor, k: int) -> Any:
        return x[:k] * k


@functools.lru_cache(maxsize=None)
def _saved(kind: str) -> bytes:
    n = st.Dim("n", min=0, max=32)
    if kind == "cond":
        ep = st.export(CondModel(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: n}})
    elif kind == "loop":
        ep = st.export(LoopModel(), (torch.randn(4),), dynamic_shapes={"x": {0: n}})
    elif kind == "map":
        ep = st.export(MapModel(), (torch.randn(4, 3),),
                       dynamic_shapes={"xs": {0: st.Dim("n", min=1, max=32)}})
    elif kind == "scan":
        ep = st.export(ScanModel(), (torch.randn(3), torch.randn(5, 3)),
                       dynamic_shapes={"init": None, "xs": {0: st.Dim("t", min=1, max=32)}})
    elif kind == "state":
        ep = st.export(StateModel(), (torch.randn(3, 5),), dynamic_shapes={"x": {0: n}})
    else:
        ep = st.export(IntModel(), (torch.randn(8, 2), 3),
                       dynamic_shapes={"x": {0: st.Dim("m", min=1, max=32)},
                                       "k": st.Dim("k", min=1, max=8)})
    return surgery.saved(ep)


def _edit(kind: str, change: Callable[[dict], None]) -> bytes:
    doc, tensors = hostile.parts(_saved(kind))
    change(doc)
    return hostile.pack(doc, tensors)


def _node(doc: dict, target: str) -> dict:
    return next(n for n in doc["nodes"] if n.get("target") == target)


def _pred_of_many(doc: dict) -> None:
    """The cond's predicate replaced by a per-row sum of x: [n] elements."""
    at = doc["nodes"].index(_node(doc, "torch.ops.higher_order.cond"))
    doc["nodes"].insert(at, {"name": "rows", "op": "call_function",
                             "target": A + "sum.dim_IntList", "args": [{"node": "x"}, _l(1)]})
    _node(doc, "torch.ops.higher_order.cond")["args"][0] = {"node": "rows"}


def _carried_swapped(doc: dict) -> None:
    """The while_loop's carried values swapped: its condition compares x, not the count."""
    args = _node(doc, "torch.ops.higher_order.while_loop")["args"]
    args[2]["tuple"].reverse()
    _no_values(doc)


def _no_values(doc: dict) -> None:
    """Drop every node's recorded value (but the main graph's placeholders'), as the
    writer of an edited file would (see hostile_static.without_values)."""
    for n in [n for g in doc.get("subgraphs", []) for n in g["nodes"]] + doc["nodes"]:
        if n["op"] != "placeholder" or n not in doc["nodes"]:
            n.get("meta", {}).pop("val", None)


def _dims_reversed(doc: dict) -> None:
    """map's xs declared [3, n] instead of [n, 3]: each slice [n] times the weight [3]."""
    doc["contract"]["inputs"][0]["dims"].reverse()
    next(n for n in doc["nodes"] if n["name"] == "xs")["meta"]["val"]["tensor"][
        "shape"].reverse()
    _no_values(doc)


def _init_longer(doc: dict) -> None:
    """scan's init declared [4]: the body adds it to slices of 3 at every call."""
    doc["contract"]["inputs"][0]["dims"][0]["size"] = 4


def _body_swapped(doc: dict) -> None:
    """The while_loop body returns its carried values swapped (an int64 count for the
    float tensor): not what torch's while_loop runs."""
    body = next(g for g in doc["subgraphs"] if "body" in g["path"])
    body["nodes"][-1]["args"][0]["tuple"].reverse()


def _nested_operands(doc: dict) -> None:
    scan = _node(doc, "torch.ops.higher_order.scan")
    scan["args"][2] = _l(scan["args"][2])


def _count_into_acc(doc: dict) -> None:
    """The value written back to the [5] buffer is the [] counter: the buffer would be
    replaced by a tensor of another shape after the first call."""
    out = doc["nodes"][-1]["args"][0]["tuple"]
    out[0] = dict(out[1])


def _index_carried(doc: dict) -> None:
    """getitem of the loop's carried count (a tensor), not of the loop's results."""
    _node(doc, "operator.getitem")  # (the first: the loop's result 0)
    second = [n for n in doc["nodes"] if n.get("target") == "operator.getitem"][1]
    second["args"][0] = {"node": "getitem"}


def _int_with_layout(doc: dict) -> None:
    doc["contract"]["inputs"][1]["layout"] = "zeros"


def _int_as_tensor(doc: dict) -> None:
    at = len(doc["nodes"]) - 1
    doc["nodes"].insert(at, {"name": "evil", "op": "call_function", "target": A + "relu.default",
                             "args": [{"node": "k"}]})


def _no_slices(doc: dict) -> None:
    """The map's xs (the scan's) declared with a length from 0: torch's kernel reads slice
    0 (IndexError on none; st.export refuses such a Dim)."""
    for table in (doc["symbols"], doc["contract"]["symbols"]):
        table[0]["lo"] = 0


def _carry_doubled(doc: dict) -> None:
    """The loop body returns its carried x as cat([2 * x, 2 * x]), 60 times: each
    iteration doubles it (legal: torch's loop takes it; the loader evaluated one iteration,
    at x's size, and 60 of them allocate 2**60 x)."""
    cond = next(g for g in doc["subgraphs"] if "cond" in g["path"])["nodes"]
    next(n for n in cond if n["name"] == "lt")["args"][1] = 60
    body = next(g for g in doc["subgraphs"] if "body" in g["path"])["nodes"]
    body.insert(len(body) - 1, {"name": "dbl", "op": "call_function",
                                "target": A + "cat.default", "args": [_l({"node": "mul"},
                                                                         {"node": "mul"})]})
    body[-1]["args"][0]["tuple"][1] = {"node": "dbl"}


def _scan_carry_grows(doc: dict) -> None:
    body = doc["subgraphs"][0]["nodes"]
    body.insert(len(body) - 1, {"name": "dbl", "op": "call_function",
                                "target": A + "cat.default", "args": [_l({"node": "add"},
                                                                         {"node": "add"})]})
    body[-1]["args"][0]["tuple"][0] = {"node": "dbl"}


def _call(shape: tuple, *more: Any) -> Callable[[Any], None]:
    def run(ep: Any) -> None:
        ep.module()(torch.randn(shape, generator=torch.Generator().manual_seed(0)), *more)
    return run


def contract_cases(m: hostile.Maker, blob: Callable, add: Callable, warm: bool = True) -> None:
    ct = "contracts"
    for kind in ("cond", "loop", "map", "scan", "int", "state") if warm else ():
        _saved(kind)  # (exported now: a case's export would grow the intern tables)

    def at_call(name: str, make: Callable[[], bytes], after: Callable) -> None:
        add(ct, name, lambda tmp: hostile.Spec(make(), "call", after=after, match=MISMATCH))

    x = m.ref()
    # a kernel that fails at some declared sizes: refused before any op runs
    at_call("broadcast_at_some_sizes", lambda: _chain(
        m, ("c", A + "ones.default", [_l(5, 8)]), ("evil", A + "add.Tensor", [x, {"node": "c"}])),
        _call((4, 8)))
    at_call("view_at_some_sizes", lambda: _chain(
        m, ("evil", A + "view.default", [x, _l(4, 16)])), _call((4, 8)))
    at_call("cond_predicate_of_many", lambda: _edit("cond", _pred_of_many), _call((4, 3)))
    at_call("while_condition_of_many", lambda: _edit("loop", _carried_swapped), _call((4,)))
    at_call("map_body_at_some_sizes", lambda: _edit("map", _dims_reversed), _call((3, 4)))
    at_call("map_over_no_slices", lambda: _edit("map", _no_slices), _call((0, 3)))
    add(ct, "while_body_doubles_its_carry", lambda tmp: hostile.Spec(
        _edit("loop", _carry_doubled), "call", {"budgets": {"max_alloc_numel": 1000}},
        after=_call((3,)), match="over the budget"))
    blob(ct, "scan_carry_grows", lambda: _edit("scan", _scan_carry_grows),
         match="carries values of one dtype and shape")
    add(ct, "scan_over_no_slices", lambda tmp: hostile.Spec(
        _edit("scan", _no_slices), "call", after=lambda ep: ep.module()(
            torch.ones(3), torch.ones(0, 3)), match=MISMATCH))
    # ... at every declared size (a scan body runs at least once): refused at load
    blob(ct, "scan_body_at_every_size", lambda: _edit("scan", _init_longer),
         match="fails at every call")
    # an input used as what the contract does not declare it: refused at load
    blob(ct, "tensor_input_as_size", lambda: _chain(
        m, ("evil", A + "zeros.default", [_l(x)])), match="declares a tensor")
    blob(ct, "tensor_input_in_size_arithmetic", lambda: _chain(
        m, ("evil", "operator.mul", [x, 2])), match="declares a tensor")
    blob(ct, "tensor_in_size_assert", lambda: _chain(
        m, ("t", A + "relu.default", [x]), ("le", "operator.le", [1, {"node": "t"}]),
        ("evil", "safetrace.assert_sym", [{"node": "le"}, "no"])),
        match="computes with numbers")
    blob(ct, "int_input_as_tensor", lambda: _edit("int", _int_as_tensor),
         match="declares a number")
    blob(ct, "int_input_with_layout", lambda: _edit("int", _int_with_layout),
         match="an int input")
    # structure the loader's evaluation did not check (found by benchmarks/hostile_probe.py)
    blob(ct, "getitem_of_a_tensor", lambda: _chain(
        m, ("t", A + "relu.default", [x]), ("evil", "operator.getitem", [{"node": "t"}, 1])),
        match="several values")
    blob(ct, "while_body_returns_other_dtypes", lambda: _edit("loop", _body_swapped),
         match="carries values of one dtype")
    blob(ct, "scan_operands_nested", lambda: _edit("scan", _nested_operands),
         match="flat list")
    blob(ct, "getitem_of_a_carried_tensor", lambda: _edit("loop", _index_carried),
         match="given a tensor")
    blob(ct, "buffer_written_with_another_shape", lambda: _edit("state", _count_into_acc),
         match="keeps its buffer's shape")
    blob(ct, "dim_out_of_range_beside_a_data_size", lambda: _chain(
        m, ("k", "builtins.round", [{"node": "sym_size_int"}]),  # (not worked out at load)
        ("evil", A + "slice.Tensor", [x, 1 << 40, None, {"node": "k"}])),
        match="dim 1099511627776")
