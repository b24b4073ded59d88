"""A run-time relation between two separately declared named Dims (``min(b, c)``,
``if b >= c:``) is never a silent input check (named Dims are independent): the code's
branch on it is split (each answer traced, a torch.cond on the relation, as for a range
of one Dim), and where it is not split (``max_splits=0``) a ConstraintViolationError with
its fix, as in torch.export."""

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


def test_relation_between_named_dims_is_a_violation_with_a_fix():
    model = Branch()
    args = (torch.randn(3), torch.randn(5))
    spec = {"x": {0: Dim("b", max=64)}, "y": {0: Dim("c", min=1, max=64)}}
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(model, args, dynamic_shapes=spec, max_splits=0)
    err = info.value
    assert re.search(r"`x.shape\[0\] <?=? ?y.shape\[0\]`", str(err))
    assert "independent (b, c)" in str(err)
    # one of them Dim.DYNAMIC would still narrow the other: both are relaxed
    assert "declare b as Dim.DYNAMIC(max=64) and c as Dim.DYNAMIC(min=1, max=64)" in str(err)
    with pytest.raises(Exception, match="Constraints violated"):
        torch.export.export(model, args, dynamic_shapes={
            "x": {0: TDim("b", max=64)}, "y": {0: TDim("c", min=1, max=64)}})
    ep = st.export(model, args,
                   dynamic_shapes=st.refine_dynamic_shapes_from_suggested_fixes(err, spec))
    # (Dim.DYNAMIC sizes whose relation sizes below 2 break where eager computes, (2, 1),
    # are split as named Dims since session 34 (auto_small.auto_relations): the other
    # answer is traced too, where the run-time check refused (4, 2))
    for b, c in ((0, 1), (1, 2), (2, 9), (4, 2), (2, 2), (2, 1)):
        matches_eager(ep, model, (torch.randn(b), torch.randn(c)))
    rejects(ep, (torch.randn(2), torch.randn(65)))


def test_a_branch_on_a_relation_between_named_dims_runs_both_answers():
    model = Branch()
    ep = st.export(model, (torch.randn(3), torch.randn(5)),
                   dynamic_shapes={"x": {0: Dim("b", max=64)}, "y": {0: Dim("c", min=1, max=64)}})
    assert ep.contract.conditions == ()
    for b, c in ((0, 1), (1, 2), (2, 9), (4, 2), (9, 9), (64, 1)):
        matches_eager(ep, model, (torch.randn(b), torch.randn(c)))
    rejects(ep, (torch.randn(2), torch.randn(65)))
    rejects(ep, (torch.randn(2), torch.randn(0)))


@pytest.mark.parametrize("other", [Dim("c", min=1, max=64), Dim.DYNAMIC])
def test_min_of_sizes_is_symbolic_and_needs_no_relation(other):
    """``min(b, c)`` is a Min expression (as torch.sym_min): every pair of sizes works."""
    args = (torch.randn(3), torch.randn(5))
    ep = st.export(Smaller(), args, dynamic_shapes={"x": {0: Dim("b")}, "y": {0: other}})
    assert ep.contract.conditions == ()
    for b, c in ((0, 1), (1, 1), (4, 2), (2, 9), (6, 6)):
        matches_eager(ep, Smaller(), (torch.randn(b), torch.randn(c)))


def test_a_relation_with_a_dynamic_dim_narrowing_a_named_dim_is_a_violation():
    """With y.shape[0] Dim.DYNAMIC at its example size 5, `x.shape[0] >= y.shape[0]` rules
    out b >= 5: the fix is the range that works, or b Dim.DYNAMIC as well."""
    args = (torch.randn(3), torch.randn(5))
    spec = {"x": {0: Dim("b")}, "y": {0: Dim.DYNAMIC}}
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(Branch(), args, dynamic_shapes=spec, max_splits=0)  # (default: a split)
    assert "fails for b = 5 (with y.shape[0] = 5 as in the example)" in str(info.value)
    assert "b = Dim('b', max=4); or declare b as Dim.DYNAMIC" in str(info.value)
    ep = st.export(Branch(), args,
                   dynamic_shapes=st.refine_dynamic_shapes_from_suggested_fixes(info.value, spec))
    for b in (0, 1, 4):
        matches_eager(ep, Branch(), (torch.randn(b), torch.randn(5)))
    rejects(ep, (torch.randn(5), torch.randn(5)))
    split = st.export(Branch(), args, dynamic_shapes=spec)  # by default: a size split
    for b in (0, 1, 4, 5, 9):
        matches_eager(split, Branch(), (torch.randn(b), torch.randn(5)))


class FirstThree(torch.nn.Module):
    def forward(self, x, y):
        return x[:3] + y


@pytest.mark.parametrize("from_text", [False, True], ids=["error", "text"])
def test_a_relation_no_dim_can_express_suggests_auto(from_text):
    """``x[:3] + y`` ties y's rows to ``min(n, 3)``: no Dim can be a min, so the fix is
    ``m = Dim.AUTO`` (pasteable, and applied by refine_dynamic_shapes_from_suggested_fixes
    from the error or from its text); the program then checks the relation on each input.
    torch.export refuses the same spec."""
    model = FirstThree()
    args = (torch.randn(5, 2), torch.randn(3, 2))
    spec = {"x": {0: Dim("n")}, "y": {0: Dim("m")}}
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(model, args, dynamic_shapes=spec)
    text = str(info.value)
    assert "m = Dim.AUTO" in text and "m == min(n, 3)" in text
    assert "dynamic_shapes = {'x': (Dim('n'), None), 'y': (Dim.AUTO, None)}" in text
    with pytest.raises(Exception):
        torch.export.export(model, args, dynamic_shapes={"x": {0: TDim("n")},
                                                         "y": {0: TDim("m")}})
    fixed = st.refine_dynamic_shapes_from_suggested_fixes(text if from_text else info.value,
                                                          spec)
    assert fixed["y"][0] is Dim.AUTO
    ep = st.export(model, args, dynamic_shapes=fixed)
    for n in (0, 1, 2, 3, 9):
        matches_eager(ep, model, (torch.randn(n, 2), torch.randn(min(n, 3), 2)))
    rejects(ep, (torch.randn(9, 2), torch.randn(2, 2)))
    rejects(ep, (torch.randn(1, 2), torch.randn(3, 2)))
