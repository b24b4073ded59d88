"""Two sizes of one symbol that broadcast (fuzz35, ``torch.maximum(torch.cat([v, v]), v)``):
2k against k broadcasts where k is 0 or 1 (eager: 0 and 2 elements) and raises elsewhere.
The rule guarded the example's side (k == 1, or 2k == k at k = 0), which pinned a
Dim.AUTO or ``Dim(max=1)`` size to its example and refused the other value eager runs."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace.errors import DeclaredSpaceViolation


def f(v):
    return torch.maximum(torch.cat([v, v]), v), v.unsqueeze(0) + torch.cat([v, v, v]).unsqueeze(1)


@pytest.mark.parametrize("example", [0, 1])
@pytest.mark.parametrize("dim", [st.Dim.AUTO, st.Dim("k", max=1)])
def test_sizes_of_one_symbol_broadcast_where_eager_does(example, dim):
    ep = st.export(f, (torch.randn(example),), dynamic_shapes=({0: dim},))
    for k in (0, 1):
        v = torch.randn(k)
        for want, got in zip(f(v), ep.module()(v)):
            assert got.shape == want.shape
            assert torch.equal(got, want)
    with pytest.raises(st.InputMismatchError):  # eager raises at 3: refused before running
        ep.module()(torch.randn(3))


def test_a_declared_dim_that_eager_cannot_run_whole_is_refused():
    with pytest.raises(DeclaredSpaceViolation, match="== 1"):
        st.export(f, (torch.randn(1),), dynamic_shapes=({0: st.Dim("k")},))
