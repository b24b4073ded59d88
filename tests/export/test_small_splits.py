"""Size splits at 0 and 1 (exporter/small_splits.py): a branch on a product of named Dims
(``x.numel()``) that only sizes below 2 decide the other way was a run-time check refusing
inputs eager computes (``x.shape[0]*x.shape[1] != 0``); those sizes are now traced as sides
of their own.  Each program matches eager at sizes 0 and 1 and beyond, and inputs outside
the declared space are still rejected."""

import pytest
import torch

import safetrace as st
from safetrace import Dim


class EmptyIsSpecial(torch.nn.Module):
    def forward(self, x):
        if x.numel() == 0:  # (eager: 7s where a dim is 0; the mean of no rows is nan)
            return x.new_ones(x.shape[1]) * 7
        return x.mean(0)


class FewIsSpecial(torch.nn.Module):
    def forward(self, x):
        if x.numel() < 4:
            return x + 1
        return x * 2


class NonEmptyBranch(torch.nn.Module):
    def forward(self, y):
        if bool(y.numel()):
            return y * 2
        return y[:1] + 1


def _matches_eager(model, spec, example, sizes, outside):
    ep = st.export(model, (torch.randn(*example),), dynamic_shapes=(spec,))
    ours = ep.module()
    for s in sizes:
        x = torch.randn(*s)
        torch.testing.assert_close(ours(x), model(x), equal_nan=True, msg=str(s))
    for s in outside:
        with pytest.raises(st.InputMismatchError):
            ours(torch.randn(*s))
    return ep


def test_a_branch_on_numel_at_zero_is_traced_for_each_dim_at_zero():
    _matches_eager(EmptyIsSpecial(), {0: Dim("a", max=8), 1: Dim("b", max=8)}, (3, 4),
                   [(0, 3), (3, 0), (0, 0), (1, 1), (1, 0), (5, 2), (8, 8)],
                   [(9, 2), (2, 9), (2, 2, 2)])


def test_a_branch_on_numel_below_a_bound_is_traced_where_a_dim_is_below_two():
    _matches_eager(FewIsSpecial(), {0: Dim("a", min=2, max=8), 1: Dim("b", max=8)}, (3, 4),
                   [(2, 0), (2, 1), (3, 1), (4, 1), (2, 2), (8, 8), (2, 5)],
                   [(1, 3), (9, 3), (3,)])


def test_bool_of_numel_with_one_dim_from_zero():
    d2 = Dim("d2", min=2, max=16)
    _matches_eager(NonEmptyBranch(), {0: Dim("d0", min=2, max=16), 1: Dim("d1", max=5),
                                      2: d2, 3: d2},
                   (6, 2, 2, 2), [(7, 0, 7, 7), (2, 1, 2, 2), (16, 5, 3, 3), (2, 0, 2, 2)],
                   [(7, 6, 7, 7), (7, 2, 7, 6), (1, 2, 2, 2)])


class NeedsARow(torch.nn.Module):
    def forward(self, x):
        return x[0] * x.shape[1]  # (eager raises on no rows: a requirement, not a branch)


def test_a_requirement_at_zero_stays_a_check():
    ep = st.export(NeedsARow(), (torch.randn(3, 4),),
                   dynamic_shapes=({0: Dim("a", max=8), 1: Dim("b", max=8)},))
    ours = ep.module()
    torch.testing.assert_close(ours(torch.randn(1, 0)), NeedsARow()(torch.randn(1, 0)))
    with pytest.raises(st.InputMismatchError):
        ours(torch.randn(0, 3))


class EmptyOfFour(torch.nn.Module):
    def forward(self, x):
        if x.numel() == 0:  # (any of four dims at 0: a union of boxes, one per dim)
            return x.sum(-1) + 1
        return x.sum(-1) * 2


def test_numel_zero_on_four_dims_from_zero_is_one_program():
    # (fuzz seed 221: each split at 0 first, not at 1, so four splits cover the four dims)
    spec = {i: Dim(f"d{i}", max=6) for i in range(4)}
    ep = _matches_eager(EmptyOfFour(), spec, (2, 3, 4, 5),
                        [(0, 3, 4, 5), (2, 0, 4, 5), (2, 3, 0, 5), (2, 3, 4, 0), (0, 0, 0, 0),
                         (1, 1, 1, 1), (1, 0, 1, 1), (3, 2, 1, 6), (6, 6, 6, 6)],
                        [(7, 1, 1, 1), (1, 1, 1, 7), (2, 2, 2)])
    assert not ep.contract.conditions  # (no run-time check refuses a zero size)
