"""A named Dim that the program's run-time conditions pin to one value (dinov2's
``if num_patches == num_positions and height == width:`` returns the position table as is
only at the example's resolution) is split at that value, as a Dim specialized there is:
the point and the ranges on each side traced apart and joined by ``torch.cond`` on the
size.  Before, only a split's side did so (bamba's `pad_size > 0` at 8); at the top level
the export was refused with a static fix (exporter/dynamic.py)."""

from __future__ import annotations

import pytest
import torch

import safetrace as st

F = torch.nn.functional


class PosTable(torch.nn.Module):
    """The table as is where n*n == 16 (n == 4), else interpolated to n*n positions."""

    def __init__(self):
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(1, 16, 3))

    def forward(self, x):
        n = x.shape[1]
        if n * n == 16:
            pos = self.table
        else:
            pos = F.interpolate(self.table.transpose(1, 2), size=n * n,
                                mode="linear").transpose(1, 2)
        return x.repeat(1, n, 1) + pos


class Patches(torch.nn.Module):
    """dinov2's form: a side of 2*k, the table as is at k == 4 only."""

    def __init__(self):
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(1, 3, 4, 4))

    def forward(self, img):
        k = img.shape[2] // 2
        if k * k == 16 and img.shape[2] == img.shape[3]:
            pos = self.table
        else:
            pos = F.interpolate(self.table, size=(k, k), mode="bicubic", align_corners=False)
        return F.avg_pool2d(img, 2) + pos


class OnlyFour(torch.nn.Module):
    """Eager raises at every other n (a 4x4 matmul): no side but n == 4 traces."""

    def forward(self, x):
        n = x.shape[0]
        if n * n == 16:
            return x * 2
        return torch.ones(4, 4) @ x


def _refuses(ep, *args):
    with pytest.raises(st.InputMismatchError):
        ep.module()(*args)


def test_a_pinned_dim_is_split_at_its_value_and_runs_every_size():
    m = PosTable()
    spec = ({0: st.Dim("b", min=0, max=8), 1: st.Dim("n", min=1, max=8)},)
    ep = st.export(m, (torch.randn(2, 4, 3),), dynamic_shapes=spec)
    for b, n in [(2, 4), (0, 4), (1, 1), (1, 4), (2, 2), (5, 3), (2, 5), (1, 8), (0, 6)]:
        x = torch.randn(b, n, 3)
        torch.testing.assert_close(ep.module()(x), m(x))
    _refuses(ep, torch.randn(2, 9, 3))
    _refuses(ep, torch.randn(9, 4, 3))
    _refuses(ep, torch.randn(2, 0, 3))


def test_a_derived_dim_pinned_by_a_square_table_runs_every_resolution():
    m = Patches()
    k = st.Dim("k", min=1, max=8)
    spec = ({0: st.Dim("b", min=0, max=4), 2: 2 * k, 3: 2 * k},)
    ep = st.export(m, (torch.randn(2, 3, 8, 8),), dynamic_shapes=spec)
    for b, s in [(2, 8), (0, 8), (1, 8), (1, 2), (2, 4), (3, 6), (1, 10), (2, 16)]:
        x = torch.randn(b, 3, s, s)
        torch.testing.assert_close(ep.module()(x), m(x))
    _refuses(ep, torch.randn(1, 3, 18, 18))
    _refuses(ep, torch.randn(1, 3, 8, 6))
    _refuses(ep, torch.randn(1, 3, 7, 7))


def test_a_pin_no_other_side_traces_is_refused_as_before():
    with pytest.raises(st.ExportError, match="can only be 4"):
        st.export(OnlyFour(), (torch.randn(4, 3),),
                  dynamic_shapes=({0: st.Dim("n", min=1, max=8)},))


def test_explain_shows_the_split_at_the_pinned_value():
    report = str(st.explain(PosTable(), (torch.randn(2, 4, 3),),
                            dynamic_shapes=({1: st.Dim("n", min=1, max=8)},)))
    assert "size split on `n == 4`" in report and "5 <= n <= 8" in report, report
