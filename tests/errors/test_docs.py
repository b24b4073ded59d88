"""docs/errors.md is true to the code: each example raises the kind it documents."""

from __future__ import annotations

import pathlib
import re

import pytest

import safetrace as st

DOC = (pathlib.Path(__file__).parents[2] / "docs" / "errors.md").read_text()
SECTIONS = re.findall(r"^## `([a-z-]+)`: (\w+)\n(.*?)(?=^## |\Z)", DOC, re.S | re.M)
EXAMPLES = {kind: (cls, m.group(1)) for kind, cls, body in SECTIONS
            if (m := re.search(r"\*\*Example\.\*\*\n\n```python\n(.*?)```", body, re.S))}


def test_the_page_has_examples():
    assert len(SECTIONS) >= 25 and len(EXAMPLES) >= 25


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_example_raises_its_kind(kind):
    cls, code = EXAMPLES[kind]
    with pytest.raises(Exception) as info:
        exec(compile(code, f"<docs/errors.md: {kind}>", "exec"), {})
    err = info.value
    assert isinstance(err, st.errors.StructuredError), repr(err)
    assert (err.kind, type(err).__name__) == (kind, cls), str(err)
