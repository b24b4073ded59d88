"""Hooks registered on the exported model itself run in the program, as eager `model(x)`
and torch.export run them (export traced `model.forward`, which runs none of the model's
own hooks: a program silently without them).  Checked against eager at other sizes, 0 and
1 included, and inputs outside the declared space rejected."""

import pytest
import torch

import safetrace as st

N = st.Dim("n", max=64)


class Doubler(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x, scale=1.0):
        return self.lin(x) * scale


def _hooked(kind: str) -> Doubler:
    m = Doubler()
    if kind == "forward":
        m.register_forward_hook(lambda mod, args, out: out * 3 + args[0].sum())
    elif kind == "pre":
        m.register_forward_pre_hook(lambda mod, args: (args[0] - 1,))
    elif kind == "kwargs":
        m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": 2.0}),
                                    with_kwargs=True)
        m.register_forward_hook(lambda mod, args, kwargs, out: out + kwargs["scale"],
                                with_kwargs=True)
    return m


@pytest.mark.parametrize("kind", ["forward", "pre", "kwargs"])
def test_the_models_own_hooks_run_in_the_program(kind):
    m = _hooked(kind)
    ep = st.export(m, (torch.randn(4, 3),), dynamic_shapes=({0: N},))
    ours = ep.module()
    for n in (0, 1, 5, 64):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ours(x), m(x))
    with pytest.raises(st.InputMismatchError):
        ours(torch.randn(65, 3))
    with pytest.raises(st.InputMismatchError):
        ours(torch.randn(4, 4))


@pytest.mark.slow  # (torch.export's first call: seconds)
@pytest.mark.parametrize("kind", ["forward", "pre", "kwargs"])
def test_torch_exports_programs_run_the_models_own_hooks_too(kind):
    m = _hooked(kind)
    theirs = torch.export.export(m, (torch.randn(4, 3),)).module()
    x = torch.randn(4, 3)
    torch.testing.assert_close(theirs(x), m(x))
