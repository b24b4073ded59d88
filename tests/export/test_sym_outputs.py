"""Symbolic shapes, floats and bools returned by a dynamic program are computed by the graph."""

from __future__ import annotations

import io
import operator

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.helpers import assert_close

DYN = {"x": (Dim.DYNAMIC, Dim.DYNAMIC)}


class ReturnsShape(torch.nn.Module):
    def forward(self, x):
        return x.shape


class ReturnsMixed(torch.nn.Module):
    def forward(self, x):
        return x * 2, x.shape[1:], {"ratio": x.shape[1] / x.shape[0],
                                    "square": x.shape[0] == x.shape[1],
                                    "twice": x.shape[0] * 2}


def _roundtrip(ep):
    buf = io.BytesIO()
    st.save(ep, buf)
    return st.load(buf.getvalue())


@pytest.mark.parametrize("model", [ReturnsShape(), ReturnsMixed()])
def test_symbolic_outputs_match_eager_at_other_sizes_and_after_load(model):
    ep = st.export(model, (torch.randn(3, 4),), dynamic_shapes=DYN)
    loaded = _roundtrip(ep)
    for shape in [(5, 7), (6, 6), (1, 0)]:
        x = torch.randn(shape)
        expected = model(x)
        assert_close(expected, ep.module()(x))  # torch.Size comes back as a torch.Size
        assert_close(expected, loaded.module()(x))


def test_symbolic_float_output_is_a_graph_node():
    ep = st.export(ReturnsMixed(), (torch.randn(3, 4),), dynamic_shapes=DYN)
    assert operator.truediv in [n.target for n in ep.graph.nodes]
    out = ep.module()(torch.randn(4, 2))
    assert out[2]["ratio"] == 0.5 and isinstance(out[2]["ratio"], float)


def test_static_shape_output_is_a_torch_size():
    ep = st.export(ReturnsShape(), (torch.randn(3, 4),))
    out = ep.module()(torch.randn(3, 4))
    assert type(out) is torch.Size and out == (3, 4)


def test_shape_of_data_dependent_result():
    class NonzeroShape(torch.nn.Module):
        def forward(self, x):
            return torch.nonzero(x).shape

    ep = st.export(NonzeroShape(), (torch.tensor([0.0, 1.0, 2.0]),),
                   dynamic_shapes={"x": (Dim.DYNAMIC,)})
    x = torch.tensor([1.0, 0.0, 3.0, 4.0, 0.0])
    assert_close(NonzeroShape()(x), ep.module()(x))
    assert_close(NonzeroShape()(x), _roundtrip(ep).module()(x))
