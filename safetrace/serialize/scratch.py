"""The scratch environment the loader evaluates a file's program in (``memory.py``), and
which size expressions it reasons about.
"""

from __future__ import annotations

from typing import Any

from safetrace.meta.symtypes import torch_env
from safetrace.symbolic.expr import dag_nodes

_MAX_EXPR = 48  # nodes of a size expression the analysis works with (beyond: unknown)
_MAX_DIVS = 6   # floor divisions and modulos in one (the engine's cost grows fast in them)


def simple(e: Any) -> bool:
    """Whether ``e`` is small enough for the engine to answer questions about it fast (a
    file's size expressions are its author's: a product of 40 floor divisions would take
    the simplifier minutes)."""
    n = divs = 0
    for x in dag_nodes(e):
        n += 1
        divs += x.op in ("floordiv", "mod")
        if n > _MAX_EXPR or divs > _MAX_DIVS:
            return False
    return True


def scratch_env(contract: Any) -> Any:
    """An env of the contract's symbols, each ranging over its declared range with no
    example value (an undecided question then raises instead of being assumed), and its
    residual conditions as facts."""
    env = torch_env()
    if contract is None:
        return env
    for s in contract.symbols:
        env.new_unbacked(s.lo if s.lo is not None else (0 if s.backed else None), s.hi,
                         name=s.name)
    for c in contract.conditions:
        if not simple(c.cond):
            continue
        try:
            env.add_fact(c.cond)
        except Exception:  # noqa: BLE001 - a fact the engine cannot take: not assumed
            pass
    return env


__all__ = ["scratch_env", "simple"]
