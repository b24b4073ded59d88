"""``z.shape[0] ** z`` with a symbolic size (fuzz35, typed seed 7, kind ``scalar0d``):
``SymInt.__pow__`` took the tensor exponent as a float one and returned ``float(size) ** z``,
so the program was ``pow.Scalar(6.0, z)``: float32 where eager's uint8 result is uint8
(Dim.AUTO), and a named Dim was specialized (refused: too many splits). A tensor exponent
now goes to the tensor's ``__rpow__`` with the size itself."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


@pytest.mark.parametrize("dim", [st.Dim.AUTO, st.Dim("n")])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int32, torch.float16])
def test_a_size_to_a_tensor_power(dim, dtype):
    def f(z):
        return z.shape[0] ** z, z.shape[1] ** (z > 1)

    z = (torch.arange(18.).reshape(6, 3) % 4).to(dtype)
    ep = st.export(f, (z,), dynamic_shapes=({0: dim, 1: dim if dim is st.Dim.AUTO
                                              else st.Dim("m")},))
    for shape in ((6, 3), (2, 5), (1, 1), (0, 2), (9, 4)):
        x = (torch.arange(float(shape[0] * shape[1])).reshape(shape) % 4).to(dtype)
        for want, got in zip(f(x), ep.module()(x)):
            assert got.dtype == want.dtype
            assert torch.equal(got, want)
