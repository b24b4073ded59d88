"""Sizes the exporter records as the checks of the whole program leave them, at nodes
before those checks: the loader proves them from the graph's own assertions, or from the
contract's conditions; where they do not make them so, the size is checked at call
(a lie refused at the first call where it shows)."""

from __future__ import annotations


import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from safetrace import Dim
from tests.serialize import hostile
from tests.serialize import surgery


def _saved(ep: st.ExportedProgram) -> bytes:
    return surgery.saved(ep)


class _PooledColumn(torch.nn.Module):
    def forward(self, x):
        return F.max_pool1d(x.flatten(0, -3), 2, ceil_mode=True).unbind(2)[1]


def test_a_pool_length_the_contract_pins_loads():
    """``unbind`` pins the pool's length ``(s0 + 1)//2`` to 3 (a condition of the
    contract, checked before the graph runs); the file records it as 3 at the pool's node,
    where the loader's rule computes ``3 - min(max(5 - s0, 0), 1)``: the condition gives
    ``5 <= s0 <= 6`` (``symbolic/env.py``) and the two are one (fuzz seed 213)."""
    m = _PooledColumn()
    ep = st.export(m, (torch.randn(2, 3, 4, 5),), dynamic_shapes=({3: Dim.DYNAMIC},))
    loaded = st.load(_saved(ep)).module()
    for n in (5, 6):
        x = torch.randn(2, 3, 4, n)
        torch.testing.assert_close(loaded(x), m(x))
    with pytest.raises(st.InputMismatchError):
        loaded(torch.randn(2, 3, 4, 7))


@pytest.mark.parametrize("length", [2, 4, ["add", "s0", -2]])
def test_a_pool_length_the_contract_does_not_pin_is_refused(length):
    doc, tensors = hostile.parts(_saved(st.export(
        _PooledColumn(), (torch.randn(2, 3, 4, 5),), dynamic_shapes=({3: Dim.DYNAMIC},))))
    for n in doc["nodes"]:
        if n["name"] == "max_pool1d":
            n["meta"]["val"]["tensor"]["shape"][2] = length
    # (``s0 - 2`` is the pool's length at ``s0 == 5``: refused at a call of 6)
    hostile.refused_at_load_or_call(hostile.pack(doc, tensors), [(torch.randn(2, 3, 4, 6),)],
                                    load="node 'max_pool1d'", call="'max_pool1d'")


class _PinnedCount(torch.nn.Module):
    def forward(self, x):
        nz = x.nonzero()
        y = nz * 2  # (a node between the count and its check: recorded [1, 1] too)
        torch._check(nz.shape[0] == 1)
        return y


def _pinned() -> tuple[dict, dict]:
    ep = st.export(_PinnedCount(), (torch.tensor([0.0, 1.0, 0.0]),),
                   dynamic_shapes=({0: Dim("n")},))
    return hostile.parts(_saved(ep))


def test_a_count_a_later_check_pins_loads():
    doc, tensors = _pinned()
    assert [n["meta"]["val"]["tensor"]["shape"] for n in doc["nodes"]
            if n["name"] in ("nonzero", "mul")] == [[1, 1], [1, 1]]
    loaded = surgery.load(doc, tensors).module()
    torch.testing.assert_close(loaded(torch.tensor([0.0, 3.0])), torch.tensor([[2]]))
    with pytest.raises(st.RuntimeAssertionError, match="u0 == 1"):
        loaded(torch.tensor([1.0, 1.0]))


def test_a_count_recorded_as_a_number_without_its_check_is_refused():
    """The same file with the check taken out: nothing makes the count one row, and the
    file's ``[1, 1]`` would mislead what reads its metadata (it loaded before): checked
    at call, a count of two rows refused."""
    doc, tensors = _pinned()
    doc["nodes"] = [n for n in doc["nodes"] if n["name"] not in ("sym_size_int", "eq",
                                                                  "assert_sym")]
    assert hostile.refused_at_load_or_call(hostile.pack(doc, tensors), [
        (torch.tensor([1.0, 1.0]),)], call="'nonzero'") == "call"


def test_a_count_a_check_pins_to_another_number_is_refused():
    doc, tensors = _pinned()
    for n in doc["nodes"]:
        if n["name"] == "eq":
            n["args"][1] = 2
    hostile.refused_at_load_or_call(hostile.pack(doc, tensors), [
        (torch.tensor([1.0, 1.0]),)], load="node 'nonzero'", call="'nonzero'")


class _PinnedInABranch(torch.nn.Module):
    def forward(self, x):
        def rows(x):
            nz = x.nonzero()
            y = nz * 2
            torch._check(nz.shape[0] == 1)
            return y.float().sum(0, keepdim=True)

        return torch.cond(x.shape[0] > 2, rows, lambda x: torch.zeros(1, 1), (x,))


def _branch_pinned() -> tuple[dict, dict]:
    ep = st.export(_PinnedInABranch(), (torch.tensor([0.0, 1.0, 0.0]),),
                   dynamic_shapes=({0: Dim("n")},))
    return hostile.parts(_saved(ep))


def test_a_count_a_later_check_pins_in_a_branch_loads():
    """In a branch, the branch's own assertions (and its predicate) prove it, at the end of
    its evaluation."""
    doc, tensors = _branch_pinned()
    loaded = surgery.load(doc, tensors).module()
    for x in (torch.tensor([0.0, 0.0, 3.0]), torch.tensor([2.0])):
        torch.testing.assert_close(loaded(x), _PinnedInABranch()(x))
    with pytest.raises(st.RuntimeAssertionError, match="u0 == 1"):
        loaded(torch.tensor([1.0, 1.0, 1.0]))


def test_a_count_in_a_branch_recorded_as_a_number_without_its_check_is_refused():
    doc, tensors = _branch_pinned()
    branch = next(g for g in doc["subgraphs"] if any(n["name"] == "nonzero"
                                                     for n in g["nodes"]))
    branch["nodes"] = [n for n in branch["nodes"] if n["name"] not in ("sym_size_int", "eq",
                                                                        "assert_sym")]
    assert hostile.refused_at_load_or_call(hostile.pack(doc, tensors), [
        (torch.tensor([1.0, 1.0, 1.0]),)], call="'nonzero'") == "call"
