"""Padding idioms of vision models (found by the vision zoo, issue 15.9): TF "same" padding
(timm's pad_same, EfficientNet-PyTorch) and pad-to-even before a 2x2 patch merge
(torchvision's Swin) are size arithmetic on floor divisions whose branches always go one
way; the export must decide them, keep no residual condition, and run every size eager runs."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import safetrace as st


class SameConv(nn.Module):
    """timm's Conv2dSame: the pad that makes a strided conv cover ceil(h / s) outputs."""

    def __init__(self, k: int, s: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 3, k, s)

    def forward(self, x):
        ih, iw = x.shape[-2:]
        k, s = self.conv.kernel_size[0], self.conv.stride[0]
        pad_h = max((math.ceil(ih / s) - 1) * s + (k - 1) + 1 - ih, 0)
        pad_w = max((math.ceil(iw / s) - 1) * s + (k - 1) + 1 - iw, 0)
        if pad_h > 0 or pad_w > 0:
            x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2])
        return self.conv(x)


class PatchMerge(nn.Module):
    """torchvision's Swin patch merging, three times: pad H and W to even, take 2x2."""

    def forward(self, x):  # (B, H, W, C)
        for _ in range(3):
            h, w = x.shape[1], x.shape[2]
            x = F.pad(x, (0, 0, 0, w % 2, 0, h % 2))
            x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2],
                           x[:, 1::2, 1::2]], -1)[..., :4]
        b, h, w, c = x.shape
        return x.reshape(b, h * w, c).mean(1) + h * w


@pytest.mark.parametrize("k,s", [(3, 2), (5, 2), (3, 1), (7, 4)])
@pytest.mark.parametrize("h_dim", ["auto", "named"])
def test_tf_same_padding_has_no_residual_condition(k: int, s: int, h_dim: str) -> None:
    torch.manual_seed(0)
    m = SameConv(k, s).eval()
    h = st.Dim.AUTO if h_dim == "auto" else st.Dim("h", min=1, max=80)
    ep = st.export(m, (torch.randn(2, 2, 21, 16),), dynamic_shapes={"x": {0: st.Dim.AUTO,
                                                                            2: h, 3: st.Dim.AUTO}})
    # math.ceil(ih / s) is exact below 2**53 (that bound is the float rewrite's, not ours)
    residual = [line for line in ep.describe_contract().splitlines()
                if "requires" in line and not line.endswith("<= 9007199254740992")]
    assert not residual, ep.describe_contract()
    for size in [1, 2, 3, 4, 7, 16, 33, 64]:
        x = torch.randn(1, 2, size, size + 1)
        torch.testing.assert_close(ep.module()(x), m(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1, 3, 8, 8))


def test_patch_merge_chain_runs_every_size() -> None:
    m = PatchMerge()
    ep = st.export(m, (torch.randn(2, 20, 13, 4),),
                   dynamic_shapes={"x": {0: st.Dim.AUTO, 1: st.Dim.AUTO, 2: st.Dim.AUTO}})
    for hh, ww in [(1, 1), (2, 3), (8, 8), (9, 31), (33, 64)]:
        x = torch.randn(3, hh, ww, 4)
        torch.testing.assert_close(ep.module()(x), m(x))
