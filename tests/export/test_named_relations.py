"""A run-time relation between two separately declared named Dims (``min(b, c)``,
``if b >= c:``) is a ConstraintViolationError with its fix, as in torch.export, not a
silent input check (named Dims are independent)."""

from __future__ import annotations

import re

import pytest
import torch
from torch.export import Dim as TDim

import safetrace as st
from safetrace import Dim
from tests.helpers import matches_eager, rejects


class Branch(torch.nn.Module):
    def forward(self, x, y):
        if x.shape[0] >= y.shape[0]:
            return x[: y.shape[0]] + y
        return x + y[: x.shape[0]]


class Smaller(torch.nn.Module):
    def forward(self, x, y):
        n = min(x.shape[0], y.shape[0])
        return x[:n] * y[:n]


@pytest.mark.parametrize("model", [Branch(), Smaller()])
def test_relation_between_named_dims_is_a_violation_with_a_fix(model):
    args = (torch.randn(3), torch.randn(5))
    spec = {"x": {0: Dim("b", max=64)}, "y": {0: Dim("c", min=1, max=64)}}
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(model, args, dynamic_shapes=spec)
    err = info.value
    assert re.search(r"`x.shape\[0\] <?=? ?y.shape\[0\]`", str(err))
    assert "independent (b, c)" in str(err)
    assert "Dim.DYNAMIC(min=1, max=64)" in str(err)
    if isinstance(model, Branch):  # (torch keeps min() of sizes symbolic: no relation)
        with pytest.raises(Exception, match="Constraints violated"):
            torch.export.export(model, args, dynamic_shapes={
                "x": {0: TDim("b", max=64)}, "y": {0: TDim("c", min=1, max=64)}})
    ep = st.export(model, args,
                   dynamic_shapes=st.refine_dynamic_shapes_from_suggested_fixes(err, spec))
    for b, c in ((0, 1), (1, 2), (2, 9)):
        matches_eager(ep, model, (torch.randn(b), torch.randn(c)))
    rejects(ep, (torch.randn(4), torch.randn(2)), match="x.shape\\[0\\] <")
    rejects(ep, (torch.randn(2), torch.randn(65)))


def test_a_relation_with_a_dynamic_dim_stays_a_run_time_check():
    args = (torch.randn(3), torch.randn(5))
    ep = st.export(Smaller(), args, dynamic_shapes={"x": {0: Dim("b")}, "y": {0: Dim.DYNAMIC}})
    assert [str(c.cond) for c in ep.contract.conditions] == ["s0 <= s1"]
    matches_eager(ep, Smaller(), (torch.randn(0), torch.randn(1)))
    rejects(ep, (torch.randn(4), torch.randn(2)))
