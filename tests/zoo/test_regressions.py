"""Shape questions real models asked that a sound export must not ask (found by the zoo)."""

from __future__ import annotations

import torch

import safetrace as st
from safetrace import Dim
from tests.helpers import matches_eager


def _export(fn, args, spec):
    ep = st.export(fn, args, dynamic_shapes=spec)
    assert ep.range_constraints, "dims were specialized"
    return ep


def test_view_minus_one_cancels_factors():
    # transformers: input_ids.view(-1, input_shape[-1]) must give (b, t), not ((b*t)//t, t)
    def f(x):
        return x.view(-1, x.shape[-1]) + 1

    b, t = Dim("b", min=1, max=64), Dim("t", min=1, max=64)
    ep = _export(f, (torch.randn(2, 5),), {"x": {0: b, 1: t}})
    view = next(n for n in ep.graph.nodes if "view" in str(n.target))
    assert "//" not in str(list(view.meta["val"].shape))
    for s in [(1, 3), (7, 1), (3, 9)]:
        matches_eager(ep, f, (torch.randn(*s),))


def test_expand_to_the_same_size_asks_nothing():
    # masking_utils: mask.expand(batch_size, -1, q, kv) where the mask already has batch_size
    def f(m):
        b, t = m.shape
        return m[:, None, None, :].expand(b, -1, t, t).sum()

    ep = _export(f, (torch.randn(2, 5),), {"m": {0: Dim("b", min=1, max=64), 1: Dim("t", min=1, max=64)}})
    for s in [(1, 3), (4, 1)]:
        matches_eager(ep, f, (torch.randn(*s),))


def test_index_broadcast_against_literal_one():
    # masking_utils: padding_mask[batch_arange[:, None, None, None], kv_arange[None, None, None, :]]
    def f(m):
        b, t = m.shape
        return m[torch.arange(b)[:, None, None, None], torch.arange(t)[None, None, None, :]]

    ep = _export(f, (torch.ones(2, 5, dtype=torch.bool),),
                 {"m": {0: Dim("b", min=1, max=64), 1: Dim("t", min=1, max=64)}})
    for s in [(1, 3), (3, 1), (5, 6)]:
        matches_eager(ep, f, (torch.rand(*s) > 0.5,))


def test_symbolic_sizes_reach_the_tracer_untouched():
    # torch's argument parser: arange(n) takes a Number; expand(n, -1, -1) on a parameter
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cls = torch.nn.Parameter(torch.randn(1, 1, 4))

        def forward(self, x):
            b, t, _ = x.shape
            tok = self.cls.expand(b, -1, -1)
            pos = torch.arange(t + 1, device=x.device).float()[None, :, None]
            return torch.cat([tok, x], dim=1) + pos

    m = M()
    ep = _export(m, (torch.randn(2, 3, 4),), {"x": {0: Dim("b", min=1, max=64), 1: Dim("t", min=1, max=64)}})
    for s in [(1, 1, 4), (5, 7, 4)]:
        matches_eager(ep, m, (torch.randn(*s),))
