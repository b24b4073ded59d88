"""Size-oblivious answers to questions the traced code asks about data-dependent sizes.

Export cannot read data, so a Python decision on an unbacked size (``if boxes.numel() ==
0:``, ``if n > 1:``) is normally refused with a DataDependentError.  Two kinds are answered
here instead, soundly:

- *size tests*: a condition on one data-dependent size that has the same value for every
  size >= 2 and differs only at 0 or 1 (emptiness and singleton tests).  It is answered as
  for a general size, and the answer is asserted at run time: the other branch was never
  traced, so data that takes it is rejected with a clear error, never computed wrongly.
- *strategy switches* listed in ``STRATEGY_SWITCHES``: library code that picks between two
  implementations by input size (torchvision's ``batched_nms``), one of which cannot be
  traced (a loop over data).  The traceable one is taken and its condition asserted: the
  two agree only up to the order of equal scores, so the other side is rejected, not
  computed.

Every answer is recorded in ``env.settled`` and listed by ``st.explain``.  Questions inside
an op's shape rule (broadcasting, squeeze, preconditions) are settled by the rules
themselves (``rules.common.check`` / ``open_question`` / ``settle``).
"""

from __future__ import annotations

import re
from typing import Any

from safetrace.symbolic import DataDependentQuestion, Env
from safetrace.symbolic.canon import diff
from safetrace.symbolic.expr import add, const, neg, terms

# (path suffix, function, answer, why): at these call sites a data-dependent size chooses
# how a result is computed; the answer names the traceable branch.
STRATEGY_SWITCHES: list[tuple[str, str, bool, str]] = [
    ("torchvision/ops/boxes.py", "batched_nms", False,
     "torchvision's batched_nms uses the coordinate-offset trick up to 4000 box "
     "coordinates on CPU (1000 boxes) and a per-class loop over the data above; the loop "
     "cannot be traced and may order equal-score boxes differently, so more boxes are "
     "rejected at run time"),
]

_HEAD = re.compile(r'File "(?P<path>[^"]*)", line \d+, in (?P<fn>\S+)')

# probes of a size test: its value must agree at every one of these (capped by the range)
_GENERAL = (2, 3, 7, 64, 4097, 10 ** 9)


def oblivious_answer(env: Env, q: DataDependentQuestion) -> tuple[bool, str, str, bool] | None:
    """(answer, kind, why, asserted) for a question this module settles, else None."""
    site = _site(q.origin)
    if site is not None:
        path, fn = site
        for suffix, name, answer, why in STRATEGY_SWITCHES:
            if fn == name and path.replace("\\", "/").endswith(suffix):
                return answer, "strategy switch", why, True
    return _size_test(env, q)


def _site(origin: Any) -> tuple[str, str] | None:
    if not isinstance(origin, str):
        return None
    m = _HEAD.search(origin)
    return (m.group("path"), m.group("fn")) if m else None


def _size_test(env: Env, q: DataDependentQuestion) -> tuple[bool, str, str, bool] | None:
    """A comparison ``S <op> k`` of a size expression S >= 0 (built from data-dependent sizes
    only: ``4*u0``, ``u0 + u1``, a sum of ``min(u_i, 10)``) whose value is the same for
    every S >= 2 and differs at S == 0 or S == 1."""
    c = q.expr
    if c.op not in ("le", "lt", "ge", "eq", "ne") or not c.free_symbols:
        return None
    for name in c.free_symbols:
        info = env.symbols.get(name)
        if info is None or info.backed or info.is_float:
            return None
    d = diff(c)  # c is `d <= 0` (le, lt, ge), `d == 0` or `d != 0`
    k0 = dict(terms(d)).get((), 0)
    part = add(d, const(-k0))
    r = env.bounds(part)
    if r.lo >= 0:
        sign, size = 1, part
    elif r.hi <= 0:
        sign, size = -1, neg(part)
    else:
        return None
    hi = r.hi if sign == 1 else -r.lo

    def holds(v: int) -> bool:
        x = sign * v + k0
        return (x == 0) == (c.op == "eq") if c.op in ("eq", "ne") else x <= 0

    probes = [v for v in _GENERAL if v <= hi]
    if not probes:
        return None
    general = {holds(v) for v in probes}
    if len(general) != 1:
        return None  # a threshold (u > 100): no general answer
    answer = general.pop()
    excluded = [v for v in (0, 1) if v <= hi and holds(v) != answer]
    if not excluded:
        return None
    sizes = " or ".join(f"{size} == {v}" for v in excluded)
    why = (f"`{c}` answered {answer} as for every size >= 2; data with {sizes} would take "
           f"the other branch, which was not traced")
    return answer, "size test", why, True
