"""Reproducer of seed 301's export_crash (session 30): st.load refused a file st.save had
just written.  ``x[2 % max(n, 1):]`` then ``torch.cat([v0, v0[:3]])``: the exporter records
the cat's size as ``n - 2 % n + 3`` (its facts keep ``n >= 3``, a requirement the contract
checks); the loader, unable to prove its own form of that size equal, checks the record at
each call, but refused to put a division by a size into a graph (ZeroDivisionError there).
Now such a check divides by ``max(n, 1)`` and also requires ``n >= 1`` (a call where the
divisor is 0 is refused, never divided)."""

from __future__ import annotations

import math

import pytest
import torch

import safetrace as st
from safetrace import Dim


class Tail(torch.nn.Module):
    def forward(self, x):
        v0 = x[int(math.sqrt(x.shape[-1])) % max(x.shape[0], 1):]
        return torch.cat([v0, v0[:3]], 0)


def test_a_size_recorded_modulo_a_size_loads_and_runs(tmp_path):
    ep = st.export(Tail(), (torch.randn(5, 4),), dynamic_shapes=({0: Dim.DYNAMIC},))
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2")
    st.save(loaded, tmp_path / "q.pt2")   # (saved again: the loader's checks replaced)
    again = st.load(tmp_path / "q.pt2")
    for n in (5, 6, 9, 17):
        x = torch.randn(n, 4)
        want = Tail()(x)
        for prog in (ep, loaded, again):
            torch.testing.assert_close(prog.module()(x), want)
    for n in (0, 1, 2, 3, 4):   # (v0 with fewer than 3 rows: session 30's program required
        x = torch.randn(n, 4)   # them; the sides of that guard are joined since session 33)
        want = Tail()(x)
        for prog in (ep, loaded, again):
            torch.testing.assert_close(prog.module()(x), want)
    for prog in (ep, loaded, again):   # out of the declared space: refused by every copy
        with pytest.raises(st.InputMismatchError):
            prog.module()(torch.randn(6, 5))
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.randn(6, 5))
