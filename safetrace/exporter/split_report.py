"""The one description of a program's splits, read by ``st.explain`` and ``print(ep)``.

Every split of an export (on a range of a named Dim: ``splits.py``; on a Dim at 0 or 1:
``small_splits.py``; on a size read from data: ``data_splits.py``; on a relation of
input sizes: ``relation_splits.py``) adds one header line naming its kind, the condition
it splits on and the user's source line that asked it, then one line per side: which
part of the declared space runs which graph.  The lines live on the program's graph
(``graph.__dict__["st_splits"]``), so a split nested in another side's graph is kept.
"""

from __future__ import annotations

import os
import re
from typing import Any

from safetrace.symbolic import subs
from safetrace.symbolic.expr import Expr, sym
from safetrace.trace.source import parse

_FROM = re.compile(r"\(from (`[^`]*` at [^\s)]+)\)")


def named(cond: Any, names: dict | None) -> Any:
    """``cond`` with each symbol of a named Dim written as the Dim's name (``names``:
    symbol -> Dim name, ``ep.dim_names``): ``a*b != 0``, not ``s0*s1 != 0``."""
    if not names or not isinstance(cond, Expr):
        return cond
    return subs(cond, {s: sym(names[s]) for s in map(str, cond.free_symbols) if s in names})


def header(kind: str, cond: Any, where: str, names: dict | None = None) -> str:
    """``relation split on `4*a <= b` (from `if ...:` at model.py:12)``."""
    return f"{kind} split on `{named(cond, names)}`" + (f" (from {where})" if where else "")


def where_of(origin: str) -> str:
    """```if x.shape[1] == 1:` at model.py:18`` from an origin or a cause naming one
    (``... (from `if x.shape[1] == 1:` at model.py:18)``), '' when it names none."""
    m = _FROM.search(origin or "")
    return m.group(1) if m else ""


def where_of_trace(stack_trace: str) -> str:
    """The same, from a node's stack trace."""
    p = parse(stack_trace or "")
    return f"`{p[3]}` at {os.path.basename(p[0])}:{p[1]}" if p else ""


def two_sides(cond: Any, holds: Any, fails: Any) -> list[str]:
    """The side lines of a split on a condition (a torch.cond on it), each followed by the
    splits of its side's program (`holds`, `fails`), indented under it."""
    cond = named(cond, getattr(holds, "dim_names", None))
    return [f"  where `{cond}` holds: the graph traced for it (the torch.cond's true branch)",
            *nested(holds), "  where it fails: the graph traced for that (the false branch)",
            *nested(fails)]


def nested(ep: Any) -> list[str]:
    """The split lines of a side's program, indented under the side's line."""
    return [f"    {line}" for line in describe(ep.graph)]


def headed(ep: Any, line: str) -> Any:
    """`ep` with `line` as the header of the split its graph's side lines describe."""
    have = ep.graph.__dict__.setdefault("st_splits", [])
    if line not in have:
        have.insert(0, line)
    return ep


def describe(graph: Any) -> list[str]:
    """The split lines of a program's graph, in the order the splits were made."""
    return list(graph.__dict__.get("st_splits", ()))
