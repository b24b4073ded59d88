"""Fuzz seed 3605 (``--kinds crosspieces,masks``), left by session 36: a branch on a relation
that divides by a size (``len(x.split(a, 2))`` is ``(c + a - 1)//a``) was kept as a run-time
check refusing the inputs taking the other branch, which eager computes: only constant
divisors (or ``max(e, k >= 1)``) made a relation to split on.  A size whose checked range
leaves out 0 (``Dim("a", min=2)``) divides too: the program's input checks run before the
``torch.cond`` computes the relation, so the divisor is never 0 there."""

from __future__ import annotations

import itertools

import pytest
import torch

import safetrace as st
from safetrace import Dim


def _pieces(xs):
    x, = xs
    v0 = x.masked_fill(x > x.mean(), torch.tensor(0.25))
    v1 = torch.full((len(v0.split(len(v0), 2)),), 1.0) + v0.sum()
    v2 = v1[::max(x.shape[2] // 2, 1)]
    v2 = v2 * 2 if len(v2) == len(x) else v2 - 1
    return (v0, v1, v2)


def test_a_relation_divided_by_a_size_from_2_is_split(tmp_path):
    spec = ([{0: Dim("a", min=2, max=10), 1: Dim.DYNAMIC, 2: Dim("c", min=1)}],)
    ep = st.export(_pieces, ([torch.randn(7, 2, 1, 2)],), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    progs = [ep.module(), st.load(tmp_path / "p.pt2").module(), ep.to_torch().module()]
    for a, b, c in itertools.product(range(2, 8), range(3), (1, 2, 3, 4, 5, 9, 13)):
        inp = [torch.randn(a, b, c, 2)]
        want = _pieces(inp)
        for prog in progs:
            for g, w in zip(prog(inp), want, strict=True):
                assert g.shape == w.shape, (a, b, c)
                torch.testing.assert_close(g, w)
    for prog in progs[:2]:   # out of the declared space: a below its min 2, c below 1
        for shape in [(1, 2, 3, 2), (0, 2, 3, 2), (3, 2, 0, 2)]:
            with pytest.raises(st.InputMismatchError):
                prog([torch.randn(*shape)])
    with pytest.raises(Exception):   # to_torch's module: torch's own assert
        progs[2]([torch.randn(1, 2, 3, 2)])
