"""Reproducer of grammar_gaps.py's ``shapeflow`` (session 33): ``x.shape == y.shape`` of
tensors of different ranks is False whatever their sizes, but Python's tuple compares the
first items before the lengths, so the trace asked ``x.shape[0] == y.shape[0]`` and the
program kept its example's answer as a run-time requirement: ``x`` of (1,) with ``y`` of
(1, 1, 1, 1) was refused, which eager computes (fuzz seed 3301)."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


class ShapesEqual(torch.nn.Module):
    def forward(self, x, y):
        if y.shape == x.shape:
            return y + x
        return y.sum() + x.sum()


class ShapesDiffer(torch.nn.Module):
    def forward(self, x, y):
        if x.shape != y.shape[1:]:
            return x * 2
        return x + y.sum()


@pytest.mark.parametrize("model", [ShapesEqual(), ShapesDiffer()])
def test_shapes_of_other_ranks_compare_without_a_size_requirement(model, tmp_path):
    spec = ({0: Dim("n", min=1)}, {0: Dim("m", max=5)})
    ex = (torch.randn(1), torch.randn(5, 1, 1, 1))
    ep = st.export(model, ex, dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2")
    for n in (1, 2, 5, 8, 40):
        for m in (0, 1, 2, 5):
            args = (torch.randn(n), torch.randn(m, 1, 1, 1))
            want = model(*args)
            for prog in (ep, loaded):
                torch.testing.assert_close(prog.module()(*args), want)
    with pytest.raises(st.InputMismatchError):   # outside the declared range
        ep.module()(torch.randn(0), torch.randn(1, 1, 1, 1))


def test_shapes_of_one_rank_still_compare_their_sizes():
    """Equal ranks: the sizes decide (two independent Dims: the export says they must be
    equal)."""
    spec = ({0: Dim("n", max=8)}, {0: Dim("m", max=8)})
    with pytest.raises(st.ConstraintViolationError, match="must equal n"):
        st.export(ShapesEqual(), (torch.randn(3), torch.randn(3)), dynamic_shapes=spec)
