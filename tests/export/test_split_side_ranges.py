"""Sides of a size split whose programs give another input size different ranges
(exporter/splits.py): at t == 1 the batch's requirement `b*t != 0` (a view of `b*t` rows
with -1) is the range `b >= 1`, at t >= 2 it stays a condition with the batch from 0.  The
sides' contracts were compared with their ranges and found different, so the split failed
and `t == 1` stayed refused (transformers' sdpa path: `q_length > 1` in every BERT-like
model, batch 1 and length 1 with Dim.AUTO).  Now the program's range of such a size is the
sides' hull, and each side's own narrower range a condition on that side's region: the
program matches eager at t == 1 and refuses the sizes eager raises at before running."""

import pytest
import torch

import safetrace as st


class LongOrOne(torch.nn.Module):
    def forward(self, x):
        b, t, _ = x.shape
        q = x.view(b, t, -1, 8)
        if t > 1:
            return q.sum(1) * 2
        return q[:, 0] + 1


SIZES = [(1, 1), (2, 1), (5, 1), (3, 5), (1, 9), (2, 12)]
EAGER_RAISES = [(0, 1), (1, 0), (0, 0), (0, 3)]  # (view with -1 of no elements)


@pytest.mark.parametrize("spec", [
    ({0: st.Dim.AUTO, 1: st.Dim.AUTO},),
    ({0: st.Dim.DYNAMIC, 1: st.Dim.DYNAMIC},),
    ({0: st.Dim("b"), 1: st.Dim("t", min=1)},),
], ids=["auto", "dynamic", "named"])
def test_length_one_is_split_and_matches_eager(spec):
    model = LongOrOne()
    ep = st.export(model, (torch.randn(2, 12, 16),), dynamic_shapes=spec)
    ours = ep.module()
    for b, t in SIZES:
        x = torch.randn(b, t, 16)
        torch.testing.assert_close(ours(x), model(x), msg=f"{(b, t)}")
    for b, t in EAGER_RAISES:
        x = torch.randn(b, t, 16)
        with pytest.raises(RuntimeError):
            model(x)
        with pytest.raises(st.InputMismatchError):  # (refused before running)
            ours(x)
    for x in (torch.randn(2, 12, 15), torch.randn(2, 12)):  # (outside the space)
        with pytest.raises(st.InputMismatchError):
            ours(x)


def test_the_side_range_is_a_condition_on_its_region():
    ep = st.export(LongOrOne(), (torch.randn(2, 12, 16),),
                   dynamic_shapes=({0: st.Dim.AUTO, 1: st.Dim.AUTO},))
    assert ep.contract.symbol("s0").lo == 0  # (the hull: the batch from 0 at t >= 2)
    assert "(s0 >= 1) or (s1 != 1)" in [str(c.cond) for c in ep.contract.conditions]
