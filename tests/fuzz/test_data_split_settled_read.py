"""Reproducer of grammar_gaps.py's kinds (session 33, fuzz seed 3308): a Python decision
on a size read from data (``len(torch.unique(...)) > 1``) whose general answer settles
that size to one value (``unique`` of two values has at most 2: ``>= 2`` makes it 2) was
joined into one program, whose top graph copied the general side's metadata (``f32[2]``);
saved and loaded, the program refused the data taking the other answer, the example's
own, with "the file admits what its graph cannot run"."""

from __future__ import annotations

import torch

import safetrace as st
from safetrace import Dim


class FromSizes(torch.nn.Module):
    def forward(self, y):
        c = y.new_tensor([y.size(1), y.shape[0]])
        v = torch.unique(c)
        return v, torch.ones(len([s for s in v.shape if s > 1]))


class FromData(torch.nn.Module):
    def forward(self, x):
        v = torch.unique((x > 0).long())
        if v.shape[0] > 1:
            return x * v.sum()
        return x - 1


def _check(model, ep, loaded, args):
    want = model(*args)
    for prog in (ep, loaded):
        got = prog.module()(*args)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            torch.testing.assert_close(g, w)


def test_a_loaded_data_split_runs_both_answers_of_a_settled_size(tmp_path):
    model = FromSizes()
    ep = st.export(model, (torch.randn(6, 6, 2),),
                   dynamic_shapes=({1: Dim("d1", min=6, max=16)},))
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2")
    for n in (6, 7, 16):   # 6: one unique value (the example), else two
        _check(model, ep, loaded, (torch.randn(6, n, 2),))
    try:
        ep.module()(torch.randn(6, 17, 2))
    except st.InputMismatchError:   # outside the declared range
        pass
    else:
        raise AssertionError("an input outside the declared range ran")


def test_a_loaded_data_split_on_unique_of_a_mask(tmp_path):
    model = FromData()
    ep = st.export(model, (torch.randn(5, 3),), dynamic_shapes=({0: Dim("n", max=9)},))
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2")
    for n in (0, 1, 2, 5, 9):
        for x in (torch.randn(n, 3), torch.ones(n, 3), -torch.ones(n, 3)):
            _check(model, ep, loaded, (x,))
