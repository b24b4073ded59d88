"""Session 36's leftover over-rejections of fuzz seed 3605 (docs/benchmarks.md, h/fuzz36):
a split at sizes below 2 whose sides did not keep every size eager computes.

``x.flatten()[:x.shape[-1]] + x.flatten()[:x.shape[0]]`` with three named Dims: eager adds
``min(c, P)`` and ``min(a, P)`` elements (``P = a*b*c``), equal or one of them 1.  The split
at ``a == 1`` traced its side ``a >= 2`` at ``a = 2`` with the example's ``c = 3``, where eager
raises, and refused the whole split; the side is now traced again at the example's size of
``a``.  That side's own split then took ``b == 1`` of the point ``(3, 1, 1)``, where ``c``
alone breaks the condition, and ran out of splits; a Dim that breaks it alone is now split
first; where the side's own split fails, its sides that fail keep the checks of the program
they split (``small_splits.KEPT``).  At an example with ``a == 1`` (or ``c == 1``) the broadcast's relation is kept as a
run-time check (``splits._checked``), which was never split at sizes below 2; it now is."""

from __future__ import annotations

import itertools

import pytest
import torch

import safetrace as st
from safetrace import Dim


def _pieces(x):
    return x.flatten()[:x.shape[-1]] + x.flatten()[:x.shape[0]]


def _eager(f, *args):
    try:
        return f(*args)
    except RuntimeError:
        return None


_ABC = ({0: Dim("a", max=6), 1: Dim("b", max=6), 2: Dim("c", max=6)},)
# (fuzz seed 3605's own: the side c >= 2 of the nested split at c == 1 is refused, eager
# requiring c == a there; it now keeps the checks of the program it splits)
_MINS = ({0: Dim("a", max=6), 1: Dim("b", min=2, max=6), 2: Dim("c", min=1, max=6)},)


@pytest.mark.parametrize("example, spec", [((3, 3, 3), _ABC), ((3, 2, 3), _ABC),
                                           ((1, 2, 2), _ABC), ((2, 2, 1), _ABC),
                                           ((4, 4, 4), _MINS)])
def test_flattened_pieces_keep_every_size_eager_adds(example, spec, tmp_path):
    ep = st.export(_pieces, (torch.randn(*example),), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    progs = [ep.module(), st.load(tmp_path / "p.pt2").module()]
    lows = [spec[0][d].min for d in range(3)]
    for shape in itertools.product(*(range(lo, 5) for lo in lows)):
        x = torch.randn(*shape)
        want = _eager(_pieces, x)
        for prog in progs:
            if want is None:   # (3, 1, 2): 3 against 2 elements
                with pytest.raises(st.InputMismatchError):
                    prog(x)
                continue
            got = prog(x)
            assert got.shape == want.shape, shape
            torch.testing.assert_close(got, want)
    for prog in progs:   # out of the declared space: above a max, another rank
        with pytest.raises(st.InputMismatchError):
            prog(torch.randn(7, 2, 1))
        with pytest.raises(st.InputMismatchError):
            prog(torch.randn(2, 2))
