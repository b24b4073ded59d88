"""`squeeze` of a dim torch's fake holds symbolic where our engine proved it 1 (the side
`n <= 2` of a split on `arange(n / 2)`): the converted fake drops that dim's stride too
(`view_strides.squeezed_strides`); it was a ConversionError (fuzz35b, seed 12)."""

import warnings

import pytest
import torch

import safetrace as st
from safetrace import Dim
from safetrace.errors import InputMismatchError


class HalfRange(torch.nn.Module):
    def forward(self, x):
        v = torch.arange(x.shape[0] / 2)
        return v.squeeze(0) if v.shape[0] == 1 else v.sum(0)


class HalfRangeT(torch.nn.Module):
    def forward(self, x):   # a non-contiguous input: the squeeze keeps the other strides
        v = x.t()[: (x.shape[1] + 1) // 2]
        return v.squeeze(0) * 2 if v.shape[0] == 1 else v.sum(0)


@pytest.fixture(scope="module", params=[HalfRange, HalfRangeT])
def converted(request):
    model = request.param()
    x = torch.randn(4) if isinstance(model, HalfRange) else torch.randn(3, 4)
    spec = ({0: Dim("d0")},) if isinstance(model, HalfRange) else ({1: Dim("d1")},)
    ep = st.export(model, (x,), dynamic_shapes=spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model, ep, ep.to_torch().module()


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 7])
def test_runs_as_eager(converted, n):
    model, ep, module = converted
    x = torch.randn(n) if isinstance(model, HalfRange) else torch.randn(3, n)
    want = model(x)
    got = module(x)
    assert got.shape == want.shape and torch.allclose(got, want)


def test_other_rank_refused(converted):
    model, ep, module = converted
    bad = torch.randn(2, 3, 4)
    with pytest.raises(Exception):
        module(bad)
    with pytest.raises(InputMismatchError):
        ep.module()(bad)
