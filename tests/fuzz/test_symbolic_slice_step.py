"""Reproducer of grammar_mixed.py's ``inviews`` beside ``bcast`` (seed 3403, session 31's
leftover): ``v.view(-1)[::max(len(x), 1)]``, a slice whose step is a size expression. The
indexing asked ``step == 1`` (to leave out an identity slice) and kept the example's answer
(`max(n, 1) != 1`) as a requirement, refusing n = 1 and n = 0, which eager runs. A symbolic
step is now always sliced (a step of 1 gives the whole dim, as eager's view)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from safetrace import Dim


def _fill_every_row(x):
    v0 = F.pad(x, (x.shape[-1] // 2, x.shape[-1] - x.shape[-1] // 2))
    v2 = x + v0.flatten()[:1]   # a broadcast whose condition joins the program's
    v3 = x.clone()
    v3.view(-1)[::max(len(x), 1)].fill_(3.0)
    return v3, v2


def _strided_read(x):
    return x.view(-1)[1::max(len(x), 1)] * 2


@pytest.mark.parametrize("f, sizes", [
    (_fill_every_row, [(1, 5), (1, 1), (2, 5), (3, 4), (4, 1)]),
    (_strided_read, [(0, 5), (1, 5), (1, 1), (2, 5), (3, 4)]),
])
def test_a_symbolic_slice_step_of_one_is_admitted(f, sizes, tmp_path):
    ep = st.export(f, (torch.randn(2, 5),), dynamic_shapes=({0: Dim("a"), 1: Dim.DYNAMIC},))
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2")
    for s in sizes:
        x = torch.randn(*s)
        want = f(x.clone())
        for prog in (ep, loaded):
            torch.testing.assert_close(prog.module()(x.clone()), want)


def test_what_eager_refuses_is_refused_before_running():
    ep = st.export(_fill_every_row, (torch.randn(2, 5),),
                   dynamic_shapes=({0: Dim("a"), 1: Dim.DYNAMIC},))
    x = torch.randn(0, 5)   # the broadcast of 5 against the slice's 0: eager raises
    with pytest.raises(RuntimeError):
        _fill_every_row(x)
    with pytest.raises(st.InputMismatchError):   # a requirement, checked before running
        ep.module()(x)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 5, 1))
