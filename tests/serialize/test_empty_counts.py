"""A count read from data (``.item()`` of a mask's sum, ``nonzero``'s rows) of a tensor
the contract makes empty (``requires s0*s1*s2 == 0``, from a size test the example
answered): the exporter records it as 0, and the loader, which re-derives it with the
same rules, must find 0 too.  Its environment holds the condition as a fact, whose
product no range shows (found by ``benchmarks/fuzz.py``: the file was refused with
"none of its checks makes the two one")."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.serialize import hostile

_EMPTY = [(0, 0, 0), (1, 0, 1), (0, 1, 1), (16, 0, 5), (3, 4, 0), (1, 1, 0)]
_DYN = Dim.DYNAMIC(max=16)


class _ItemOfCount(torch.nn.Module):
    def forward(self, x):
        v0 = x.flatten()[:(x > 0).sum().item()]
        v2 = v0 * 2 if v0.shape[0] > 0 else v0[:1]
        return v0, v2


class _NonzeroRows(torch.nn.Module):
    def forward(self, y):
        v0 = y.nonzero()[:, 0].float()
        v2 = v0.amax(0) if v0.shape[0] > 0 else v0.sum(0)
        return v0, v2


def _exported(m: torch.nn.Module) -> st.ExportedProgram:
    return st.export(m, (torch.randn(3, 0, 2),), dynamic_shapes=({0: _DYN, 1: _DYN, 2: Dim.AUTO},))


def _saved(ep: st.ExportedProgram) -> bytes:
    buf = io.BytesIO()
    st.save(ep, buf)
    return buf.getvalue()


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
        st.load(hostile.pack(doc, tensors))
