"""x.new_tensor(data) and nonzero(m, as_tuple=True) export and match eager."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.helpers import assert_close


def _roundtrip(ep):
    buf = io.BytesIO()
    st.save(ep, buf)
    return st.load(buf.getvalue())


class NewTensor(torch.nn.Module):
    def forward(self, x):
        return x + x.new_tensor([1, 2, 3, 4]), x.new_tensor(2.5, dtype=torch.float64)


class NewTensorOfSize(torch.nn.Module):
    def forward(self, x):
        return x.new_tensor([x.shape[0], 7])


def test_new_tensor_of_numbers_is_a_constant_with_x_dtype_and_device():
    ep = st.export(NewTensor(), (torch.randn(3, 4),), dynamic_shapes={"x": (Dim.DYNAMIC, 4)})
    assert "new_tensor" not in str(ep.graph)
    for shape in [(5, 4), (1, 4)]:
        x = torch.randn(shape)
        assert_close(NewTensor()(x), ep.module()(x))
        assert_close(NewTensor()(x), _roundtrip(ep).module()(x))
    out = ep.module()(torch.randn(2, 4, dtype=torch.float32))
    assert out[1].dtype == torch.float64


def test_new_tensor_of_an_int_input_keeps_int_dtype():
    x = torch.arange(4)
    ep = st.export(NewTensor(), (x,))
    assert_close(NewTensor()(x), ep.module()(x))


def test_new_tensor_of_sizes_is_computed_by_the_graph():
    ep = st.export(NewTensorOfSize(), (torch.randn(3, 4),),
                   dynamic_shapes={"x": (Dim.DYNAMIC, 4)})
    x = torch.randn(6, 4)
    assert_close(NewTensorOfSize()(x), ep.module()(x))


class NonzeroTuple(torch.nn.Module):
    def forward(self, x):
        rows, cols = torch.nonzero(x > 0, as_tuple=True)
        r2, c2 = (x > 0).nonzero(as_tuple=True)  # the method spelling
        return rows, cols * 2, x[rows, cols], r2 - c2


class WhereTuple(torch.nn.Module):
    def forward(self, x):
        rows, cols = torch.where(x > 0)
        return rows, cols * 2, x[rows, cols]


@pytest.mark.parametrize("model", [NonzeroTuple(), WhereTuple()])
def test_nonzero_as_tuple_matches_eager_with_data_dependent_lengths(model):
    ep = st.export(model, (torch.randn(3, 4),), dynamic_shapes={"x": (Dim.DYNAMIC, Dim.DYNAMIC)})
    loaded = _roundtrip(ep)
    for shape in [(5, 7), (1, 1), (0, 3)]:
        x = torch.randn(shape)
        assert_close(model(x), ep.module()(x))
        assert_close(model(x), loaded.module()(x))
    x = torch.full((2, 2), -1.0)  # no nonzero entry at all
    assert_close(model(x), ep.module()(x))


def test_nonzero_as_tuple_of_a_0_dim_tensor():
    class Scalar(torch.nn.Module):
        def forward(self, x):
            return torch.nonzero(x, as_tuple=True)

    ep = st.export(Scalar(), (torch.tensor(3.0),))
    for v in (5.0, 0.0):
        x = torch.tensor(v)
        assert_close(Scalar()(x), ep.module()(x))


def test_nonzero_default_is_unchanged():
    class Plain(torch.nn.Module):
        def forward(self, x):
            return torch.nonzero(x), x.nonzero(as_tuple=False)

    ep = st.export(Plain(), (torch.randn(3, 4),))
    x = torch.randn(3, 4)
    assert_close(Plain()(x), ep.module()(x))
