"""How an ``Env`` takes a condition as a fact (``Env.add_fact``, a recorded guard, a settled
answer): a mixin of ``Env``, which holds the state it changes.

A bound on one symbol narrows its range; an equality with a unit coefficient replaces a
symbol (the older stays the representative; unbacked before backed) or rewrites an atom
(``s0 % 2`` to 0); anything else is a linear fact ``f >= 0`` or a known condition for the
prover.  A replacement re-simplifies every stored fact (``_refresh``).
"""

from __future__ import annotations

import math
from typing import Any

import safetrace.symbolic.decide as D
import safetrace.symbolic.log as log
from safetrace.symbolic.floats import has_float
from safetrace.symbolic.canon import compare, diff, single_symbol, substitute
from safetrace.symbolic.disjunctions import collapsed
from safetrace.symbolic.expr import Expr, add, const, from_terms, neg, scale, terms
from safetrace.symbolic.pins import pinned, positive_factors
from safetrace.symbolic.ranges import Range
from safetrace.symbolic.records import Contradiction, SymbolInfo

INF = math.inf


class Assuming:
    """The fact-taking methods of ``Env`` (see the module); the state is ``Env``'s."""

    hints: dict[str, int]
    subst: dict[Expr, Expr]
    atoms: dict[Expr, Expr]
    divisors: dict[Expr, int]
    linear: list[Expr]
    known: set[Expr]
    cache: D.Caches
    positive_factors: bool

    def symbol_range(self, name: str) -> Range | None:
        raise NotImplementedError  # (Env's)

    def _info(self, name: str) -> SymbolInfo:
        raise NotImplementedError  # (Env's)

    def _bump(self) -> None:
        raise NotImplementedError  # (Env's)

    def _assume(self, cond: Expr) -> None:
        c = D.simplify(self, cond)
        op = c.op
        if op == "const":
            if not c.value:
                raise Contradiction(f"contradiction: `{cond}` is false under the known facts")
            return
        if op == "and":
            for a in c.args:
                self._assume(a)
            return
        if op == "eq":
            self._assume_eq(c)
            return
        self.known.add(c)
        if op in ("le", "lt", "ge"):
            f = neg(diff(c))  # the fact f >= 0
            one = single_symbol(f)
            if one is not None:
                s, k, c0 = one
                if k > 0:
                    self._narrow(s, -(c0 // k), INF)
                else:
                    self._narrow(s, -INF, c0 // (-k))
            else:
                self.linear.append(f)
                if self.positive_factors:
                    for x in positive_factors(self, f):
                        self._narrow(x, 1, INF)
                pin = pinned(self, f)  # (an atom the fact leaves one value: that value)
                if pin is not None:
                    self._assume_eq(compare("eq", pin[0], const(pin[1])))
        elif op == "ne":
            one = single_symbol(diff(c))
            if one is not None:
                s, k, c0 = one
                if c0 % k == 0:
                    v = -c0 // k
                    rng = self._info(str(s.name)).range
                    if v == rng.lo:
                        self._narrow(s, v + 1, INF)
                    elif v == rng.hi:
                        self._narrow(s, -INF, v - 1)
            elif self._beside(diff(c)):  # (a bound now: the others may be at one too)
                for other in [x for x in self.known if x.op == "ne" and x is not c]:
                    self._beside(diff(other))
        self._bump()

    def _beside(self, d: Expr) -> bool:
        """For a known ``d != 0`` (an integer expression of more than one symbol, or an
        atom: ``min(s0*s1, 3) - 3``), where the facts put ``d`` on one side of 0 it is at
        least 1 away: ``d <= -1`` (``min(s0*s1, 3) <= 2``) or ``d >= 1``, assumed.  True
        where one was."""
        if has_float(d):
            return False
        for op, bound in (("le", -1), ("ge", 1)):
            if D.decide(self, compare(op, d, const(0))) is True:
                if D.decide(self, compare(op, d, const(bound))) is True:
                    return False  # (already so)
                self._assume(compare(op, d, const(bound)))
                return True
        return False

    def _assume_eq(self, c: Expr) -> None:
        d = diff(c)
        t = dict(terms(d))
        best: Expr | None = None
        for m, k in t.items():
            if len(m) != 1 or abs(k) != 1:
                continue
            x = m[0]
            rest: set[str] = set()
            for m2 in t:
                if m2 != m:
                    for f in m2:
                        rest |= f.free_symbols
            if x.free_symbols & rest:
                continue
            if best is None or self._eq_key(x, k, t) > self._eq_key(best, t[(best,)], t):
                best = x
        if best is None:
            self.known.add(c)
            self.linear.append(d)
            self.linear.append(neg(d))
            self._bump()
            return
        k = t.pop((best,))
        value = scale(from_terms(t), -k)
        if best.op == "sym":
            self._replace(best, value)
        else:
            self.atoms[best] = value
            if best.op == "mod" and value.op == "const" and value.value == 0 \
                    and best.args[1].op == "const":
                x, modulus = best.args[0], abs(int(best.args[1].value))  # type: ignore[arg-type]
                self.divisors[x] = math.lcm(self.divisors.get(x, 1), modulus)
            self.known.add(c)
            self._bump()
            self._refresh()
            den = best.args[1].value if best.op == "floordiv" else None
            if isinstance(den, int) and den > 0:  # e // den == v: den*v <= e < den*v + den
                low = scale(value, den)  # (a range where e is k*s + c: (s0 + 1)//2 == 3)
                self._assume(compare("ge", best.args[0], low))
                self._assume(compare("le", best.args[0], add(low, const(den - 1))))
            if best.op in ("min", "max"):  # min(a, b) == v: each of a, b >= v (max: <=)
                for a in best.args:
                    self._assume(compare("ge" if best.op == "min" else "le", a, value))

    def _eq_key(self, x: Expr, k: int, t: dict[tuple[Expr, ...], int]) -> tuple[Any, ...]:
        """Which side of an equality to replace: a symbol before an atom; a symbol equal to
        a sum of other sizes (``s3 == s4 + s6``) before one equal to a difference; then the
        newest (unbacked before backed)."""
        positive = all((v * -k) >= 0 for m, v in t.items() if m != (x,) and m)
        return (x.op == "sym", positive, self._rank(x) if x.op == "sym" else (0, 0))

    def _rank(self, s: Expr) -> tuple[int, int]:
        info = self._info(s.name)  # type: ignore[arg-type]
        return (0 if info.backed else 1, info.index)

    def _narrow(self, s: Expr, lo: float, hi: float) -> None:
        info = self._info(s.name)  # type: ignore[arg-type]
        new = info.range.intersect(Range(lo, hi))
        if new.is_empty:
            raise Contradiction(f"contradiction: {s.name} must lie in [{lo}, {hi}] but its range "
                             f"is [{info.range.lo}, {info.range.hi}]")
        if new == info.range:
            return
        info.range = new
        self._bump()
        if new.is_point and s not in self.subst:
            self._replace(s, const(int(new.lo)))

    def _replace(self, s: Expr, value: Expr) -> None:
        info = self._info(s.name)  # type: ignore[arg-type]
        if value.op == "const" and value.value not in info.range:
            raise Contradiction(f"contradiction: {s.name} == {value} but its range is "
                             f"[{info.range.lo}, {info.range.hi}]")
        self.subst[s] = value
        log.replaced(self, s, value)
        for k, v in list(self.subst.items()):
            if s.name in v.free_symbols:
                self.subst[k] = substitute(v, lambda x: value if x is s else None)
        self._bump()
        if value.op != "const":
            rng = info.range
            if rng.lo > -INF:
                self._assume(compare("ge", value, const(int(rng.lo))))
            if rng.hi < INF:
                self._assume(compare("le", value, const(int(rng.hi))))
        self._refresh()

    def _refresh(self) -> None:
        """Re-simplify stored facts after the replacements changed.  A stored expression
        that now divides by zero contradicts them: the program computed it (or checked
        it) where they hold, and eager raises on a zero divisor, so the divisor is not
        zero wherever the program goes on (``(s0 - 1) // (s0 // 2)`` of a split by
        ``s0 // 2``, under an assumption ``s0 == 0`` of a branch that never runs)."""
        try:
            self._resimplify()
        except ZeroDivisionError as exc:
            raise Contradiction(f"contradiction: {exc} under the known facts") from None

    def _resimplify(self) -> None:
        lin, known, atom, div = self.linear, self.known, self.atoms, self.divisors
        self.linear, self.known, self.atoms, self.divisors = [], set(), {}, {}
        self._bump()
        for x, m in div.items():
            x2 = D.simplify(self, x)
            self.divisors[x2] = math.lcm(self.divisors.get(x2, 1), m)
        for a, v in atom.items():
            a2 = D.simplify(self, a)
            if a2.op != "const":
                self.atoms[a2] = D.simplify(self, v)
            self._bump()
        for f in lin:
            f2 = D.simplify(self, f)
            if f2.op == "const":
                if int(f2.value) < 0:  # type: ignore[arg-type]
                    raise Contradiction("contradiction among the facts")
            else:
                self.linear.append(f2)
        pairs: list[tuple[Expr, Expr]] = []  # (a fact, as the replacements leave it)
        for k in known:
            k2 = D.simplify(self, k)
            if k2.op == "const" and not k2.value:
                raise Contradiction(f"contradiction: `{k}` no longer holds")
            if k2.op != "const":
                self.known.add(k2)
                pairs.append((k, k2))
        self._bump()
        collapsed(self, pairs, self._assume)


__all__ = ["Assuming"]
