"""Conditions a subgraph's ops establish hold only inside it (``Env.scope``).

A hostile file can put into a ``torch.cond`` branch (or a while_loop / map body) an op
whose requirement "proves" a size (``x.view(4, 3)`` needs ``x.shape[0] == 4``); that is no
fact for the outer graph (the branch may not run, and its requirement is what it needs,
not what holds).  Assumed there, the outer graph's own requirement (a broadcast with
``[4, 3]``) and its memory (a ``zeros([n, n, n])``) looked decided, and a call at another
size ran into torch's own error, or allocated past the budget.  Each file is a real saved
program with nodes inserted; the refusal must be ours, before any op runs.
"""

from __future__ import annotations

from typing import Callable

import pytest
import torch

import safetrace as st
from tests.serialize import hostile
from tests.serialize.hostile_contracts import _saved
from tests.serialize import surgery

A = "torch.ops.aten."


def _l(*items: object) -> dict:
    return {"list": list(items)}


def _op(name: str, target: str, *args: object) -> dict:
    return {"name": name, "op": "call_function", "target": A + target, "args": list(args)}


def _file(kind: str, edit: Callable[[dict], None]) -> bytes:
    doc, tensors = hostile.parts(_saved(kind))
    edit(doc)
    return hostile.pack(doc, tensors)


def _sub(doc: dict, part: str) -> list:
    return next(g for g in doc["subgraphs"] if part in g["path"])["nodes"]


def _then_outer(doc: dict, nodes: list, out: int = 0) -> None:
    """Insert ``nodes`` before the output; the last of them replaces output ``out``."""
    doc["nodes"][-1:-1] = nodes
    doc["nodes"][-1]["args"][0]["tuple"][out] = {"node": nodes[-1]["name"]}


def _broadcast_after(x: str, shape: tuple, ref: str) -> list:
    return [_op("c", "ones.default", _l(*shape)), _op("evil", "add.Tensor", {"node": x},
                                                    {"node": "c"})]


def _cond_proves(doc: dict) -> None:
    _sub(doc, "true_graph")[1:1] = [_op("v", "view.default", {"node": "x"}, _l(4, 3))]


def _cond_then_broadcast(doc: dict) -> None:
    _cond_proves(doc)
    _then_outer(doc, _broadcast_after("x", (4, 3), "x"))


def _cond_then_cube(doc: dict) -> None:
    _cond_proves(doc)
    _then_outer(doc, [_op("n", "sym_size.int", {"node": "x"}, 0),
                      _op("big", "zeros.default", _l({"node": "n"}, {"node": "n"}, {"node": "n"})),
                      _op("s", "sum.default", {"node": "big"}),
                      _op("evil", "add.Tensor", {"node": "getitem"}, {"node": "s"})])


def _loop_body_proves(doc: dict) -> None:
    _sub(doc, "body")[2:2] = [_op("v", "view.default", {"node": "arg1"}, _l(4))]
    _then_outer(doc, _broadcast_after("x", (4,), "x"), out=1)


def _map_body_proves(doc: dict) -> None:
    m = next(n for n in doc["nodes"] if n.get("target") == "torch.ops.higher_order.map_impl")
    m["args"][2]["list"].append({"node": "xs"})
    body = _sub(doc, "body")
    body.insert(2, {"name": "arg2", "op": "placeholder"})
    body.insert(3, _op("v", "view.default", {"node": "arg2"}, _l(4, 3)))
    _then_outer(doc, _broadcast_after("xs", (4, 3), "xs"))
    for table in (doc["symbols"], doc["contract"]["symbols"]):  # (n >= 0: with no slices
        table[0]["lo"] = 0  # the body, and what it needs, does not run)


CASES = {  # name -> (program, edit, a size the outer op fails at, one it runs at, budgets)
    "cond_branch_then_broadcast": ("cond", _cond_then_broadcast, (6, 3), (4, 3), None),
    "cond_branch_then_memory": ("cond", _cond_then_cube, (32, 3), (4, 3),
                                {"max_alloc_numel": 1000}),
    "while_body_then_broadcast": ("loop", _loop_body_proves, (6,), (4,), None),
    "map_body_then_broadcast": ("map", _map_body_proves, (0, 3), (4, 3), None),
}


@pytest.mark.parametrize("name", CASES)
def test_subgraph_facts_do_not_reach_the_outer_graph(name):
    kind, edit, bad, good, budgets = CASES[name]
    ep = st.load(_file(kind, edit), budgets=budgets)
    mod = ep.module()
    # (negative inputs: the cond takes its false branch, which needs nothing)
    with pytest.raises(st.InputMismatchError, match=r"at these input sizes"):
        mod(-torch.ones(bad))
    if kind != "map":  # (torch's map kernel's first call imports functorch: ~2 s)
        mod(-torch.ones(good))


# -- requirements only a point inside the graph can tell (serialize/requirements.py) ------
# A branch's kernel runs only where the branch is taken, a loop body's on carried numbers
# that change each iteration, a kernel on a size read from data (``.item()``) on a value
# no input size gives: before, their requirements were dropped, and such a file ran into
# torch's own error (or allocated past the budget) as the graph ran.
OWN = r"the loaded program's node 'v' .* would fail here: it needs"


def _branch_needs(doc: dict) -> None:
    _sub(doc, "true_graph")[1:1] = [_op("c", "ones.default", _l(4, 3)),
                                    _op("v", "add.Tensor", {"node": "x"}, {"node": "c"})]


def _int_loop(body: list, limit: int) -> Callable[[dict], None]:
    """The int-input program returning ``while_loop(i < limit, body)`` carrying (k, x): the
    body gets the count as ``a0`` and x as ``a1``, and returns (a0 + 1, a1)."""
    def edit(doc: dict) -> None:
        ref = {"node": "wl"}
        doc["nodes"][-1:] = [
            {"name": "wc", "op": "get_attr", "target": "wc"},
            {"name": "wb", "op": "get_attr", "target": "wb"},
            {"name": "wl", "op": "call_function", "target": "torch.ops.higher_order.while_loop",
             "args": [{"node": "wc"}, {"node": "wb"}, {"tuple": [{"node": "k"}, {"node": "x"}]},
                      {"tuple": []}]},
            {"name": "g1", "op": "call_function", "target": "operator.getitem", "args": [ref, 1]},
            {"name": "output", "op": "output", "args": [{"tuple": [{"node": "g1"}]}]}]
        ph = [{"name": "a0", "op": "placeholder"}, {"name": "a1", "op": "placeholder"}]
        step = {"name": "nx", "op": "call_function", "target": "operator.add",
                "args": [{"node": "a0"}, 1]}
        doc["subgraphs"] = [
            {"path": "wc", "nodes": ph + [
                {"name": "lt", "op": "call_function", "target": "operator.lt",
                 "args": [{"node": "a0"}, limit]},
                {"name": "output", "op": "output", "args": [{"node": "lt"}]}]},
            {"path": "wb", "nodes": ph + [step, *body, {"name": "output", "op": "output", "args": [
                {"tuple": [{"node": "nx"}, {"node": "a1"}]}]}]}]
    return edit


def _item_sized_view(doc: dict) -> None:
    _then_outer(doc, [_op("nz", "count_nonzero.default", {"node": "x"}),
                      _op("u", "_local_scalar_dense.default", {"node": "nz"}),
                      _op("v", "view.default", {"node": "x"}, _l({"node": "u"}, 3))])


def test_a_branch_kernel_is_checked_where_the_branch_runs():
    mod = st.load(_file("cond", _branch_needs)).module()
    with pytest.raises(st.RuntimeAssertionError, match=OWN):
        mod(torch.ones(6, 3))  # (the true branch: [6, 3] + [4, 3])
    x = torch.randn(4, 3).abs() + 1
    torch.testing.assert_close(mod(x), x * 2)
    mod(-torch.ones(6, 3))  # (the false branch needs nothing)


def test_a_loop_body_kernel_is_checked_at_every_iteration():
    """``view(x, [i, 2])`` with i the carried count from k: the loader's evaluation took i
    for k (checked before the call), but at the next iteration it is k + 1."""
    view = _op("v", "view.default", {"node": "a1"}, _l({"node": "a0"}, 2))
    mod = st.load(_file("int", _int_loop([view], 5))).module()
    assert mod(torch.ones(4, 2), 4).shape == (4, 2)  # (i = 4 passes, at 5 it stops)
    with pytest.raises(st.RuntimeAssertionError, match=OWN):
        mod(torch.ones(4, 2), 3)  # (i = 3 fails)
    assert mod(torch.ones(4, 2), 8).shape == (4, 2)  # (the body never runs)


def test_a_loop_body_allocation_of_a_carried_count_is_checked():
    """``zeros([i] * 5)`` with i counting from k (1 to 8) to 7: checked at load and at
    call with k for i, it allocated 7**5 floats past a budget of 4000 at the later
    iterations."""
    power = _op("v", "zeros.default", _l(*[{"node": "a0"}] * 5))
    mod = st.load(_file("int", _int_loop([power], 8)), budgets={"max_alloc_numel": 1000}).module()
    with pytest.raises(st.RuntimeAssertionError, match="over the budget"):
        mod(torch.ones(4, 2), 1)
    assert mod(torch.ones(4, 2), 8).shape == (4, 2)  # (the body never runs)


def test_a_kernel_on_a_size_read_from_data_is_checked_before_it():
    mod = st.load(_file("cond", _item_sized_view)).module()
    with pytest.raises(st.RuntimeAssertionError, match=OWN):
        mod(torch.tensor([[1.0, 0, 0], [0, 0, 0]]))  # (one nonzero: view [1, 3] of [2, 3])
    x = torch.tensor([[1.0, 0, 0], [0, 2.0, 0]])  # (two nonzeros, two rows)
    assert mod(x).shape == (2, 3)


def test_a_loaded_program_saved_again_keeps_one_check():
    """The checks the loader put in a graph are saved with it; a load of that file drops
    them and puts its own (a file's check is never the loader's word)."""
    
    from safetrace.trace.asserts import assert_sym

    def checks(ep: object) -> int:
        graphs = [ep.graph] + [m.graph for m in ep.graph_module.modules()]
        return sum(n.target is assert_sym for g in {id(g): g for g in graphs}.values()
                   for n in g.nodes)

    ep = st.load(_file("cond", _branch_needs))
    again = st.load(surgery.saved(ep))
    assert checks(ep) == checks(again) == 1
    with pytest.raises(st.RuntimeAssertionError, match=OWN):
        again.module()(torch.ones(6, 3))


class _SqueezeAtOne(torch.nn.Module):
    def forward(self, x):
        if x.shape[1] == 1:
            return x.squeeze(1)
        return x.sum(1)


def test_a_branch_is_judged_at_the_sizes_its_predicate_gives(tmp_path):
    """A size split's branch runs only where its predicate holds: the loader judges its ops
    there (the ``s1 == 1`` branch's squeeze removes a dim of size 1; judged at any s1, it
    looked like a squeeze that keeps ``min(s1, 1)`` and the loaded program refused every
    input of that branch: found by the fuzzer)."""
    ep = st.export(_SqueezeAtOne(), (torch.randn(4, 7, 4, 5),),
                   dynamic_shapes=({0: st.Dim("a"), 1: st.Dim("b"), 2: st.Dim.DYNAMIC},))
    st.save(ep, tmp_path / "p.st")
    loaded = st.load(tmp_path / "p.st")
    m = _SqueezeAtOne()
    for shape in [(0, 1, 0, 5), (2, 1, 3, 5), (3, 0, 2, 5), (1, 4, 1, 5), (2, 2, 0, 5)]:
        x = torch.randn(shape)
        torch.testing.assert_close(loaded.module()(x), m(x))
        torch.testing.assert_close(ep.module()(x), m(x))
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.randn(2, 1, 3))
