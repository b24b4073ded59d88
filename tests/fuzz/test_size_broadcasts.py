"""Reproducers of grammar_model.py's ``sizegaps`` (session 30): a size computed from sizes
broadcast against one of them, ``torch.ones(min(n, 2 * m + 1)) + x`` with x of size n.
Eager broadcasts where the two agree or the computed one is 1 (m = 0) and raises
elsewhere.  The program kept ``n == min(n, 2*m + 1)`` as a run-time check and refused
m = 0 (a split there was tried, but its other side was traced at m = 2 with the example's
n = 7, where eager raises; and at m = 1 eager's raising was not recognized as a
requirement): now the side is traced at another size of its range, and a broadcast's
requirement is known exactly where it raises (neither size 1)."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


@pytest.mark.parametrize("body", [
    lambda x, m: torch.ones(min(x.shape[0], 2 * m + 1)) + x,
    lambda x, m: x * torch.arange(min(x.shape[0], m + 1)).float(),
])
def test_a_size_from_sizes_broadcast_against_one_of_them(body, tmp_path):
    def f(x, y):
        return body(x, y.shape[0])

    spec = ({0: Dim("n", min=1, max=7)}, {0: Dim("m", max=9)})
    ep = st.export(f, (torch.randn(7), torch.randn(6)), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2")
    for n in (1, 2, 3, 7):
        for m in (0, 1, 2, 3, 6, 9):
            x, y = torch.randn(n), torch.randn(m)
            try:
                want = f(x, y)
            except RuntimeError:
                with pytest.raises(st.InputMismatchError):   # refused before running
                    ep.module()(x, y)
                continue
            for prog in (ep, loaded):
                got = prog.module()(x, y)
                assert got.shape == want.shape, (n, m)
                torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):   # outside the declared range
        ep.module()(torch.randn(8), torch.randn(4))
