"""Constructs that used to end in an internal exception escaping st.export (issue 21):
each now exports, or is refused with a catalogue error naming the line and the fix."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


class CondOnBuffer(torch.nn.Module):
    """A buffer as torch.cond's predicate ('Tensor' object has no attribute 'env')."""

    def __init__(self, flag: bool) -> None:
        super().__init__()
        self.register_buffer("pred", torch.tensor(flag))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(self.pred, lambda v: v + 1, lambda v: v * 2, (x,))


@pytest.mark.parametrize("flag", [True, False])
def test_a_buffer_as_the_cond_predicate_is_an_input_of_the_program(flag: bool) -> None:
    model = CondOnBuffer(flag)
    n = st.Dim("n", min=0, max=16)
    ep = st.export(model, (torch.randn(4),), dynamic_shapes={"x": {0: n}})
    m = ep.module()
    for size in (0, 1, 7):
        x = torch.randn(size)
        torch.testing.assert_close(m(x), model(x))
    # the predicate is read when the program runs: flipping the buffer flips the branch
    m.pred.fill_(not flag)
    x = torch.randn(3)
    torch.testing.assert_close(m(x), x + 1 if not flag else x * 2)
    with pytest.raises(st.InputMismatchError):
        m(torch.randn(17))


def test_a_script_module_is_refused_with_the_fix() -> None:
    with pytest.raises(st.UnsupportedInputError, match=r"TorchScript module") as info:
        st.export(torch.jit.script(torch.nn.Linear(3, 3)), (torch.randn(2, 3),))
    assert "export the original nn.Module" in info.value.fix


def test_vmap_inside_the_program_is_refused_naming_the_line() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.vmap(lambda r: r * 2)(x)

    with pytest.raises(st.UnsupportedOpError, match=r"torch.vmap.*\n*.*") as info:
        st.export(f, (torch.randn(3, 4),))
    assert "test_clear_refusals.py" in str(info.value)
    assert "broadcasting instead of torch.vmap" in info.value.fix
