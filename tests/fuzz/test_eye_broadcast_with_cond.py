"""fuzz30's seed 3022 reproducer: ``v1[:1] * v1`` with ``v1 = torch.eye(v0.numel())``
broadcasts ``min(k, 1)`` against ``k`` (k a product of named Dims), which eager computes
at every k; the program keeps ``min(k, 1) == 1`` as a run-time check and splits the sizes
where k is 0 apart.  With a ``torch.cond`` on data whose branch reduces ``v0`` along a dim
(``t.amax(0)``: eager raises there at size 0), the first small split tried (that
reduction's size at 0) fails, and the program kept the check, refusing ``d1 == 0`` where
eager computes: now the next condition's split is tried (``small_splits.explore_small``),
and a nested side whose own split fails keeps its run-time checks."""

from __future__ import annotations

import torch

import safetrace as st
from safetrace import Dim
from tests.helpers import matches_eager, rejects


class _Program(torch.nn.Module):
    def forward(self, xs):
        x, = xs
        v0 = x[-x.size(2):]
        v1 = torch.eye(v0.numel())
        v2 = torch.cond(v0.mean() < 0, lambda t: t.sum(0), lambda t: t.amax(0), (v0,))
        v7 = v1[:1] * v1
        return (v0, v1, v2, v7)


def test_eye_broadcast_beside_a_data_cond_computes_where_eager_does() -> None:
    model = _Program()
    spec = {"xs": ({0: Dim("d0", max=5), 1: Dim("d1"), 2: Dim("d2", max=6), 3: Dim.AUTO},)}
    ep = st.export(model, ((torch.randn(5, 1, 3, 7),),), dynamic_shapes=spec)
    for shape in ((5, 0, 2, 7), (5, 0, 3, 1), (2, 0, 0, 3), (1, 1, 1, 1), (5, 2, 3, 2),
                  (4, 3, 6, 1), (3, 0, 1, 0)):
        matches_eager(ep, model, ((torch.randn(*shape),),))
    rejects(ep, ((torch.randn(6, 1, 3, 7),),))  # d0 above its declared 5


def test_eye_broadcast_alone_splits_at_zero() -> None:
    class M(torch.nn.Module):
        def forward(self, x, y):
            v1 = torch.eye(x.shape[0] * y.shape[0])
            return v1[:1] * v1
    ep = st.export(M(), (torch.randn(2, 1), torch.randn(3)),
                   dynamic_shapes={"x": {0: Dim("a", max=9)}, "y": {0: Dim("b")}})
    for a, b in ((0, 3), (2, 0), (1, 1), (0, 0), (3, 4)):
        matches_eager(ep, M(), (torch.randn(a, 1), torch.randn(b)))
    rejects(ep, (torch.randn(10, 1), torch.randn(3)))
