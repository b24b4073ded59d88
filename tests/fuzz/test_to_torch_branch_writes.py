"""Open (fuzz35, typed seed 3 and default seed 4 with ``--to-torch 0.1``): ``ep.to_torch()`` of
a program whose size split (``torch.cond``) holds an in-place write that eager makes through
a view: ``st.export``'s program equals eager, the converted one does not (torch's cond
functionalizes the branch: a write through a ``tensor_split`` view no longer reaches its
base; ``index_add_`` reads its aliased source before the write instead of between the two
adds). Fixed (conv35b): such writes stay in place in the converted branch, as eager makes
them (``interop/hops.py``, ``functional_writes``)."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st


class WriteThroughSplit(torch.nn.Module):
    def forward(self, y):
        v2 = y.clone()
        v2a = v2.tensor_split(2, 0)[0]
        v2a.mul_(-1)
        v3 = sum(v2[i] for i in range(min(v2.shape[0], 2))) + v2.sum()   # a split at 1
        return v2, v2a, v3


class AliasedIndexAdd(torch.nn.Module):
    def forward(self, y):
        v0 = y.sum(dim=[i for i, n in enumerate(y.shape) if n > 1], keepdim=True)  # a split
        v1 = y.clone()
        v1.index_add_(0, torch.tensor([0, 0]), v1[:1].expand(2, *v1.shape[1:]), alpha=2)
        return v0, v1


@pytest.mark.parametrize("model, example, spec, other", [
    (WriteThroughSplit, torch.arange(1., 5.), ({0: st.Dim("n", min=1)},), torch.arange(1., 4.)),
    (AliasedIndexAdd, torch.randn(2, 2), ({1: st.Dim("n")},), torch.randn(2, 8)),
])
def test_converted_branch_writes_match_eager(model, example, spec, other):
    ep = st.export(model(), (example,), dynamic_shapes=spec)
    for x in (example, other):
        torch.testing.assert_close(ep.module()(x.clone()), model()(x.clone()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        converted = ep.to_torch().module()
    for x in (example, other):
        torch.testing.assert_close(converted(x.clone()), model()(x.clone()))
