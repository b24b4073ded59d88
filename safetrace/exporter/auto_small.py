"""Sizes 0 and 1 of a ``Dim.AUTO`` dim that a condition of the program refuses.

A condition on one ``Dim.AUTO`` size is kept as a run-time check of the program (the AUTO
dim's space narrowed, as torch.export narrows it): ``if x.shape[0] != 1:`` traced at batch
2 gives a program that refuses batch 1, as does ``mask.squeeze()`` (another rank at 1).
Where such a check fails only at 0 or 1 of the dim's range, the program is exported again
with that dim as a named Dim of the range the first program admits: the split machinery
(``splits.py``, ``small_splits.py``) traces each side of the decision and joins them (one
graph where both sides agree, else ``torch.cond`` on the size), each side sound for its
range by the usual machinery, and eager's requirements there stay input checks
(``eager_raises``).  Where that export fails in any way, the first program stands, with its
check (nothing is ever admitted that was not traced).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Callable

from safetrace.dims import Dim
from safetrace.exporter.program import ExportedProgram

_SMALL = (0, 1)  # the sizes a condition may refuse for the dim to be split there


def auto_places(dyn: Any) -> dict[str, list[str]]:
    """{symbol: the input dims it is} of the export's Dim.AUTO dims whose size the trace left
    a symbol (``dyn``: its ``DynamicDims``; AUTO dims made equal share one)."""
    out: dict[str, list[str]] = {}
    for d in dyn.decls:
        if d.kind == "auto" and d.expr.op == "sym" and not d.scalar:
            e = dyn.env.simplify(d.expr)
            if e.op == "sym":
                out.setdefault(e.name, []).append(d.where)
    return out


def split_auto_small(ep: ExportedProgram, export_named: Callable[[dict], ExportedProgram]
                     ) -> ExportedProgram:
    """`ep`, or the export again (``export_named({input dim: Dim})``) with each Dim.AUTO dim
    whose run-time condition refuses a size 0 or 1 of its range traced as a named Dim of
    that range; `ep` where there is none or that export fails."""
    named = _named(ep)
    if not named:
        return ep
    try:
        out = export_named(named)
    except Exception:  # noqa: BLE001 - the program as it was: its check refuses those sizes
        return ep
    labels = {d.name for d in named.values()}  # (an AUTO dim keeps no Dim name)
    out.dim_names = {s: n for s, n in getattr(out, "dim_names", {}).items()
                     if n not in labels}
    _keep_origins(out, ep, named)
    return out


def _keep_origins(out: ExportedProgram, ep: ExportedProgram, named: dict) -> None:
    """The line behind each split dim's bounds in `ep` (``1 <= s0 (from ...)``), on the
    same bounds of `out`, where they are the range its Dim was given."""
    before = {x.where: x for x in ep.contract.symbols if x.where in named and x.origin}
    symbols = tuple(dataclasses.replace(x, origin=before[x.where].origin)
                    if x.where in before and not x.origin and x.backed and
                    (x.lo, x.hi) == (before[x.where].lo, before[x.where].hi) else x
                    for x in out.contract.symbols)
    out.contract = dataclasses.replace(out.contract, symbols=symbols)


def _named(ep: ExportedProgram) -> dict[str, Dim]:
    """{input dim: Dim} for each Dim.AUTO dim (and those equal to it) some condition of `ep`'s contract on its size
    alone refuses at 0 or 1 of the range `ep` admits."""
    places = getattr(ep, "auto_places", None) or {}
    contract = ep.contract
    named_dims = getattr(ep, "dim_names", {})  # (a named Dim's sizes: splits.py's)
    taken = set(named_dims.values())
    out: dict[str, Dim] = {}
    for c in contract.conditions:
        free = c.cond.free_symbols
        if len(free) != 1:
            continue
        (s,) = free
        spec = contract.symbol(s)
        if s not in places or s in named_dims or spec is None or not spec.backed or \
                places[s][0] in out:
            continue  # (a named Dim's symbol, or an AUTO dim made equal to one: not here)
        lo = 0 if spec.lo is None else spec.lo
        hi = math.inf if spec.hi is None else spec.hi
        if not any(lo <= v <= hi and not _holds(c.cond, s, v) for v in _SMALL):
            continue
        name = _name(places[s][0], taken)
        taken.add(name)
        dim = Dim(name, min=int(lo), max=None if hi == math.inf else int(hi))
        out.update((where, dim) for where in places[s])  # (the same Dim: equal sizes)
    return out


def _holds(cond: Any, s: str, v: int) -> bool:
    try:
        return bool(cond.evaluate({s: v}))
    except Exception:  # noqa: BLE001 - not decidable at that size alone: not split
        return True


def _name(where: str, taken: set) -> str:
    """A Dim name for an input dim (``x.shape[0]`` -> ``x_shape_0``), none of `taken`."""
    base = re.sub(r"\W+", "_", where).strip("_") or "auto"
    base = base if base.isidentifier() else f"d_{base}"
    name = base
    while name in taken:
        name += "_"
    return name
