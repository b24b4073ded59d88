"""A torch.cond branch that returns an operand, a view of one, or one tensor twice: eager's
cond returns that alias, the program's branch a copy. Reading the outputs is eager's
result; an in-place write afterwards to such an output or to the operand it views would
show through the other in eager only, so the export refuses it (fuzz seed 301: the
program returned the operand's old first element where eager returned the new one)."""

import pytest
import torch

import safetrace as st
from safetrace.errors import UnsupportedConstruct

D = st.Dim("d0", min=2, max=16)


class ViewThenWriteOperand(torch.nn.Module):
    def forward(self, x):
        v = torch.cond(x.numel() % 2 == 1, lambda t: t.sum(0, keepdim=True),
                       lambda t: t[:1], (x,))
        x.copy_(x.flip(0))
        return v, x.cumsum(0)


class OperandThenWriteOutput(torch.nn.Module):
    def forward(self, x):
        v = torch.cond(x.shape[0] > 4, lambda t: t, lambda t: t * 2, (x,))
        v.add_(1)
        return v


class RepeatedThenWrite(torch.nn.Module):
    def forward(self, x):
        y = x * 3
        a, b = torch.cond(x.shape[0] > 4, lambda t: (t + 1, t - 1),
                          lambda t: (lambda u: (u, u))(t * 2), (y,))
        a.mul_(2)
        return a, b


@pytest.mark.parametrize("cls", [ViewThenWriteOperand, OperandThenWriteOutput,
                                 RepeatedThenWrite])
def test_a_write_through_an_alias_cond_returns_is_refused(cls):
    x = torch.randn(4)
    before = x.clone()
    with pytest.raises(UnsupportedConstruct, match="torch.cond"):
        st.export(cls(), (x,), dynamic_shapes=({0: D},))
    assert torch.equal(x, before)  # (export never changes the user's inputs)


class ViewReadOnly(torch.nn.Module):
    def forward(self, x):
        v = torch.cond(x.numel() % 2 == 1, lambda t: t.sum(0, keepdim=True),
                       lambda t: t[:1], (x,))
        return v * 2, x.cumsum(0)


def test_reading_an_alias_cond_returns_is_eagers_result_at_other_sizes():
    ep = st.export(ViewReadOnly(), (torch.randn(4),), dynamic_shapes=({0: D},))
    for n in (2, 3, 5, 16):
        x = torch.randn(n)
        for got, want in zip(ep.module()(x.clone()), ViewReadOnly()(x.clone())):
            torch.testing.assert_close(got, want)
    with pytest.raises(Exception, match="d0|shape"):
        ep.module()(torch.randn(17))  # (outside the declared space: refused before running)
    with pytest.raises(Exception, match="d0|shape"):
        ep.module()(torch.randn(1))
