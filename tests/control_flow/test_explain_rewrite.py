"""st.explain turns a data-dependent `if` into a paste-ready torch.cond line, and the pasted
line exports."""

from __future__ import annotations

import torch

import safetrace as st


class IfReturn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x, y):
        if x.sum() > 0:
            return self.lin(x) + y
        return x.sin()


class IfReturnPasted(IfReturn):
    def forward(self, x, y):
        return torch.cond(x.sum() > 0, lambda x, y: self.lin(x) + y, lambda x, y: x.sin(), (x, y))


class Ternary(torch.nn.Module):
    def forward(self, x):
        z = x.cos() if x.mean() > 0 else x * 2
        return z


class IfElseAssign(torch.nn.Module):
    def forward(self, x):
        if (x > 1).any():
            w = x + 1
        else:
            w = x - 1
        return w


class Complicated(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
            x = x * 2
        return x


def _fix(report):
    return "\n".join(p.fix for p in report.problems)


def test_if_with_returns_gets_a_return_rewrite():
    report = st.explain(IfReturn(), (torch.randn(3), torch.randn(3)))
    assert "return torch.cond(x.sum() > 0, lambda x, y: self.lin(x) + y, " \
           "lambda x, y: x.sin(), (x, y))" in _fix(report)


def test_the_pasted_rewrite_exports_and_runs_both_outcomes():
    model = IfReturnPasted()
    ep = st.export(model, (torch.randn(3), torch.randn(3)))
    eager = IfReturn()
    eager.load_state_dict(model.state_dict())
    for s in (1, -1):
        x, y = torch.rand(3) * s + 0.1 * s, torch.randn(3)
        torch.testing.assert_close(ep.module()(x, y), eager(x, y))


def test_conditional_expression_and_assignments_get_rewrites():
    assert "z = torch.cond(x.mean() > 0, lambda x: x.cos(), lambda x: x * 2, (x,))" in \
        _fix(st.explain(Ternary(), (torch.randn(3),)))
    assert "w = torch.cond((x > 1).any(), lambda x: x + 1, lambda x: x - 1, (x,))" in \
        _fix(st.explain(IfElseAssign(), (torch.randn(3),)))


def test_branches_that_are_not_simple_expressions_get_the_shape_of_the_call():
    fix = _fix(st.explain(Complicated(), (torch.randn(3),)))
    assert "def true_fn(x): ..." in fix and "def false_fn(x): ..." in fix
    assert "torch.cond(x.sum() > 0, true_fn, false_fn, (x,))" in fix
