"""The hostile probe compares outputs made of memory never written (``empty`` and its kin,
and what is computed from them) by dtype and shape only: their bytes differ from run to
run, and the probe reported them as ``FINDING resave differs`` (session 33)."""

from __future__ import annotations

import io

import torch

import safetrace as st
from benchmarks import hostile_probe


class _Empty(torch.nn.Module):
    def forward(self, x):
        e = torch.empty(x.shape[0], 4096)
        return e, e * 2, x + 1


def _loaded(model, *args):
    buf = io.BytesIO()
    st.save(st.export(model, args), buf)
    return st.load(buf.getvalue()), buf.getvalue()


def test_uninitialized_outputs_are_compared_by_meta_only():
    ep, blob = _loaded(_Empty(), torch.randn(64, 3))
    assert hostile_probe.uninitialized(ep, blob) == {0, 1}
    for _ in range(3):  # (garbage that happens to match once must not hide the check)
        garbage = [torch.full((64, 4096), float(i)) for i in range(4)]
        del garbage
        assert hostile_probe.resaved(st, ep, (torch.randn(64, 3),), {}) is None


def test_a_real_difference_is_still_a_finding():
    ep, _ = _loaded(_Empty(), torch.randn(64, 3))
    assert not hostile_probe._same(torch.ones(3), torch.zeros(3), False)
    assert hostile_probe._same(torch.ones(3), torch.zeros(3), True)
    assert not hostile_probe._same(torch.ones(3), torch.zeros(4), True)
    assert not hostile_probe._same(torch.ones(3), torch.ones(3, dtype=torch.float64), True)
