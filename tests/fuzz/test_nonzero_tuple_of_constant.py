"""Reproducer of grammar_gaps.py's kinds (session 33, fuzz seed 3306: an export crash, and
a wrong result once shrunk): ``torch.nonzero(t, as_tuple=True)`` of a tensor the trace
holds as a value (made from static sizes, a buffer, a 0-d constant) gave the 2-d
``nonzero(t)`` instead of eager's tuple of its columns: ``[0]`` took its first row
(``tensor([0])`` where eager gives ``tensor([0, 1])``), or raised IndexError out of the
export where it had no row."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


class FromSizes(torch.nn.Module):
    def forward(self, x):
        v = torch.tensor([x.shape[0], x.shape[1]]) / 2
        return torch.nonzero(v > 0, as_tuple=True)[0] + x.sum(-1).sum(-1).numel()


class WholeTuple(torch.nn.Module):
    def forward(self, x):
        return torch.tensor([x.shape[1], 0, x.shape[0]]).nonzero(as_tuple=True) + (x * 2,)


class FromState(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mask", torch.tensor([[True, False], [True, True]]))
        self.scalar = torch.tensor(3.0)

    def forward(self, x):
        rows, cols = torch.nonzero(self.mask, as_tuple=True)
        (one,) = torch.nonzero(self.scalar, as_tuple=True)
        return x[..., :1] * rows.sum() + cols.sum() + one


@pytest.mark.parametrize("model", [FromSizes(), WholeTuple(), FromState()])
def test_nonzero_as_tuple_of_a_known_tensor_is_eagers_tuple(model, tmp_path):
    spec = ({2: Dim("n", max=9)},)
    ep = st.export(model, (torch.randn(2, 4, 6),), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2")
    for n in (0, 1, 2, 6, 9):
        x = torch.randn(2, 4, n)
        want = model(x)
        for prog in (ep, loaded):
            got = prog.module()(x)
            torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):   # outside the declared range
        ep.module()(torch.randn(2, 4, 10))


class NoRows(torch.nn.Module):
    def forward(self, x):
        v = torch.tensor([x.shape[0], x.flatten().size(0)]) / 2
        return torch.nonzero(v > 0, as_tuple=True)[0]


def test_an_example_without_rows_exports():
    """x of (0, 4, 6): the sizes' tensor is [0, 0], no row (the crash: IndexError out of
    st.export)."""
    ep = st.export(NoRows(), (torch.randn(0, 4, 6),), dynamic_shapes=({2: Dim.AUTO},))
    for n in (0, 1, 3):
        x = torch.randn(0, 4, n)
        torch.testing.assert_close(ep.module()(x), NoRows()(x))
