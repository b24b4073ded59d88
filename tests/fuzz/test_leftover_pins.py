"""Session 35's leftover over-rejections (docs/benchmarks.md, h/fuzz35b and main after
session 35): a size an export pinned to its example where eager computes other sizes.

``cache[:n] + x`` with ``Dim.AUTO`` at example 1: ``min(n, 8)`` against ``n``, both 1 at the
example. The broadcast pinned the flexible ``n`` to 1 (as a Dim.AUTO size 1 against an
unrelated size is pinned); two sizes of one symbol now take eager's own condition (one is 1,
or they are equal: ``n <= 8`` here), as they do at other examples."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


class _Cache(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.arange(32.0).reshape(8, 4))

    def forward(self, x):
        return self.cache[: x.shape[0]] + x


@pytest.mark.parametrize("example", [1, 0, 3])
def test_a_cache_slice_against_its_auto_size_keeps_the_range(example, tmp_path):
    m = _Cache()
    ep = st.export(m, (torch.randn(example, 4),), dynamic_shapes={"x": {0: Dim.AUTO}})
    st.save(ep, tmp_path / "p.pt2")
    progs = [ep.module(), st.load(tmp_path / "p.pt2").module()]
    for n in (0, 1, 2, 5, 8):
        x = torch.randn(n, 4)
        want = m(x)
        for prog in progs:
            torch.testing.assert_close(prog(x), want)
    x = torch.randn(9, 4)
    with pytest.raises(RuntimeError):
        m(x)   # eager: 8 rows against 9
    for prog in progs:
        with pytest.raises(st.InputMismatchError):
            prog(x)
        with pytest.raises(st.InputMismatchError):
            prog(torch.randn(2, 5))
