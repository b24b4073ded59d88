"""The prover: value ranges, fact-aware simplification and True/False/None decisions.

Everything here reads an ``Env``'s state (symbol ranges, replacements, linear facts
``f >= 0``, known conditions) and never changes it, apart from per-version caches.  A
decision is True or False only when it holds for every binding that satisfies that state;
otherwise it is None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet, Mapping, Protocol, Sequence

import safetrace.symbolic.floats as F
import safetrace.symbolic.ranges as R
from safetrace.symbolic.canon import compare, diff, not_, rebuild, substitute
from safetrace.symbolic.expr import (
    ONE, ZERO, Expr, add, const, make_node, mod, mul, neg, scale, sub, sym, terms,
)
from safetrace.symbolic.floor_forms import (floors_as_remainders, mono_divide, poly_quotient,
                                            remainders_as_floors)
from safetrace.symbolic.ranges import Range
from safetrace.symbolic.records import Contradiction
from safetrace.symbolic.semantics import FCMP_FNS, FLOAT_OPS, INT_FROM_FLOAT, evaluate


@dataclass
class Caches:
    """Answers per state of the facts (cleared when they change), and hint values."""

    simplified: dict[Expr, Expr] = field(default_factory=dict)
    bounds: dict[Expr, Range] = field(default_factory=dict)
    decided: dict[Expr, bool | None] = field(default_factory=dict)
    hint_values: dict[Expr, int | bool | float] = field(default_factory=dict)  # never stale
    enumerating: bool = False  # (inside ``_enumerated``: no second symbol enumerated)
    disjunction_looks: int = 0  # (``narrow_disjunctions``: never cleared)
    decisions: int = 0  # questions the prover worked on, in all (never cleared: a measure
    # of work that a caller's budget counts in, the same on every machine)

    def clear(self) -> None:
        """Forget the answers that depend on the facts."""
        self.simplified.clear()
        self.bounds.clear()
        self.decided.clear()


class Facts(Protocol):
    """What the prover reads of an environment (``Env`` implements it)."""

    @property
    def hints(self) -> Mapping[str, int]: ...

    @property
    def subst(self) -> Mapping[Expr, Expr]: ...  # symbol -> its replacement

    @property
    def atoms(self) -> Mapping[Expr, Expr]: ...  # atom (s0 % 2, s0 // 4) -> its value

    @property
    def divisors(self) -> Mapping[Expr, int]: ...  # x -> a known divisor of x

    @property
    def linear(self) -> Sequence[Expr]: ...  # facts f >= 0

    @property
    def known(self) -> AbstractSet[Expr]: ...  # conditions assumed true

    @property
    def cache(self) -> Caches: ...

    def symbol_range(self, name: str) -> Range | None:
        """The range of a symbol, None for one the env never created."""

_MISSING = object()


def bounds_of(env: Facts, e: Expr) -> Range:
    """Interval of ``e`` from symbol ranges alone (``e`` should already be simplified)."""
    cache = env.cache.bounds
    r = cache.get(e)
    if r is not None:
        return r
    op = e.op
    if op == "const":
        v = int(e.value)  # type: ignore[arg-type]
        r = Range(v, v)
    elif op == "sym":
        r = env.symbol_range(e.name) or R.FULL  # type: ignore[arg-type]
    elif op == "add":
        lo: int | float = 0
        hi: int | float = 0
        for a in e.args:
            ra = bounds_of(env, a)
            lo += ra.lo
            hi += ra.hi
        r = Range(lo, hi)
    elif op == "mul":
        r = _mul_bounds(env, e)
    elif op in INT_FROM_FLOAT:
        r = F.int_bounds(e, lambda x: bounds_of(env, x))
    elif op in FCMP_FNS:
        known = F.decide_cmp(e, lambda x: bounds_of(env, x))
        r = R.BOOL if known is None else R.TRUE_R if known else R.FALSE_R
    elif op in FLOAT_OPS:
        r = R.FULL  # not an int: callers ask fbounds
    elif op == "floordiv":
        r = R.r_floordiv(bounds_of(env, e.args[0]), bounds_of(env, e.args[1]))
    elif op == "mod":
        r = R.r_mod(bounds_of(env, e.args[0]), bounds_of(env, e.args[1]))
    elif op in ("min", "max"):
        f = R.r_min if op == "min" else R.r_max
        r = bounds_of(env, e.args[0])
        for a in e.args[1:]:
            r = f(r, bounds_of(env, a))
    elif op in ("le", "lt", "ge"):
        r = R.r_le0(bounds_of(env, diff(e)))
    elif op == "eq":
        r = R.r_eq0(bounds_of(env, diff(e)))
    elif op == "ne":
        r = R.r_not(R.r_eq0(bounds_of(env, diff(e))))
    elif op == "not":
        r = R.r_not(bounds_of(env, e.args[0]))
    elif op == "and":
        r = R.r_and([bounds_of(env, a) for a in e.args])
    else:
        r = R.r_or([bounds_of(env, a) for a in e.args])
    cache[e] = r
    return r


def _mul_bounds(env: Facts, e: Expr) -> Range:
    args = e.args
    k = 1
    if args[0].op == "const":
        k = int(args[0].value)  # type: ignore[arg-type]
        args = args[1:]
    r: Range | None = None
    i = 0
    while i < len(args):
        j = i
        while j < len(args) and args[j] is args[i]:
            j += 1
        ra = bounds_of(env, args[i])
        p = ra
        for _ in range(j - i - 1):
            p = R.r_mul(p, ra)
        if (j - i) % 2 == 0 and p.lo < 0:
            # an even power is never negative
            p = Range(0, p.hi)
        r = p if r is None else R.r_mul(r, p)
        i = j
    assert r is not None
    return R.r_scale(r, k)


def _absorbed(env: Facts, e: Expr) -> Expr | None:
    """An ``or`` with a true operand is true, an ``and`` with a false one false, whatever
    its other operands: one of them may divide by a size the facts now make 0 (a
    condition ``(6*s0*s1 - 1)//(3*s0*s1) == 1 or s1 <= 0`` once ``s1 == 0``), which only
    the operand that decides it leaves unevaluated.  None where no operand decides it
    (a division by zero is raised, as any other)."""
    absorbing, failed = e.op == "or", None
    for a in e.args:
        try:
            x = simplify(env, a)
        except ZeroDivisionError as err:
            failed = err
            continue
        if x.op == "const" and bool(x.value) is absorbing:
            return x
    if failed is not None:
        raise failed
    return None


def simplify(env: Facts, e: Expr) -> Expr:
    """Apply replacements and atom rewrites, then drop min/max/mod/floordiv made moot by facts."""
    cache = env.cache.simplified
    r = cache.get(e)
    if r is not None:
        return r
    op = e.op
    if op == "const" or op == "fconst":
        return e
    if op == "sym":
        r = env.subst.get(e, e)
        cache[e] = r
        return r
    if op == "or" or op == "and":
        absorbing = _absorbed(env, e)
        if absorbing is not None:
            cache[e] = absorbing
            return absorbing
    args = tuple([simplify(env, a) for a in e.args])
    r = e
    for x, y in zip(args, e.args):
        if x is not y:
            r = rebuild(op, args)
            break
    r = env.atoms.get(r, r)
    rop = r.op
    if rop == "min" or rop == "max":
        r = _prune_minmax(env, r)
    elif (rop == "floordiv" or rop == "mod") and r.args[1].op == "const":
        m = int(r.args[1].value)  # type: ignore[arg-type]
        ra = bounds_of(env, r.args[0])
        if m > 0 and ra.lo >= 0 and ra.hi < m:
            r = ZERO if rop == "floordiv" else r.args[0]
        elif rop == "mod" and m and _divisible(env, r.args[0], m):
            r = ZERO
        elif m > 0 and env.divisors:
            # x + c with m | x (a divisibility fact) and 0 <= c < m: (x + c)//m == x//m and
            # (x + c) % m == c, so H % 32 == 0 settles (H + 31)//32 == H//32
            c = dict(terms(r.args[0])).get((), 0)
            rest = add(r.args[0], const(-c))
            if 0 < c < m and _divisible(env, rest, m):
                r = simplify(env, rebuild(rop, (rest, r.args[1]))) if rop == "floordiv" \
                    else const(c)
    elif rop == "floordiv" or rop == "mod":  # a symbolic divisor
        q = _exact_quotient(r.args[0], r.args[1])
        if q is None and r.args[1].op == "add":
            q = poly_quotient(r.args[0], r.args[1])
        if q is not None and 0 not in bounds_of(env, r.args[1]):
            r = simplify(env, q) if rop == "floordiv" else ZERO
        elif 0 not in bounds_of(env, r.args[1]):
            r = _cancel_monomial(env, r)
    elif rop == "add" or rop == "mul":
        r = _fold_exact_division(env, r)
    cache[e] = r
    cache[r] = r
    return r


def _exact_quotient(a: Expr, b: Expr) -> Expr | None:
    """``a / b`` when the atom b is a factor of every term of a (``(-s0*s1) // s1``)."""
    if b.op == "const" or b.op in ("add", "mul"):
        return None
    q = ZERO
    for mono, k in terms(a):
        i = next((j for j, f in enumerate(mono) if f is b), None)  # interned: identity
        if i is None:
            return None
        t = scale(ONE, k)
        for f in mono[:i] + mono[i + 1:]:
            t = mul(t, f)
        q = add(q, t)
    return q


def _cancel_monomial(env: Facts, r: Expr) -> Expr:
    """``(k*M*a) // (j*M)`` is ``(k*a) // j`` and ``(k*M*a) % (j*M)`` is ``M*((k*a) % j)``
    for a monomial M != 0 dividing every term (a reshape's ``(256*b) % (4*b) == 0``): the
    two sides are equal as rationals before the floor, and the remainder scales by M."""
    dterms = terms(r.args[1])
    if len(dterms) != 1 or not dterms[0][0]:
        return r
    dmono, dk = dterms[0]
    rest = ZERO
    for mono, k in terms(r.args[0]):
        left = mono_divide(mono, dmono)
        if left is None:
            return r
        rest = add(rest, scale(_product(left), k))
    kd = const(dk)
    if r.op == "floordiv":
        return simplify(env, rebuild("floordiv", (rest, kd)))
    return simplify(env, mul(_product(dmono), rebuild("mod", (rest, kd))))


def _divisible(env: Facts, x: Expr, m: int) -> bool:
    # every term k*atom has a known divisor D of the atom (divisibility facts) with m | k*D
    div = env.divisors
    if not div:
        return False
    for mono, k in terms(x):
        d = div.get(mono[0], 1) if len(mono) == 1 else 1
        if (k * d) % m:
            return False
    return True


def _prune_minmax(env: Facts, r: Expr) -> Expr:
    keep = list(r.args)
    rel = "le" if r.op == "min" else "ge"
    for a in r.args:
        for b in keep:
            if b is not a and decide(env, compare(rel, b, a)) is True:
                keep.remove(a)
                break
    if len(keep) == len(r.args):
        return r
    return rebuild(r.op, tuple(keep))


def _round_ups(e: Expr, memo: dict[Expr, Expr]) -> Expr:
    """``e`` with each ``(j*a) % m`` (j = -1 mod m, the pad of a to a multiple of m: torch
    code's ``(m - a % m) % m``, or ``a % 2``) written ``m*((a + m - 1)//m) - a``, so that
    ``a + pad`` is a rounded-up division and chains of them collapse."""
    r = memo.get(e)
    if r is not None:
        return r
    r = e
    if e.args and e.op not in ("const", "fconst", "sym"):
        args = tuple([_round_ups(a, memo) for a in e.args])
        if any(x is not y for x, y in zip(args, e.args)):
            r = rebuild(e.op, args)
        if r.op == "mod" and r.args[1].op == "const":
            m = int(r.args[1].value)  # type: ignore[arg-type]
            inner = terms(r.args[0])
            if m >= 2 and len(inner) == 1 and inner[0][0] and inner[0][1] % m == m - 1:
                a = _product(inner[0][0])
                r = sub(scale(rebuild("floordiv", (add(a, const(m - 1)), const(m))), m), a)
    memo[e] = r
    return r


def _fold_exact_division(env: Facts, r: Expr) -> Expr:
    # m*(x//m) == x when x % m is known to be 0 (a divisibility fact, or x's own form),
    # also as a factor of a product: 49*b*(x//7)*(y//7) == b*x*y.
    for mono, k in terms(r):
        for i, f in enumerate(mono):
            if f.op != "floordiv" or f.args[1].op != "const":
                continue
            x, m = f.args
            mv = int(m.value)  # type: ignore[arg-type]
            if mv and k % mv == 0 and simplify(env, mod(x, m)) is ZERO:
                rest = add(r, scale(_product(mono), -k))
                exact = scale(x, k // mv)
                for g in mono[:i] + mono[i + 1:]:
                    exact = mul(exact, g)
                return simplify(env, add(rest, exact))
    return r


def _product(mono: tuple[Expr, ...]) -> Expr:
    p = ONE
    for f in mono:
        p = mul(p, f)
    return p


# linear facts tried against a condition, the most recent first: real programs hold a
# handful (none in the zoo); a saved file's contract may list hundreds, and trying each
# against each made its load quadratic (300 conditions: 14 s)
LINEAR_FACTS_TRIED = 48


def nonneg(env: Facts, f: Expr) -> bool:
    """True when ``f >= 0`` follows from the ranges or from one linear fact plus ranges
    (``f - g >= 0`` for a fact ``g >= 0``, bounded term by term as ``bounds_of`` bounds
    the sum ``sub(f, g)``, without building it)."""
    if bounds_of(env, f).lo >= 0:
        return True
    linear = env.linear
    if linear:
        ft: dict[tuple[Expr, ...], int] = dict(terms(f))
        scaled: dict[tuple[tuple[Expr, ...], int], float] = {}
        for g in linear[:-LINEAR_FACTS_TRIED - 1:-1]:
            if _lower_bound_of_difference(env, ft, g, scaled) >= 0:
                return True
    h = floors_as_remainders(f)
    if h is not None and bounds_of(env, simplify(env, h)).lo >= 0:
        return True
    h = remainders_as_floors(f)
    return h is not None and bounds_of(env, simplify(env, h)).lo >= 0


def _lower_bound_of_difference(env: Facts, ft: dict[tuple[Expr, ...], int], g: Expr,
                               scaled: dict[tuple[tuple[Expr, ...], int], float]) -> float:
    d = dict(ft)
    for m, k in terms(g):
        d[m] = d.get(m, 0) - k
    lo: float = 0
    for m, k in d.items():
        if not k:
            continue
        if not m:
            lo += k
            continue
        r = scaled.get((m, k))
        if r is None:
            r = scaled[(m, k)] = R.r_scale(bounds_of(env, m[0] if len(m) == 1 else
                                                  make_node("mul", m)), k).lo
        lo += r
    return lo


def decide(env: Facts, cond: Expr) -> bool | None:
    """True/False when ``cond`` is settled by the env's state, else None."""
    c = simplify(env, cond)
    if c.op == "const":
        return bool(c.value)
    r = env.cache.decided.get(c, _MISSING)
    if r is not _MISSING:
        return r  # type: ignore[return-value]
    env.cache.decided[c] = None  # guards against re-entrant loops through min/max pruning
    env.cache.decisions += 1
    r = _decide(env, c)
    if r is None and c.op in ("le", "lt", "ge", "eq", "ne"):
        c2 = _round_ups(c, {})
        if c2 is not c:  # window padding: decided on its rounded-up form (same values)
            r = decide(env, c2)
    limit = getattr(env, "enumerate_up_to", None)
    if r is None and isinstance(limit, int) and limit > 0:
        r = _enumerated(env, c, limit)
    env.cache.decided[c] = r
    return r


def _enumerated(env: Facts, c: Expr, limit: int) -> bool | None:
    """``c`` decided at each value of its symbol of fewest values, where that range holds
    at most ``limit`` (an env that asks for it: the loader's, where a branch's ``s0 <= 3``
    of a declared ``s0 >= 2`` makes ``s0 - (s0 + 1)//2 == 1``, which the ranges cannot
    tell).  The range holds every value the facts allow: true or false at each, it is so.
    Of several symbols, the rest are decided at each value by the env (not enumerated in
    turn: one symbol's values at most per question)."""
    best = None
    for name in sorted(str(x) for x in c.free_symbols):
        r = bounds_of(env, sym(name))
        if r.lo != -R.INF and r.hi != R.INF and r.hi - r.lo + 1 <= limit and (
                best is None or r.hi - r.lo < best[1].hi - best[1].lo):
            best = (name, r)
    if best is None or env.cache.enumerating:
        return None
    (name, r), one = best, len(c.free_symbols) == 1
    seen: set[bool | None] = set()
    env.cache.enumerating = True
    try:
        for v in range(int(r.lo), int(r.hi) + 1):
            if one:
                try:
                    seen.add(bool(evaluate(c, {name: v})))
                except (ArithmeticError, ValueError, TypeError):
                    return None
            else:
                try:  # (a value where a divisor is 0: the condition has no answer there)
                    at = substitute(c, lambda x: const(v) if str(x) == name else None)
                except ArithmeticError:
                    return None
                seen.add(decide(env, at))
            if len(seen) > 1 or None in seen:
                return None
    finally:
        env.cache.enumerating = False
    return seen.pop() if seen else None


def _decide(env: Facts, c: Expr) -> bool | None:
    known = env.known
    if c in known:
        return True
    op = c.op
    if op == "and" or op == "or":
        rs = [decide(env, a) for a in c.args]
        if op == "and":
            return False if False in rs else (True if all(rs) else None)
        return True if True in rs else (False if all(x is False for x in rs) else None)
    if op == "not":
        x = decide(env, c.args[0])
        return None if x is None else not x
    rc = bounds_of(env, c)
    if rc.lo == rc.hi:
        return bool(rc.lo)
    if not_(c) in known:
        return False
    if op in FCMP_FNS:
        return None
    d = diff(c)
    if op in ("le", "lt", "ge"):
        if nonneg(env, neg(d)):
            return True
        if nonneg(env, sub(d, ONE)):
            return False
        return _by_one_argument(env, d)
    nonzero = nonneg(env, sub(d, ONE)) or nonneg(env, sub(neg(d), ONE))
    if nonzero:
        return op == "ne"
    if nonneg(env, d) and nonneg(env, neg(d)):
        return op == "eq"
    return None


def _by_one_argument(env: Facts, d: Expr) -> bool | None:
    """``d <= 0`` decided through a min/max term of ``d``: ``k*min(a, b)`` with k > 0 is at
    most ``k*a`` (and ``k*max(a, b)``, k < 0, at most ``k*a``), so ``d`` with the term's
    argument in its place bounds ``d`` from above; true when that bound is <= 0 for one
    argument (``min(u, 10) <= u``: topk's ``k <= size`` for ``k = min(size, 10)``, which
    interval bounds cannot tell for an unbounded ``u``).  The other direction bounds it from
    below: false when that bound is >= 1."""
    for mono, k in terms(d):
        if len(mono) != 1 or mono[0].op not in ("min", "max") or not k:
            continue
        atom = mono[0]
        upper = (atom.op == "min") == (k > 0)  # the argument bounds d from above
        for a in atom.args:
            d2 = add(d, scale(sub(a, atom), k))
            if upper and nonneg(env, neg(d2)):
                return True
            if not upper and nonneg(env, sub(d2, ONE)):
                return False
    return None


def hint_value(env: Facts, e: Expr) -> int | bool | float | None:
    """Value of ``e`` under the hints, or None when it needs an unbacked symbol."""
    cache = env.cache.hint_values
    v = cache.get(e)
    if v is not None:
        return v
    hints = env.hints
    if not all(n in hints for n in e.free_symbols):  # unbacked: facts may replace them,
        s = simplify(env, e)  # and facts change (a scoped branch's ``s0 == 0``): not cached
        if any(n not in hints for n in s.free_symbols):
            return None
        return s.evaluate(hints)
    v = e.evaluate(hints)  # hints satisfy every guard, so no simplification is needed
    cache[e] = v
    return v

