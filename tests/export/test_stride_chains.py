"""Stride-2 stages (MobileViT/EfficientViT stems): sizes stay one floor division, the
program runs every resolution eager runs, and a rejection says which sizes pass."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import safetrace as st


class Stem(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(3 if i == 0 else 4, 4, 3, 2, 1) for i in range(5)])

    def forward(self, x):
        for c in self.convs:
            x = c(x)
        b, c, h, w = x.shape
        return x.reshape(b, c, h // 2, 2, w)


def test_stride_chain_matches_eager_and_says_which_sizes_pass() -> None:
    m = Stem()
    ep = st.export(m, (torch.randn(1, 3, 128, 64),), dynamic_shapes={"x": {2: st.Dim.AUTO}})
    out = ep.graph_module.graph.find_nodes(op="output")[0].args[0][0]
    assert str(out.meta["val"].shape[2]) == "(s0 + 31)//64"  # one division, not six
    for h in [1, 32, 33, 64, 97, 128, 161, 224, 256]:
        x = torch.randn(1, 3, h, 64)
        try:
            want = m(x)
        except RuntimeError:
            with pytest.raises(st.InputMismatchError, match=r"x.shape\[2\] % 64 is 0 or in 33..63"):
                ep.module()(x)
            continue
        torch.testing.assert_close(ep.module()(x), want)
