"""A size the loader reads from a buffer's value (``zeros(self.n.item())``) is the file's
symbol for it only where the file's declared range of that symbol holds the value.

Before (session 29, hostile probe seed 2902, ``tied/ranges``): a file declaring ``u0`` in
``[-1, -1]`` (or ``[1, 1]``) for an ``n`` of 3 loaded and ran; the program kept the lie
(``zeros``'s record ``[-1]``), and ``st.save`` of it wrote a file its own loader refused.
"""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from tests.serialize import hostile


class Sized(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("n", torch.tensor(3))

    def forward(self, x):
        return x + torch.zeros(self.n.item()).sum()


def _file(lo: int, hi: int) -> bytes:
    buf = io.BytesIO()
    st.save(st.export(Sized(), (torch.randn(3),)), buf)
    doc, tensors = hostile.parts(buf.getvalue())
    (u,) = [s for s in doc["symbols"] if s["name"].startswith("u")]
    u["lo"], u["hi"] = lo, hi
    return hostile.pack(doc, tensors)


@pytest.mark.parametrize("lo,hi", [(-1, -1), (1, 1), (4, 10), (0, 2)])
def test_a_declared_range_without_the_value_read_is_refused(lo, hi):
    with pytest.raises(st.LoadError, match=r"node 'item': the file records its value as u0, "
                                           r"but the graph computes 3"):
        st.load(_file(lo, hi))


@pytest.mark.parametrize("lo,hi", [(0, 3), (3, 3), (2, 2**40)])
def test_a_declared_range_with_the_value_loads_and_saves_again(lo, hi):
    ep = st.load(_file(lo, hi))
    x = torch.randn(3)
    torch.testing.assert_close(ep.module()(x), x)
    buf = io.BytesIO()
    st.save(ep, buf)
    torch.testing.assert_close(st.load(buf.getvalue()).module()(x), x)


class Written(torch.nn.Module):
    """``.item()`` of an input: ``u0``'s range is what the checks give, [0, 8 - s0]."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(8, 4))

    def forward(self, x, pos):
        p = pos.item()
        torch._check(p >= 0)
        torch._check(p + x.shape[0] <= 8)
        self.cache[p:p + x.shape[0]].copy_(x)
        return self.cache.sum()


def _written(lo: int, hi: int) -> bytes:
    buf = io.BytesIO()
    st.save(st.export(Written(), (torch.randn(3, 4), torch.tensor(2)),
                      dynamic_shapes={"x": {0: st.Dim("n", min=1, max=8)}, "pos": None}), buf)
    doc, tensors = hostile.parts(buf.getvalue())
    (u,) = [s for s in doc["symbols"] if s["name"].startswith("u")]
    u["lo"], u["hi"] = lo, hi
    return hostile.pack(doc, tensors)


@pytest.mark.parametrize("lo,hi", [(1, 1), (-1, -1)])
def test_a_read_size_outside_its_declared_range_is_refused_at_call(lo, hi):
    """Before: a file declaring ``u0`` in ``[1, 1]`` ran with ``pos = 0``; ``st.save`` of
    it wrote ``item`` as the number 1, and the saved file refused the call it had run."""
    ep = st.load(_written(lo, hi))
    x = torch.randn(3, 4)
    with pytest.raises(st.RuntimeAssertionError, match=r"'item'"):
        ep.module()(x, torch.tensor(0))
    if lo == 1:
        torch.testing.assert_close(ep.module()(x, torch.tensor(1)), x.sum())


def test_a_read_size_within_its_declared_range_runs():
    ep = st.load(_written(0, 7))
    x = torch.randn(3, 4)
    torch.testing.assert_close(ep.module()(x, torch.tensor(0)), x.sum())
    torch.testing.assert_close(ep.module()(torch.randn(1, 4), torch.tensor(7)),
                               ep.state_dict["cache"].sum())
