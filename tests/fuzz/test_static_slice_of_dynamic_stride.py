"""Reproducer of grammar_mixed.py's ``mixdtype`` (session 32): an op on a slice of static
sizes whose stride is a declared size (``a[:, :0]`` and ``a[:, :1]`` of an ``(3, n)`` input:
sizes (3, 0) / (3, 1), strides (n, 1)). The tracer's memo keyed the call by the slice's
strides as they were, and hashing the symbolic stride specialized n to the example's value:
``a[:, :0] * 10`` was refused for every declared Dim (TooManySplits; DeclaredSpaceViolation for
Dim.DYNAMIC), as was ``y * y[:, :1]`` with Dim.DYNAMIC, and ``torch.stack([a[:, :0], ...])``
(the slices in a list argument). The strides are now keyed by their expressions."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


@pytest.mark.parametrize("f, dim", [
    (lambda a: a[:, :0] * 10, Dim("n", max=16)),
    (lambda a: (a[:, :0] > 0).sum(1) + a.shape[1], Dim.DYNAMIC),
    (lambda a: a * a[:, :1], Dim.DYNAMIC),
    (lambda a: torch.stack([a[:, :0], a[:, :0] + 1]), Dim("n")),   # (in a list argument)
])
def test_an_op_on_a_static_slice_with_a_dynamic_stride(f, dim, tmp_path):
    ep = st.export(f, (torch.randn(3, 5),), dynamic_shapes=({1: dim},))
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2")
    for n in (2, 3, 7, 16):
        a = torch.randn(3, n)
        want = f(a.clone())
        for prog in (ep, loaded):
            got = prog.module()(a.clone())
            assert got.shape == want.shape and got.dtype == want.dtype, n
            torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):   # the static dim
        ep.module()(torch.randn(4, 5))


def test_the_empty_slice_at_sizes_0_and_1():
    def f(a):
        return a[:, :0] * 10 + a.shape[1]

    ep = st.export(f, (torch.randn(3, 5),), dynamic_shapes=({1: Dim("n")},))
    for n in (0, 1):
        a = torch.randn(3, n)
        torch.testing.assert_close(ep.module()(a), f(a))
