"""A ``Dim.AUTO`` dim whose sizes above the example stop where a branch's range ends
(dinov2's position table taken as it is at 32 px, ``(h//8)*(h//8) == 16``, up to 39 px)
is exported again as a Dim up to its declared end, each side of the branch traced by the
split machinery, as a named Dim's export does (``auto_small._branch_top``).  Before, the
program refused 40 px and above, which the named export with ``8*k`` admits.  Where the
sizes above stop at an op's requirement (a table's length), eager raises there and the
program keeps that end."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim

F = torch.nn.functional


class Patches(torch.nn.Module):
    """dinov2's embedding: 8 px patches, the 4x4 table as is at 32 px square, else
    interpolated to the patch grid."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Conv2d(3, 4, 8, stride=8)
        self.cls = torch.nn.Parameter(torch.randn(1, 1, 4))
        self.pos = torch.nn.Parameter(torch.randn(1, 17, 4))

    def forward(self, x):
        b, _, h, w = x.shape
        e = self.proj(x).flatten(2).transpose(1, 2)
        e = torch.cat([self.cls.expand(b, -1, -1), e], 1)
        if e.shape[1] - 1 == 16 and h == w:
            pos = self.pos
        else:
            grid = self.pos[:, 1:].reshape(1, 4, 4, 4).permute(0, 3, 1, 2)
            grid = F.interpolate(grid, size=(h // 8, w // 8), mode="bicubic",
                                 align_corners=False)
            pos = torch.cat([self.pos[:, :1], grid.flatten(2).transpose(1, 2)], 1)
        return e + pos


class Below(torch.nn.Module):
    """A branch below 6 (`x.shape[0] < 6`): the example 3 on its first side."""

    def forward(self, x):
        if x.shape[0] < 6:
            return x * 2
        return x.cumsum(0)


class Table(torch.nn.Module):
    """A learned table of 12 positions sliced to the length: eager raises above 12."""

    def __init__(self):
        super().__init__()
        self.pos = torch.nn.Parameter(torch.randn(12, 3))

    def forward(self, x):
        return x + self.pos[: x.shape[0]]


AUTO = Dim.AUTO


def _check(ep, model, x):
    torch.testing.assert_close(ep.module()(x), model(x))


def test_auto_side_past_the_branch_end_is_admitted():
    torch.manual_seed(0)
    model = Patches().eval()
    ep = st.export(model, (torch.randn(2, 3, 32, 32),),
                   dynamic_shapes={"x": {0: AUTO, 2: AUTO, 3: AUTO}})
    with torch.no_grad():
        for b, s in [(1, 40), (2, 32), (3, 96), (1, 24), (0, 8), (1, 8), (2, 36), (1, 200),
                     (0, 48), (2, 39)]:
            _check(ep, model, torch.randn(b, 3, s, s))
    with pytest.raises(st.InputMismatchError):  # (eager raises: the conv's kernel)
        ep.module()(torch.randn(1, 3, 7, 7))
    with pytest.raises(st.InputMismatchError):  # (h == w, as the program traced it)
        ep.module()(torch.randn(1, 3, 40, 48))


def test_auto_side_above_a_plain_branch():
    model = Below()
    ep = st.export(model, (torch.randn(3, 2),), dynamic_shapes={"x": {0: AUTO}})
    for n in (0, 1, 2, 5, 6, 7, 30):
        _check(ep, model, torch.randn(n, 2))


def test_a_requirement_keeps_the_upper_end():
    model = Table()
    ep = st.export(model, (torch.randn(5, 3),), dynamic_shapes={"x": {0: AUTO}})
    for n in (0, 1, 2, 12):
        _check(ep, model, torch.randn(n, 3))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(13, 3))
