"""``ep.run_decompositions()`` on programs with control flow (issue 22 item 7; it raised
``KeyError: true_graph_0`` on any program holding a torch.cond): the operators inside
branches and loop bodies are decomposed too, the contract is kept, and the result matches
eager at other sizes."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace.trace.hops import submodules


class Branchy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, lambda v: self.lin(v).relu(), lambda v: v * 2, (x,))


def _targets(graph: torch.fx.Graph) -> set[str]:
    out = {str(n.target) for n in graph.nodes if n.op == "call_function"}
    for sub in submodules(graph).values():
        out |= _targets(sub.graph)
    return out


def test_branches_are_decomposed_and_the_contract_kept() -> None:
    model = Branchy().eval()
    n = st.Dim("n", min=1, max=16)
    ep = st.export(model, (torch.randn(3, 4),), dynamic_shapes={"x": {0: n}})
    assert "aten.linear.default" in _targets(ep.graph)
    d = ep.run_decompositions()
    assert "aten.linear.default" not in _targets(d.graph)  # decomposed inside the branch
    for rows in (1, 2, 16):
        for sign in (1.0, -1.0):
            x = torch.rand(rows, 4) * sign
            torch.testing.assert_close(d.module()(x), model(x))
    for bad in (torch.randn(17, 4), torch.randn(0, 4), torch.randn(3, 5)):
        with pytest.raises(st.InputMismatchError):
            d.module()(bad)


def test_a_while_loop_body_is_decomposed() -> None:
    from torch._higher_order_ops import while_loop

    lin = torch.nn.Linear(3, 3)

    def f(x: torch.Tensor) -> torch.Tensor:
        def cond_fn(i, v):
            return i < 3

        def body_fn(i, v):
            return i + 1, torch.nn.functional.linear(v, lin.weight, lin.bias).tanh()

        return while_loop(cond_fn, body_fn, (torch.tensor(0), x))[1]

    ep = st.export(f, (torch.randn(2, 3),), dynamic_shapes={"x": {0: st.Dim("b", max=8)}})
    d = ep.run_decompositions()
    assert "aten.linear.default" not in _targets(d.graph)
    for rows in (1, 5):
        x = torch.randn(rows, 3)
        torch.testing.assert_close(d.module()(x), f(x))
