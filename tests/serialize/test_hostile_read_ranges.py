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
from tests.serialize import surgery


class Sized(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("n", torch.tensor(3))

    def forward(self, x):
        return x + torch.zeros(self.n.item()).sum()


def _file(lo: int, hi: int) -> bytes:
    doc, tensors = hostile.parts(surgery.saved(st.export(Sized(), (torch.randn(3),))))
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
        surgery.load(doc, tensors)


class Counted(torch.nn.Module):
    def forward(self, x):
        return torch.nonzero(x > 0), torch.zeros((x > 0).sum().item())


class Written(torch.nn.Module):
    """``.item()`` of an input: ``u0``'s range is what the checks give, [0, 8 - s0]."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(8, 4))

    def forward(self, x, pos):
        p = pos.item()
        torch._check(p >= 0)
        torch._check(p + x.shape[0] <= 8)
        cache = self.cache.clone()
        cache[p:p + x.shape[0]].copy_(x)
        return cache.sum() + cache[p].sum()


def _pinned(ep: st.ExportedProgram, value: int) -> bytes:
    """``ep``'s file with its first size read from data declared ``[value, value]`` (in
    the symbols and in the contract, as hostile_probe's ``ranges:both``)."""
    doc, tensors = hostile.parts(surgery.saved(ep))
    for table in (doc["symbols"], doc["contract"]["symbols"]):
        u = next(s for s in table if s["name"] == "u0")
        u["lo"] = u["hi"] = value
    for r in doc["range_constraints"]:
        if r[0] == "u0":
            r[1] = r[2] = value
    return hostile.pack(doc, tensors)


def _resaved(ep: st.ExportedProgram) -> st.ExportedProgram:
    buf = io.BytesIO()
    st.save(ep, buf)
    return st.load(buf.getvalue())


def test_a_count_declared_as_one_number_stays_a_count_and_saves_again():
    """Before (session 29, probe seed 2991 ``data/ranges:both[0,0]@u0``): the file's ``u0``
    in ``[0, 0]`` made ``nonzero``'s record the number 0 in the loaded program (which
    returned 3 rows); ``st.save`` wrote ``[0, 1]`` and the saved file refused the call."""
    n = st.Dim("n", max=32)
    ep = st.load(_pinned(st.export(Counted(), (torch.randn(7),), dynamic_shapes=({0: n},)),
                         0))
    assert "i64[u0, 1]" in str(ep)
    assert str(ep.range_constraints[next(k for k in ep.range_constraints
                                         if str(k) == "u0")]) == "VR[0, 32]"
    again = _resaved(ep)
    for x in (torch.tensor([1.0, -1, 2, 3]), torch.zeros(0), -torch.ones(5)):
        for program in (ep, again):
            for got, want in zip(program.module()(x), Counted()(x)):
                torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        again.module()(torch.randn(33))


@pytest.mark.parametrize("value", [-1, 1])
def test_a_read_value_declared_as_one_number_runs_alike_saved_again(value):
    """Before (session 29, probe seed 3001 ``sg_checks/ranges:symbols[-1,-1]@u0``, and the
    ``[1, 1]`` of ``pos.item()`` whose checks give ``[0, 7]``): the loaded program ran with
    ``pos = 0``, but saved again it wrote ``item`` as the number, and the saved file
    refused the call (or the load)."""
    ep = st.export(Written(), (torch.randn(3, 4), torch.tensor(2)),
                   dynamic_shapes={"x": {0: st.Dim("n", min=1, max=8)}, "pos": None})
    loaded = st.load(_pinned(ep, value))
    again = _resaved(loaded)
    for x, pos in ((torch.randn(3, 4), 0), (torch.randn(1, 4), 7), (torch.randn(8, 4), 0)):
        want = Written()
        torch.testing.assert_close(loaded.module()(x, torch.tensor(pos)),
                                   want(x, torch.tensor(pos)))
        torch.testing.assert_close(again.module()(x, torch.tensor(pos)),
                                   loaded.module()(x, torch.tensor(pos)))
    for program in (loaded, again):
        with pytest.raises(st.RuntimeAssertionError):
            program.module()(torch.randn(3, 4), torch.tensor(6))
