"""Tensors made from float arithmetic on sizes keep eager's float dtype (a symbolic float
was typed int64 by torch.tensor / as_tensor / wrapped numbers: a silently wrong dtype)."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


def program(x):
    n = x.shape[0]
    return (torch.tensor(n * 2.5), torch.as_tensor(n * 0.5), torch.tensor([n * 0.5, 1]),
            torch.scalar_tensor(n / 4), (n * 0.5) // x, x + n * 0.5, torch.tensor(n))


@pytest.mark.parametrize("size", [0, 1, 2, 5])
def test_float_size_tensors_match_eager_dtype_and_values(size):
    ep = st.export(program, (torch.randn(3, 2),), dynamic_shapes=({0: Dim("b")},))
    x = torch.randn(size, 2)
    for got, want in zip(ep.module()(x), program(x)):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)


def test_outside_the_declared_space_is_rejected_before_running():
    ep = st.export(program, (torch.randn(3, 2),), dynamic_shapes=({0: Dim("b", max=8)},))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(9, 2))
