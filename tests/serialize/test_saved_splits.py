"""A file's ``splits`` (format 2.2: the lines ``print(ep)`` shows for a program's splits)
are text the loader checks and prints, never parses or runs: a list of at most
``MAX_SPLIT_LINES`` printable strings within ``max_string``."""

from __future__ import annotations

import io

import pytest

import safetrace as st
from safetrace.serialize.rebuild import MAX_SPLIT_LINES
from tests.serialize.hostile_static import pack, parts, saved_abs


def _with(splits) -> bytes:
    doc, tensors = parts(saved_abs(3))
    doc["splits"] = splits
    return pack(doc, tensors)


def test_lines_of_the_file_print_as_comments_of_the_loaded_program():
    lines = ["size split on `n == 0` (from `if x.numel() == 0:` at m.py:3)",
             "  n == 0: its own graph", "  1 <= n <= 8: its own graph"]
    text = str(st.load(io.BytesIO(_with(lines))))
    assert all(f"        # {line}\n" in text for line in lines)


@pytest.mark.parametrize("splits,where", [
    ("size split", "splits"),
    ([1], r"splits\[0\]"),
    (["ok", "\x1b[2J\x1b[Hclear the terminal"], r"splits\[1\]"),
    (["two\nlines"], r"splits\[0\]"),
    (["\u202egnirts desrever"], r"splits\[0\]"),
    (["x" * 5000], r"splits\[0\]"),
    (["x"] * (MAX_SPLIT_LINES + 1), r"splits: .* more than"),
], ids=["string", "number", "escape", "newline", "bidi", "long", "many"])
def test_split_lines_that_are_not_plain_text_are_refused(splits, where):
    with pytest.raises(st.LoadError, match=where):
        st.load(io.BytesIO(_with(splits)))
