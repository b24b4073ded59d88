"""Guards that fix how many Python values the code makes from a symbolic size.

``x.unbind(0)``, ``list(x)``, ``for t in x`` and ``range(x.shape[0])`` turn a size into a
Python count: a list that long, a loop run that many times.  A program has one Python
structure, so such a count is pinned to the example's value by a guard.  The guard's origin
is then a :class:`CountPin` (the user's line, as any origin, with what made the count),
which the exporter reads to say why a declared dim was specialized and what keeps it
symbolic (a map over the dim with fixed-size results), instead of a bare "specialized".
"""

from __future__ import annotations

from typing import Any

from safetrace.symbolic import eq


class CountPin(str):
    """A guard's origin (its user line) when the guard pins a count; ``what``: how the code
    made the count (``"unbind"``: unbind, list(x), iterating x; ``"int"``: range(), an
    index or int() of the size)."""

    what: str

    def __new__(cls, origin: str, what: str = "") -> CountPin:
        obj = super().__new__(cls, origin)
        obj.what = what
        return obj


def pin_count(n: Any, k: int, what: str) -> None:
    """Guard ``n == k`` (k: the example's value) with a :class:`CountPin` origin."""
    env = n.env
    origin = env.origin_provider() if env.origin_provider is not None else None
    if isinstance(origin, str):
        origin = CountPin(origin, what)
    env.evaluate(eq(n.expr, k), origin=origin)
