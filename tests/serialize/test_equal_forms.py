"""Sizes a file writes in another form than the loader's, equal only by the residue of a
floor division (``symbolic/cases.py``): they load, and a form that differs at one size is
refused."""

from __future__ import annotations

import math

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.serialize import hostile
from tests.serialize import surgery


def _recorded(ep: st.ExportedProgram, name: str, size: object) -> bytes:
    doc, tensors = hostile.parts(surgery.saved(ep))
    for n in doc["nodes"]:
        if n["name"] == name:
            n["meta"]["val"]["tensor"]["shape"][0] = size
    return hostile.pack(doc, tensors)


class _BackwardHalf(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        return x[-1:-n // 2:3] * 2


@pytest.mark.parametrize("rows, loads", [(0, True), (1, False)])
def test_a_backward_slice_to_minus_half_is_empty(rows, loads):
    """``x[-1:-n//2:3]`` of ``n >= 1`` rows has none (``n//2 <= n - 1``): the file records
    0 where the loader's length holds ``min(n - n//2, 1)``, which is 1 at every ``n >= 1``
    only in each residue of ``n`` modulo 2."""
    ep = st.export(_BackwardHalf(), (torch.randn(5, 2),), dynamic_shapes=({0: Dim("n", min=1)},))
    _loads_as_eager(_recorded(ep, "slice_1", rows), "slice_1", loads, _BackwardHalf(),
                    [(torch.randn(n, 2),) for n in (1, 2, 3, 8)])


class _Product(torch.nn.Module):
    def forward(self, x, y):
        return torch.ones(x.shape[0] * y.shape[0]) * 2


_HALF_UP = ["floordiv", ["add", "s0", 1], 2]


@pytest.mark.parametrize("form, loads", [
    (["add", ["mul", _HALF_UP, "s1"], ["mul", ["floordiv", "s0", 2], "s1"]], True),
    (["add", ["mul", _HALF_UP, "s1"], ["mul", _HALF_UP, "s1"]], False),
    (["mul", 2, _HALF_UP, "s1"], False)])
def test_a_product_written_as_two_halves(form, loads):
    """``((a + 1)//2)*b + (a//2)*b`` is ``a*b``; ``2*((a + 1)//2)*b`` is not (odd ``a``):
    refused at load or at the calls of an odd ``a``.  Written ``A + A`` (a monomial
    twice: no form of the engine's) it is refused at load as malformed: the engine's sum
    keeps one ``A`` where the evaluation adds both, so the check made of it read ``A``."""
    ep = st.export(_Product(), (torch.randn(5), torch.randn(3)),
                   dynamic_shapes=({0: Dim("a")}, {0: Dim("b")}))
    _loads_as_eager(_recorded(ep, "mul_1", form), "mul_1", loads, _Product(),
                    [(torch.randn(a), torch.randn(b)) for a, b in ((0, 3), (1, 1), (5, 2), (4, 7))])


def _loads_as_eager(blob, node, loads, model, calls):
    """The file is refused naming `node` (not `loads`: at load, or at each of `calls` where
    its record is not what runs), or it loads and its program computes eager's values on
    each of `calls`."""
    if not loads:  # (refused at load, or checked at call where the loader cannot refute
        # it: each call where the record is not what runs is refused)
        lies = [args for args in calls if _lies(blob, node, model, args)]
        hostile.refused_at_load_or_call(blob, lies, load=f"node '{node}'", call=f"'{node}'")
        return
    loaded = st.load(blob).module()
    for args in calls:
        torch.testing.assert_close(loaded(*args), model(*args))


def _lies(blob: bytes, node: str, model: torch.nn.Module, args: tuple) -> bool:
    """Whether the record of ``node`` (its dim 0, an expression of the inputs' dims 0 as
    ``s0``, ``s1``) differs from the rows of ``model``'s output at ``args``."""
    doc, _ = hostile.parts(blob)
    rec = next(n for n in doc["nodes"] if n["name"] == node)["meta"]["val"]["tensor"]["shape"][0]
    sizes = {f"s{i}": a.shape[0] for i, a in enumerate(args)}

    def value(e):
        if isinstance(e, int):
            return e
        if isinstance(e, str):
            return sizes[e]
        args = [value(x) for x in e[1:]]
        return sum(args) if e[0] == "add" else math.prod(args) if e[0] == "mul" else \
            args[0] // args[1]
    return value(rec) != model(*args).shape[0]
