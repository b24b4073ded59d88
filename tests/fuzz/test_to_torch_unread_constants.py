"""Reproducer of the fuzzer's ``to_torch`` mode (seed 3404): a three-way size split
(``y.shape[0]`` 0, 1, >= 2) whose sides lift different constants (``torch.as_tensor(
y.shape)``: ``[0, 4]``, ``[1, 4]``, ...). The inner ``torch.cond`` passes on a constant
none of its sides reads; its placeholder had no value, which the conversion handed to
torch's cond as ``None`` (``can only be of (Tensor, int, SymInt)``): ``ep.to_torch()``
failed. Such a placeholder now gets its constant's fake value (interop/hops.py)."""

from __future__ import annotations

import pytest
import torch

from safetrace import Dim
from tests.fuzz.converted import converts_like_eager


class _ShapeConstant(torch.nn.Module):
    def forward(self, x, y):
        _cv0 = torch.as_tensor(y.shape)
        v0 = torch.where(_cv0 > 1, _cv0, -_cv0)
        v1 = y - y.mean(1, keepdim=True)
        v3 = v1.expand(*[max(n, 2) for n in v1.shape]) if v1.shape[0] == 1 else v1 * 2
        return {"first": v0, "rest": (v1, [v3])}


@pytest.mark.parametrize("way", ["to_torch", "load"])
def test_a_constant_no_side_of_a_cond_reads_converts(way):
    spec = ({0: Dim("d0", max=7)}, {0: Dim.AUTO})
    others = [[(n,), (m, 4)] for n, m in [(0, 0), (1, 1), (4, 0), (7, 1), (2, 3), (5, 9)]]
    assert converts_like_eager(_ShapeConstant(), [(4,), (6, 4)], spec, others,
                               [(8,), (6, 4)], way) == 7       # d0 = 8: above its max
