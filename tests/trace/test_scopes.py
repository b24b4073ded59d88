"""Branches traced as scopes: a branch inside a branch reads sizes of the program's
inputs (read in the program's graph and passed in as operands), directly and through a
tensor made in the branch around it, with the numbers eager and torch.export give."""

from __future__ import annotations

import torch

import safetrace as st
from tests.helpers import matches_eager, rejects


class NestedSizes(torch.nn.Module):
    def forward(self, x, y):
        def outer_t(x, y):
            z = torch.cat([x, x])  # made in the outer branch: its size is 2 * n there

            def inner_t(z, y):
                return y.sum() + z.shape[0] + y.shape[0]

            def inner_f(z, y):
                return y.sum() - z.shape[0] * x.shape[1]

            return torch.cond(y.sum() > 0, inner_t, inner_f, (z, y))

        def outer_f(x, y):
            return y.sum() * x.shape[0]

        return torch.cond(x.sum() > 0, outer_t, outer_f, (x, y))


def _inputs(n: int, m: int, sx: float, sy: float) -> tuple:
    return (torch.rand(n, 3) * sx, torch.rand(m) * sy)


def test_a_branch_in_a_branch_reads_sizes_of_both_enclosing_graphs():
    model = NestedSizes()
    spec = {"x": {0: st.Dim("n", min=1)}, "y": {0: st.Dim("m", min=1)}}
    ep = st.export(model, _inputs(5, 4, 1, 1), dynamic_shapes=spec)
    reference = torch.export.export(model, _inputs(5, 4, 1, 1), dynamic_shapes={
        "x": {0: torch.export.Dim("n", min=1)}, "y": {0: torch.export.Dim("m", min=1)}})
    for n, m, sx, sy in [(7, 6, 1, 1), (1, 1, 1, -1), (2, 9, -1, 1), (3, 1, 1, -1)]:
        args = _inputs(n, m, sx, sy)
        got = matches_eager(ep, model, args)
        torch.testing.assert_close(got, reference.module()(*args))
    rejects(ep, (torch.rand(0, 3), torch.rand(2)))  # n >= 1 declared
    rejects(ep, (torch.rand(2, 4), torch.rand(2)))  # the 3 columns were static
