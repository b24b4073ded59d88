"""``300 // x`` / ``torch.sub(300, x)`` of an int8 x (fuzz35, a probe of Python numbers with
typed tensors): eager wraps the number in an int64 0-d tensor whose cast to int8 wraps
(300 -> 44); the export made ``scalar_tensor(300, dtype=int8)``, which raised
``RuntimeError: value cannot be converted to type int8_t without overflow`` (a crash, not a
catalogue error). A size given for the number (``n // x``) may be out of range at run time."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


def _int8(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, generator=g) * 20).to(torch.int8).clamp(min=1)


@pytest.mark.parametrize("f", [lambda x: 300 // x, lambda x: torch.sub(300, x),
                               lambda x: (2 ** 40) // x.int(), lambda x: x.shape[0] * 50 // x,
                               lambda x: 7 // x])
def test_a_python_int_out_of_an_int_dtype_wraps_as_in_eager(f):
    ep = st.export(f, (_int8(4),), dynamic_shapes=({0: st.Dim("n")},))
    for n in (0, 1, 4, 9):
        x = _int8(n, n)
        want, got = f(x), ep.module()(x)
        assert got.dtype == want.dtype
        assert torch.equal(got, want)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.ones(3))
