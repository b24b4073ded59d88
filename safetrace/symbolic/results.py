"""What an ``Env`` hands back once a trace is done: each symbol's fate and the residual
guards (``Env.solution``), and which conditions of the contract a binding of its symbols
violates (``Env.check_binding``).  Methods of ``Env``, kept here to keep env.py small."""

from __future__ import annotations

import math
from typing import Any, Mapping

import safetrace.symbolic.decide as D
from safetrace.symbolic.canon import compare, substitute
from safetrace.symbolic.expr import TRUE, Expr, const, fsym, sym
from safetrace.symbolic.ranges import Range
from safetrace.symbolic.records import Fate, Guard, Solution

INF = math.inf


def solution(self: Any) -> Solution:
    """Per-symbol fates and the residual guards (not captured by ranges/replacements)."""
    out = Solution()
    if not (self._syms or self.guards or self.facts or self.requirements):
        return out  # (a static trace: no symbol, nothing to keep; the passes below are
        # four comprehensions and a concatenation of empty lists, ~6k instructions)
    for name, info in self._syms.items():
        v = self.subst.get(sym(name))
        if v is None:
            out.fates[name] = Fate("free", info.range,
                                   expr=fsym(name) if info.is_float else sym(name))
        elif v.op == "const":
            value = int(v.value)
            out.fates[name] = Fate("static", Range(value, value), value=value, expr=v)
        else:
            kind = "equal" if v.op == "sym" else "derived"
            out.fates[name] = Fate(kind, self.bounds(v), expr=v)
    kept: dict[Expr, Guard] = {}
    backed_facts = [f for f in self.facts if all(n in self.hints for n in
                                                 f.cond.free_symbols)]
    settled = {s.cond for s in self.settled}  # (an assumed answer, not a user's check)
    checks = {id(f) for f in backed_facts if f.cond not in settled}
    for g in self.guards + backed_facts + self.requirements:
        c = substitute(g.cond, self.subst.get)
        if D.bounds_of(self, c).lo == 1:
            continue
        # an op's own requirement, a torch._check / assert: eager raises where it fails
        pre = g.precondition or id(g) in checks
        if c not in kept:  # (the first to ask decides what it is: eager's path meets it first)
            kept[c] = Guard(c, g.origin, pre, 0 if pre else g.required_from,
                            () if pre else g.sizes)
    out.residual.extend(kept.values())
    return out

def check_binding(self: Any, binding: Mapping[str, int]) -> list[Expr]:
    """Conditions of the contract that ``binding`` (name -> int) violates."""
    conds: list[Expr] = []
    for name, info in self._syms.items():
        if name not in binding:
            continue
        s = sym(name)
        v = self.subst.get(s)
        if v is not None:
            conds.append(compare("eq", s, v))
        if info.range.lo > -INF:
            conds.append(compare("ge", s, const(int(info.range.lo))))
        if info.range.hi < INF:
            conds.append(compare("le", s, const(int(info.range.hi))))
    conds += [g.cond for g in self.guards + self.requirements]
    conds += [f.cond for f in self.facts if f.cond.free_symbols <= binding.keys()]
    bad: list[Expr] = []
    for c in conds:
        if c is TRUE or c in bad:
            continue
        try:
            ok = c.evaluate(binding)
        except (KeyError, ZeroDivisionError):
            continue
        if not ok:
            bad.append(c)
    return bad


__all__ = ["check_binding", "solution"]
