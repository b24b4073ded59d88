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
    with pytest.raises(DeclaredSpaceViolation, match="model itself fails in eager"):
        st.export(f, (torch.randn(1),), dynamic_shapes=({0: st.Dim("k")},))


def g(x, y):  # (fuzz35b typed seed 11: d0 against d0 * d1, both 0 at the example)
    return (x > 0) * (y.reshape(-1, 1).expand(-1, y.shape[1]) > 0)


def test_sizes_both_0_at_the_example_broadcast_where_eager_does():
    spec = ({0: st.Dim("d0", max=16), 1: st.Dim("d1", max=16)},)
    ep = st.export(lambda y: g(y, y), (torch.randn(0, 5),), dynamic_shapes=spec)
    for shape in ((0, 5), (1, 5), (1, 1), (0, 0), (3, 1), (1, 0)):
        y = torch.randn(shape)
        want, got = g(y, y), ep.module()(y)
        assert got.shape == want.shape
        assert torch.equal(got, want)
    with pytest.raises(RuntimeError, match="must match"):
        g(torch.randn(3, 2), torch.randn(3, 2))
    with pytest.raises(st.InputMismatchError):  # eager raises: refused before running
        ep.module()(torch.randn(3, 2))
