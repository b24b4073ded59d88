"""The regions of a size split's sides (``splits.py``): each side's Dim ranges, their hull
over all sides, the predicate choosing a side, and the ranges of the other input sizes."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from safetrace.exporter.branches import Side
from safetrace.exporter.contract import Condition, SymbolRange
from safetrace.exporter.program import ExportedProgram
from safetrace.exporter.sides import SPECIAL
from safetrace.symbolic.canon import and_, eq, ge, le, not_, or_
from safetrace.symbolic.expr import TRUE, Expr, sym


def range_text(name: str, lo: int, hi: float) -> str:
    if lo == hi:
        return f"{name} == {lo}"
    if hi == math.inf:
        return f"{name} >= {lo}"
    return f"{lo} <= {name} <= {int(hi)}"


def region_of(side: dict) -> dict:
    """{Dim name: (lo, hi)} of a side's overrides."""
    return {k: (v[1], v[2]) for k, v in side.items() if k not in SPECIAL}


def region_text(region: dict) -> str:
    return ", ".join(range_text(n, *r) for n, r in sorted(region.items()))


def symbol_of(ep: ExportedProgram, dim: str) -> str | None:
    """The free symbol standing for Dim `dim` in `ep` (None when it became a constant)."""
    for s, n in ep.dim_names.items():
        spec = ep.contract.symbol(s)
        if n == dim and spec is not None and spec.where is not None:
            return s
    return None


def hull_of(sides: list[Side], dims: Any) -> dict[str, tuple[int, float]]:
    """Each Dim's sizes over all sides: their regions', and for a side that did not split
    on it (``a == 0`` split again on ``b``, ``a >= 1`` not), the range its program admits."""
    out = {}
    for d in dims:
        spans = [s.region[d] for s in sides if d in s.region]
        for s in sides:
            name = symbol_of(s.ep, d) if d not in s.region else None
            spec = s.ep.contract.symbol(name) if name is not None else None
            if spec is not None:
                spans.append((spec.lo or 0, math.inf if spec.hi is None else spec.hi))
        out[d] = (min(lo for lo, _ in spans), max(hi for _, hi in spans))
    return out


def region_pred(region: dict, syms: dict, hull: dict) -> Expr:
    """The sizes of `region`, given that the contract already checks the `hull`."""
    parts = []
    for d, (lo, hi) in sorted(region.items()):
        if lo == hi:
            parts.append(eq(sym(syms[d]), lo))
            continue
        if lo > hull[d][0]:
            parts.append(ge(sym(syms[d]), lo))
        if hi < hull[d][1]:
            parts.append(le(sym(syms[d]), int(hi)))
    return and_(*parts) if parts else TRUE


def side_ranges(sides: list[Side], syms: dict, hull: dict, split: set[str]
                 ) -> tuple[dict[str, SymbolRange], tuple[Condition, ...]]:
    """The range of each other input size over all sides (their hull), and a condition for
    each side whose own range of it is narrower, on that side's region alone (at t == 1
    the batch's `b*t != 0` is the range `b >= 1`, the other sides' a condition)."""
    def bounds(x: SymbolRange) -> tuple[int, float]:
        return x.lo or 0, math.inf if x.hi is None else x.hi

    own = [{x.name: x for x in s.ep.contract.symbols if x.backed and x.name not in split}
           for s in sides]
    ranges: dict[str, SymbolRange] = {}
    for name in set().union(*own):
        xs = [o[name] for o in own if name in o]
        lo, hi = min(bounds(x)[0] for x in xs), max(bounds(x)[1] for x in xs)
        widest = next((x for x in xs if bounds(x) == (lo, hi)), xs[0])  # (its origin)
        ranges[name] = dataclasses.replace(widest, lo=lo, hi=None if hi == math.inf else int(hi))
    checks = []
    for s, o in zip(sides, own):
        for name, x in sorted(o.items()):
            (lo, hi), (hlo, hhi) = bounds(x), bounds(ranges[name])
            parts = ([ge(sym(name), lo)] if lo > hlo else []) + (
                [le(sym(name), int(hi))] if hi < hhi else [])
            if parts:
                checks.append(Condition(or_(not_(region_pred(s.region, syms, hull)),
                                            and_(*parts)), x.origin))
    return ranges, tuple(checks)


def tiles(sides: list[Side], hull: dict) -> bool:
    """Whether the sides' regions of one split Dim cover its hull without a gap."""
    if len(hull) != 1:
        return False  # (several Dims: the coverage condition says it)
    (d, (lo, hi)), = hull.items()
    at = lo
    for rlo, rhi in sorted(s.region[d] for s in sides):
        if rlo > at:
            return False
        at = max(at, rhi + 1)
    return at > hi or at == hi == math.inf
