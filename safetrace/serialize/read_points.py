"""A size read from data (``.item()``, a ``nonzero`` count, a custom op's count) that the
file declares in a range of one value (``u0`` in ``[0, 0]``) is that number only where the
loader shows the read gives it.

The file's environment replaces a symbol of a one-value range by the number everywhere
(``nonzero``'s ``i64[u0, 1]`` is ``i64[0, 1]``), but the read happens at each call and no
check holds it to the declared range: a file's declared range of a size read from data is
what its exporter knew, and our own split files legitimately declare one side's range for
a size read in every side (``tests/serialize/test_fuzz_found_loads.py``).  Believed, the
loaded program's metadata showed a number where the program computes a count, and
``st.save`` of it wrote that number, which the saved file's loader then checks at each
call (session 29's probe: "resave differs", "resave refused").

So such a symbol is decoded over any value (``declare``), its declared value kept aside
for what compares the file's ranges (``declared_range``), and after the loader's
evaluation (``settle``): the number where every value the loader matched with it is that
number (or none was: the file's word, as before), else the span of the declared value and
the loader's bounds of those values, a symbol the loaded program prints, saves and
converts as the size it reads.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from safetrace.errors.load import bad_file
from safetrace.symbolic import eq, ge, le
from safetrace.symbolic.expr import const, sym
from safetrace.symbolic.ranges import INF, Range

_POINTS = "st_read_points"  # (an attribute of the file's env: name -> the declared value)


def declare(env: Any, name: str, lo: int | None, hi: int | None) -> None:
    """A new symbol read from data in the file's ``env``, over ``[lo, hi]``, or over any
    value where that is one value (kept for ``declared_range`` and ``settle``)."""
    if lo is None or lo != hi:
        env.new_unbacked(lo, hi, name=name)
        return
    env.new_unbacked(None, None, name=name)
    points = getattr(env, _POINTS, None)
    if points is None:
        points = {}
        setattr(env, _POINTS, points)
    points[name] = lo


def declared_range(env: Any, name: str) -> Range | None:
    """The range the file declares for the symbol ``name`` (None: no such symbol)."""
    value = getattr(env, _POINTS, {}).get(name)
    return Range(value, value) if value is not None else env.symbol_range(name)


def settle(env: Any, spans: dict) -> dict:
    """Each symbol of a one-value declared range: that value where the loader's bounds of
    what it matched with (``spans``: name -> Range, ``recorded.Recorded.spans``) are that
    value or there are none, else the span of the value and those bounds; returns those
    spans (name -> (lo, hi), None where unbounded)."""
    out = {}
    for name, value in getattr(env, _POINTS, {}).items():
        span = spans.get(name)
        if span is None or (span.lo == value and span.hi == value):
            facts = [eq(sym(name), const(value))]
        else:
            lo, hi = min(span.lo, value), max(span.hi, value)
            facts = [f for f in (ge(sym(name), const(int(lo))) if lo > -INF else None,
                                 le(sym(name), const(int(hi))) if hi < INF else None)
                     if f is not None]
            out[name] = (int(lo) if lo > -INF else None, int(hi) if hi < INF else None)
        for fact in facts:
            try:
                env.add_fact(fact)
            except Exception:  # noqa: BLE001 - one the file's other facts refute
                raise bad_file("symbols", f"symbol {name}: its declared value {value} "
                                          "contradicts what the file says of it") from None
    if hasattr(env, _POINTS):
        delattr(env, _POINTS)
    return out


def in_contract(contract: Any, spans: dict) -> Any:
    """``contract`` with those symbols' ranges the spans ``settle`` gave (the loaded
    program's ``range_constraints`` and what ``st.save`` writes of it)."""
    if not spans:
        return contract
    symbols = tuple(dataclasses.replace(s, lo=spans[s.name][0], hi=spans[s.name][1])
                    if s.name in spans and not s.backed else s for s in contract.symbols)
    return dataclasses.replace(contract, symbols=symbols)


__all__ = ["declare", "declared_range", "in_contract", "settle"]
