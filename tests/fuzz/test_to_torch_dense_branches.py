"""Reproducers of the fuzzer's ``to_torch`` mode (seeds 34 and 3401): a size split's sides
returning a strided slice (``z[:, n - 1:-1:3]``) or an expanded view (``v.expand(...)`` on
one side, ``v * 2`` on the other). torch's ``cond`` takes branch outputs only dense in
memory and laid out alike (``_merge_output``), so ``ep.to_torch()`` and
``st.load(...).to_torch()`` failed with a ConversionError blaming a ``torch.cond`` the user
never wrote. The conversion now makes such a cond's outputs contiguous (same values) and
runs torch's cond again (interop/hops.py ``dense_outputs``)."""

from __future__ import annotations

import pytest
import torch

from safetrace import Dim
from tests.fuzz.converted import converts_like_eager


class _Slice(torch.nn.Module):
    def forward(self, x, y, z):
        v0 = torch.ones(y.size(-2) * (len(z) > 2))
        v1 = z[:, z.shape[1] - 1:-1:3]
        return (v0, v1)


class _Expand(torch.nn.Module):
    def forward(self, x, y):
        v0 = x.sum(dim=[0] * (x.shape[0] > 2), keepdim=False)
        v1 = v0.expand(*[max(n, 2) for n in v0.shape]) if v0.shape[0] == 1 else v0 * 2
        return (v0, v1)


def _slice_case():
    d0, d1 = Dim("d0"), Dim("d1")
    spec = ({0: d0}, {1: d0, 2: d1}, {0: d1, 1: Dim.DYNAMIC, 2: Dim("d2", min=1, max=1)})
    example = [(2,), (2, 2, 1), (1, 1, 1, 2)]
    others = [[(n,), (2, n, m), (m, k, 1, 2)] for n, m, k in
              [(0, 0, 0), (1, 1, 1), (3, 3, 5), (5, 1, 9), (1, 4, 2)]]
    outside = [(2,), (2, 2, 1), (1, 1, 2, 2)]        # d2 = 2: above its max
    return _Slice(), example, spec, others, outside


def _expand_case():
    spec = ({1: Dim.AUTO}, {0: Dim("d0", min=2)})
    example = [(6, 2), (6,)]
    others = [[(6, n), (m,)] for n, m in [(0, 2), (1, 2), (3, 7), (1, 9), (5, 3)]]
    outside = [(6, 2), (1,)]                          # d0 = 1: below its min
    return _Expand(), example, spec, others, outside


@pytest.mark.parametrize("case", [_slice_case, _expand_case])
@pytest.mark.parametrize("way", ["to_torch", "load"])
def test_a_size_splits_strided_outputs_convert(case, way):
    converts_like_eager(*case(), way)
