"""A data split's reads in saved files: the top graph reads ``x[mask]``'s count for the
test, each ``torch.cond`` branch reads it again under its own answer (``min(u0, 2) >= 2``
where it holds, ``<= 1`` where not).  The file's symbol table is one for all the graphs:
it writes each symbol over both sides, each side's narrower range its branch's own
assertion (session 33's finding: ``u0`` written ``lo = 2``, the general side's)."""

from __future__ import annotations


import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.serialize import hostile
from tests.serialize import surgery


class _FirstTwoKept(torch.nn.Module):
    def forward(self, x):
        v1 = x.flatten()[x.flatten() > 0][:2]
        return v1 * 2 if v1.shape[0] > 1 else v1.flip(0), x + 1


def _export() -> st.ExportedProgram:
    torch.manual_seed(0)
    return st.export(_FirstTwoKept(), (torch.randn(6, 3, 2),),
                     dynamic_shapes=({0: Dim.AUTO, 2: Dim.AUTO},))


def _saved(ep: st.ExportedProgram) -> bytes:
    return surgery.saved(ep)


def _inputs() -> list:
    """Inputs whose positive count is 0, 1, 2 and more, at sizes 0 and 1 too."""
    torch.manual_seed(1)
    one = -torch.ones(2, 3, 2)
    one[1, 2, 0] = 3.0
    return [torch.randn(0, 3, 2), -torch.ones(1, 3, 1), torch.tensor([[[1.0], [-1.0], [-2.0]]]),
            one, torch.randn(5, 3, 2).abs() + 0.1, torch.randn(7, 3, 4)]


def _same_as_eager(ep: st.ExportedProgram) -> None:
    m = _FirstTwoKept()
    for x in _inputs():
        for got, want in zip(ep.module()(x), m(x)):
            torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 4, 2))


def _tensor_shapes(nodes: list) -> list:
    return [n["meta"]["val"]["tensor"]["shape"] for n in nodes
            if isinstance(n.get("meta", {}).get("val"), dict) and "tensor" in n["meta"]["val"]]


def test_the_table_writes_each_symbol_over_both_sides():
    """Every symbol's range in the table is the contract's, ``[0, oo)``: the general side's
    ``u0 >= 2`` (and ``s0 >= 1``, ``s1 >= 1``: it was traced for those only) is its
    branch's assertion and the top graph's, not the table's."""
    doc, _ = hostile.parts(_saved(_export()))
    assert [(s["name"], s["lo"], s["hi"]) for s in doc["symbols"]] == \
        [(s["name"], 0, None) for s in doc["symbols"]], doc["symbols"]


def test_the_top_graph_records_the_test_it_computes():
    """The top graph's copy of the read named the general side's ``u0`` and recorded its
    size-oblivious answers (``min(u0, 2)`` as 2, the test as ``true``): a new size over
    both sides' ranges now, the test a comparison of it."""
    ep = _export()
    cond = next(n for n in ep.graph.nodes if n.target is torch.ops.higher_order.cond)
    assert not isinstance(cond.args[0].meta["val"], bool)
    doc, _ = hostile.parts(_saved(ep))
    test = next(n for n in doc["nodes"] if n["name"] == cond.args[0].name)
    assert test["meta"]["val"] != True, test  # noqa: E712 - the JSON true itself
    index = next(n for n in ep.graph.nodes if n.target is torch.ops.aten.index.Tensor)
    u = str(index.meta["val"].shape[0])
    assert ep.range_constraints.get(u) is None or ep.range_constraints[u].lower == 0


def test_a_loaded_split_saves_as_it_was_loaded():
    """Loaded with the general side's range, the false branch's ``x[mask][:2]`` read
    ``[2]``, and ``st.save`` of the loaded program wrote that: the re-saved file recorded a
    size its branch never computes (0 or 1 rows)."""
    blob = _saved(_export())
    loaded = st.load(blob)
    resaved = _saved(loaded)
    doc, _ = hostile.parts(resaved)
    false = next(g for g in doc["subgraphs"] if g["path"] == "false_graph_0")
    assert [2] not in _tensor_shapes(false["nodes"]), _tensor_shapes(false["nodes"])
    for ep in (loaded, st.load(resaved)):
        _same_as_eager(ep)
