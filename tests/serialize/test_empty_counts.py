"""A count read from data (``.item()`` of a mask's sum, ``nonzero``'s rows) of a tensor
the contract makes empty (``requires s0*s1*s2 == 0``, from a size test the example
answered): the exporter records it as 0, and the loader, which re-derives it with the
same rules, must find 0 too.  Its environment holds the condition as a fact, whose
product no range shows (found by ``benchmarks/fuzz.py``: the file was refused with
"none of its checks makes the two one").  Since session 34 a size test the example answered
under ``Dim.DYNAMIC`` is split instead (the program computes non-empty inputs too:
``test_the_size_test_is_split_and_computes_like_eager``), so the models state the emptiness
as the user's own ``torch._check``, which the contract keeps as the same condition."""

from __future__ import annotations


import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.serialize import hostile
from tests.serialize import surgery

_EMPTY = [(0, 0, 0), (1, 0, 1), (0, 1, 1), (16, 0, 5), (3, 4, 0), (1, 1, 0)]
_DYN = Dim.DYNAMIC(max=16)


class _ItemOfCount(torch.nn.Module):
    def forward(self, x):
        torch._check(x.numel() == 0)
        v0 = x.flatten()[:(x > 0).sum().item()]
        v2 = v0 * 2 if v0.shape[0] > 0 else v0[:1]
        return v0, v2


class _NonzeroRows(torch.nn.Module):
    def forward(self, y):
        torch._check(y.numel() == 0)
        v0 = y.nonzero()[:, 0].float()
        v2 = v0.amax(0) if v0.shape[0] > 0 else v0.sum(0)
        return v0, v2


def _exported(m: torch.nn.Module) -> st.ExportedProgram:
    return st.export(m, (torch.randn(3, 0, 2),), dynamic_shapes=({0: _DYN, 1: _DYN, 2: Dim.AUTO},))


def _saved(ep: st.ExportedProgram) -> bytes:
    return surgery.saved(ep)


@pytest.mark.parametrize("cls", [_ItemOfCount, _NonzeroRows])
def test_a_count_of_a_tensor_the_contract_empties_loads(cls):
    m = cls()
    ep = _exported(m)
    loaded = st.load(_saved(ep))
    run = loaded.module()
    for shape in _EMPTY:
        x = torch.randn(*shape)
        for got, want in zip(run(x), m(x)):
            torch.testing.assert_close(got, want)
    for shape in [(1, 1, 1), (2, 3, 4)]:  # (not empty: outside the program's space)
        with pytest.raises(st.InputMismatchError, match="requires|violate"):
            run(torch.randn(*shape))
    x = torch.zeros(2, 0, 3)  # (a loaded program's own checks of sizes read from data
    for got, want in zip(ep.to_torch().module()(x), m(x)):  # are no torch.export op)
        torch.testing.assert_close(got, want)


class _ItemOfCountUnchecked(torch.nn.Module):
    def forward(self, x):
        v0 = x.flatten()[:(x > 0).sum().item()]
        v2 = v0 * 2 if v0.shape[0] > 0 else v0[:1]
        return v0, v2


def test_the_size_test_is_split_and_computes_like_eager():
    """Without the user's check, the example's size test (`s0*s1*s2 == 0`) is split: empty
    and non-empty inputs compute as eager, through save and load too; a non-empty input
    whose count is 0 computes as eager too (session 39: the non-empty side splits on its
    test of the count read from data; it was refused at run time before, a data-dependent
    assertion)."""
    m = _ItemOfCountUnchecked()
    ep = _exported(m)
    loaded = st.load(_saved(ep))
    for run in (ep.module(), loaded.module()):
        for shape in _EMPTY + [(1, 1, 1), (2, 3, 4), (16, 16, 7)]:
            x = torch.rand(*shape) + 0.5  # (every element counted)
            for got, want in zip(run(x), m(x)):
                torch.testing.assert_close(got, want)
        for x in (-torch.ones(2, 3, 4), -torch.ones(1, 1, 1)):  # (a count of 0)
            for got, want in zip(run(x), m(x), strict=True):
                torch.testing.assert_close(got, want)
        with pytest.raises(st.InputMismatchError):
            run(torch.randn(17, 1, 1))  # (past the declared max=16)


@pytest.mark.parametrize("cls, node, val", [
    (_ItemOfCount, "item", {"symint": 1}),
    (_NonzeroRows, "nonzero", {"tensor": {"shape": [1, 3], "dtype": "int64",
                                          "device": "cpu"}}),
])
def test_a_count_of_an_empty_tensor_recorded_as_one_is_refused(cls, node, val):
    """The loader finds 0 itself: a file claiming another number is still refused."""
    doc, tensors = hostile.parts(_saved(_exported(cls())))
    n = next(n for n in doc["nodes"] if n["name"] == node)
    assert n["meta"]["val"] != val
    n["meta"]["val"] = val
    with pytest.raises(st.LoadError, match="records its value as"):
        surgery.load(doc, tensors)


class _CountInARelationSplit(torch.nn.Module):
    def forward(self, x, z):
        v1 = x * 2
        v3 = torch.zeros((z.expand(2, *z.shape) > 0).sum().item(), 2)
        v7 = v3.amax(0) if v3.shape[0] > 0 else v3.sum(0)
        return v1, v3, v7


def _split_program() -> st.ExportedProgram:
    """Split on ``s0*s3 == 0`` (``v3.shape[0] > 0``); in the true branch, ``s0 >= 1``
    makes ``z`` empty and the count 0, which the file records as a number."""
    d0, d1, d3 = Dim("d0", max=7), Dim("d1", min=2, max=2), Dim("d3", max=3)
    return st.export(_CountInARelationSplit(), (torch.randn(7, 2), torch.randn(2, 0, 7, 2)),
                     dynamic_shapes=({0: d0, 1: d1}, {0: d1, 1: d3, 2: d0}))


def _branch_nodes(doc: dict, name: str) -> list:
    return [n for g in doc["subgraphs"] for n in g["nodes"] if n["name"] == name]


def test_a_count_a_branch_fact_empties_loads():
    """The loader's bound of the count, ``8*s0*s3``, has a range (up to 168) but the
    branch's fact ``s0*s3 == 0`` makes it 0 (before: only an unbounded count was held
    against the facts; the loader read ``u0`` and refused the file's 0)."""
    m = _CountInARelationSplit()
    ep = _split_program()
    blob = _saved(ep)
    assert {"symint": 0} in [n["meta"]["val"] for n in _branch_nodes(hostile.parts(blob)[0],
                                                                      "item")]
    run = st.load(blob).module()
    for s0, s3 in [(1, 0), (7, 0), (3, 1), (1, 3), (7, 2)]:
        x, z = torch.randn(s0, 2), torch.randn(2, s3, s0, 2)
        for got, want in zip(run(x, z), m(x, z)):
            torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        run(torch.randn(8, 2), torch.randn(2, 1, 8, 2))  # (s0 past its declared 7)


@pytest.mark.parametrize("branch, val", [(0, {"symint": 1}), (1, {"symint": 0})])
def test_a_count_in_a_split_recorded_as_another_number_is_refused(branch, val):
    """The true branch's count recorded as 1, or the false branch's (``s0*s3 != 0``: any
    count up to 168) as 0: refused, at load, or (the false branch's, which the loader
    cannot refute) at a call whose count is not 0."""
    doc, tensors = hostile.parts(_saved(_split_program()))
    n = _branch_nodes(doc, "item")[branch]
    assert n["meta"]["val"] != val
    n["meta"]["val"] = val
    hostile.refused_at_load_or_call(hostile.pack(doc, tensors), [
        (torch.randn(3, 2), torch.ones(2, 1, 3, 2))], load="node 'item'", call="'item'")
