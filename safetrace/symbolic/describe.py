"""Which sizes satisfy a condition on one size, in words ("a multiple of 32").

Residual conditions such as ``((H + 31)//32)*32 == H`` or ``((H + 15)//16) % 2 == 0`` are
exact but unreadable; a message that rejects an input should also say which sizes pass.
The description is found by evaluating the condition (Python semantics) on a window of
sizes and finding its period; it is stated only when the whole window agrees with it.
"""

from __future__ import annotations

from safetrace.symbolic.expr import Expr
from safetrace.symbolic.ranges import Range
from safetrace.symbolic.semantics import holds_at

WINDOW = 1024
MAX_PERIOD = 128


def passing_sizes(cond: Expr, name: str, rng: Range, label: str | None = None) -> str | None:
    """Words for the values of symbol ``name`` (in ``rng``) that satisfy ``cond``, e.g.
    ``"H is a multiple of 32"`` or ``"H % 4 is 1 or 2, and H >= 5"``; None when ``cond``
    has other symbols or no short periodic description fits.

    >>> from safetrace.symbolic import eq
    >>> from safetrace.symbolic.expr import sym
    >>> h = sym("s0")
    >>> passing_sizes(eq(((h + 31) // 32) * 32, h), "s0", Range(1, 10**9), "H")
    'H is a multiple of 32'
    """
    if cond.free_symbols != {name}:
        return None
    who = label or name
    lo, top, values = _window(cond, name, rng)
    if not any(values):
        return f"no {who} in [{lo}, {top - 1}] satisfies it"
    passing = [lo + i for i, ok in enumerate(values) if ok]
    if (passing[-1] < top - WINDOW // 2 or top < lo + WINDOW) and len(_ranges(passing)) <= 3:
        return f"{who} is {_ranges_text(_ranges(passing))}"  # a few sizes, none after them
    start = passing[0]
    tail = values[start - lo:]
    for p in range(1, min(MAX_PERIOD, len(tail) // 4) + 1):
        if all(tail[i] == tail[i + p] for i in range(len(tail) - p)):
            residues = sorted({(start + i) % p for i in range(p) if tail[i]})
            return _words(who, p, residues, start, lo)
    failing = [lo + i for i, ok in enumerate(values) if not ok]
    if failing and failing[-1] < top - WINDOW // 2 and len(_ranges(failing)) <= 3:
        return f"{who} is not {_ranges_text(_ranges(failing))}"
    return None


def passing_runs(cond: Expr, name: str, rng: Range) -> tuple[list[tuple[int, int]], int]:
    """The runs ``(first, last)`` of values of symbol ``name`` (in ``rng``, from 0, over
    the description's window) where ``cond`` holds, and the window's end (exclusive)."""
    lo, top, values = _window(cond, name, rng)
    return _ranges([lo + i for i, ok in enumerate(values) if ok]), top


def _window(cond: Expr, name: str, rng: Range) -> tuple[int, int, list[bool]]:
    lo = int(max(rng.lo, 0))
    hi = rng.hi
    top = lo + WINDOW if hi == float("inf") else min(int(hi) + 1, lo + WINDOW)
    return lo, top, [holds_at(cond, name, v) for v in range(lo, top)]


def _ranges(vs: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for v in vs:
        if out and out[-1][1] == v - 1:
            out[-1] = (out[-1][0], v)
        else:
            out.append((v, v))
    return out


def _ranges_text(rs: list[tuple[int, int]]) -> str:
    return " or ".join(str(a) if a == b else f"in {a}..{b}" for a, b in rs)


def _words(who: str, p: int, residues: list[int], start: int, lo: int) -> str | None:
    first = next(v for v in range(lo, lo + p) if v % p in residues)
    floor = f", and {who} >= {start}" if start > first else ""
    if p == 1:
        return f"{who} >= {start}" if start > lo else f"every {who}"
    if residues == [0]:
        return f"{who} is a multiple of {p}{floor}"
    if len(residues) == p - 1:
        missing = next(r for r in range(p) if r not in residues)
        return f"{who} % {p} != {missing}{floor}"
    rs = _ranges(residues)
    if len(rs) > 3:
        return None
    return f"{who} % {p} is {_ranges_text(rs)}{floor}"
