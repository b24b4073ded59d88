"""The loader's budget for comparing two forms of one size case by case
(``symbolic/cases.py``) is counted in the prover's decisions (``scratch.CASE_DECISIONS``),
not in seconds: whether a file loads is the same on every machine, and a file of many
such sizes is refused after a bounded amount of work."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.serialize import hostile
from tests.serialize import surgery


class _Tails(torch.nn.Module):
    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = k

    def forward(self, y):
        return tuple(y[y.shape[0] - 2:-1] * i for i in range(self.k))


def _clamped(k: int) -> bytes:
    """``k`` slices ``y[n-2:-1]`` (at most one row) and their products, each recorded as
    ``min(length, 2)``: the same size as the loader's ``length``, proved case by case."""
    doc, tensors = hostile.parts(surgery.saved(st.export(_Tails(k), (torch.randn(1),), dynamic_shapes=({0: Dim.AUTO},))))
    for n in doc["nodes"]:
        shape = n["meta"].get("val", {}).get("tensor", {}).get("shape") \
            if n["op"] == "call_function" else None
        if shape and not isinstance(shape[0], int):
            shape[0] = ["min", shape[0], 2]
    return hostile.pack(doc, tensors)


def test_a_few_sizes_in_another_equal_form_load():
    loaded = st.load(_clamped(3)).module()
    for n in (0, 1, 2, 5):
        y = torch.randn(n)
        for got, want in zip(loaded(y), _Tails(3)(y)):
            torch.testing.assert_close(got, want)


def test_many_sizes_in_another_equal_form_are_checked_at_call():
    """Past the budget a size is not proved in its other form: it is checked at call (it
    was refused), and it holds there: the file loads and runs as eager."""
    loaded = st.load(_clamped(20)).module()
    for n in (0, 1, 2, 5):
        y = torch.randn(n)
        for got, want in zip(loaded(y), _Tails(20)(y)):
            torch.testing.assert_close(got, want)


class _ManyDivisions(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        return x[:n // 2 + n // 3 + (n + 1) // 4 + n // 5 + n // 6 + n // 7 + n // 9] * 2


def _many_divisions() -> st.ExportedProgram:
    return st.export(_ManyDivisions(), (torch.randn(40, 2),), dynamic_shapes=({0: Dim("n")},))


def test_a_size_past_what_the_engine_reasons_on_loads_in_the_loaders_own_form():
    """Seven floor divisions: more than the loader reasons on (``scratch.simple``); the file
    writes the size as the loader computes it, and that is the same expression."""
    buf = io.BytesIO()
    st.save(_many_divisions(), buf)
    loaded = st.load(buf.getvalue()).module()
    for n in (0, 1, 9, 40):
        x = torch.randn(n, 2)
        torch.testing.assert_close(loaded(x), _ManyDivisions()(x))


def test_a_size_recorded_past_what_the_engine_reasons_on_is_refused():
    """A file recording an input size as such an expression where the graph computes
    another (``y[n-2:-1] * 0`` as ``n + n//2 + ... + n//9`` rows): it loaded, its metadata
    believed; refused at load or (of at most 256 nodes) at a call where it shows
    (``n = 4``)."""
    buf = io.BytesIO()
    st.save(st.export(_Tails(1), (torch.randn(4),), dynamic_shapes=({0: Dim("n")},)), buf)
    doc, tensors = hostile.parts(buf.getvalue())
    huge = ["add", "s0"] + [["floordiv", "s0", k] for k in range(2, 10)]
    for n in doc["nodes"]:
        if n["name"] == "mul":
            n["meta"]["val"]["tensor"]["shape"][0] = huge
    hostile.refused_at_load_or_call(hostile.pack(doc, tensors), [(torch.randn(4),)],
                                    load="node 'mul'", call="'mul'")
    huge[2:] = [["floordiv", ["add", "s0", k], k] for k in range(2, 200)]  # (over 256
    for n in doc["nodes"]:  # nodes: no check at call evaluates it, refused at load)
        if n["name"] == "mul":
            n["meta"]["val"]["tensor"]["shape"][0] = huge
    with pytest.raises(st.LoadError, match="node 'mul'"):
        surgery.load(doc, tensors)
