"""A branch's fact over a min is also taken with the min the facts decide (session 35).

``x.flatten()[:len(y) + 1]`` then ``if v1.shape[0] == 1: v1.squeeze(0)``: a relation split
on ``min(d0*d0*d1, d2 + 1) != 1``.  In the false branch the loader's engine knew
``min(d0*d0*d1, d2 + 1) == 1`` and evaluated the slice as ``[d2 + 1]`` (``d2 + 1 <=
d0*d0*d1`` there), but could not tell ``d2 + 1 == 1``: ``squeeze(0)`` kept the dim, the
branches' ranks differed, and ``st.load`` refused our own file ("the branches of
torch.cond return value 1 of shape [] ... and [s2 + 1]", fuzz seed 3471).
"""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from safetrace import Dim


class SqueezeOne(torch.nn.Module):
    def forward(self, x, y):
        v1 = x.flatten()[:int(torch.tensor(len(y) % 3 + 1))]
        if v1.shape[0] == 1:
            v2 = v1.squeeze(0)
        else:
            v2 = v1.sum(0)
        return v1, v2


def _export() -> st.ExportedProgram:
    d0 = Dim("d0", min=2, max=5)
    return st.export(SqueezeOne(), (torch.randn(2, 2, 3), torch.randn(1)),
                     dynamic_shapes=({0: d0, 1: d0, 2: Dim("d1", max=16)},
                                     {0: Dim("d2", max=1)}))


@pytest.fixture(scope="module")
def programs():
    ep = _export()
    buf = io.BytesIO()
    st.save(ep, buf)
    return ep, st.load(buf.getvalue())


@pytest.mark.parametrize("d0,d1,d2", [(2, 0, 0), (2, 0, 1), (2, 1, 0), (2, 1, 1), (3, 4, 0),
                                      (5, 16, 1), (4, 2, 1)])
def test_loaded_program_computes_as_eager_on_both_sides(programs, d0, d1, d2):
    ep, loaded = programs
    x, y = torch.randn(d0, d0, d1), torch.randn(d2)
    want = SqueezeOne()(x, y)
    for got in (ep.module()(x, y), loaded.module()(x, y)):
        assert [g.shape for g in got] == [w.shape for w in want]
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)


@pytest.mark.parametrize("x_shape,y_shape", [
    ((1, 1, 3), (1,)),   # d0 >= 2
    ((2, 3, 3), (1,)),   # x.shape[1] == x.shape[0]
    ((2, 2, 17), (1,)),  # d1 <= 16
    ((2, 2, 3), (2,)),   # d2 <= 1
])
def test_out_of_space_inputs_are_refused_after_loading(programs, x_shape, y_shape):
    _, loaded = programs
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.randn(*x_shape), torch.randn(*y_shape))
