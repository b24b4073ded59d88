"""An in-place op that changes the shape of module state or of a constant (``self.b.unsqueeze_(0)``,
``self.w.t_()``, ``torch.tensor([...]).unsqueeze_(0)``) is refused at export: the trace read
the tensor's old shape after the op (``b.shape[0] + b.dim()`` gave 3 where eager gives 4, a
wrong result), and the program's next call would reshape its state again.  Reshaping a
tensor the program computed, in place, keeps working."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


class _Buffer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("b", torch.randn(1, 3))

    def forward(self, x):
        self.b.unsqueeze_(0)
        return x + self.b * (self.b.shape[0] + self.b.dim())


class _Param(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(1, 4))

    def forward(self, x):
        with torch.no_grad():
            self.w.t_()
        return x @ self.w


def _literal(x):
    c = torch.tensor([1.0, 2.0, 3.0])
    c.unsqueeze_(0)
    return x * c.shape[0] * c.dim() + c


@pytest.mark.parametrize("model, x, op, what", [
    (_Buffer(), torch.randn(2, 3), "unsqueeze_", "module state `b`"),
    (_Param(), torch.randn(3, 4), "t_", "module state `w`"),
    (_literal, torch.randn(2, 3), "unsqueeze_", "a tensor the model made or holds"),
])
def test_reshaping_state_or_a_constant_in_place_is_refused(model, x, op, what):
    before = {k: v.clone() for k, v in model.state_dict().items()} \
        if isinstance(model, torch.nn.Module) else {}
    with pytest.raises(st.UnsupportedOpError) as info:
        st.export(model, (x,))
    msg = str(info.value)
    assert f"`{op}`" in msg and f"changes the shape of {what} in place" in msg
    assert "test_state_reshaped_in_place.py" in msg and "Fix: reshape a new tensor" in msg
    for k, v in before.items():  # (the model is untouched)
        assert torch.equal(model.state_dict()[k], v)


def test_the_fix_exports_and_matches_eager():
    class Fixed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("b", torch.randn(1, 3))

        def forward(self, x):
            b = self.b.unsqueeze(0)
            return x + b * (b.shape[0] + b.dim())

    m = Fixed()
    n = Dim("n", max=64)
    ep = st.export(m, (torch.randn(2, 3),), dynamic_shapes={"x": {0: n}})
    for rows in (0, 1, 5, 64):
        x = torch.randn(rows, 3)
        torch.testing.assert_close(ep.module()(x), m(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(65, 3))


def test_a_computed_tensor_reshaped_in_place_still_exports():
    def f(x):
        y = x * 2
        y.t_()
        return y * y.shape[0] + y.dim()

    ep = st.export(f, (torch.randn(2, 3),), dynamic_shapes={"x": {0: Dim("n", max=32)}})
    for rows in (0, 1, 7, 32):
        x = torch.randn(rows, 3)
        torch.testing.assert_close(ep.module()(x), f(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(4, 5))
