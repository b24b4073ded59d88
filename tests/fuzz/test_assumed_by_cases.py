"""Fuzz seed 3605 (``--kinds crossview``), left by session 36: a relation split's side that
assumes ``c + max(a - c, 0) == 1`` (``pad(z, ...).shape == x.shape`` taken) was refused for
``reshape(x.shape)``'s requirement ``a == a*c + a*max(a - c, 0)``, which that assumption
implies but the prover does not see (the product distributed).  Where the sizes' ranges are
bounded and few, the implication is now checked at each of their points, so the side is
traced and the program admits ``(0 or 1, 1, 1)`` where eager reshapes."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.utils._pytree as pytree

import safetrace as st
from safetrace import Dim


def _padded(inp):
    x = inp["x"]
    y, z = inp["rest"]
    v1 = torch.nn.functional.pad(z, (0, max(z.size(0) - z.shape[-1], 0)))
    v4 = v1.reshape(x.shape) if v1.shape == x.shape else v1 * 2
    return {"first": v1, "rest": (v4, [])}


def _inp(a, b, c):
    return {"x": torch.randn(*a), "rest": [torch.randn(*b), torch.randn(*c)]}


def _at(a, d, c):
    return _inp((a, 1, 1), (a, 5, 1, c), (a, d, c))


def test_a_side_whose_assumption_implies_a_requirement_is_traced(tmp_path):
    d0, d2 = Dim("d0", max=4), Dim("d2", min=1, max=4)
    spec = ({"x": {0: d0}, "rest": [{0: d0, 1: Dim.AUTO, 2: Dim("d1"), 3: d2},
                                    {0: d0, 1: Dim("d3", max=4), 2: d2}]},)
    ep = st.export(_padded, (_at(4, 4, 1),), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    progs = [ep.module(), st.load(tmp_path / "p.pt2").module()]
    for a, d, c in itertools.product(range(5), range(5), range(1, 5)):
        inp = _at(a, d, c)
        want = _padded(inp)
        for prog in progs:
            got = prog(inp)
            for g, w in zip(pytree.tree_leaves(got), pytree.tree_leaves(want), strict=True):
                assert g.shape == w.shape, (a, d, c)
                torch.testing.assert_close(g, w)
    for prog in progs:   # out of the declared space: d3 above its max, d2 below its min
        with pytest.raises(st.InputMismatchError):
            prog(_at(2, 5, 1))
        with pytest.raises(st.InputMismatchError):
            prog(_at(2, 2, 0))
