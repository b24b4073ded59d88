"""Dim.DYNAMIC at sizes 0 and 1 (exporter/auto_small.py), as Dim.AUTO: a condition on one
DYNAMIC size that fails only at 0 or 1 where eager computes (a branch `x.shape[0] != 1`,
`mask.squeeze()` of another rank at batch 1, a branch raising the range to 2) was kept as
an input check refusing batch 1; those sizes are now traced as sides of their own.  The dim
stays dynamic (Dim.DYNAMIC's promise: never specialized), each program matches eager at 0,
1, 2, 3, 5 and refuses inputs outside its space before running; where eager raises at a
size, or the sides cannot be joined, the check stays."""

import pytest
import torch

import safetrace as st
from tests.export.test_auto_small_sizes import (
    AboveOne, AgainstStaticOne, BranchOnOne, EagerRaises, FirstRow, OtherStructure,
    SqueezedMask, SqueezedSum)

DYN = st.Dim.DYNAMIC


def _check(model, example, spec, make, sizes, outside):
    ep = st.export(model, example, dynamic_shapes=spec)
    ours = ep.module()
    for n in sizes:
        args = make(n)
        torch.testing.assert_close(ours(*args), model(*args), msg=f"batch {n}")
    for args in outside:
        with pytest.raises(st.InputMismatchError):
            ours(*args)
    for where, text in ep.dims_report.items():  # (never specialized: DYNAMIC's promise)
        assert text.startswith("dynamic"), (where, text)
    return ep


def test_a_branch_on_batch_one_admits_batch_one_and_zero():
    ep = _check(BranchOnOne(), (torch.randn(2, 3),), ({0: DYN},),
                lambda n: (torch.randn(n, 3),), [0, 1, 2, 3, 5],
                [(torch.randn(2, 4),), (torch.randn(2, 3, 1),), (torch.randn(3),)])
    assert not ep.contract.conditions
    assert ep.dim_names == {}


def test_a_branch_raising_the_range_to_two_admits_zero_and_one():
    _check(AboveOne(), (torch.randn(2, 3),), ({0: DYN},), lambda n: (torch.randn(n, 3),),
           [0, 1, 2, 3, 5], [(torch.randn(2, 4),)])


def test_squeeze_of_a_mask_at_batch_one_admits_batch_one():
    _check(SqueezedMask(), (torch.randn(2, 3), torch.randn(2, 1, 3)),
           ({0: DYN}, {0: DYN}), lambda n: (torch.randn(n, 3), torch.randn(n, 1, 3)),
           [0, 1, 2, 3, 5],
           [(torch.randn(2, 3), torch.randn(2, 2, 3)), (torch.randn(2, 3), torch.randn(2, 3)),
            (torch.randn(2, 3), torch.randn(3, 1, 3))])


def test_squeeze_of_an_untied_mask_admits_each_batch_at_one():
    ep = _check(SqueezedSum(), (torch.randn(2, 3), torch.randn(2, 1, 3)),
                ({0: DYN}, {0: DYN}), lambda n: (torch.randn(n, 3), torch.randn(n, 1, 3)),
                [0, 1, 2, 3, 5], [(torch.randn(2, 3), torch.randn(2, 1, 4))])
    ours = ep.module()
    for a, b in [(1, 3), (3, 1), (0, 1), (5, 0)]:
        x, m = torch.randn(a, 3), torch.randn(b, 1, 3)
        torch.testing.assert_close(ours(x, m), SqueezedSum()(x, m))


def test_a_dynamic_dim_beside_an_auto_dim():
    _check(SqueezedMask(), (torch.randn(2, 3), torch.randn(2, 1, 3)),
           ({0: DYN}, {0: st.Dim.AUTO}), lambda n: (torch.randn(n, 3), torch.randn(n, 1, 3)),
           [0, 1, 2, 3, 5], [(torch.randn(2, 3), torch.randn(3, 1, 3))])


def test_a_relation_to_a_static_one_admits_batch_one():
    pos = torch.randn(1, 3)
    _check(AgainstStaticOne(), (torch.randn(2, 3), pos), ({0: DYN}, None),
           lambda n: (torch.randn(n, 3), pos), [0, 1, 2, 3, 5],
           [(torch.randn(2, 3), torch.randn(2, 3)), (torch.randn(2, 4), pos)])


def test_a_dynamic_range_is_kept_with_batch_one():
    ep = _check(BranchOnOne(), (torch.randn(2, 3),), ({0: DYN(max=8)},),
                lambda n: (torch.randn(n, 3),), [0, 1, 2, 3, 5, 8], [(torch.randn(9, 3),)])
    with pytest.raises(st.InputMismatchError, match=r"Dim.DYNAMIC\(max=8\)"):
        ep.module()(torch.randn(9, 3))


def test_a_dynamic_min_is_kept():
    _check(BranchOnOne(), (torch.randn(2, 3),), ({0: DYN(min=1)},),
           lambda n: (torch.randn(n, 3),), [1, 2, 3, 5], [(torch.randn(0, 3),)])


def test_sides_that_cannot_be_joined_keep_the_check():
    ep = _check(OtherStructure(), (torch.randn(2, 3),), ({0: DYN},),
                lambda n: (torch.randn(n, 3),), [0, 2, 3, 5], [(torch.randn(1, 3),)])
    assert any("!= 1" in str(c.cond) for c in ep.contract.conditions)


def test_a_size_eager_raises_at_stays_refused():
    _check(EagerRaises(), (torch.randn(2, 3),), ({0: DYN},),
           lambda n: (torch.randn(n, 3),), [0, 2, 3, 5], [(torch.randn(1, 3),)])


def test_a_size_where_eager_raises_stays_out_of_the_range():
    _check(FirstRow(), (torch.randn(2, 3),), ({0: DYN},),
           lambda n: (torch.randn(n, 3),), [1, 2, 3, 5], [(torch.randn(0, 3),)])


def test_a_specialized_dynamic_dim_is_still_refused():
    class Pins(torch.nn.Module):
        def forward(self, x):
            if x.shape[0] != 1:
                return x.reshape(2, 3) * 2  # (pins the batch to 2)
            return x + 1

    with pytest.raises(st.ConstraintViolationError, match="x.shape\\[0\\]"):
        st.export(Pins(), (torch.randn(2, 3),), dynamic_shapes=({0: DYN},))
