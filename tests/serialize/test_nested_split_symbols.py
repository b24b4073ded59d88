"""Nested splits whose sides name their outputs' sizes fresh load (session 35).

A relation split on ``x.size(1) % 3`` (a cat loop) whose sides split again on
``len(v3) > 2`` (``torch.ones(v1.numel() * (len(v3) > 2))``, ``v1`` a ``torch.unique``):
each side was traced in an env of its own, and the inner torch.cond of the outer false
side named its outputs' sizes there (``u4``).  ``st.save`` wrote the symbol table of the
top graph's env alone, and ``st.load`` refused our own file: "node 'cond' meta val:
undeclared symbol(s) 'u4'" (fuzz seed 3406).
"""

from __future__ import annotations


import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.serialize import surgery


class NestedSplits(torch.nn.Module):
    def forward(self, x, y):
        v1 = torch.unique((y > 0).int())
        v3 = x.flatten()
        for _ in range(x.size(1) % 3):
            v3 = torch.cat([v3, v3[:1]])
        v5 = torch.ones(v1.numel() * (len(v3) > 2))
        return v1, v3, v5


def _export() -> st.ExportedProgram:
    spec = ({1: Dim.AUTO, 2: Dim("d0", max=5), 3: Dim.AUTO},
            {0: Dim("d1", min=1), 1: Dim("d2", min=1, max=16)})
    return st.export(NestedSplits(), (torch.randn(2, 4, 3, 2), torch.randn(3, 5)),
                     dynamic_shapes=spec)


def _reloaded(ep: st.ExportedProgram) -> st.ExportedProgram:
    return st.load(surgery.saved(ep))


def _same(got, want) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        torch.testing.assert_close(g, w)


@pytest.fixture(scope="module")
def programs():
    ep = _export()
    return ep, _reloaded(ep)


def test_every_symbol_the_file_uses_is_declared(programs):
    ep, loaded = programs
    again = _reloaded(loaded)  # (and the loaded program saves a file that loads)
    assert {s.name for s in again.contract.symbols} == {s.name for s in ep.contract.symbols}


@pytest.mark.parametrize("s0", [0, 1, 2, 3, 4, 5, 7])
def test_loaded_program_computes_as_eager_at_other_sizes(programs, s0):
    ep, loaded = programs
    m = NestedSplits()
    for s1, s2, y_shape in [(0, 1, (1, 1)), (1, 1, (3, 5)), (2, 0, (2, 16)), (5, 2, (1, 7)),
                            (1, 3, (4, 2))]:
        x, y = torch.randn(2, s0, s1, s2), torch.randn(*y_shape)
        y.view(-1)[::2] = -1.0  # (both values for unique, where there are two elements)
        want = m(x, y)
        _same(ep.module()(x, y), want)
        _same(loaded.module()(x, y), want)


@pytest.mark.parametrize("x_shape,y_shape", [
    ((3, 4, 3, 2), (3, 5)),   # x.shape[0] == 2
    ((2, 4, 6, 2), (3, 5)),   # d0 <= 5
    ((2, 4, 3, 2), (0, 5)),   # d1 >= 1
    ((2, 4, 3, 2), (3, 17)),  # d2 <= 16
])
def test_out_of_space_inputs_are_refused_after_loading(programs, x_shape, y_shape):
    _, loaded = programs
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.randn(*x_shape), torch.randn(*y_shape))
