"""A custom operator whose output size depends on data, exported with dynamic shapes.

The operator is registered with torch.library (so eager PyTorch runs it) and given a
fake implementation that says what its output looks like without computing it: a new
size `u0` between 0 and the input's length. safetrace exports it with no `st.check` at
all, and asserts the fake's promise at run time.

    python examples/custom_op.py
"""

from __future__ import annotations

import torch
from torch import nn

import safetrace as st


@torch.library.custom_op("examples::positive_values", mutates_args=())
def positive_values(x: torch.Tensor) -> torch.Tensor:
    """The entries of a 1-d tensor that are > 0, in order."""
    return x[x > 0].clone()


@positive_values.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    n = torch.library.get_ctx().new_dynamic_size(min=0, max=x.shape[0])
    return x.new_empty(n)


class Model(nn.Module):
    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        kept = torch.ops.examples.positive_values(x)
        return kept * scale[: kept.shape[0]]  # sliced to the data-dependent length


def main() -> None:
    torch.manual_seed(0)
    model = Model()
    n = st.Dim("n", max=4096)
    args = (torch.randn(16), torch.randn(16))
    ep = st.export(model, args, dynamic_shapes={"x": (n,), "scale": (n,)})
    ep.graph_module.print_readable()
    print(ep.describe_contract())
    print("range of the data-dependent size:",
          {str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()})

    m = ep.module()
    for size in (16, 0, 1, 100):
        x, scale = torch.randn(size), torch.randn(size)
        got, expected = m(x, scale), model(x, scale)
        assert got.shape == expected.shape and torch.allclose(got, expected), size
        print(f"n={size}: {got.shape[0]} values kept, matches eager")
    try:
        m(torch.randn(8), torch.randn(9))  # both inputs share the Dim n
    except st.InputMismatchError as err:
        print(f"refused: {str(err).splitlines()[0]}")
    else:
        raise AssertionError("x and scale of different lengths were accepted")


if __name__ == "__main__":
    main()
