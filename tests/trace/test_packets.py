"""Operator objects called directly: ATen packets (``torch.ops.aten.add(x, 1)``), explicit
overloads (``torch.ops.aten.add.Tensor``) and custom ops, each spelling of a call."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from tests.trace.common import check, targets

aten = torch.ops.aten


def _x(n):
    return (torch.randn(n, 4),)


def _xy(n):
    return torch.randn(n, 4), torch.randn(n, 4)


# (name, function, inputs, the overload the graph must call)
PACKETS = [
    ("add_scalar", lambda x: aten.add(x, 1), _x, "aten.add.Tensor"),
    ("add_float", lambda x: aten.add(x, 2.5), _x, "aten.add.Tensor"),
    ("add_tensor", lambda x, y: aten.add(x, y), _xy, "aten.add.Tensor"),
    ("add_alpha", lambda x, y: aten.add(x, y, alpha=2), _xy, "aten.add.Tensor"),
    ("sub", lambda x, y: aten.sub(x, y), _xy, "aten.sub.Tensor"),
    ("mul_scalar", lambda x: aten.mul(x, 3), _x, "aten.mul.Tensor"),
    ("div_mode", lambda x: aten.div(x, 2, rounding_mode="floor"), _x, "aten.div.Tensor_mode"),
    ("clamp_numbers", lambda x: aten.clamp(x, 0, 1), _x, "aten.clamp.default"),
    ("clamp_min_kw", lambda x: aten.clamp(x, min=-0.5), _x, "aten.clamp.default"),
    ("clamp_tensors", lambda x, y: aten.clamp(x, y, y + 1), _xy, "aten.clamp.Tensor"),
    ("pow_scalar", lambda x: aten.pow(x, 2), _x, "aten.pow.Tensor_Scalar"),
    ("pow_tensor", lambda x, y: aten.pow(x.abs(), y), _xy, "aten.pow.Tensor_Tensor"),
    ("where", lambda x, y: aten.where(x > 0, x, y), _xy, "aten.where.self"),
    ("sum_dims", lambda x: aten.sum(x, [1]), _x, "aten.sum.dim_IntList"),
    ("sum_all", lambda x: aten.sum(x), _x, "aten.sum.default"),
    ("mean_keep", lambda x: aten.mean(x, [1], True), _x, "aten.mean.dim"),
    ("view_sym", lambda x: aten.view(x, [x.shape[0] * 2, 2]), _x, "aten.view.default"),
    ("reshape", lambda x: aten.reshape(x, [-1]), _x, "aten.reshape.default"),
    ("cat", lambda x, y: aten.cat([x, y], 1), _xy, "aten.cat.default"),
    ("max_dim", lambda x: aten.max(x, 1)[0], _x, "aten.max.dim"),
    ("transpose", lambda x: aten.transpose(x, 0, 1), _x, "aten.transpose.int"),
    ("select", lambda x: aten.select(x, 1, 2), _x, "aten.select.int"),
    ("split", lambda x: aten.split(x, 2, 1)[1], _x, "aten.split.Tensor"),
    ("relu", lambda x: aten.relu(x), _x, "aten.relu.default"),
    ("softmax", lambda x: aten._softmax(x, 1, False), _x, "aten._softmax.default"),
    ("full_like", lambda x: aten.full_like(x, 7.0), _x, "aten.full_like.default"),
    ("zeros_sym", lambda x: x + aten.zeros([x.shape[0], 4]), _x, "aten.zeros.default"),
]

OVERLOADS = [
    ("add_Tensor", lambda x, y: aten.add.Tensor(x, y), _xy),
    ("add_Tensor_number", lambda x: aten.add.Tensor(x, 2), _x),
    ("add_Scalar", lambda x: aten.add.Scalar(x, 2), _x),
    ("mul_Tensor_alpha_free", lambda x, y: aten.mul.Tensor(x, y), _xy),
    ("clamp_default", lambda x: aten.clamp.default(x, 0, 1), _x),
    ("clamp_Tensor", lambda x, y: aten.clamp.Tensor(x, y), _xy),
    ("max_dim", lambda x: aten.max.dim(x, 1, True)[0], _x),
    ("view_default", lambda x: aten.view.default(x, [-1, 2]), _x),
    ("sum_dim", lambda x: aten.sum.dim_IntList(x, [0], True), _x),
    ("slice_Tensor", lambda x: aten.slice.Tensor(x, 1, 1, 3), _x),
    ("expand", lambda x: aten.expand.default(x[:, :1], [x.shape[0], 4]), _x),
    ("add_inplace", lambda x: aten.add_.Tensor(x.clone(), 1), _x),
]


@pytest.mark.parametrize("name,fn,make,overload", PACKETS, ids=[p[0] for p in PACKETS])
def test_aten_packet_exports_and_picks_the_overload(name, fn, make, overload):
    ep = check(fn, make)
    assert overload in targets(ep)


@pytest.mark.parametrize("name,fn,make", OVERLOADS, ids=[p[0] for p in OVERLOADS])
def test_explicit_overload_is_recorded_as_called(name, fn, make):
    check(fn, make)


def test_packet_and_function_spellings_build_the_same_graph():
    x = torch.randn(3, 4)
    pairs = [(lambda x: aten.add(x, 1), lambda x: torch.add(x, 1)),
             (lambda x: aten.clamp(x, 0, 1), lambda x: torch.clamp(x, 0, 1)),
             (lambda x: aten.sum(x, [1]), lambda x: x.sum(1))]
    for packet, function in pairs:
        assert targets(st.export(packet, (x,))) == targets(st.export(function, (x,)))


def test_packet_in_a_module_with_state():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(4))

        def forward(self, x):
            return aten.mul(aten.add(x, self.w), 2)

    m = M()
    check(m, _x)


def test_packet_that_no_overload_accepts_is_an_error_not_a_crash():
    with pytest.raises((st.ExportError, RuntimeError, TypeError)):
        st.export(lambda x: aten.add(x, "a"), (torch.randn(2),))


# -- custom ops: the packet, the overload, the fake ----------------------------------------
@st.custom_op("trace_tests::scale", mutates_args=())
def _scale(x: torch.Tensor, k: float) -> torch.Tensor:
    return x * k


@st.register_fake("trace_tests::scale")
def _scale_fake(x, k):
    return torch.empty_like(x)


@pytest.mark.parametrize("spelling", ["packet", "overload", "python"])
def test_custom_op_in_every_spelling(spelling):
    op = {"packet": torch.ops.trace_tests.scale, "overload": torch.ops.trace_tests.scale.default,
          "python": _scale}[spelling]
    ep = check(lambda x: op(x, 3.0) + 1, _x)
    assert "trace_tests.scale.default" in targets(ep)
