"""``torch.clamp(x, t, 2.5)`` with a 0-d tensor bound `t` and a number (fuzz35, typed kinds
``bounds``): eager's parser calls the Scalar overload with the tensor's value, so the bound
promotes as a number (a bfloat16 x stays bfloat16, an int x with a float64 bound is float32)
and a bound out of the result dtype's range raises. The program was clamp.Tensor of a scalar
tensor: float32 / float64 results where eager's were bfloat16 / float32."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


def bf16_sum(x):
    return torch.clamp(x.bfloat16().sum(), torch.tensor(0.25), 2.5)


def count_by_double_min(x):
    return torch.clamp((x > 0).count_nonzero(), x.double().min(), -2)


def half_by_float_sum(x):
    return x.half().clamp(x.sum(), 2.0)


def int_by_int_sum(x):
    return torch.clip((x * 4).long(), (x * 4).long().sum(), 3)


def in_place(x):
    return x.clone().clamp_(x.min(), 0.5)


@pytest.mark.parametrize("f", [bf16_sum, count_by_double_min, half_by_float_sum, int_by_int_sum,
                               in_place])
def test_clamp_of_a_zero_dim_bound_and_a_number_is_eagers_scalar_overload(f):
    ep = st.export(f, (torch.randn(4),), dynamic_shapes=({0: st.Dim("n")},))
    g = torch.Generator().manual_seed(0)
    for n in (0, 1, 4, 7):
        x = torch.randn(n, generator=g) * 3
        try:
            want = f(x)
        except RuntimeError:   # min() of an empty x: the program raises too
            with pytest.raises(RuntimeError):
                ep.module()(x)
            continue
        got = ep.module()(x)
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, equal_nan=True)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 2))


def test_a_bound_out_of_the_result_range_raises_as_in_eager():
    def f(x):   # eager: "value cannot be converted to type c10::Half without overflow"
        return x.half().clamp(x.sum() * 1e5, 2.0)

    ep = st.export(f, (torch.ones(4),))
    with pytest.raises(RuntimeError):
        f(torch.ones(4))
    with pytest.raises(RuntimeError):
        ep.module()(torch.ones(4))


def isclose_by_max(x):
    return torch.isclose(x, x * 1.01, rtol=x.abs().max())


def nan_to_num_by_sums(x):
    return torch.nan_to_num(x.half() / 0, nan=x.double().sum(), posinf=x.double().max())


@pytest.mark.parametrize("f", [isclose_by_max, nan_to_num_by_sums])
def test_a_zero_dim_tensor_for_a_float_argument_is_its_value(f):
    # eager's parser reads the 0-d tensor given for a `float` argument (refused before:
    # UnsupportedCall, no overload of aten.isclose accepts these arguments)
    ep = st.export(f, (torch.randn(4),), dynamic_shapes=({0: st.Dim("n", min=1)},))
    g = torch.Generator().manual_seed(1)
    for n in (1, 4, 9):
        x = torch.randn(n, generator=g)
        want, got = f(x), ep.module()(x)
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, equal_nan=True)
