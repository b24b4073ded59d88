"""The declared range of a dim whose symbol the program made an expression of others.

A dim declared with a range (``Dim('c', min=13, max=40)``, ``Dim.DYNAMIC(min=13)``) gets
a symbol of that range.  Where the trace finds it equal to an expression of other sizes
that no range of one symbol expresses (``c == a*b`` of ``x.reshape(-1) + z``), the engine
replaces the symbol and only assumes the range of the expression: nothing would check it.
Here the range becomes residual conditions of the contract (``a*b >= 13``, ``a*b <= 40``),
checked at run time with the relation itself, as torch.export's range constraint on
``s0*s1`` is.  A range the bounds of the other symbols already imply adds nothing.
"""

from __future__ import annotations

import math
from typing import Any

from safetrace.symbolic import Expr
from safetrace.symbolic.canon import compare
from safetrace.symbolic.expr import const, sub

MARK = " as declared for "  # in the origin of each such condition (``declared_range``)


def declared_range_conditions(decls: list, fates: Any, condition: Any) -> tuple:
    """``condition(cond, origin)`` for each bound of a declared dim's range that its
    symbol's replacement ``fates.fates[name].expr`` does not carry (its bounds from the
    ranges of its own symbols are wider); `decls`: ``DimDecl`` list."""
    out = []
    seen: set[str] = set()
    for decl in decls:
        name = decl.expr.name if decl.expr.op == "sym" else None
        fate = fates.fates.get(name) if name is not None else None
        if fate is None or fate.kind != "derived" or name in seen:
            continue
        seen.add(name)
        value: Expr = fate.expr
        origin = f" (the range{MARK}{decl.where}: {decl.spec!r})"
        # the bounds of the expression from its symbols' ranges alone (checked anyway):
        # `2*a + 1` where the engine narrowed `a` carries the range itself
        rng = fate.range
        bounds = []
        if decl.lo > 0 and rng.lo < decl.lo:
            bounds.append(compare("ge", value, const(int(decl.lo))))
        if decl.hi != math.inf and rng.hi > decl.hi:
            bounds.append(compare("le", value, const(int(decl.hi))))
        out += [condition(c, origin) for c in bounds if c.op != "const"]
    return tuple(out)


def declared_range(origin: str) -> bool:
    """A condition ``declared_range_conditions`` made (a declaration, not a relation the
    code needs: no relation problem or split of its own)."""
    return MARK in origin


def checked_bounds(conditions: Any, e: Expr) -> tuple:
    """(lo, hi) that the contract's run-time conditions put on the size expression `e`
    (``e >= k`` / ``e <= k`` in canonical form, a declared range's two checks among them;
    None where none does): ``to_torch()``'s range constraint of a dim the program made a
    product of others, as torch.export shows a declared range there."""
    lo = hi = None
    for c in conditions:
        cond = c.cond
        if cond.op not in ("ge", "le") or cond.args[1].op != "const":
            continue
        shift = sub(e, cond.args[0])  # `X >= k` with e == X + shift: e >= k + shift
        if shift.op != "const" or not isinstance(shift.value, int):
            continue
        k = cond.args[1].value + shift.value
        if cond.op == "ge":
            lo = k if lo is None else max(lo, k)
        else:
            hi = k if hi is None else min(hi, k)
    return lo, hi
