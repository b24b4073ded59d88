"""``__index__`` of a one-element integer tensor (``torch.ones(b, n)`` with ``n`` a 0-d
tensor, OPT's ``torch.ones(batch, seq_length)`` under a StaticCache): the value is data,
read by the graph at run time as ``.item()`` reads it (an unbacked size with the dtype's
range, the checks export cannot prove asserted at run time), instead of a DataRead
refusal.  A parameter or buffer used so (a cache's length) is data too: never its value
at export.  torch.export is the reference where it exports the same program."""

from __future__ import annotations

import copy

import pytest
import torch

import safetrace as st


class Sizes(torch.nn.Module):
    def forward(self, x, n):
        return torch.ones(x.shape[0], n), x.new_zeros(n), x[:, :n], torch.arange(n) + 1


def test_a_0d_tensor_as_a_size_is_read_at_run_time_like_item():
    model = Sizes()
    x, n = torch.randn(3, 9), torch.tensor(4)
    ep = st.export(model, (x, n), dynamic_shapes=({0: st.Dim("b", min=0)}, None))
    reads = [nd for nd in ep.graph.nodes if nd.target is torch.ops.aten.item.default]
    assert len(reads) == 1  # one read of n, used four times
    for b, v in ((0, 0), (1, 1), (5, 7), (2, 9)):
        xi, ni = torch.randn(b, 9), torch.tensor(v)
        got, want = ep.module()(xi, ni), model(xi, ni)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)
    with pytest.raises(RuntimeError):  # eager: negative dimension
        model(x, torch.tensor(-1))
    with pytest.raises(st.RuntimeAssertionError, match="u0 >= 0"):
        ep.module()(x, torch.tensor(-1))
    with pytest.raises(st.InputMismatchError):  # a 1-d tensor where a 0-d one was exported
        ep.module()(x, torch.tensor([4]))


def test_matches_torch_export_on_the_reported_pattern():
    class Ones(torch.nn.Module):
        def forward(self, x, n):
            return x.sum() + torch.ones(x.shape[0], n)

    model = Ones()
    x, n = torch.randn(3, 2), torch.tensor(5)
    ep = st.export(model, (x, n))
    ref = torch.export.export(model, (x, n))
    for v in (0, 1, 6):
        torch.testing.assert_close(ep.module()(x, torch.tensor(v)), ref.module()(x, torch.tensor(v)))
        torch.testing.assert_close(ep.module()(x, torch.tensor(v)), model(x, torch.tensor(v)))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(4, 2), n)  # x's dims are static here


@pytest.mark.parametrize("dtype,shape", [(torch.int8, ()), (torch.int32, (1,)),
                                         (torch.uint8, (1, 1))])
def test_other_integer_dtypes_and_one_element_shapes(dtype, shape):
    class Zeros(torch.nn.Module):
        def forward(self, n):
            return torch.zeros(n, 2)

    n = torch.ones(shape, dtype=dtype)
    ep = st.export(Zeros(), (n,))
    for v in (0, 1, 3, 100):
        ni = torch.full(shape, v, dtype=dtype)
        torch.testing.assert_close(ep.module()(ni), Zeros()(ni))


def test_what_eager_refuses_stays_refused():
    class FloatSize(torch.nn.Module):
        def forward(self, x, n):
            return torch.ones(x.shape[0], n)

    with pytest.raises(TypeError):
        FloatSize()(torch.randn(2, 2), torch.tensor(2.0))
    with pytest.raises(st.ExportError, match="aten.ones"):
        st.export(FloatSize(), (torch.randn(2, 2), torch.tensor(2.0)))
    with pytest.raises(RuntimeError):  # a bool tensor: operator.index takes it, sizes do not
        FloatSize()(torch.randn(2, 2), torch.tensor(True))
    with pytest.raises(st.ExportError, match="__index__"):
        st.export(FloatSize(), (torch.randn(2, 2), torch.tensor(True)))


class Window(torch.nn.Module):
    """A buffer holding a length, used as a slice bound and advanced in place (as a static
    KV cache's ``cumulative_length``): its value is data, different on every call."""

    def __init__(self):
        super().__init__()
        self.register_buffer("pos", torch.tensor([1]))

    def forward(self, x):
        y = x[:, :self.pos]
        self.pos.add_(1)
        return y * 2


def test_a_buffer_as_a_size_is_read_at_each_call_never_specialized():
    model = Window()
    ep = st.export(copy.deepcopy(model), (torch.randn(2, 8),),
                   dynamic_shapes={"x": {0: st.Dim("b", min=1, max=4)}})
    for step in range(5):  # a fresh module each step: the program's state carries on
        x = torch.randn(1 + step % 3, 8)
        got, want = ep.module()(x), model(x)
        assert got.shape == want.shape == (x.shape[0], step + 1)
        torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(5, 8))
