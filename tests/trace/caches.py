"""A static KV cache written at a length read from a buffer, and what its program must do
(data-versioned reads and replayed aranges, tests/trace)."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


class StaticCache(torch.nn.Module):
    """transformers' StaticLayer.update, and OPT's mask over past + new tokens: the write
    position ``arange(n) + length`` spans [u0, u0 + n - 1] (trace/index_ranges.py), which
    the program checks before the write; ``aranged`` also returns an ``arange(n)``."""

    def __init__(self, aranged: bool = False):
        super().__init__()
        self.aranged = aranged
        self.register_buffer("keys", torch.zeros(1, 8, 2))
        self.register_buffer("length", torch.tensor(0))

    def forward(self, x):
        mask = torch.ones(1, self.length + x.shape[1])  # (the length read: u0)
        position = torch.arange(x.shape[1]) + self.length
        self.length.add_(x.shape[1])  # (a write to the length: the span above holds)
        self.keys.index_copy_(1, position, x)  # eager: IndexError once the cache is full
        if self.aranged:
            return self.keys * 1, mask, torch.arange(x.shape[1], dtype=torch.float32)
        return self.keys * 1, mask


def fills_as_eager_and_refuses_when_full(ep: st.ExportedProgram, eager: StaticCache) -> None:
    """Three calls fill the 8 places as eager's do; the next write, where eager raises
    IndexError, is refused by the program's check before it writes."""
    mod = ep.module()
    for n in (3, 4, 1):
        x = torch.randn(1, n, 2)
        for g, w in zip(mod(x), eager(x)):
            torch.testing.assert_close(g, w)
    with pytest.raises(IndexError):
        eager(torch.randn(1, 1, 2))
    # (the write's own index check, asserted before the length is written:
    # exporter/index_checks.py; eager raises after writing it)
    before = {k: v.clone() for k, v in mod.state_dict().items()}
    with pytest.raises(RuntimeError, match="index_copy_"):
        mod(torch.randn(1, 1, 2))
    assert all(torch.equal(v, before[k]) for k, v in mod.state_dict().items())
