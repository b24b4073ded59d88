"""Keywords eager's parser reads as not given: `stride=None` (the schema default `[]`), an
optional given as None, a factory's `requires_grad=False` (torch's decompositions write it)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from safetrace import Dim

PROGRAMS = {
    "avg_pool2d_stride_none": lambda x: F.avg_pool2d(x, 2, stride=None),
    "avg_pool1d_stride_none_ceil": lambda x: F.avg_pool1d(x.flatten(1, 2), 3, stride=None,
                                                          ceil_mode=True),
    "max_pool2d_stride_none": lambda x: F.max_pool2d(x, 2, stride=None),
    "full_requires_grad_false": lambda x: x + torch.full(
        (), 1.0, dtype=torch.float32, layout=torch.strided, device="cpu", pin_memory=False,
        requires_grad=False),
    "clamp_min_none": lambda x: torch.clamp(x, min=None, max=0.5),
    "sum_dim_none": lambda x: x.sum(dim=None) + x,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_none_keywords_export_and_match_eager_at_other_sizes(name):
    fn = PROGRAMS[name]
    spec = ({0: Dim("b"), 2: Dim("h", min=4, max=64)},)
    ep = st.export(fn, (torch.randn(2, 3, 8, 8),), dynamic_shapes=spec)
    for shape in [(0, 3, 8, 8), (1, 3, 5, 8), (3, 3, 17, 8), (1, 3, 64, 8)]:
        x = torch.randn(*shape)
        torch.testing.assert_close(ep.module()(x), fn(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1, 3, 65, 8))


def test_requires_grad_true_is_still_refused():
    with pytest.raises(st.ExportError):
        st.export(lambda x: x + torch.full((), 1.0, requires_grad=True), (torch.randn(2),))
