"""Reading a parameter's or buffer's value (``.item()``, ``int()``, ``bool()``, an index)
is a read of program data, never of its value at export (a silent wrong result before:
``k = self.n.item(); self.n.add_(1)`` kept returning the export's k).  The program reads
it at run time where it can (``.item()``, an index), and refuses a Python decision on it
with the torch.cond fix, as it does for any tensor data."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


class Counter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("n", torch.tensor(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.n.item()
        self.n.add_(1)
        return x[:, :k]


class Pointer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("i", torch.tensor(0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        row = x[self.i]
        self.i.add_(1)
        return row * 2


class Flag(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("flag", torch.tensor(True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2 if self.flag else x


def test_item_of_a_buffer_is_read_each_call() -> None:
    eager, exported = Counter(), Counter()
    b = st.Dim("b", min=0, max=8)
    ep = st.export(exported, (torch.randn(2, 16),), dynamic_shapes={"x": {0: b}})
    mod = ep.module()
    for rows in (0, 1, 3, 5):
        x = torch.randn(rows, 16)
        torch.testing.assert_close(mod(x), eager(x))
    with pytest.raises(st.InputMismatchError):
        mod(torch.randn(9, 16))
    assert int(exported.n) == 2  # export and the program never wrote the model


def test_a_buffer_as_an_index_is_read_each_call() -> None:
    eager = Pointer()
    ep = st.export(Pointer(), (torch.randn(4, 3),))
    mod = ep.module()
    x = torch.randn(4, 3)
    for _ in range(4):
        torch.testing.assert_close(mod(x), eager(x))
    with pytest.raises(Exception):  # the 5th row does not exist: eager's IndexError too
        eager(x)
    with pytest.raises(Exception):
        mod(x)


def test_a_python_decision_on_a_buffer_is_refused_with_the_cond_fix() -> None:
    with pytest.raises(st.DataDependentError) as info:
        st.export(Flag(), (torch.randn(3),))
    assert "torch.cond(self.flag" in info.value.fix
    # the fix exports and follows the buffer
    class Fixed(Flag):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cond(self.flag, lambda v: v * 2, lambda v: v, (x,))

    ep = st.export(Fixed(), (torch.randn(3),))
    mod = ep.module()
    x = torch.randn(3)
    torch.testing.assert_close(mod(x), x * 2)
    mod.flag.fill_(False)
    torch.testing.assert_close(mod(x), x)
