"""Hostile files found by benchmarks/hostile_probe.py's subgraph mutations (``--classes sg``).

A list argument of no fixed length (``SymInt[] size`` of view / new_zeros / repeat /
permute) takes no single int: torch accepts one int only for a list of a fixed length
(``int[1] dim``, ``int[2] stride``) and raises "Expected a value of type 'List[int]'" at
call otherwise.  The loader took one int for any ``List[int]``, so a file whose branch (or
main graph) called ``view(x, 2)`` loaded and then ran into torch's own error.
"""

from __future__ import annotations


import pytest
import torch

import safetrace as st
from tests.serialize import hostile
from tests.serialize.hostile_contracts import _saved
from tests.serialize import surgery

A = "torch.ops.aten."


def _file(edit) -> bytes:
    doc, tensors = hostile.parts(_saved("cond"))
    edit(doc)
    return hostile.pack(doc, tensors)


def _branch_op(target: str, *args: object):
    """The true branch's ``a * 2`` replaced by ``target(a, *args)``."""
    def edit(doc: dict) -> None:
        branch = next(g for g in doc["subgraphs"] if "true_graph" in g["path"])["nodes"]
        node = next(n for n in branch if n.get("op") == "call_function")
        node["target"] = A + target
        node["args"] = [node["args"][0], *args]
    return edit


def _outer_view_of_size(doc: dict) -> None:
    """The main graph returns ``view(x, x.shape[0])`` (one SymInt for SymInt[] size)."""
    doc["nodes"][-1:-1] = [
        {"name": "s", "op": "call_function", "target": A + "sym_size.int",
         "args": [{"node": "x"}, 0]},
        {"name": "v", "op": "call_function", "target": A + "view.default",
         "args": [{"node": "x"}, {"node": "s"}]}]
    doc["nodes"][-1]["args"][0]["tuple"][0] = {"node": "v"}


CASES = {
    "branch_view_int": _branch_op("view.default", 2),
    "branch_new_zeros_int": _branch_op("new_zeros.default", 2),
    "branch_repeat_int": _branch_op("repeat.default", 2),
    "branch_permute_int": _branch_op("permute.default", 0),
    "branch_roll_symint_1_int": _branch_op("roll.default", 1, 0),
    "outer_view_of_a_size": _outer_view_of_size,
}


@pytest.mark.parametrize("name", CASES)
def test_one_int_for_a_list_of_no_fixed_length_is_refused_at_load(name):
    with pytest.raises(st.LoadError, match=r"expected a list, got int|expected List\[int\], "
                                           r"got the number"):
        st.load(_file(CASES[name]))


def test_one_int_for_a_list_of_a_fixed_length_still_loads():
    # roll's ``int[1] dims`` takes one int, as torch does (not its ``SymInt[1] shifts``)
    mod = st.load(_file(_branch_op("roll.default", {"list": [1]}, 0))).module()
    x = torch.rand(5, 3) + 1
    torch.testing.assert_close(mod(x), x.roll(1, 0))


# -- kinds the loader's evaluation shows (serialize/never_runs.py: misused_kind) ----------
# Inside a subgraph a placeholder is whatever its call passes: the allowlist's check of
# the file's arguments cannot tell a tensor from a size there, and ``view(a, a)`` or
# ``abs(a.shape[0])`` in a branch loaded and raised torch's "Expected a value of type"
# as the branch ran.  Now such a node fails, as ours, just before it (where its graph
# runs only sometimes), or the file is refused at load (where it runs at every call).


def _size_of(doc: dict) -> None:
    """The cond is given ``x.shape[0]`` for its operand; its true branch takes ``abs`` of
    it (a number where abs takes a tensor)."""
    at = next(i for i, n in enumerate(doc["nodes"]) if n.get("op") == "get_attr")
    doc["nodes"].insert(at, {"name": "s", "op": "call_function",
                             "target": A + "sym_size.int", "args": [{"node": "x"}, 0]})
    hop = next(n for n in doc["nodes"] if n.get("target", "").endswith("higher_order.cond"))
    hop["args"][3] = {"tuple": [{"node": "s"}]}
    _branch_op("abs.default")(doc)
    for g in doc["subgraphs"]:  # (recorded as what it is given, or not at all: what
        for n in g["nodes"]:    # differs from the loader's evaluation is refused at load)
            n.get("meta", {}).pop("val", None)
    for n in doc["nodes"]:  # (the cond's value too: its false branch, given a number,
        if n["name"].startswith(("cond", "getitem")):  # returns int64[], not the file's
            n.get("meta", {}).pop("val", None)  # float32[s0, 3], which is refused at load)


BRANCH = {
    "tensor_for_a_size_list": _branch_op("view.default", {"node": "x"}),
    "tensor_for_an_int": _branch_op("select.int", {"node": "x"}, 0),
    "number_for_a_tensor": _size_of,
}


@pytest.mark.parametrize("name", BRANCH)
def test_a_branch_node_given_the_wrong_kind_fails_as_ours_where_it_runs(name):
    mod = st.load(_file(BRANCH[name])).module()
    with pytest.raises(st.RuntimeAssertionError, match=r"fails wherever it runs: it takes"):
        mod(torch.ones(5, 3))  # (the true branch)
    if name != "number_for_a_tensor":
        x = -torch.rand(4, 3) - 1
        torch.testing.assert_close(mod(x), x - 1)  # (the false branch runs)


def test_a_loop_condition_given_the_wrong_kind_is_refused_at_load():
    doc, tensors = hostile.parts(_saved("loop"))
    cond = next(g for g in doc["subgraphs"] if "cond_graph" in g["path"])["nodes"]
    node = next(n for n in cond if n.get("op") == "call_function")
    phs = [n["name"] for n in cond if n.get("op") == "placeholder"]
    node["target"], node["args"] = A + "full.default", [{"node": phs[-1]}, 1]
    with pytest.raises(st.LoadError, match=r"fails at every call .* given a tensor"):
        surgery.load(doc, tensors)


# -- torch.cond's branches agree (serialize/never_runs.py: branches) ----------------------
# Eager runs either branch without comparing them; a file whose branches return other
# shapes or dtypes loaded, and a map stacking its slices (or the graph after the cond)
# then met a value the loader did not expect (torch's "stack expects each tensor to be
# equal size" at call).


CONDS = {
    "other_rank": _branch_op("view.default", {"list": [-1]}),
    "other_dtype": _branch_op("to.dtype", {"dtype": "int64"}),
    "other_static_size": _branch_op("sum.dim_IntList", {"list": [1]}, True),
}


@pytest.mark.parametrize("name", CONDS)
def test_cond_branches_returning_other_shapes_or_dtypes_are_refused_at_load(name):
    with pytest.raises(st.LoadError, match=r"the branches of torch.cond return value 0 of"):
        st.load(_file(CONDS[name]))


class TwoOutputs(torch.nn.Module):  # (also hostile_subgraphs' sg_cond_sizes program)
    def forward(self, x, p):
        def t(a):
            return a.reshape(-1)[: a.shape[0]] * 2, torch.zeros(a.shape[0], 2).sum(1).long()

        def f(a):
            return a[:, 0] - 1, a.new_ones(a.shape[0], dtype=torch.int64)

        return torch.cond(p.sum() > 0, t, f, (x,))


def test_a_cond_whose_file_value_is_not_the_worked_out_branchs_is_refused():
    """The true branch returns its two outputs swapped (``int64``, ``float32``) and the
    false branch reads a size where it reads a tensor (the loader cannot work it out): the
    file's ``(float32[s0], int64[s0])`` is not what the true branch returns where it runs,
    and it loaded (hostile_probe sg_multi, seed 20102: the call ran and returned int64
    where the metadata said float32)."""
    ep = st.export(TwoOutputs(), (torch.randn(4, 3), torch.randn(2)),
                   dynamic_shapes={"x": {0: st.Dim("n", max=32)}, "p": None})
    doc, tensors = hostile.parts(surgery.saved(ep))
    true, false = (next(g["nodes"] for g in doc["subgraphs"] if g["path"] == name)
                   for name in ("true_graph_0", "false_graph_0"))
    out = next(n for n in true if n.get("op") == "output")
    out["args"][0]["tuple"].reverse()
    select = next(n for n in false if n["name"] == "select")
    select["args"][0] = {"node": "sym_size_int"}
    with pytest.raises(st.LoadError, match=r"node 'cond'.*records its value as "
                                           r"\(float32\[s0\], int64\[s0\]\)"):
        surgery.load(doc, tensors)


def test_a_scan_over_a_tensor_of_no_dims_is_refused_at_load():
    # (torch's scan reads xs[0].shape[0]: IndexError at every call; found nested in a
    # scan body, where the inner scan's xs was the body's 0-dim operand)
    doc, tensors = hostile.parts(_saved("scan"))
    hop = next(n for n in doc["nodes"] if n.get("target", "").endswith("higher_order.scan"))
    doc["nodes"].insert(doc["nodes"].index(hop), {
        "name": "s", "op": "call_function", "target": A + "sum.default",
        "args": [hop["args"][2]["list"][0]]})
    hop["args"][2] = {"list": [{"node": "s"}]}
    with pytest.raises(st.LoadError, match=r"scan fails at every call .* its xs include a "
                                           r"number or a tensor of 0 dims"):
        surgery.load(doc, tensors)


# -- a while_loop body returns its carried kinds (serialize/subgraphs.py: _same_kinds) ----
# Where the loader's evaluation cannot tell what the body returns (a cond in it whose
# branches return sizes it cannot compare), a body returning its carried values swapped
# ran the condition on a float vector next: "Boolean value of Tensor with no values is
# ambiguous" from the loop's own driver, at call.


class _LoopOfCond(torch.nn.Module):
    def forward(self, x):
        from torch._higher_order_ops.while_loop import while_loop

        def body(i, a):
            return i + 1, torch.cond(a.sum() > 0, lambda u: u * 2, lambda u: u.flip(0), (a,))

        return while_loop(lambda i, a: i < 2, body, (torch.zeros((), dtype=torch.int64), x))


def test_a_loop_body_returning_other_kinds_is_refused_at_load():
    # (the loader now gives a cond whose branches return other sizes the exporter's new
    # size read from data, branch_facts.merged: it knows what the body returns, and refuses
    # the swap at load; before, it failed as ours at call: "carried value 0 as [] int64")
    
    ep = st.export(_LoopOfCond(), (torch.randn(4),),
                   dynamic_shapes={"x": {0: st.Dim("n", min=0, max=32)}})
    doc, tensors = hostile.parts(surgery.saved(ep))
    false = next(g for g in doc["subgraphs"] if g["path"].endswith("false_graph_0"))["nodes"]
    node = next(n for n in false if n.get("op") == "call_function")
    # (a size read from data in one branch: the loader cannot compare it with the other's)
    false.insert(false.index(node), {"name": "pos", "op": "call_function",
                                     "target": A + "gt.Scalar", "args": [node["args"][0], 0]})
    node["target"], node["args"] = A + "masked_select.default", [node["args"][0],
                                                                 {"node": "pos"}]
    node.get("meta", {}).pop("val", None)
    body = next(g for g in doc["subgraphs"] if g["path"] == "while_loop_body_graph_0")
    body["nodes"][-1]["args"][0]["tuple"].reverse()
    with pytest.raises(st.LoadError, match=r"body returns \[u\d+\] torch.float32 for "
                                           r"carried value 0 of \[\] torch.int64"):
        surgery.load(doc, tensors)
