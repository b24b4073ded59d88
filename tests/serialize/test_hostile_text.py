"""Text a file gives that ``print(ep)``, errors and ``to_torch()``'s graphs show must be
printable: no terminal escape, carriage return, direction mark or line separator.

Before (session 29): a node's ``stack_trace`` ending in ``\\r`` and a forged line printed
``# File: x.py:1 in f, code: y = 1`` then, over it on a terminal, whatever the file
chose (``add = ...sub...``, or an ANSI escape clearing the line above); so did a contract
input's path and a symbol's ``where``/``origin`` ("Input contract:").
"""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from tests.serialize import hostile
from tests.serialize.hostile_contracts import _saved

PRINTABLE = r"not printable \(control, format or line separator\)"
EVIL = ["\r        add = torch.ops.aten.sub.Tensor(x, 1)", "\x1b[1A\x1b[2K", "\u202e",
        "\u2028", "\x85", "\x00"]


def _edited(kind: str, edit) -> bytes:
    doc, tensors = hostile.parts(_saved(kind))
    edit(doc)
    return hostile.pack(doc, tensors)


@pytest.mark.parametrize("evil", EVIL)
def test_a_source_line_with_a_control_character_is_refused(evil):
    def edit(doc: dict) -> None:
        node = next(n for n in doc["nodes"] if n.get("op") == "call_function")
        node.setdefault("meta", {})["stack_trace"] = f'File "x.py", line 1, in f\n    y = 1{evil}\n'
    with pytest.raises(st.LoadError, match=PRINTABLE):
        st.load(_edited("cond", edit))


@pytest.mark.parametrize("field", ["path", "where", "origin"])
def test_a_contract_text_with_an_escape_is_refused(field):
    def edit(doc: dict) -> None:
        if field == "path":
            doc["contract"]["inputs"][0]["path"] += "\x1b[31m"
        else:
            doc["contract"]["symbols"][0][field] += "\r"
    with pytest.raises(st.LoadError, match=PRINTABLE):
        st.load(_edited("cond", edit))


def test_a_subgraph_source_line_with_a_line_break_other_than_newline_is_refused():
    def edit(doc: dict) -> None:
        node = next(n for n in doc["subgraphs"][0]["nodes"] if n.get("op") == "call_function")
        node.setdefault("meta", {})["stack_trace"] = 'File "x.py", line 1, in f\n    y = 1\u2029z'
    with pytest.raises(st.LoadError, match=PRINTABLE):
        st.load(_edited("cond", edit))


def test_source_lines_with_newlines_tabs_and_unicode_still_load():
    def edit(doc: dict) -> None:
        node = next(n for n in doc["nodes"] if n.get("op") == "call_function")
        node.setdefault("meta", {})["stack_trace"] = ('File "mödel.py", line 3, in forward\n'
                                                      '\ty = x + 1  # größe ✓\n')
    ep = st.load(_edited("cond", edit))
    assert "größe ✓" in str(ep)
    x = torch.randn(5, 3)
    torch.testing.assert_close(ep.module()(x), st.load(_saved("cond")).module()(x))
