"""Ops without a symbolic rule: static export via the meta kernel, specialization of
dynamic sizes (an error under Dim.DYNAMIC), and user-registered rules."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim
from safetrace.rules import RULES
from tests.helpers import matches_eager

aten = torch.ops.aten
OP = aten.special_bessel_j0.default  # an op with no rule in safetrace


def f(x):
    return torch.special.bessel_j0(x) + 1


def test_rule_less_op_exports_static():
    assert OP not in RULES
    ep = st.export(f, (torch.randn(3, 4),))
    assert "aten.special_bessel_j0.default" in [str(n.target) for n in ep.graph.nodes]
    matches_eager(ep, f, (torch.randn(3, 4),))


def test_rule_less_op_with_dynamic_dim_names_the_op():
    with pytest.raises(st.UnsupportedOpError) as info:
        st.export(f, (torch.randn(3, 4),), dynamic_shapes={"x": (Dim.DYNAMIC, None)})
    msg = str(info.value)
    assert "special_bessel_j0" in msg and "x.shape[0]" in msg
    assert "register_shape_rule" in msg and "test_unknown_ops.py" in msg


def test_rule_less_op_under_auto_specializes_and_reports():
    ep = st.export(f, (torch.randn(3, 4),), dynamic_shapes={"x": (Dim.AUTO, None)})
    assert ep.dims_report["x.shape[0]"] == "static 3"
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(5, 4))


def test_register_shape_rule_makes_it_dynamic():
    try:
        @st.register_shape_rule(OP)
        def same(self):
            return self.like()

        ep = st.export(f, (torch.randn(3, 4),), dynamic_shapes={"x": (Dim("n"), None)})
        for n in (1, 7):
            matches_eager(ep, f, (torch.randn(n, 4),))
    finally:
        RULES.pop(OP, None)


def test_rule_registered_after_a_trace_is_used_and_removal_is_seen():
    st.export(f, (torch.randn(3, 4),))  # the op's (absent) rule is now cached
    try:
        @st.register_shape_rule(OP)
        def same(self):
            return self.like()

        ep = st.export(f, (torch.randn(3, 4),), dynamic_shapes={"x": (Dim("n"), None)})
        matches_eager(ep, f, (torch.randn(6, 4),))
    finally:
        RULES.pop(OP, None)
    with pytest.raises(st.UnsupportedOpError):
        st.export(f, (torch.randn(3, 4),), dynamic_shapes={"x": (Dim.DYNAMIC, None)})
