"""One check shared by the drop-in tests (issue 21): a program against eager (and against
torch.export's program, where torch exports the case) on inputs of other sizes, and inputs
outside the declared space refused before running."""

from __future__ import annotations

from typing import Any, Callable, Iterable

import pytest
import torch
from torch import nn

import safetrace as st


class Fn(nn.Module):
    """A two-input module around `fn` (inputs named x and y, for dynamic_shapes by name)."""

    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x, y):
        return self.fn(x, y)


def same(got: Any, want: Any) -> None:
    """Equal values, structure included (ints and bools exactly)."""
    if isinstance(want, torch.Tensor):
        torch.testing.assert_close(got, want, equal_nan=True)
    elif isinstance(want, (tuple, list)):
        assert type(got) in (tuple, list) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            same(g, w)
    else:
        assert got == want and type(got) is type(want), (got, want)


def check_program(ep: st.ExportedProgram, model: Callable, inputs: Iterable[tuple],
                  bad: Iterable[tuple] = (), ref: Any = None,
                  before: Callable[[], None] = lambda: None) -> None:
    """`ep` computes what `model` (and torch's program `ref`) computes on every input
    tuple of `inputs`, and refuses each of `bad` with an InputMismatchError.  `before`
    runs before each call (reseeding for random ops)."""
    module = ep.module()
    for args in inputs:
        before()
        want = model(*args)
        before()
        same(module(*args), want)
        if ref is not None:
            before()
            same(ref.module()(*args), want)
    for args in bad:
        with pytest.raises(st.InputMismatchError):
            module(*args)
