"""Reproducer of grammar_mixed.py's ``unbindstack`` (session 32's leftover, seen again in
session 33, fuzz seed 3252): ``einsum('ij,j->i', x.reshape(-1, L), x.flatten()[:L])`` at
numel 0 with L = 1 (``x`` of (1, 0, 3, 1)): the label ``j`` is summed away and eager
broadcasts its sizes 1 and 0, but the program required ``L == min(L, numel)`` and refused
it.  A summed label whose size is an expression of sizes now requires eager's own
condition (one is 1, or they are equal); bare Dims keep the broadcast's question."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


class Contract(torch.nn.Module):
    def forward(self, x):
        return torch.einsum('ij,j->i', x.reshape(-1, x.shape[-1]), x.flatten()[:x.shape[-1]])


class Outer(torch.nn.Module):
    """The label kept in the output: its size is the output's, so it still broadcasts."""

    def forward(self, x):
        return torch.einsum('ij,j->ij', x.reshape(-1, x.shape[-1]), x.flatten()[:x.shape[-1]])


def test_a_summed_label_of_a_slice_broadcasts_at_numel_zero(tmp_path):
    model = Contract()
    spec = ({0: Dim("a", max=16), 1: Dim("b"), 2: Dim.DYNAMIC, 3: Dim("L", min=1, max=16)},)
    ep = st.export(model, (torch.randn(7, 5, 3, 7),), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2")
    for shape in [(1, 0, 3, 1), (2, 2, 3, 1), (7, 5, 3, 7), (1, 1, 1, 1), (0, 3, 3, 1),
                  (1, 0, 3, 2), (0, 5, 3, 4)]:
        x = torch.randn(*shape)
        try:
            want = model(x)
        except RuntimeError:   # eager raises (sizes 2 and 0): refused before running
            with pytest.raises(st.InputMismatchError):
                ep.module()(x)
            continue
        for prog in (ep, loaded):
            torch.testing.assert_close(prog.module()(x), want)
    with pytest.raises(st.InputMismatchError):   # outside the declared range
        ep.module()(torch.randn(1, 1, 1, 17))


def test_an_output_label_still_broadcasts_as_before():
    model = Outer()
    spec = ({0: Dim("a", max=16), 1: Dim("b"), 2: Dim.DYNAMIC, 3: Dim("L", min=1, max=16)},)
    ep = st.export(model, (torch.randn(7, 5, 3, 7),), dynamic_shapes=spec)
    for shape in [(2, 2, 3, 1), (7, 5, 3, 7), (1, 1, 1, 3)]:
        x = torch.randn(*shape)
        torch.testing.assert_close(ep.module()(x), model(x))


def test_bare_dims_keep_the_relation_fix():
    def f(a, b):
        return torch.einsum('ij,jk->ik', a, b)

    with pytest.raises(st.ConstraintViolationError, match="m = n"):
        st.export(f, (torch.randn(3, 4), torch.randn(4, 5)),
                  dynamic_shapes=({1: Dim("n")}, {0: Dim("m")}))
