"""Reproducer of grammar_model.py's ``sizeargs`` (session 30, seed 3020): a loaded program
refused, after running, inputs its saved program computes.  A ``torch.cond`` on a size
read from data (``x[::max(len(v0) // 2, 1)]`` after a ``repeat_interleave`` by a tensor)
returns a size of its own (``u1`` in the file); the loader checked the real size against
the file's name ``u1``, which in its own symbols was ``repeat_interleave``'s size: equal
only where the two sizes happen to agree.  Now such a size's first record is the size
read there, as past the loader's analysis time."""

from __future__ import annotations

import torch

import safetrace as st
from safetrace import Dim


def test_a_cond_output_sized_from_data_loads_with_its_own_size(tmp_path):
    def f(x):
        v0 = x.repeat_interleave(torch.arange(x.shape[0]) % 3, 0)
        return v0, x[::max(len(v0) // 2, 1)]

    ep = st.export(f, (torch.randn(2),), dynamic_shapes=({0: Dim("d0", min=1)},))
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2")
    for n in (1, 2, 3, 8):
        x = torch.randn(n)
        want = f(x)
        for prog in (ep, loaded):
            got = prog.module()(x)
            for w, g in zip(want, got):
                assert w.shape == g.shape, n
                torch.testing.assert_close(g, w)
