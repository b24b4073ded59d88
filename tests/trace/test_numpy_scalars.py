"""numpy integer and floating scalars as op arguments (CTRL's ``x *= np.sqrt(d_model)``):
eager's parser reads them as the Python numbers they hold, and so does the program: the
graph holds a Python number (an ``np.float64`` in the graph made the program's code raise
``NameError: np`` at its first call)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import safetrace as st
from safetrace import Dim


class _Scaled(torch.nn.Module):
    def forward(self, x):
        y = x.float() * 2
        y *= np.sqrt(8.0)                       # np.float64 (a float subclass), in place
        return y, x + np.float32(1.5), torch.mul(x, np.int64(3)), x.pow(np.int32(2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64])
def test_numpy_scalars_are_the_numbers_they_hold(dtype):
    model = _Scaled()
    x = torch.arange(6, dtype=dtype).reshape(2, 3)
    ep = st.export(model, (x,), dynamic_shapes=({0: Dim("b", min=1, max=8)},))
    assert "np." not in ep.graph_module.code
    for rows in (1, 5):
        y = torch.arange(rows * 3, dtype=dtype).reshape(rows, 3)
        for got, want in zip(ep.module()(y), model(y)):
            assert got.dtype == want.dtype
            torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.zeros(9, 3, dtype=dtype))


def _listed(x):  # numpy numbers inside an op's list argument
    y = torch.nn.functional.interpolate(x, scale_factor=np.float64(2.0), mode="nearest")
    return torch.nn.functional.pad(y, (np.int64(1), np.int64(2))).reshape([np.int64(-1)])


def test_numpy_numbers_in_a_list_argument_are_the_numbers_they_hold():
    ep = st.export(_listed, (torch.randn(2, 3, 4, 4),),
                   dynamic_shapes=({0: Dim("b", min=1, max=8), 2: Dim("h", min=2, max=16)},))
    assert "np." not in ep.graph_module.code
    for b, h in ((1, 2), (3, 7)):
        x = torch.randn(b, 3, h, 4)
        torch.testing.assert_close(ep.module()(x), _listed(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 3, 17, 4))
