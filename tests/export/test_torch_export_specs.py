"""Specs written for torch.export (its Dim objects) work unchanged."""

from __future__ import annotations

import torch
from torch.export import Dim as TDim  # tests may import torch.export

import safetrace as st
from tests.helpers import matches_eager, rejects


def f(x, y):
    return torch.cat([x, x], 0) + y


def test_torch_export_dims_are_accepted():
    b = TDim("b", min=1, max=64)
    ep = st.export(f, (torch.randn(3, 4), torch.randn(6, 4)),
                   dynamic_shapes={"x": {0: b, 1: TDim.AUTO}, "y": {0: 2 * b, 1: TDim.DYNAMIC}})
    matches_eager(ep, f, (torch.randn(5, 2), torch.randn(10, 2)))
    rejects(ep, (torch.randn(5, 2), torch.randn(9, 2)))
    assert ep.range_constraints["s0"].upper == 64
