"""Fuzz seed 3701 (default kinds): ``if x.diagonal().shape[0] > 2:`` with ``Dim("d0",
max=3)`` and ``Dim("d1", min=1, max=16)`` at the example (3, 2): the relation split's other
side assumes ``min(d0, d1) > 2``, which leaves d0 one size (3) and d1 a range (3..16); its
trace was refused for that pin (only a side whose assumptions leave every Dim one size was
traced there), so the program kept the check refusing (3, 3..16), where eager computes.
Such a side is now traced with the pinned Dims at their size, the others over their ranges."""

from __future__ import annotations

import itertools

import pytest
import torch

import safetrace as st
from safetrace import Dim


def _diag(x):
    v0 = x.diagonal()
    if v0.shape[0] > 2:
        v3 = v0.narrow(0, 1, v0.shape[0] - 2)
    else:
        v3 = v0
    return v0, v3


def test_a_side_whose_relation_pins_one_dim_is_traced(tmp_path):
    spec = ({0: Dim("d0", max=3), 1: Dim("d1", min=1, max=16)},)
    ep = st.export(_diag, (torch.randn(3, 2),), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    progs = [ep.module(), st.load(tmp_path / "p.pt2").module()]
    # (torch's trace of the pinned side replaces d0 by 3 in its ShapeEnv: the converted
    # program's range_constraints would leave d0 out, a static program to torch's tools,
    # so the conversion refuses, naming the Dim, rather than return it; it returned it
    # before, and run_decompositions then refused (3, >= 3))
    with pytest.raises(st.ConversionError, match=r"specialized `x.shape\[0\] == 3`"):
        ep.to_torch()
    for a, b in itertools.product(range(4), (1, 2, 3, 4, 9, 16)):
        x = torch.randn(a, b)
        for prog in progs:
            for g, w in zip(prog(x), _diag(x), strict=True):
                assert g.shape == w.shape, (a, b)
                torch.testing.assert_close(g, w)
    for prog in progs[:2]:   # out of the declared space
        for shape in [(4, 4), (3, 17), (3, 0)]:
            with pytest.raises(st.InputMismatchError):
                prog(torch.randn(*shape))
