"""Reproducers of grammar_mixed.py's ``bcast`` (seed 3403): a slice ``v.flatten()[:1]`` (size
``min(numel, 1)``, 0 or 1) broadcast against a dim that is 1 where the slice is 0. Eager
broadcasts 1 against 0 to 0; the broadcast kept the example's side (``n == m or m == 1``) as
a requirement and refused it. A size the facts keep within 0..1 now broadcasts to the
product of the two, requiring only eager's own condition (one is 1, or they are equal)."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


def _last_dim(x):
    return x + x.flatten()[:1]


def _half(x, y):
    return y + y[y.shape[0] // 2:].flatten()[:1]


@pytest.mark.parametrize("f, example, spec, sizes", [
    (_last_dim, ((3, 4),), ({0: Dim("a"), 1: Dim("b")},),
     [((0, 1),), ((0, 0),), ((1, 1),), ((5, 1),), ((2, 3),)]),
    (_half, ((4, 5), (4, 5)), ({0: Dim("a")}, {0: Dim("b"), 1: Dim("c")}),
     [((4, 5), (0, 1)), ((4, 5), (1, 1)), ((4, 5), (2, 0)), ((4, 5), (6, 3)), ((4, 5), (0, 0))]),
])
def test_a_size_of_zero_or_one_broadcasts_one_against_zero(f, example, spec, sizes, tmp_path):
    ep = st.export(f, tuple(torch.randn(*s) for s in example), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2")
    for shapes in sizes:
        args = [torch.randn(*s) for s in shapes]
        want = f(*args)
        for prog in (ep, loaded):
            got = prog.module()(*args)
            assert got.shape == want.shape, shapes
            torch.testing.assert_close(got, want)


def test_what_eager_refuses_is_refused_before_running():
    ep = st.export(_last_dim, (torch.randn(3, 4),), dynamic_shapes=({0: Dim("a"), 1: Dim("b")},))
    x = torch.randn(0, 3)   # numel 0: the slice is 0, the dim 3: eager raises
    with pytest.raises(RuntimeError):
        _last_dim(x)
    with pytest.raises(Exception):
        ep.module()(x)
    with pytest.raises(st.InputMismatchError):   # out of the space: another rank
        ep.module()(torch.randn(3))
