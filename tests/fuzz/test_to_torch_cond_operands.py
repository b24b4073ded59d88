"""Reproducer of the fuzzer's ``to_torch`` mode (seed 3401): a size split whose sides
share their first op, ``y.max(0)`` (values and indices), computed once before the
``torch.cond`` (exporter/hoist.py) and handed to the branches as one tuple operand, which
torch's cond refuses (``can only be of (Tensor, int, SymInt)``): ``ep.to_torch()`` failed.
A value that is a tuple now ends the shared prefix, as a view does (each branch computes
it)."""

from __future__ import annotations

import pytest
import torch

from safetrace import Dim
from tests.fuzz.converted import converts_like_eager


class _MaxThenSplit(torch.nn.Module):
    def forward(self, x, y):
        v0 = y.max(0)[0] * 2
        v1 = x[2:-x.shape[0] // 2:3]
        if len(v1) > 0:
            v3 = v1 * 2
        else:
            v3 = v1.sum(0, keepdim=True)
        return {"first": v0, "rest": (v1, [v3])}


@pytest.mark.parametrize("way", ["to_torch", "load"])
def test_a_tuple_computed_before_a_size_split_converts(way):
    d0 = Dim("d0", min=3)
    spec = ({0: d0}, {1: d0, 2: Dim("d1", min=2)})
    others = [[(n,), (3, n, m)] for n, m in [(3, 2), (5, 3), (6, 2), (9, 4), (12, 2)]]
    converts_like_eager(_MaxThenSplit(), [(3,), (3, 3, 2)], spec, others,
                        [(2,), (3, 2, 2)], way)     # d0 = 2: below its min
