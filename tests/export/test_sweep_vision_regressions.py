"""Regressions found by the vision sweep (now the conformance table tests/conformance/models/vision.py)."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


def _gnn(x, edge_index):
    src, dst = edge_index[0], edge_index[1]
    agg = torch.zeros(x.shape[0], x.shape[1]).index_add_(0, dst, x[src])
    deg = torch.zeros(x.shape[0]).scatter_add_(0, dst, torch.ones_like(dst, dtype=x.dtype))
    return agg / deg.clamp(min=1)[:, None]


def test_inplace_index_add_scatter_add_dynamic_edges():
    """In-place index_add_ / scatter_add_ keep node and edge counts symbolic (they had no rule,
    so a named Dim was an UnsupportedOpError)."""
    mk = lambda n, e: (torch.randn(n, 3), torch.randint(0, n, (2, e)))  # noqa: E731
    spec = ({0: Dim("nodes", min=1)}, {1: Dim("edges", min=0)})
    ep = st.export(_gnn, mk(6, 10), dynamic_shapes=spec)
    for n, e in ((6, 10), (4, 0), (9, 31)):
        args = mk(n, e)
        torch.testing.assert_close(ep.module()(*args), _gnn(*args))


def _legacy_window_reverse(x):
    b = int(x.shape[0] / (x.shape[1] / 2))  # int() of a float: Python needs a real int
    return x.view(b, 2, -1).sum(1)


def test_floordiv_guard_narrows_the_range():
    """b = int(s0 / 3) stays symbolic (issue 14); the view then needs 2*b to divide 6*s0,
    which holds on [3, 6] around the example (not at 2 or 7): a named Dim that allows more
    is a violation (it was a silent residual guard), with the range in the fix."""
    x = torch.randn(4, 6)
    with pytest.raises(st.ConstraintViolationError) as ei:
        st.export(_legacy_window_reverse, (x,), dynamic_shapes=({0: Dim("b"), 1: None},))
    assert "Dim('b', min=3, max=6)" in str(ei.value)
    ep = st.export(_legacy_window_reverse, (x,), dynamic_shapes=({0: Dim("b", min=3, max=6),
                                                                  1: None},))
    for n in (3, 5, 6):
        y = torch.randn(n, 6)
        torch.testing.assert_close(ep.module()(y), _legacy_window_reverse(y))


def _padded_windows(x):
    y = torch.nn.functional.pad(x, (0, (4 - x.shape[1] % 4) % 4))
    y = y.view(x.shape[0], -1, 4)   # a residual guard mentioning the batch (always true)
    return y + torch.ones(2, 1, 1)  # the batch is specialized here


def test_specialization_names_the_line_that_specialized():
    """The error names the guard that rules out other sizes, not the first guard that merely
    mentions the dim."""
    x = torch.randn(2, 6)
    with pytest.raises(st.ConstraintViolationError) as ei:
        st.export(_padded_windows, (x,), dynamic_shapes=({0: Dim("b"), 1: Dim("t")},))
    msg = str(ei.value).split("Fix:")[0]
    assert "specialized to 2" in msg
    assert "torch.ones(2, 1, 1)" in msg, msg
