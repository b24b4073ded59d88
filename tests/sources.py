"""The package's source files parsed once per test process: the structure tests (import
graph, layering, architecture, rule registry, trace imports) each walk every module, and
parsing the ~50,000 lines took about 1.3 s per test.  Trees are cached by the text itself,
so an edited or temporary file is parsed afresh; callers only read the trees."""

from __future__ import annotations

import ast
import functools
import pathlib


@functools.lru_cache(maxsize=None)
def parse(text: str) -> ast.Module:
    return ast.parse(text)


def tree(path: pathlib.Path) -> ast.Module:
    return parse(path.read_text())
