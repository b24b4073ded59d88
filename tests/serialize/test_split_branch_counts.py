"""A split whose sides each count rows of their own (``nonzero`` inside a torch.cond
branch): the cond's output size is a size of the graph holding the cond, not a side's
count.  Two sides' ``4*u0`` are two counts that share a name; the graph above them named
its output ``4*u0`` too, a symbol defined only inside a branch, and ``st.load`` refused the
file (fuzz seed 3406)."""

from __future__ import annotations


import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from safetrace import Dim
from tests.serialize import surgery


def _reloaded(ep: st.ExportedProgram) -> st.ExportedProgram:
    return st.load(surgery.saved(ep))


def _y(a: int, b: int, c: int) -> torch.Tensor:
    y = torch.randn(a, b, a, c)
    y.view(-1)[::3] = 0  # (some rows nonzero skips)
    return y


class _CountInASplit(torch.nn.Module):
    def forward(self, x, y):
        rows = (y > 0).nonzero().float()
        flat = (rows * 2).reshape(-1)
        return flat, F.pixel_unshuffle(y.repeat(1, 1, 2, 2), 2)


def _export(m: torch.nn.Module) -> st.ExportedProgram:
    d0 = Dim("d0", min=1)
    x, y = torch.randn(1, 7, 7, 1), torch.randn(1, 7, 1, 1)
    return st.export(m, (x, y), dynamic_shapes=(
        {0: Dim.DYNAMIC, 1: Dim.DYNAMIC, 2: Dim.AUTO},
        {0: d0, 1: Dim("d1"), 2: d0, 3: Dim("d2", max=1)}))


# (d0, d1, d2): d1 == 0 and d1 >= 1 (the size split), d2 == 0 and 1 inside d1 >= 1 (the
# relation split `d0*d0*d1*d2 != 0`), d0 at its least
_SIZES = [(1, 0, 0), (1, 0, 1), (3, 0, 1), (1, 1, 1), (1, 1, 0), (3, 2, 1), (2, 5, 0),
          (4, 3, 1)]


def _same(got, want) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        torch.testing.assert_close(g, w)


def test_each_sides_count_loads_and_computes_as_eager():
    m = _CountInASplit()
    ep = _export(m)
    loaded = _reloaded(ep)
    for x_shape in [(0, 0, 0, 1), (2, 3, 4, 1), (1, 1, 1, 1)]:
        x = torch.randn(*x_shape)
        for a, b, c in _SIZES:
            y = _y(a, b, c)
            want = m(x, y)
            _same(ep.module()(x, y), want)
            _same(loaded.module()(x, y), want)


@pytest.mark.parametrize("x_shape,y_shape", [
    ((2, 3, 4, 1), (2, 3, 2, 2)),   # d2 <= 1
    ((2, 3, 4, 1), (0, 3, 0, 1)),   # d0 >= 1
    ((2, 3, 4, 1), (2, 3, 1, 1)),   # y.shape[2] == y.shape[0]
    ((2, 3, 4, 2), (2, 3, 2, 1)),   # x.shape[3] == 1
])
def test_out_of_space_inputs_are_refused_after_loading(x_shape, y_shape):
    loaded = _reloaded(_export(_CountInASplit()))
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.randn(*x_shape), torch.randn(*y_shape))


def test_the_loaded_program_converts_or_refuses_by_the_catalogue():
    """torch's cond takes fresh output sizes; where it refuses the program's use of it,
    the refusal is a ConversionError naming the fix (st.save/st.load)."""
    m = _CountInASplit()
    loaded = _reloaded(_export(m))
    try:
        converted = loaded.to_torch()
    except st.ConversionError as exc:
        assert "safetrace's size split" in str(exc) and "ep.module()" in str(exc)
        return
    x = torch.randn(2, 3, 4, 1)
    for a, b, c in _SIZES:
        y = _y(a, b, c)
        _same(converted.module()(x, y), m(x, y))


class _CountInARelationSplit(torch.nn.Module):
    def forward(self, y):
        flat = (y > 0).nonzero().float().reshape(-1) * 2
        return flat, F.pixel_unshuffle(y.repeat(1, 1, 2, 2), 2)


def test_a_relation_splits_two_counts_are_one_new_size_of_the_top_graph():
    """The relation split alone (``d1 >= 1``): each side's ``4*u0`` was the top graph's
    output size."""
    m = _CountInARelationSplit()
    d0 = Dim("d0", min=1)
    ep = st.export(m, (torch.randn(1, 7, 1, 1),), dynamic_shapes=(
        {0: d0, 1: Dim("d1", min=1), 2: d0, 3: Dim("d2", max=1)},))
    loaded = _reloaded(ep)
    for a, b, c in [(1, 1, 0), (1, 1, 1), (3, 2, 1), (2, 5, 0), (4, 3, 1)]:
        y = _y(a, b, c)
        _same(loaded.module()(y), m(y))
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.randn(2, 0, 2, 1))  # d1 >= 1
