"""torch's ``run_decompositions`` of a converted program keeps the declared space where
its kernels ask a size question with a general answer (``guard_or_false`` /
``guard_or_true``: contiguity, broadcast, a branch's slice), and where a composite's C++
kernel read a size as an int.

At the export example's sizes those questions were decided and guarded (``s >= 3`` inside
a branch of a size split traced at 3, ``Eq(s//2, 1)`` of a contiguity check at 3;
``take_along_dim`` and ``max_pool1d`` pinned their sizes), and the decomposed module
refused the other sizes (differential fuzz, seed 3701, ``SAFETRACE_FUZZ_DECOMPOSE=1``:
166 over-rejections).  The retrace now runs as torch.onnx's capture does, under torch's
``backed_size_oblivious`` (those questions take their general answer, with no guard), and
with Python forms of the two composites (``retrace_pins.general_forms``)."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from safetrace.errors import ConversionWarning


class SplitSlice(torch.nn.Module):
    def forward(self, x):
        v0 = x.flip(0) if x.shape[0] != 1 else x + 1
        v2 = x[x.shape[0] - 2:0]
        return v0, v2.unsafe_split(max(v2.shape[0], 1), 0)[0]


class PoolUnpool(torch.nn.Module):
    def forward(self, x):
        return F.max_unpool1d(*F.max_pool1d(x, 2, return_indices=True), 2)


def _decomposed(model, args, spec):
    ep = st.export(model, args, dynamic_shapes=spec)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = ep.to_torch().run_decompositions()
    told = [w for w in caught if issubclass(w.category, ConversionWarning)]
    return ep.module(), out.module(), told


def _same_as_eager(m, model, shapes):
    for shape in shapes:
        x = torch.randn(shape)
        torch.testing.assert_close(m(x), model(x))


def test_a_branch_of_a_size_split_does_not_narrow_the_dim():
    # (before: `x.size()[0] >= 3`, the slice of the `n != 1` side traced at 3, refused 0-2)
    ours, m, told = _decomposed(SplitSlice(), (torch.randn(3),), ({0: st.Dim("n", max=7)},))
    assert not told
    _same_as_eager(m, SplitSlice(), [(n,) for n in range(8)])
    for dec in (ours, m):
        with pytest.raises(AssertionError):
            dec(torch.randn(8))   # past the declared max


def test_a_contiguity_question_at_the_example_is_not_a_check():
    # (before: `Eq(l//2, 1)` of unpool's contiguity at l = 3 refused every l from 4 on)
    ours, m, told = _decomposed(PoolUnpool(), (torch.randn(4, 4, 3),),
                                ({0: st.Dim("b", min=1, max=4), 2: st.Dim("l", min=1)},))
    assert not told
    _same_as_eager(m, PoolUnpool(), [(b, 4, ln) for b in (1, 3) for ln in (2, 3, 4, 5, 9)])
    for dec in (ours, m):
        with pytest.raises(AssertionError):
            dec(torch.randn(5, 4, 3))   # past b's max


class GatherAlong(torch.nn.Module):
    def forward(self, x):
        v = x[..., None]
        return torch.take_along_dim(v, v.argmax(1, keepdim=True), 1).squeeze((0, -1))


class Pool1d(torch.nn.Module):
    def forward(self, x):
        return F.max_pool1d(x, 2, ceil_mode=True) + x.shape[2]


@pytest.mark.parametrize("model, example, spec, shapes, outside", [
    # (before: take_along_dim's C++ broadcast read every size as an int: pinned to 2)
    (GatherAlong(), (2, 2, 2), {0: st.Dim("a", min=2, max=9), 1: st.Dim("b"), 2: st.Dim("c")},
     [(a, b, c) for a in (2, 3, 9) for b in (1, 2, 5) for c in (0, 1, 4)], (10, 2, 2)),
    # (before: max_pool1d's C++ output length pinned the length to the example's 6)
    (Pool1d(), (3, 4, 6), {0: st.Dim("n", max=5), 2: st.Dim("l", min=1, max=16)},
     [(n, 4, ln) for n in (0, 1, 5) for ln in (1, 2, 5, 6, 7, 16)], (3, 4, 17)),
])
def test_a_composite_whose_kernel_reads_sizes_keeps_them(model, example, spec, shapes,
                                                          outside):
    # (max_pool1d's ceil_mode asks `2*((l - 1)//2) < l`, true for every l >= 1, which the
    # guard check keeps as a decision: a warning, no input refused)
    ours, m, _ = _decomposed(model, (torch.randn(example),), (spec,))
    _same_as_eager(m, model, shapes)
    for dec in (ours, m):
        with pytest.raises(AssertionError):
            dec(torch.randn(outside))
