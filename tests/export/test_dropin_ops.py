"""Operators a user switching from torch.export meets (issue 21): nn.MultiheadAttention's
fast path and ``torch._native_multi_head_attention``, ``nonzero_static``,
``multinomial``, ``pad_sequence`` and ``is_nonzero``.  Each case is exported by both
safetrace and torch.export where torch exports it, and checked against eager at other
sizes (0 and 1 where legal); inputs outside the declared space are refused."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import safetrace as st

from tests.export.dropin_check import check_program


class MHA(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.m = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.m(x, x, x)


class NativeMHA(nn.Module):
    def __init__(self, need_weights: bool, average: bool) -> None:
        super().__init__()
        self.qkv, self.proj = nn.Linear(8, 24), nn.Linear(8, 8)
        self.need_weights, self.average = need_weights, average

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple:
        out, w = torch._native_multi_head_attention(
            q, k, v, 8, 2, self.qkv.weight, self.qkv.bias, self.proj.weight,
            self.proj.bias, None, need_weights=self.need_weights,
            average_attn_weights=self.average)
        return (out,) if w is None else (out, w)


class NonzeroStatic(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nonzero_static(x, size=4, fill_value=-1)


class Multinomial(nn.Module):
    def forward(self, p: torch.Tensor) -> torch.Tensor:
        return torch.multinomial(p, 3, replacement=True)


class PadSequence(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return nn.utils.rnn.pad_sequence([a, b], batch_first=True, padding_value=-1.0)


class SizedByLiteral(nn.Module):
    """A factory whose size is a one-element integer tensor made in forward: eager reads
    it through __index__ (torch.empty(tensor([3])) is empty(3))."""

    def forward(self, x: torch.Tensor) -> tuple:
        n = torch.tensor([3])
        grown = torch.tensor(2)
        grown.add_(x.shape[0])  # written: read when the program runs, not folded
        return (torch.empty(n).shape[0] + x, torch.zeros(1, n) + 1,
                x.new_ones(grown), torch.ones(torch.tensor([[1]]), 2))


def _b(name: str = "b", **kw) -> torch.export.Dim:
    return torch.export.Dim(name, **kw)  # st.export takes torch's Dims as they are


def _seq3(b: int, s: int) -> tuple:
    q = torch.randn(b, s, 8)
    return (q, q.clone(), q.clone())


# name -> (model, example, spec, other inputs, inputs outside the space, torch exports it)
CASES = {
    "mha-module": (lambda: MHA().eval(), (torch.randn(2, 5, 8),),
                   {"x": {0: _b(), 1: _b("s", max=64)}},
                   # (no batch 0: eager's fast path then returns no weights, the
                   # slow path that torch.export and safetrace record returns empty ones)
                   [(torch.randn(1, 1, 8),), (torch.randn(3, 7, 8),)],
                   [(torch.randn(2, 65, 8),), (torch.randn(2, 5, 7),)], True),
    # (torch.export's program differs from eager here: its fake gives a tensor where the
    # kernel returns None, so the traced `w is None` test goes the other way)
    "native-mha": (lambda: NativeMHA(False, True).eval(), _seq3(2, 5),
                   {"q": {0: _b()}, "k": {0: _b()}, "v": {0: _b()}},
                   [_seq3(1, 5), _seq3(4, 5), _seq3(0, 5)], [_seq3(2, 6)], False),
    # the kernel returns no weights for an empty query: b >= 1 where weights are asked
    # for (torch.export accepts b = 0 and promises a tensor the program does not return)
    "native-mha-weights": (lambda: NativeMHA(True, False).eval(), _seq3(2, 5),
                           {"q": {0: _b(min=1)}, "k": {0: _b(min=1)}, "v": {0: _b(min=1)}},
                           [_seq3(1, 5), _seq3(4, 5)], [_seq3(2, 6), _seq3(0, 5)], True),
    "native-mha-averaged": (lambda: NativeMHA(True, True).eval(), _seq3(2, 5),
                            None, [_seq3(2, 5)], [_seq3(3, 5)], True),
    "nonzero-static": (NonzeroStatic, (torch.tensor([0.0, 1, 2, 0, 3, 4, 5]),),
                       {"x": {0: _b("n")}},
                       [(torch.tensor([0.0, 0]),), (torch.tensor([1.0]),),
                        (torch.zeros(0),), (torch.arange(9.0),)],
                       [(torch.zeros(2, 2),)], True),
    "multinomial": (Multinomial, (torch.rand(2, 5),), {"p": {0: _b(), 1: _b("k")}},
                    [(torch.rand(1, 1),), (torch.rand(3, 9),)],
                    [(torch.rand(2, 5, 1),)], True),
    "factory-size-tensor": (SizedByLiteral, (torch.randn(4),), {"x": {0: _b("n")}},
                            [(torch.randn(0),), (torch.randn(1),), (torch.randn(7),)],
                            [(torch.randn(2, 2),)], True),
    "pad-sequence": (PadSequence, (torch.randn(3, 2), torch.randn(5, 2)),
                     {"a": {0: _b("la")}, "b": {0: _b("lb")}},
                     [(torch.randn(0, 2), torch.randn(1, 2)), (torch.randn(7, 2),
                                                               torch.randn(2, 2))],
                     [(torch.randn(3, 3), torch.randn(5, 2))], True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_exports_like_torch(name: str) -> None:
    make, example, spec, others, bad, torch_exports = CASES[name]
    model = make()
    with torch.no_grad():  # nn.MultiheadAttention's fast path: eval and no_grad
        ep = st.export(model, example, dynamic_shapes=spec)
        ref = torch.export.export(model, example, dynamic_shapes=spec) \
            if torch_exports else None
        reseed = (lambda: torch.manual_seed(0)) if name == "multinomial" else (lambda: None)
        check_program(ep, model, [example, *others], bad, ref=ref, before=reseed)
        # and converted: ep.to_torch() computes the same
        check_program(ep, ep.to_torch().module(), [example, *others], before=reseed)


class IsNonzero(nn.Module):
    def forward(self, x: torch.Tensor) -> bool:
        return torch.is_nonzero(x)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.bool])
def test_is_nonzero_is_a_bool_read_at_run_time(dtype: torch.dtype) -> None:
    # torch 2.13's export refuses this (GuardOnDataDependentSymNode on Eq(u0, 1)); torch's
    # test runs it with capture_scalar_outputs and expects the run-time value
    x = torch.full((), 1).to(dtype)
    ep = st.export(IsNonzero(), (x,))
    check_program(ep, IsNonzero(), [(x,), (torch.zeros((), dtype=dtype),),
                                    (torch.full((), 3).to(dtype),)],
                  [(torch.ones(1).to(dtype),), (torch.ones((), dtype=torch.float64),)])
    for t in (x.reshape(1), x.reshape(1, 1)):  # one element, any rank
        assert st.export(IsNonzero(), (t,)).module()(t) is True


def test_is_nonzero_refuses_what_eager_refuses() -> None:
    with pytest.raises(RuntimeError):
        torch.is_nonzero(torch.ones(2))
    with pytest.raises(st.OpShapeError, match="ambiguous"):
        st.export(IsNonzero(), (torch.ones(2),))
    with pytest.raises(st.DataDependentError, match="u0 == 1"):  # a decision on data
        st.export(lambda x: x + 1 if x.is_nonzero() else x - 1, (torch.ones(()),))


def test_native_mha_weights_need_a_nonempty_query() -> None:
    # an empty batch is refused at run time, before computing (a named Dim's size below 2)
    model = NativeMHA(True, True).eval()
    ep = st.export(model, _seq3(2, 5),
                   dynamic_shapes={"q": {0: _b()}, "k": {0: _b()}, "v": {0: _b()}})
    for b in (1, 3):
        args = _seq3(b, 5)
        torch.testing.assert_close(ep.module()(*args), model(*args))
    with pytest.raises(st.InputMismatchError, match="b >= 1|>= 1"):
        ep.module()(*_seq3(0, 5))


class PositiveSum(nn.Module):
    def forward(self, x: torch.Tensor) -> bool:
        return (x.sum() > 0).item()


def test_a_bool_item_returned_is_read_at_run_time() -> None:
    # it was an internal error ("symbol u0 has no source in the graph")
    x = torch.ones(3)
    ep = st.export(PositiveSum(), (x,), dynamic_shapes={"x": {0: _b("n")}})
    ref = torch.export.export(PositiveSum(), (x,), dynamic_shapes={"x": {0: _b("n")}})
    check_program(ep, PositiveSum(), [(x,), (-x,), (torch.zeros(0),), (torch.ones(1),)],
                  [(torch.ones(2, 2),)], ref=ref)
