"""st.explain: every problem in one report, as text and as data."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


class Many(torch.nn.Module):
    def forward(self, x, y, z):
        c = torch.count_nonzero(x).item()
        w = z * 2 if (c > 3 and c < 10) else z  # thresholds on data: two questions
        if x.shape[0] > 4:
            return x[:3] + y, w
        return x + y, w


def test_explain_collects_every_problem():
    b, b2 = Dim("b"), Dim("b2")
    report = st.explain(Many(), (torch.randn(6, 3), torch.randn(3, 3), torch.randn(6, 2)),
                        dynamic_shapes={"x": {0: b}, "y": {0: b2}, "z": None})
    assert not report.ok
    kinds = [p.kind for p in report.problems]
    assert kinds.count("data-dependent") == 1 and kinds.count("constraint") == 2
    dd = next(p for p in report.problems if p.kind == "data-dependent")
    assert "test_explain.py" in dd.where and "st.check(" in dd.fix and " and " in dd.fix
    assert "b = Dim('b', min=5)" in report.suggestion
    assert report.dims["y.shape[0]"] == "static 3"
    assert any("s0 >= 5" in c for c, _ in report.guards)
    text = str(report)
    assert "3 problem(s)" in text and "Suggested dynamic_shapes" in text
    assert report.program is None


def test_explain_ok_returns_the_program():
    report = st.explain(lambda x: x * 2, (torch.randn(3, 4),),
                        dynamic_shapes={"x": (Dim.AUTO, None)})
    assert report.ok and report.program is not None
    assert report.dims["x.shape[0]"].startswith("dynamic s0")
    torch.testing.assert_close(report.program.module()(torch.ones(5, 4)), torch.full((5, 4), 2.0))


def test_explain_reports_stopping_errors():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    report = st.explain(f, (torch.randn(3),))
    assert [p.kind for p in report.problems] == ["DataDependentError"]
    report = st.explain(f, (torch.randn(3),), dynamic_shapes={"nope": None})
    assert report.problems[0].kind == "SpecError"


def test_explain_keeps_going_after_a_data_dependent_if():
    def f(x, y):
        if x.sum() > 0:
            x = x * 2
        return x[:3] + y

    report = st.explain(f, (torch.randn(5), torch.randn(3)),
                        dynamic_shapes=({0: Dim.AUTO}, {0: Dim.DYNAMIC}))
    text = str(report)
    assert "if x.sum() > 0" in text and "DataDependentError" in text
    assert "y.shape[0]" in text and "dynamic_shapes = " in text
    with pytest.raises(st.DataDependentError):  # export itself still refuses
        st.export(f, (torch.randn(5), torch.randn(3)))
