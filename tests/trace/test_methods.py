"""Torch functions and Tensor methods resolved to their ATen namesake by the arguments,
including other spellings (``clip``, ``swapaxes``, ``concat``), Python dtypes, constant
0-d tensors and size tensors where eager reads a number."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from tests.trace.common import check, targets


def _x(n):
    return (torch.randn(n, 4),)


def _xy(n):
    return torch.randn(n, 4), torch.randn(n, 4)


CASES = [
    ("method_add", lambda x, y: x.add(y, alpha=2), _xy),
    ("function_add", lambda x, y: torch.add(x, y), _xy),
    ("view_varargs", lambda x: x.view(x.shape[0], 2, 2), _x),
    ("view_list", lambda x: x.view([-1, 2]), _x),
    ("reshape_tuple", lambda x: x.reshape((2, -1)), _x),
    ("sum_keepdim", lambda x: x.sum(dim=1, keepdim=True), _x),
    ("sum_axis_alias", lambda x: x.sum(axis=1), _x),
    ("mean_dims", lambda x: x.mean((1,), keepdim=True), _x),
    ("transpose", lambda x: x.transpose(0, 1), _x),
    ("permute_varargs", lambda x: x.permute(1, 0), _x),
    ("clamp_min", lambda x: x.clamp(min=0), _x),
    ("clip_alias", lambda x: x.clip(-0.5, 0.5), _x),
    ("swapaxes_alias", lambda x: x.swapaxes(0, 1), _x),
    ("multiply_alias", lambda x, y: x.multiply(y), _xy),
    ("concat_alias", lambda x, y: torch.concat([x, y], dim=1), _xy),
    ("softmax", lambda x: x.softmax(-1), _x),
    ("masked_fill", lambda x: x.masked_fill(x > 0, 1.0), _x),
    ("expand", lambda x: x[:, :1].expand(-1, 4), _x),
    ("unsqueeze", lambda x: x.unsqueeze(0), _x),
    ("flatten", lambda x: x.flatten(), _x),
    ("unflatten", lambda x: x.unflatten(1, (2, 2)), _x),
    ("chunk", lambda x: x.chunk(2, 1)[1], _x),
    ("new_zeros_size", lambda x: x.new_zeros(x.shape[0], 2), _x),
    ("zeros_python_dtype", lambda x: torch.zeros(x.shape[0], dtype=bool), _x),
    ("ones_python_dtype", lambda x: x + torch.ones(4, dtype=float), _x),
    ("arange_size", lambda x: x + torch.arange(x.shape[0]).unsqueeze(1), _x),
    ("inplace_method", lambda x: x.clone().add_(1).mul_(2), _x),
    ("div_size_trunc", lambda x: x.reshape(-1, 2)[:torch.div(x.shape[0], 2,
                                                              rounding_mode="trunc")], _x),
    ("argmax", lambda x: x.argmax(dim=1), lambda n: (torch.randn(n, 4),)),
    ("where_function", lambda x, y: torch.where(x > 0, x, y), _xy),
    ("where_number", lambda x: torch.where(x > 0, x, 0.0), _x),
]


@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
def test_function_or_method_matches_eager(name, fn, make):
    check(fn, make)


def test_constant_scalar_tensor_read_as_a_number():
    """``torch.full(size, stride)`` with `stride` a 0-d element of a constant: eager reads
    the value, so does the trace."""
    strides = torch.tensor([8, 16, 32])

    def f(x):
        return x + torch.full((x.shape[0], 1), strides[1])

    check(f, _x)


def test_size_tensor_used_as_a_size():
    def f(x):
        rows = torch.tensor(x.shape[0]) * 4 // 2
        return x.reshape(-1, 2).view(rows, 2)[:rows // 2]

    check(f, _x)


def test_rule_less_function_with_metadata_only_needs_no_rule():
    x = torch.randn(3, 4)
    ep = st.export(lambda x: torch.special.bessel_j0(x), (x,))
    assert "aten.special_bessel_j0.default" in targets(ep)


def test_unsupported_call_names_the_function_and_the_line():
    with pytest.raises(st.UnsupportedOpError) as info:
        st.export(lambda x: x.untyped_storage(), (torch.randn(2),))
    msg = str(info.value)
    assert "untyped_storage" in msg and "test_methods.py" in msg
