"""A size read from data in the main graph whose range the file declares (``u0`` in
``[2, oo)``) is held to that range at each call, where the graph's own assertions do not
prove it.

The loaded program's metadata names the file's symbol wherever the file records it
(``x[mask]``'s ``[u0]``, ``min(u0, 5)`` rows), and what reads the program as a whole
believes its declared range: ``range_constraints``, ``to_torch()`` and what is compiled
from it, and ``st.save`` of the loaded program, which writes each record simplified under
that range (``[5, 4]`` for ``min(u0, 5)`` rows: the re-saved file then refused the calls
the loaded one ran, hostile probe seeds 3303 and 3351, ``resave differs``).  The graph
itself computes the read from the data, whatever the file says: a file declaring ``u0``
in ``[2**40, 2**41]`` ran at ``u0 = 0``.  So where the loader's bounds of the read it
matched with the file's symbol (``Recorded.match``) are not within the declared range,
the range is a condition on that node's size: proved from all the main graph's
assertions at the end of the evaluation (``Recorded._unproven``: ``torch._check(n >= 2)``
after ``nonzero``), else checked at call after the node (``as_recorded``); where the
bounds show it never holds, the file lies and is refused.

Our own files declare each read's range as its exporter proved it, the checks of the
program included; a data split's table writes each read over both sides (the top graph's
read is a size of its own, ``exporter/data_splits.py``; ``saving._hulls``), so their
calls pass.  A subgraph's read is left to its own evaluation (``Recorded.settle``), and a
declared range of one value to ``read_points``.
"""

from __future__ import annotations

import math
from typing import Any

from safetrace.symbolic.canon import and_, ge, le
from safetrace.symbolic.cases import by_cases
from safetrace.symbolic.expr import TRUE, Expr
from safetrace.symbolic.scope import scoped


def held_to_range(env: Any, rec: Any, name: str, d: Expr, path: list) -> Any:
    """Whether the read ``d`` (the loader's, in ``env``) that the file's symbol ``name``
    (of the record ``rec``) names is within the file's declared range: None (the loader's
    bounds show it, or the file declares none), False (they show it never is), else
    (the condition, where in the node's value, the range) to prove or check at call."""
    file_env = getattr(rec, "env", None)
    rng = file_env.symbol_range(name) if file_env is not None else None
    if rng is None or (rng.lo == -math.inf and rng.hi == math.inf):
        return None
    try:
        b = env.bounds(d)
    except Exception:  # noqa: BLE001 - a question the engine cannot take: any value
        b = None
    if b is not None and rng.lo <= b.lo and b.hi <= rng.hi:
        return None
    if b is not None and (b.hi < rng.lo or b.lo > rng.hi):
        return False
    cond = and_(*(c for c in (ge(d, int(rng.lo)) if rng.lo > -math.inf else None,
                              le(d, int(rng.hi)) if rng.hi < math.inf else None)
                  if c is not None), TRUE)
    return cond, tuple(path), ("in", rng.lo, rng.hi)


def held_at_call(recorded: Any, facts: list) -> list:
    """At the end of the main graph's evaluation: each declared range of a read
    (``Recorded.ranged``) that all of the main graph's assertions (``facts``) do not prove
    is checked at call after its node (``Recorded.at_call``).  Returns ``facts`` with
    those ranges: every run that returns holds them, so what the main graph's nodes record
    is proved under them too (a range ``[0, 1]`` of ``u0``, and a re-saved file's
    ``min(u0, 5)`` rows written ``u0``)."""
    if not recorded.ranged:
        return facts
    with scoped(recorded.env):
        try:
            for fact in facts:
                recorded.env.add_fact(fact)
        except ValueError:
            return facts  # (they never all hold: the graph never returns)
        for node, (cond, path, size), values in recorded.ranged:
            if not _proved(recorded.env, cond):
                recorded.at_call.append((node, [(path, size)], values))
    return facts + [x[1][0] for x in recorded.ranged]


def _proved(env: Any, cond: Any) -> bool:
    try:
        return env.decide(cond) is True or by_cases(env, cond) is True
    except Exception:  # noqa: BLE001 - a question the engine cannot take
        return False


__all__ = ["held_at_call", "held_to_range"]
