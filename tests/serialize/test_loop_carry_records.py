"""A loop body's carried size recorded as a size read from data, where the loader has a
size of the inputs (session 27: kept as written, unchecked).

The loader evaluates a ``while_loop`` body at its first iteration (the carried tensors at
the loop's operands' sizes) and again with any size where the body grows one.  A file
recording the first evaluation's ``[s0]`` as a symbol of its own (``u9``) was believed
there: now that symbol stands for ``s0`` in what later nodes of the body record (held
to it), and one whose declared range leaves out values ``s0`` takes is refused (at
load, or at call where the loader's bounds of ``s0`` do not settle it).
"""

from __future__ import annotations


import pytest
import torch

import safetrace as st
from tests.serialize.hostile import refused_at_load_or_call
from tests.serialize.hostile_static import pack, parts
from tests.serialize import surgery


class Loop(torch.nn.Module):
    def forward(self, x):
        return torch.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, (a * 2).sin()),
                                (torch.tensor(0), x))[1]


def _saved() -> tuple[dict, dict]:
    return parts(surgery.saved(st.export(Loop(), (torch.randn(6, 4),),
                      dynamic_shapes={"x": (st.Dim("n", min=0, max=64), None)})))


def _body(doc: dict, lo: int, hi: int | None, sin) -> None:
    doc["symbols"].append({"name": "u9", "backed": False, "hint": None, "lo": lo, "hi": hi})
    body = next(s for s in doc["subgraphs"] if "body" in s["path"])
    for node in body["nodes"]:
        if node["name"] in ("arg1", "mul"):
            node["meta"]["val"]["tensor"]["shape"][0] = "u9"
        if node["name"] == "sin":
            node["meta"]["val"]["tensor"]["shape"][0] = sin


def _load(doc: dict, tensors: dict):
    return surgery.load(doc, tensors)


def _eager(x):
    for _ in range(3):
        x = (x * 2).sin()
    return x


def test_the_carry_as_its_own_symbol_loads_and_is_held_in_later_records():
    doc, tensors = _saved()
    _body(doc, 0, None, "u9")
    mod = _load(doc, tensors).module()
    for n in (0, 1, 5):
        x = torch.randn(n, 4)
        torch.testing.assert_close(mod(x), _eager(x))
    doc, tensors = _saved()
    _body(doc, 0, None, ["mul", 2, "u9"])
    # (``2*s0 == s0`` only at 0 rows: at load, or at a call of others)
    refused_at_load_or_call(pack(doc, tensors), [(torch.randn(5, 4),)], load=(
        r"node 'sin': the file records its value as float32\[2\*u9, 4\], but the graph "
        r"computes float32\[s0, 4\]"), call="'sin'")


def test_the_carry_as_a_symbol_of_a_narrower_range_is_refused():
    doc, tensors = _saved()
    _body(doc, 0, 3, "u9")
    # (its range checked at call since session 28: a call of 5 rows is refused)
    refused_at_load_or_call(pack(doc, tensors), [(torch.randn(5, 4),)], load=(
        r"node 'arg1': the file records its value as float32\[u9, 4\], but the graph "
        r"computes float32\[s0, 4\]"), call="'arg1'")
