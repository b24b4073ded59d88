"""A torch fake kernel that pins a declared Dim never yields a static converted program.

``F.max_pool1d``'s kernel (a C++ composite reading sizes as ints) made ``Dim('l')`` the
example's 7 in the conversion's ShapeEnv when ``ep.to_torch(verify=True)`` ran it: the
converted program's ``range_constraints`` lost the Dim and its decomposition computed
``x + 7`` at every size, without a check.  Its values now come from our shapes (a warning
says they were not verified), in both modes; the other pooling, resize and FFT ops here
keep torch's kernels and the Dim."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

import safetrace as st

_CASES = {
    "max_pool1d_ceil": (lambda x: F.max_pool1d(x, 2, ceil_mode=True) + x.shape[2], 1),
    "max_pool1d": (lambda x: F.max_pool1d(x, 2) * x.shape[2], 2),
    "max_pool1d_dilated": (lambda x: F.max_pool1d(x, 2, dilation=2) - x.shape[2], 3),
    "avg_pool1d_ceil": (lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True) + x.shape[2], 1),
    "adaptive_max_pool1d": (lambda x: F.adaptive_max_pool1d(x, 3) + x.shape[2], 1),
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 3) + x.shape[2], 1),
    "interpolate_scale": (lambda x: F.interpolate(x, scale_factor=2.0) + x.shape[2], 1),
    "rfft": (lambda x: torch.fft.rfft(x).abs() + x.shape[2], 1),
}


class _Model(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _close(a, b):
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("verify", [True, False], ids=["verify", "fast"])
@pytest.mark.parametrize("name", sorted(_CASES))
def test_a_pinning_kernel_keeps_the_dim(name, verify):
    fn, lo = _CASES[name]
    model = _Model(fn)
    ep = st.export(model, (torch.randn(2, 3, 7),),
                   dynamic_shapes={"x": {2: st.Dim("l", min=lo, max=64)}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", st.ConversionWarning)
        tep = ep.to_torch(verify=verify)
        again = ep.to_torch(verify=verify)  # (the program's memo: the same program)
        decomposed = tep.run_decompositions()
    for program in (tep, again, decomposed):
        ranges = [(int(r.lower), int(r.upper)) for r in program.range_constraints.values()]
        assert ranges == [(lo, 64)], program.range_constraints
    for size in sorted({lo, 1, 2, 5, 7, 8, 13, 64} - set(range(lo))):
        x = torch.randn(2, 3, size)
        want = model(x)
        for program in (tep, again, decomposed):
            _close(program.module()(x), want)
    for program in (tep, decomposed):
        with pytest.raises(Exception):
            program.module()(torch.randn(2, 3, 65))
        if lo > 1:
            with pytest.raises(Exception):
                program.module()(torch.randn(2, 3, lo - 1))


def test_verifying_says_which_kernel_was_not_checked():
    model = _Model(_CASES["max_pool1d_ceil"][0])
    ep = st.export(model, (torch.randn(2, 3, 7),),
                   dynamic_shapes={"x": {2: st.Dim("l", min=1, max=64)}})
    with pytest.warns(st.ConversionWarning, match=r"max_pool1d.*specializes.*Dim 'l'"):
        tep = ep.to_torch(verify=True)
    x = torch.randn(2, 3, 12)
    _close(tep.module()(x), model(x))


@torch.library.custom_op("pinnedtest::twice", mutates_args=())
def _twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@_twice.register_fake
def _(x):
    rows = int(x.shape[0])  # (a user's fake kernel reading a size as an int pins it)
    return x.new_empty((rows,) + tuple(x.shape[1:]))


@pytest.mark.parametrize("verify", [True, False], ids=["verify", "fast"])
def test_a_custom_fake_kernel_that_pins_keeps_the_dim(verify):
    """The fast path runs a custom op's fake kernel too: before, both modes returned a
    program of batch 5 only (``range_constraints`` {}), whose decomposition added 5 at
    every batch unchecked."""
    model = _Model(lambda x: torch.ops.pinnedtest.twice(x) + x.shape[0])
    ep = st.export(model, (torch.randn(5, 3),),
                   dynamic_shapes={"x": {0: st.Dim("b", min=1, max=64)}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", st.ConversionWarning)
        tep = ep.to_torch(verify=verify)
        decomposed = tep.run_decompositions()
    ranges = [(int(r.lower), int(r.upper)) for r in tep.range_constraints.values()]
    assert ranges == [(1, 64)], tep.range_constraints
    for size in (1, 2, 5, 9, 64):
        x = torch.randn(size, 3)
        want = model(x)
        _close(tep.module()(x), want)
        try:  # (torch's retrace runs the pinning fake kernel again: refusing is its
            got = decomposed.module()(x)  # right, a wrong value never)
        except AssertionError as exc:
            assert "Guard failed" in str(exc)
        else:
            _close(got, want)
    with pytest.raises(Exception):
        tep.module()(torch.randn(65, 3))
