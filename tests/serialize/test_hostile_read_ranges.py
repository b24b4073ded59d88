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



@pytest.mark.parametrize("bound", [-2**63, 2**62, -2**62])
def test_a_contract_bound_outside_the_files_bounds_is_refused(bound):
    """Before (session 29, probe seed 2904): a contract symbol's ``lo`` of ``-2**63`` loaded
    (``range_constraints`` refuses it), and ``st.save`` of the program wrote a file that
    its loader refused."""
    n = st.Dim("n", min=1, max=32)
    buf = io.BytesIO()
    st.save(st.export(torch.nn.ReLU(), (torch.randn(4),), dynamic_shapes=({0: n},)), buf)
    doc, tensors = hostile.parts(buf.getvalue())
    doc["contract"]["symbols"][0]["lo" if bound < 0 else "hi"] = bound
    with pytest.raises(st.LoadError, match=r"contract.symbols\[0\].(lo|hi): expected an "
                                           r"integer bound"):
        st.load(hostile.pack(doc, tensors))
