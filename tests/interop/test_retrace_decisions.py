"""Decisions torch's ``run_decompositions`` takes on a converted program's sizes at the
export example, which neither replace a size by a number nor narrow its range.

torch's decompositions and meta kernels run at the example's sizes and guard on
expressions of them (``roll`` of an empty slice becomes a ``clone`` under
``Eq(n//2 - 1, 0)``; ``unfold``'s step ``max(n//2, 1)`` becomes 1 under
``Eq(Max(1, n//2), 1)``), then drop the guard.  The decomposed module must compute eager's
value or refuse the input (``Guard failed``), never compute another (differential fuzz,
seed 3701, ``SAFETRACE_FUZZ_DECOMPOSE=1``)."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st
from safetrace.errors import ConversionWarning


class SplitRoll(torch.nn.Module):
    def forward(self, y):
        v0 = torch.tensor_split(y, [1, y.shape[0] // 2], 0)[1]
        return v0, v0.roll(1, 0)


class Unfold(torch.nn.Module):
    def forward(self, x):
        return x.unfold(3, 1, max(x.shape[3] // 2, 1))


class OneChunk(torch.nn.Module):
    def forward(self, x):
        return torch.stack([p.sum() for p in x.chunk(1, 0)])


def _decomposed(model, args, spec):
    ep = st.export(model, args, dynamic_shapes=spec)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = ep.to_torch().run_decompositions()
    return out.module(), [w for w in caught if issubclass(w.category, ConversionWarning)]


def _eager_or_refused(m, model, shapes):
    """Each input shape: `m` computes eager's value or refuses it with a guard; -> the
    shapes it computed."""
    ran = []
    for shape in shapes:
        x = torch.randn(shape)
        try:
            got = m(x)
        except AssertionError as e:
            assert "Guard failed" in str(e), e
            continue
        torch.testing.assert_close(got, model(x))
        ran.append(shape)
    return ran


def test_a_roll_decided_empty_at_the_example_is_checked():
    # (before: the decomposed graph is a clone of the slice at every size: wrong from 4 on)
    m, told = _decomposed(SplitRoll(), (torch.randn(2, 6),),
                          ({0: st.Dim("n", max=16), 1: st.Dim("c", min=1, max=9)},))
    assert told and "n" in str(told[0].message)
    ran = _eager_or_refused(m, SplitRoll(), [(n, c) for n in range(17) for c in (1, 2, 6, 9)])
    assert (2, 6) in ran
    for shape in ((17, 6), (2, 10), (2, 0)):   # out of the declared space
        with pytest.raises(AssertionError, match="Guard failed"):
            m(torch.randn(shape))


def test_an_unfold_step_decided_at_the_example_is_checked():
    # (before: the step baked in as 1: (1, 3, 0, 4) gave 4 windows where eager gives 2)
    m, told = _decomposed(Unfold(), (torch.randn(3, 3, 0, 3),),
                          ({0: st.Dim("b", max=3), 1: st.Dim.AUTO, 3: st.Dim.AUTO},))
    assert told
    shapes = [(b, 3, 0, w) for b in (0, 1, 3) for w in (1, 2, 3, 4, 5, 9)]
    assert (3, 3, 0, 3) in _eager_or_refused(m, Unfold(), shapes)
    with pytest.raises(AssertionError, match="Guard failed"):
        m(torch.randn(4, 3, 0, 3))   # b past its max


def test_a_count_torch_divides_by_a_size_computes_at_zero():
    # (before: ZeroDivisionError at 0 from torch's `(2*n - 1)//n`, its value of
    # chunk's count under its n >= 1 assumption, where eager returns [0.])
    m, _ = _decomposed(OneChunk(), (torch.randn(4),), ({0: st.Dim.DYNAMIC},))
    for n in (0, 1, 2, 4, 7):
        x = torch.randn(n)
        torch.testing.assert_close(m(x), OneChunk()(x))
    with pytest.raises(AssertionError, match="Guard failed"):
        m(torch.arange(3))   # not the declared dtype

