"""Every program of the table: exported once, then run against eager on fresh inputs of
other sizes (0 and 1 included) and both branch outcomes; out-of-spec inputs rejected."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from tests.control_flow.programs import CASES, python_semantics
from tests.helpers import assert_close, rejects

HOPS = {"cond", "while_loop", "map_impl", "scan"}


@pytest.fixture(scope="module")
def exported():
    out = {}
    for case in CASES:
        torch.manual_seed(0)
        model = case.make()
        args = case.fresh(5, 1)
        out[case.name] = (model, st.export(model, args, dynamic_shapes=case.dynamic()))
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_matches_eager_on_other_sizes_and_both_outcomes(case, exported):
    model, ep = exported[case.name]
    ran = 0
    for n in case.sizes:
        for sign in (1, -1):
            args = case.fresh(n, sign)
            if n < case.min_size:
                rejects(ep, args)
                continue
            with python_semantics():
                expected = (case.reference or model)(*args)
            assert_close(expected, ep.module()(*args))
            ran += 1
    assert ran >= 6


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_graph_holds_torch_higher_order_operators(case, exported):
    _, ep = exported[case.name]
    gm = ep.graph_module
    hops = [n for n in gm.graph.nodes if n.op == "call_function" and
            getattr(n.target, "namespace", None) == "higher_order"]
    if case.name == "shape_pred":  # a symbolic bool predicate keeps both branches too
        assert hops
    assert hops and all(str(n.target.name()).split("::")[-1] in HOPS for n in hops)
    for node in hops:
        for a in node.args:
            if isinstance(a, torch.fx.Node) and a.op == "get_attr":
                assert isinstance(getattr(gm, a.target), torch.fx.GraphModule)
    gm.graph.lint()
    text = gm.print_readable(print_output=False)
    assert "torch.ops.higher_order." in text and "class " in text.split("\n", 2)[2]


@pytest.mark.parametrize("name", ["basic", "while_counter", "while_int_counter", "map_dict",
                                  "scan_reverse_dim1"])
def test_python_reference_agrees_with_torch_eager(name, exported):
    case = next(c for c in CASES if c.name == name)
    model, _ = exported[name]
    for sign in (1, -1):
        args = case.fresh(3, sign)
        with python_semantics():
            expected = model(*args)
        assert_close(expected, model(*args))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_wrong_dtype_is_rejected_before_running(case, exported):
    model, ep = exported[case.name]
    args = list(case.fresh(3, 1))
    i = next(k for k, a in enumerate(args) if a.is_floating_point())
    args[i] = args[i].double()
    rejects(ep, tuple(args))
