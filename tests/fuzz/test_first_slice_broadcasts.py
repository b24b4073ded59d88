"""Reproducers of grammar_mixed.py's ``bcast`` / ``inviews`` (session 32): a slice of length
``min(n, 1)`` of a dim (``y[:, :1]``, ``x.flatten()[:1]``) broadcast against the dim itself.
Eager runs it at every n, 0 included (0 against 0 is no broadcast). The broadcast guarded
``min(n, 1) == 1``: the program refused n = 0, and a declared Dim of range [0, k] was refused
outright (its splits at 0, 1, 2 ... never ended: TooManySplits). The broadcast now requires
``min(n, 1) == 1 or min(n, 1) == n``, which every n meets."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


def _scale(y):
    return y * y[:, :1]


def _copy_first(y):
    v = y.clone()
    v.copy_(v[:, :1])
    return v


@pytest.mark.parametrize("f, dim", [(_scale, Dim("n")), (_copy_first, Dim("n", max=5))])
def test_a_first_slice_broadcasts_against_its_dim_at_every_size(f, dim, tmp_path):
    ep = st.export(f, (torch.randn(2, 3),), dynamic_shapes=({1: dim},))
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2")
    for n in (0, 1, 2, 5):
        y = torch.randn(2, n)
        want = f(y.clone())
        for prog in (ep, loaded):
            got = prog.module()(y.clone())
            assert got.shape == want.shape, n
            torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):   # the static dim
        ep.module()(torch.randn(3, 2))
