"""Custom ops whose fake implementation creates data-dependent sizes (issue 15 item 5),
in models with static and with dynamic inputs: the graph reads each size from the op's
result (a size or a value linear in it), the fake's promises become run-time assertions,
and the sizes flow into later ops."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.helpers import matches_eager


@st.custom_op("trace_custom::positives")
def positives(x: torch.Tensor) -> torch.Tensor:
    return x[x > 0]


@st.register_fake(positives)
def _(x):
    return x.new_empty(st.new_dynamic_size(max=x.numel()))


@st.custom_op("trace_custom::doubled")
def doubled(x: torch.Tensor) -> torch.Tensor:
    p = x[x > 0]
    return torch.cat([p, p])


@st.register_fake(doubled)
def _(x):
    return x.new_empty(2 * st.new_dynamic_size(max=x.numel()))


@st.custom_op("trace_custom::with_input")
def with_input(x: torch.Tensor) -> torch.Tensor:
    return torch.cat([x[x > 0], x])


@st.register_fake(with_input)
def _(x):
    return x.new_empty(st.new_dynamic_size(max=x.numel()) + x.shape[0])


@st.custom_op("trace_custom::rows")
def rows(x: torch.Tensor) -> torch.Tensor:
    return x[x[:, 0] > 0]


@st.register_fake(rows)
def _(x):
    u = st.new_dynamic_size()
    st.check(u <= x.shape[0])
    return x.new_empty(u, x.shape[1])


@st.custom_op("trace_custom::split_signs")
def split_signs(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    p, n = x[x > 0], x[x <= 0]
    return p, n, int(p.numel()) + 1


@st.register_fake(split_signs)
def _(x):
    u = st.new_dynamic_size(max=x.numel())
    v = st.new_dynamic_size(max=x.numel())
    return x.new_empty(u), x.new_empty(v), u + 1


@torch.library.custom_op("trace_custom::torch_style", mutates_args=())
def torch_style(x: torch.Tensor) -> torch.Tensor:
    return x[x > 0].clone()


@torch_style.register_fake
def _(x):
    u = torch.library.get_ctx().new_dynamic_size()
    torch._check(u <= x.numel())
    return x[:u].clone()  # the fake computes with torch ops on its own sizes


@st.custom_op("trace_custom::liar")
def liar(x: torch.Tensor) -> torch.Tensor:
    return torch.cat([x, x, x])  # more than its fake promises


@st.register_fake(liar)
def _(x):
    return x.new_empty(st.new_dynamic_size(max=x.numel()))


PROGRAMS = {
    "sum": lambda x: positives(x).sum() + x,
    "size_as_slice_end": lambda x: x[: positives(x).shape[0]],
    "size_in_a_factory": lambda x: torch.zeros(positives(x).shape[0] * 2 + 1),
    "view": lambda x: positives(x).view(-1, 1) * 2,
    "multiple_of_size": lambda x: x.new_zeros(doubled(x).shape[0]) + doubled(x).sum(),
    "size_plus_input": lambda x: with_input(x)[x.shape[0]:].sum() + with_input(x).shape[0],
    "rows": lambda x: rows(torch.stack([x, -x], 1)).sum(0),
    "rows_count": lambda x: x.new_zeros(rows(torch.stack([x, x], 1)).shape[0]),
    "two_sizes_and_a_value": lambda x: _signs(x),
    "torch_style_fake": lambda x: torch_style(x).sum() + torch_style(x).shape[0],
}


def _signs(x):
    p, n, k = split_signs(x)
    return torch.cat([p, n]).sum() + x.new_zeros(k)


def _inputs(n):
    yield torch.randn(n)
    yield torch.ones(n)
    yield -torch.ones(n)


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_custom_op_with_a_data_dependent_size(name, dynamic):
    f = PROGRAMS[name]
    spec = ({0: Dim("n", min=0)},) if dynamic else None
    ep = st.export(f, (torch.randn(6),), dynamic_shapes=spec)
    for n in ((0, 1, 2, 6, 9) if dynamic else (6,)):
        for x in _inputs(n):
            matches_eager(ep, f, (x,))


def test_the_fakes_promise_is_checked_at_run_time():
    for dynamic in (None, ({0: Dim("n")},)):
        ep = st.export(lambda x: liar(x) * 1, (torch.randn(4),), dynamic_shapes=dynamic)
        with pytest.raises(st.RuntimeAssertionError, match="u0"):
            ep.module()(torch.randn(4))


def test_a_check_in_the_fake_on_a_dynamic_input_size_is_asserted():
    ep = st.export(lambda x: rows(x) + 0, (torch.randn(5, 2),),
                   dynamic_shapes=({0: Dim("n")},))
    assert any("assert" in str(n.target) for n in ep.graph.nodes)
    for n in (1, 3, 8):
        x = torch.randn(n, 2)
        matches_eager(ep, lambda x: rows(x) + 0, (x,))
