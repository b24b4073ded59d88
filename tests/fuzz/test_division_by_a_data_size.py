"""An integer tensor divided by a size read from data (session 38, fuzz ``--kinds outside``
advidx seed 11: ``v0.argsort(1) % max((v0.shape[1] + 1) // 2, 1)`` with ``v0 = x[:, mask]``).
The check that the divisor is not 0 (eager's kernel raises ZeroDivisionError there) asked
the example's value of ``max(u0, 1) != 0`` before trying to prove it, and an unbacked ``u0``
has none: the export was refused (DataDependentDecision), which torch.export exports.  A
proven divisor is now no check, and one that can be 0 is checked at run time."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


def _proven(x):
    v = x[x.sum(-1) > 0]
    return torch.arange(x.numel()) % max(v.size(0), 1), x.long() // max((v.shape[0] + 1) // 2, 1)


def _open(x):
    v = x[x.sum(-1) > 0]
    return torch.arange(x.numel()) % (v.size(0) - 1)


def test_a_proven_divisor_read_from_data_exports():
    ep = st.export(_proven, (torch.randn(4, 6) * 3,), dynamic_shapes=({0: Dim("a"), 1: Dim("b")},))
    for n, m in [(0, 3), (1, 0), (1, 1), (5, 2), (3, 7)]:
        for x in (torch.randn(n, m) * 3, -torch.ones(n, m), torch.ones(n, m)):
            for g, w in zip(ep.module()(x), _proven(x), strict=True):
                torch.testing.assert_close(g, w)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2))


def test_an_open_divisor_read_from_data_is_checked_where_it_runs():
    ep = st.export(_open, (torch.ones(4, 6),), dynamic_shapes=({0: Dim("a"), 1: Dim("b")},))
    for n, m in [(0, 3), (3, 0), (3, 2), (5, 4)]:
        x = torch.ones(n, m)
        torch.testing.assert_close(ep.module()(x), _open(x))
    x = torch.ones(3, 2)
    x[1:] = -1   # one row with a positive sum: eager divides by 0 and raises
    with pytest.raises(RuntimeError):
        _open(x)
    with pytest.raises(RuntimeError):
        ep.module()(x)
