"""Session 35's leftover over-rejections (docs/benchmarks.md, h/fuzz35b and main after
session 35): a size an export pinned to its example where eager computes other sizes.

``cache[:n] + x`` with ``Dim.AUTO`` at example 1: ``min(n, 8)`` against ``n``, both 1 at the
example. The broadcast pinned the flexible ``n`` to 1 (as a Dim.AUTO size 1 against an
unrelated size is pinned); two sizes of one symbol now take eager's own condition (one is 1,
or they are equal: ``n <= 8`` here), as they do at other examples."""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree

import safetrace as st
from safetrace import Dim


class _Cache(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.arange(32.0).reshape(8, 4))

    def forward(self, x):
        return self.cache[: x.shape[0]] + x


@pytest.mark.parametrize("example", [1, 0, 3])
def test_a_cache_slice_against_its_auto_size_keeps_the_range(example, tmp_path):
    m = _Cache()
    ep = st.export(m, (torch.randn(example, 4),), dynamic_shapes={"x": {0: Dim.AUTO}})
    st.save(ep, tmp_path / "p.pt2")
    progs = [ep.module(), st.load(tmp_path / "p.pt2").module()]
    for n in (0, 1, 2, 5, 8):
        x = torch.randn(n, 4)
        want = m(x)
        for prog in progs:
            torch.testing.assert_close(prog(x), want)
    x = torch.randn(9, 4)
    with pytest.raises(RuntimeError):
        m(x)   # eager: 8 rows against 9
    for prog in progs:
        with pytest.raises(st.InputMismatchError):
            prog(x)
        with pytest.raises(st.InputMismatchError):
            prog(torch.randn(2, 5))


# ``(x > 0) == (y > 0)`` with x's ``Dim("a", max=1)`` at example 1: a == 1 was guarded (the
# example's side of the broadcast), refusing a = 0, which eager broadcasts against a size 0
# or 1. A named Dim within 0..1 now broadcasts as a size capped at 1 by its form does: the
# result is a * b, eager's condition required.
def _signs(x, y):
    return (x > 0) == (y > 0)


# ``len(x.split(x.shape[0], 1))`` with ``Dim("a", max=3)``: the split's side a == 0 was traced
# at the example's 3 columns, where eager raises (a split size 0 of a dim that is not 0),
# and refused whole; eager computes at a == 0 with no columns. The point side is now traced
# again with the other named Dims at 0, then 1, the regions where eager raises refused.
def _pieces(x):
    return torch.full((len(x.split(x.shape[0], 1)),), 1.0) + x.sum()


@pytest.mark.parametrize("f, example, spec, good, bad", [
    (_signs, ((1,), (3,)), ({0: Dim("a", max=1)}, {0: Dim("b")}),
     [((0,), (0,)), ((0,), (1,)), ((1,), (0,)), ((1,), (1,)), ((1,), (5,))],
     [((0,), (3,))]),
    (_pieces, ((2, 3),), ({0: Dim("a", max=3), 1: Dim("b")},),
     [((0, 0),), ((1, 0),), ((1, 1),), ((1, 4),), ((2, 3),), ((3, 7),), ((2, 0),)],
     [((0, 3),), ((0, 1),)]),
])
def test_a_small_size_eager_computes_is_not_refused(f, example, spec, good, bad, tmp_path):
    ep = st.export(f, tuple(torch.randn(*s) for s in example), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    progs = [ep.module(), st.load(tmp_path / "p.pt2").module()]
    for shapes in good:
        args = [torch.randn(*s) for s in shapes]
        want = f(*args)
        for prog in progs:
            got = prog(*args)
            for g, w in zip(pytree.tree_leaves(got), pytree.tree_leaves(want), strict=True):
                assert g.shape == w.shape, shapes
                torch.testing.assert_close(g, w)
    for shapes in bad:
        args = [torch.randn(*s) for s in shapes]
        with pytest.raises(RuntimeError):
            f(*args)
        for prog in progs:
            with pytest.raises(st.InputMismatchError):
                prog(*args)
    for prog in progs:   # out of the declared space: x's size 2 above Dim a's max 1, or rank
        with pytest.raises(st.InputMismatchError):
            prog(*[torch.randn(*s, 2) for s in example])


# fuzz seed 3571 (`--programs 2462`): the split at d0 == 0 of `v0.shape[1] == 1`'s program was
# traced at the Dim.AUTO width's hint and refused whole; eager computes at 0 rows.
def _wide(x):
    v0 = torch.special.softmax(x, -1)
    v2 = v0.expand(*[max(n, 2) for n in v0.shape]) if v0.shape[1] == 1 else v0 * 2
    return v0, v2


# fuzz seed 3571: a branch on a relation dividing by `max(x.shape[3] // 2, 1)` (never 0) was
# no relation to split on (only constant divisors were), so the example's answer was
# kept as a check refusing the sizes where eager takes the other branch.
def _strided(x, y):
    v0 = y[::max(x.shape[3] // 2, 1)]
    v2 = x * 2 if len(x) == len(v0) else x * 0
    return v0, v2


@pytest.mark.parametrize("f, example, spec, good, bad", [
    (_wide, ((1, 7),), ({0: Dim("d0"), 1: Dim.AUTO},),
     [((0, 7),), ((1, 7),), ((2, 5),), ((3, 1),), ((1, 1),)],
     [((0, 1),)]),
    (_strided, ((3, 3, 1, 0), (0,)),
     ({0: Dim("d0", min=3, max=16), 3: Dim.AUTO}, {0: Dim("d2")}),
     [((3, 3, 1, 0), (3,)), ((3, 3, 1, 0), (0,)), ((4, 3, 1, 4), (8,)), ((4, 3, 1, 4), (7,)),
      ((3, 3, 1, 1), (3,))],
     []),
])
def test_fuzz_3571_sizes_eager_computes_are_not_refused(f, example, spec, good, bad, tmp_path):
    test_a_small_size_eager_computes_is_not_refused(f, example, spec, good, bad, tmp_path)


# fuzz seed 3605 (`--kinds crosspieces,crossview,sizearith,masks`): the re-export of the
# Dim.DYNAMIC width at 0 (auto_small.py) traced its side from 1 at another size, where
# `x.numel() == y.numel()` is false, and kept that answer as a check: the program refused
# its own example (and every input taking `view_as`). A re-export that refuses the example
# is not taken.
def _viewed(inp):
    x = inp["x"]
    y, _ = inp["rest"]
    v0 = x.view_as(y) if x.numel() == y.numel() else x.flatten()
    return v0, x[x.shape[-1] << 1 % max(x.shape[0], 1):]


def _inp(a, b):
    return {"x": torch.randn(*a), "rest": [torch.randn(*b), torch.randn(())]}


def test_a_program_accepts_its_own_example(tmp_path):
    spec = ({"x": {0: Dim.DYNAMIC}, "rest": [{0: Dim("d0", min=5), 1: Dim.DYNAMIC}, None]},)
    ep = st.export(_viewed, (_inp((5,), (5, 1)),), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    progs = [ep.module(), st.load(tmp_path / "p.pt2").module()]
    for a, b in [((5,), (5, 1)), ((6,), (6, 1)), ((10,), (5, 2)), ((7,), (7, 1))]:
        inp = _inp(a, b)
        for prog in progs:
            for g, w in zip(prog(inp), _viewed(inp), strict=True):
                torch.testing.assert_close(g, w)
    for prog in progs:   # out of the space: d0 below its min, and another rank
        with pytest.raises(st.InputMismatchError):
            prog(_inp((4,), (4, 1)))
        with pytest.raises(st.InputMismatchError):
            prog(_inp((5, 1), (5, 1)))
