"""What the loader worked out inside one side of a ``torch.cond`` is no answer in the
other side.

Before (session 29, fuzz seed 2906 ``--kinds cross``): a split on ``d0 == 0`` whose other
side computes ``int(math.sqrt(d0))``: the loader's evaluation of the ``d0 == 0`` side
cached ``s0``'s value as 0 (``symbolic/decide.hint_value``: a value the side's fact gave,
kept after the side), the ``d0 >= 1`` side's ``float(s0)`` read it, and ``st.load``
refused our own file ("the file records its value as int(math.sqrt(float(s0))), but the
graph computes 0 there").
"""

from __future__ import annotations

import io
import math

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.serialize import surgery


def _root_then_split(x):
    n = int(math.sqrt(x.shape[0]))
    return torch.ones(n), (torch.ones(3) if n == 0 else torch.ones(2))


def _saved() -> bytes:
    ep = st.export(_root_then_split, (torch.randn(6),), dynamic_shapes=({0: Dim("d0", max=6)},))
    return surgery.saved(ep)


def test_a_size_query_of_one_side_is_not_the_other_sides_value():
    ep = st.load(_saved())
    m = ep.module()
    for n in (0, 1, 2, 4, 5, 6):
        x = torch.randn(n)
        for got, want in zip(m(x), _root_then_split(x)):
            torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        m(torch.randn(7))
    buf = io.BytesIO()
    st.save(ep, buf)  # (saved again, it loads and computes the same)
    again = st.load(buf.getvalue()).module()
    torch.testing.assert_close(again(torch.randn(5))[0], torch.ones(2))
