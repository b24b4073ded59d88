"""A branch on sizes whose two answers return an output of another dtype or rank (fuzz seed
3891, the default mix's last over-rejections: ``if x.shape[1] >= y.numel():`` on bool inputs,
``x * 2`` an int64 tensor on one side and ``x[:1]`` a bool one on the other).

The split traces both answers, and no torch.cond holds both (its branches return one
dtype and rank per output), so the program keeps the example's answer as a run-time check,
as torch.export's guard.  Before, that check's refusal told the user to write the branch as
a ``torch.cond`` (which fails the same way), and a named Dim's refusal did not say why no
split kept the other side.  Now both name the output that differs and the fix that works:
make both sides return the same dtype and number of dims."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


class _Dtypes(torch.nn.Module):
    def forward(self, xs):
        x, y = xs
        if x.shape[1] >= y.numel():
            v0 = x * 2
        else:
            v0 = x[:1]
        return (v0,)


def _bools(*shape: int) -> torch.Tensor:
    return torch.randn(*shape) > 0


def test_a_relation_whose_other_answer_has_another_dtype_is_refused_saying_why(tmp_path):
    d2 = Dim("d2", min=2, max=6)
    spec = (({1: Dim("d0"), 2: Dim("d1", min=2), 3: d2},
             {0: Dim("d3"), 1: Dim("d4", max=6), 2: d2}),)
    model = _Dtypes()
    ep = st.export(model, ((_bools(6, 2, 6, 6), _bools(0, 6, 6)),), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.st")
    mods = [ep.module(), st.load(tmp_path / "p.st").module()]
    for x, y in [((6, 3, 2, 3), (0, 1, 3)), ((6, 0, 2, 2), (1, 0, 2)), ((6, 1, 2, 2), (0, 6, 2)),
                 ((6, 40, 7, 5), (2, 4, 5)), ((6, 1, 3, 2), (1, 0, 2))]:  # (the example's side)
        xs = (_bools(*x), _bools(*y))
        for m in mods:
            got, want = m(xs)[0], model(xs)[0]
            assert got.dtype == want.dtype == torch.int64
            torch.testing.assert_close(got, want)
    for x, y in [((6, 3, 6, 5), (6, 6, 5)), ((6, 1, 2, 2), (1, 1, 2)), ((6, 0, 2, 2), (1, 1, 2))]:
        xs = (_bools(*x), _bools(*y))
        assert model(xs)[0].dtype == torch.bool  # eager computes the other side
        for m in mods:
            with pytest.raises(st.InputMismatchError) as info:
                m(xs)
            msg = str(info.value)
            assert "output 0 is an int64 tensor of 4 dims on one side and a bool" in msg, msg
            assert "return the same dtype and number of dims" in msg, msg
            assert "torch.cond(" not in msg, msg  # (a cond cannot hold both either)
    for m in mods:  # out of the declared space
        with pytest.raises(st.InputMismatchError):
            m((_bools(6, 3, 2, 7), _bools(0, 1, 7)))
        with pytest.raises(st.InputMismatchError):
            m((_bools(6, 3, 2, 3), _bools(0, 7, 3)))


def _caught_other_rank(x, z):
    try:
        v = x - x.shape[0] // (x.shape[0] - z.shape[0])
    except ZeroDivisionError:
        v = x.sum() * 0
    return v


def test_a_caught_division_whose_except_side_has_another_rank_names_it():
    ep = st.export(_caught_other_rank, (torch.randn(4), torch.ones(2)),
                   dynamic_shapes=({0: Dim("a")}, {0: Dim("b")}))
    for a, b in [(0, 3), (1, 0), (5, 2), (2, 7), (0, 1)]:
        x, z = torch.randn(a), torch.ones(b)
        torch.testing.assert_close(ep.module()(x, z), _caught_other_rank(x, z))
    for n in (0, 1, 3):
        with pytest.raises(st.InputMismatchError, match="Eager does not raise here") as info:
            ep.module()(torch.randn(n), torch.ones(n))
        assert "a float32 tensor of 0 dims on the other" in str(info.value)
        assert "torch.cond(" not in str(info.value)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 2), torch.ones(2))


def _caught_one_dim(x):
    try:
        v = x - x.shape[0] // (x.shape[0] - 2)
    except ZeroDivisionError:
        v = x.sum() * 0
    return v


def _if_one_dim(x):
    if x.shape[0] == 2:
        return x.sum()
    return x * 2


@pytest.mark.parametrize("f", [_caught_one_dim, _if_one_dim])
def test_a_named_dims_refusal_says_both_sides_were_traced(f):
    with pytest.raises(st.ExportError) as info:
        st.export(f, (torch.randn(5),), dynamic_shapes=({0: Dim("n")},))
    msg = str(info.value)
    assert "Both sides of that branch were traced" in msg, msg
    assert "a float32 tensor of 1 dim on one side and a float32 tensor of 0 dims" in msg, msg
    assert "Dim('n', min=3)" in msg, msg
    ep = st.export(f, (torch.randn(5),), dynamic_shapes=({0: Dim("n", min=3)},))
    for n in (3, 4, 9):
        x = torch.randn(n)
        torch.testing.assert_close(ep.module()(x), f(x))
    for n in (0, 1, 2):  # (outside the fixed space: refused)
        with pytest.raises(st.InputMismatchError):
            ep.module()(torch.randn(n))


def _data_other_rank(x):
    v1 = x[x > 0]
    if v1.numel() > 1:
        v4 = v1 * 2
    else:
        v4 = v1[:1].sum()   # (another rank: no data split joins the answers)
    return v4


def test_a_size_oblivious_assertion_names_its_fix():
    """A size read from data tested where the two answers return other ranks: the
    run-time assertion says why no split kept the other answer, and the fix."""
    ep = st.export(_data_other_rank, (torch.randn(7, 6),),
                   dynamic_shapes=({0: Dim("a", max=9), 1: Dim("b")},))
    for x in (torch.ones(1, 3), torch.ones(3, 1), torch.randn(9, 4).abs() + 0.1,
              torch.tensor([[1.0, -1.0, 2.0]])):
        torch.testing.assert_close(ep.module()(x), _data_other_rank(x))
    for x in (-torch.ones(2, 2), torch.ones(1, 1)):
        _data_other_rank(x)  # eager computes the other side
        with pytest.raises(RuntimeError, match="size-oblivious") as info:
            ep.module()(x)
        assert "return the same dtypes and numbers of dims, or raise max_splits" in \
            str(info.value)
    for x in (torch.randn(0, 3), torch.ones(4, 0)):  # (no element: a check of the sizes)
        _data_other_rank(x)
        with pytest.raises(st.InputMismatchError, match="must be >= 1"):
            ep.module()(x)
    with pytest.raises(st.InputMismatchError):  # out of the declared space
        ep.module()(torch.ones(10, 2))
