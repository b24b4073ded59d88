"""Dim.AUTO at sizes 0 and 1 (exporter/auto_small.py): a condition on one AUTO size that
fails only at 0 or 1 (a branch `x.shape[0] != 1`, `mask.squeeze()` of another rank at
batch 1, a relation to a static 1) was kept as an input check refusing inputs eager
computes; those sizes are now traced as sides of their own, as for a named Dim.  Each
program matches eager at 0, 1, 2, 3, 5 and refuses inputs outside its space; where the
sides cannot be joined, or eager raises there, the check stays."""

import pytest
import torch

import safetrace as st

AUTO = st.Dim.AUTO


class BranchOnOne(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] != 1:
            return x * 2
        return x + 1


class SqueezedMask(torch.nn.Module):  # (mra: attention_mask.squeeze() at batch 1)
    def forward(self, x, mask):
        m = mask.squeeze()
        return x * m


class SqueezedSum(torch.nn.Module):  # (batch sizes not tied: two AUTO dims)
    def forward(self, x, mask):
        return x * mask.squeeze().sum()


class AgainstStaticOne(torch.nn.Module):  # (moonshine: batch != position_ids.shape[0])
    def forward(self, x, pos):
        if x.shape[0] != pos.shape[0]:
            return x * 2 + pos.sum()
        return x - pos


class OtherStructure(torch.nn.Module):  # (the sides return different structures)
    def forward(self, x):
        if x.shape[0] != 1:
            return x * 2
        return x + 1, x


class EagerRaises(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] == 1:
            raise ValueError("needs a batch of 2 or more")
        return x * 2


def _check(model, example, spec, make, sizes, outside):
    ep = st.export(model, example, dynamic_shapes=spec)
    ours = ep.module()
    for n in sizes:
        args = make(n)
        torch.testing.assert_close(ours(*args), model(*args), msg=f"batch {n}")
    for args in outside:
        with pytest.raises(st.InputMismatchError):
            ours(*args)
    return ep


def test_a_branch_on_batch_one_admits_batch_one_and_zero():
    _check(BranchOnOne(), (torch.randn(2, 3),), ({0: AUTO},),
           lambda n: (torch.randn(n, 3),), [0, 1, 2, 3, 5],
           [(torch.randn(2, 4),), (torch.randn(2, 3, 1),), (torch.randn(3),)])


def test_squeeze_of_a_mask_at_batch_one_admits_batch_one():
    _check(SqueezedMask(), (torch.randn(2, 3), torch.randn(2, 1, 3)),
           ({0: AUTO}, {0: AUTO}), lambda n: (torch.randn(n, 3), torch.randn(n, 1, 3)),
           [0, 1, 2, 3, 5],
           [(torch.randn(2, 3), torch.randn(2, 2, 3)),  # (a static dim changed)
            (torch.randn(2, 3), torch.randn(2, 3)),  # (another rank)
            (torch.randn(2, 3), torch.randn(3, 1, 3))])  # (the batches differ)


def test_squeeze_of_an_untied_mask_admits_each_batch_at_one():
    ep = _check(SqueezedSum(), (torch.randn(2, 3), torch.randn(2, 1, 3)),
                ({0: AUTO}, {0: AUTO}), lambda n: (torch.randn(n, 3), torch.randn(n, 1, 3)),
                [0, 1, 2, 3, 5], [(torch.randn(2, 3), torch.randn(2, 1, 4))])
    ours = ep.module()
    for a, b in [(1, 3), (3, 1), (0, 1), (5, 0)]:
        x, m = torch.randn(a, 3), torch.randn(b, 1, 3)
        torch.testing.assert_close(ours(x, m), SqueezedSum()(x, m))


def test_a_relation_to_a_static_one_admits_batch_one():
    pos = torch.randn(1, 3)
    _check(AgainstStaticOne(), (torch.randn(2, 3), pos), ({0: AUTO}, None),
           lambda n: (torch.randn(n, 3), pos), [0, 1, 2, 3, 5],
           [(torch.randn(2, 3), torch.randn(2, 3)), (torch.randn(2, 4), pos)])


def test_sides_that_cannot_be_joined_keep_the_check():
    ep = _check(OtherStructure(), (torch.randn(2, 3),), ({0: AUTO},),
                lambda n: (torch.randn(n, 3),), [0, 2, 3, 5], [(torch.randn(1, 3),)])
    assert any("!= 1" in str(c.cond) for c in ep.contract.conditions)


def test_a_size_eager_raises_at_stays_refused():
    _check(EagerRaises(), (torch.randn(2, 3),), ({0: AUTO},),
           lambda n: (torch.randn(n, 3),), [0, 2, 3, 5], [(torch.randn(1, 3),)])


def test_the_split_dim_keeps_no_dim_name():
    ep = st.export(BranchOnOne(), (torch.randn(2, 3),), dynamic_shapes=({0: AUTO},))
    assert ep.dim_names == {}
    assert ep.dims_report["x.shape[0]"].startswith("dynamic s0")


class SqueezeThenReshape(torch.nn.Module):
    def forward(self, x):
        y = x.squeeze(0)  # (another rank at 1)
        return y.reshape(y.shape[0], -1)  # (eager: ambiguous at 0)


def test_a_bound_kept_from_the_first_program_still_names_its_line():
    ep = _check(SqueezeThenReshape(), (torch.randn(3, 4),), ({0: AUTO},),
                lambda n: (torch.randn(n, 4),), [1, 2, 3, 5],
                [(torch.randn(0, 4),), (torch.randn(2, 5),)])
    with pytest.raises(st.InputMismatchError, match="y.reshape"):
        ep.module()(torch.randn(0, 4))


def test_an_auto_range_is_kept_with_batch_one():
    ep = _check(BranchOnOne(), (torch.randn(2, 3),), ({0: st.Dim.AUTO(max=8)},),
                lambda n: (torch.randn(n, 3),), [0, 1, 2, 3, 5, 8], [(torch.randn(9, 3),)])
    with pytest.raises(st.InputMismatchError, match=r"Dim.AUTO\(max=8\)"):
        ep.module()(torch.randn(9, 3))


class AboveZero(torch.nn.Module):  # (a branch narrowing the AUTO range: 1 <= s0)
    def forward(self, x):
        if x.shape[0] > 0:
            return x * 2
        return x.new_ones(1, 3)


class AboveOne(torch.nn.Module):  # (2 <= s0)
    def forward(self, x):
        if x.shape[0] > 1:
            return x * 2
        return x + 1


class FirstRow(torch.nn.Module):  # (eager raises at 0: x[0])
    def forward(self, x):
        if x.shape[0] > 1:
            return x * 2
        return x[0] + x


def test_a_branch_narrowing_the_range_admits_zero():
    _check(AboveZero(), (torch.randn(2, 3),), ({0: AUTO},), lambda n: (torch.randn(n, 3),),
           [0, 1, 2, 3, 5], [(torch.randn(2, 4),)])


def test_a_branch_narrowing_the_range_to_two_admits_zero_and_one():
    _check(AboveOne(), (torch.randn(2, 3),), ({0: AUTO},), lambda n: (torch.randn(n, 3),),
           [0, 1, 2, 3, 5], [(torch.randn(2, 4),), (torch.randn(2, 3, 1),)])


def test_a_size_where_eager_raises_stays_out_of_the_range():
    ep = _check(FirstRow(), (torch.randn(2, 3),), ({0: AUTO},),
                lambda n: (torch.randn(n, 3),), [1, 2, 3, 5], [(torch.randn(0, 3),)])
    with pytest.raises(st.InputMismatchError, match="x.shape\\[0\\]"):
        ep.module()(torch.randn(0, 3))
