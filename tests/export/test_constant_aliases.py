"""A tensor made in forward from literals is folded into constants, and so are its views
(``c.view(())``): each becomes its own input of the program.  A write through one of them
while another is read would be lost (eager: 8 * x; a program with two constants: 6 * x),
so it is refused with the fix; the factory the fix names gives eager's answer."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace.errors import UnsupportedConstruct


class WrittenThroughView(torch.nn.Module):
    def forward(self, x):
        c = torch.tensor(6.0)
        c.view(()).add_(2)
        return x * c


class ReadThroughView(torch.nn.Module):
    def forward(self, x):
        c = torch.tensor([6.0, 1.0])
        v = c[0]
        c.view(2).add_(1)
        return x * v


class WrittenBaseReadBase(torch.nn.Module):
    def forward(self, x):
        c = torch.tensor(6.0)
        c.add_(2)
        return x * c


class Recorded(torch.nn.Module):
    def forward(self, x):
        c = torch.full((), 6.0)
        c.view(()).add_(2)
        return x * c


class ViewsOnlyRead(torch.nn.Module):
    def forward(self, x):
        c = torch.tensor([6.0, 1.0])
        return x[:2] * c.view(2) + c


@pytest.mark.parametrize("model", [WrittenThroughView(), ReadThroughView()],
                         ids=["written_through_view", "read_through_view"])
def test_a_write_through_another_view_of_a_folded_constant_is_refused(model):
    with pytest.raises(UnsupportedConstruct, match="torch.full"):
        st.export(model, (torch.randn(3),), dynamic_shapes=({0: st.Dim("n", min=2)},))


@pytest.mark.parametrize("model", [WrittenBaseReadBase(), Recorded(), ViewsOnlyRead()],
                         ids=["base_written", "factory", "views_read_only"])
def test_programs_without_a_lost_write_match_eager(model):
    ep = st.export(model, (torch.randn(3),), dynamic_shapes=({0: st.Dim("n", min=2)},))
    for n in (2, 5, 9):
        x = torch.randn(n)
        torch.testing.assert_close(ep.module()(x), model(x))
        torch.testing.assert_close(ep.module()(x), model(x))  # the state is not carried
    with pytest.raises(Exception):
        ep.module()(torch.randn(1))


def test_an_operator_only_torchscript_registers_does_not_stop_the_write_analysis():
    # `aten.device(str) -> Device` (a torch.device made in traced code) is unknown to the
    # dispatcher: asking it whether the op is a composite raised "operator aten::device
    # does not exist" once a program with a constant writes anything
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c = torch.ones(1)  # (a constant: not a parameter, not a buffer)

        def forward(self, x):
            where = torch.ops.aten.device("cpu")
            z = x.clone()
            z.add_(self.c)
            return z.to(where)

    ep = st.export(M(), (torch.rand(3),), dynamic_shapes={"x": {0: st.Dim.AUTO}})
    for n in (0, 1, 5):
        x = torch.rand(n)
        assert torch.equal(ep.module()(x), M()(x))
