"""A branch on tensor data, exported with torch.cond: both branches are in the graph and
the program picks one per call, at run time.

A Python `if x.sum() > 0:` cannot be exported (the graph never depends on data);
`st.explain` suggests the torch.cond rewrite used here.

    python examples/cond_model.py
"""

from __future__ import annotations

import torch
from torch import nn

import safetrace as st


class Gate(nn.Module):
    """Scales positive-mean rows through a linear layer, the others through sin."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.mean() > 0, lambda x: self.lin(x).relu(), lambda x: x.sin(), (x,))


class GateWithIf(Gate):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.mean() > 0:  # a Python branch on data: not exportable
            return self.lin(x).relu()
        return x.sin()


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(4, 8)
    report = st.explain(GateWithIf(), (x,))
    print(report)
    assert not report.ok

    model = Gate().eval()
    n = st.Dim("n", min=1)
    ep = st.export(model, (x,), dynamic_shapes={"x": (n, None)})
    ep.graph_module.print_readable()
    targets = {str(node.target) for node in ep.graph.nodes}
    assert "cond" in targets, targets  # torch.ops.higher_order.cond

    m = ep.module()
    for rows, sign in [(4, 1.0), (4, -1.0), (1, 1.0), (1, -1.0), (9, 1.0)]:
        x = torch.rand(rows, 8) * sign  # mean > 0 takes the first branch, < 0 the second
        with torch.no_grad():
            assert torch.allclose(m(x), model(x), atol=1e-6), (rows, sign)
        print(f"n={rows}, {'true' if sign > 0 else 'false'} branch: matches eager")
    try:
        m(torch.randn(0, 8))  # n >= 1 was declared
    except st.InputMismatchError as err:
        print(f"refused: {str(err).splitlines()[0]}")
    else:
        raise AssertionError("n=0 was accepted")


if __name__ == "__main__":
    main()
