"""``y[mask] += v`` (session 38, grammar_outside advidx/oobidx, and by hand): Python reads
``y[mask]``, adds in place to that copy, then writes it back with ``y[mask] = copy``.  The
in-place add ended every mask's known True count (TensorMeta keeps one until the next
write anywhere), so the write-back could not tell that the copy has as many rows as the
mask has True elements: the export was refused (DataDependentShape "whether the values fit
x[mask]") for the idiom, while ``y[m] = y[m] * 2`` exported.  A mask's count is now kept
with the mask's own data stamp (trace/numbering.py): a write elsewhere leaves it, a write
to the mask ends it."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


def _rows(x):
    y = x.clone()
    m = x.sum(1) > 0
    y[m] += 1
    return y


def _rows_cols(x):
    y = x.clone()
    m = torch.arange(x.shape[0]) % 2 == 0
    y[m, :x.shape[1] // 2] += torch.arange(x.shape[1] // 2).float()
    return y


def _elements(x):
    y = x.clone()
    m = x > 0
    y[m] *= -3
    return y


@pytest.mark.parametrize("f", [_rows, _rows_cols, _elements])
def test_an_augmented_assignment_through_a_mask_exports(f, tmp_path):
    spec = ({0: Dim("a"), 1: Dim("b", max=32)},)
    ep = st.export(f, (torch.randn(4, 6),), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    progs = [ep.module(), st.load(tmp_path / "p.pt2").module()]
    for n, m in [(0, 3), (1, 0), (1, 1), (2, 5), (9, 2), (3, 7)]:
        x = torch.randn(n, m)
        for prog in progs:
            torch.testing.assert_close(prog(x), f(x))
    for prog in progs:   # out of the declared space
        with pytest.raises(st.InputMismatchError):
            prog(torch.randn(2, 33))
        with pytest.raises(st.InputMismatchError):
            prog(torch.randn(2))


def test_a_mask_written_between_read_and_write_is_still_refused():
    def f(x):
        y = x.clone()
        m = x > 0
        t = y[m] + 1
        m.view(-1)[:1] = True   # the mask's count may change: t may no longer fit
        y[m] = t
        return y

    with pytest.raises(st.ExportError, match="mask"):
        st.export(f, (torch.randn(4, 6),), dynamic_shapes=({0: Dim("a")},))
