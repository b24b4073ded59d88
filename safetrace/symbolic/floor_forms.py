"""Linear forms of floor divisions and remainders by positive constants, which the prover
bounds term by term where the expression's own interval bounds are too wide: each is equal
to the expression for every value of its symbols (``a//m == (a - a % m)/m``)."""

from __future__ import annotations

from math import gcd

from safetrace.symbolic.expr import (ZERO, Expr, Mono, add, floordiv, from_terms, mod, mono_key,
                                     mul, scale, sub, terms)


def floors_as_remainders(f: Expr) -> Expr | None:
    """A positive multiple of ``f`` with each linear term ``k*(a//m)`` (m > 0) written as
    ``k*(a - a % m)/m``, or None when f has no such term.  The two are equal for every a,
    and ``a`` then cancels against f's other terms while ``a % m`` keeps its range
    [0, m - 1]: TF "same" padding asks ``x <= 2*((x + 1)//2)``, whose interval bounds
    are [-inf, inf] but whose rewrite is ``1 - (x + 1) % 2 >= 0``."""
    floors = [(mono[0], k) for mono, k in terms(f) if len(mono) == 1
              and mono[0].op == "floordiv" and mono[0].args[1].op == "const"
              and int(mono[0].args[1].value) > 0]  # type: ignore[arg-type]
    if not floors:
        return None
    lcm = 1
    for fl, _ in floors:
        m = int(fl.args[1].value)  # type: ignore[arg-type]
        lcm = lcm * m // gcd(lcm, m)
    out = scale(f, lcm)
    for fl, k in floors:
        a, den = fl.args
        m = int(den.value)  # type: ignore[arg-type]
        out = add(out, scale(fl, -lcm * k))
        out = add(out, scale(sub(a, mod(a, den)), lcm // m * k))
    return out


def remainders_as_floors(f: Expr) -> Expr | None:
    """``f`` with each linear term ``k*(a % m)`` (m > 0) written as ``k*a - k*m*(a//m)``,
    or None when f has no such term: ``a % m <= a`` is ``m*(a//m) >= 0``, which the
    range of ``a//m`` settles where ``a >= 0`` (the interval of ``a - a % m`` is only
    ``[lo - m + 1, hi]``)."""
    rems = [(mono[0], k) for mono, k in terms(f) if len(mono) == 1
            and mono[0].op == "mod" and mono[0].args[1].op == "const"
            and int(mono[0].args[1].value) > 0]  # type: ignore[arg-type]
    if not rems:
        return None
    out = f
    for r, k in rems:
        a, m = r.args
        mv = int(m.value)  # type: ignore[arg-type]
        out = add(out, scale(r, -k))
        out = add(out, sub(scale(a, k), scale(floordiv(a, m), k * mv)))
    return out


def poly_quotient(a: Expr, d: Expr, steps: int = 32) -> Expr | None:
    """``a / d`` for a divisor with several terms where ``a`` is ``d`` times a polynomial of
    the same atoms (``(6*s0*s1 - 3*s1) / (2*s0 - 1)`` is ``3*s1``: ``diff(append=...)``
    then ``reshape(n, -1)``), else None.  Division by leading terms in graded order; the
    answer is kept only where nothing is left over, so ``a == q*d`` for every value."""
    dt = [t for t in terms(d) if t[0]]
    if not dt:
        return None
    lead, lc = max(dt, key=_order)
    q, rest = ZERO, a
    for _ in range(steps):
        rt = terms(rest)
        if not rt or rest is ZERO:
            return q
        mono, k = max(rt, key=_order)
        left = mono_divide(mono, lead)
        if left is None or k % lc:
            return None
        t = from_terms({left: k // lc})
        q, rest = add(q, t), sub(rest, mul(t, d))
    return None


def _order(term: tuple[Mono, int]) -> tuple[int, tuple[object, ...]]:
    return len(term[0]), mono_key(term[0])  # (degree, then the sums' own monomial order)


def mono_divide(mono: Mono, by: Mono) -> Mono | None:
    """``mono`` with each factor of ``by`` taken out once (None where one is missing)."""
    left = list(mono)
    for f in by:
        i = next((j for j, g in enumerate(left) if g is f), None)  # interned: identity
        if i is None:
            return None
        del left[i]
    return tuple(left)
