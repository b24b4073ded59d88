"""Canonical min/max, comparisons and boolean connectives, rebuilding and substitution.

Built on ``expr`` (nodes, sums, products, floor division, modulo) and ``floats``.
Conditions are made with the functions here (``le(a, b)``, ``and_(c, d)``), never by an
``Expr`` method, so that expressions need not import their own consumers.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Mapping

import safetrace.symbolic.floats as F
from safetrace.symbolic.expr import (
    FALSE, ONE, TRUE, Expr, ExprLike, Terms, add, add_many, const, floordiv, from_terms,
    make_node, mod, mono_key, mul, sub, sym, terms, to_expr,
)
from safetrace.symbolic.semantics import (
    BOOL_OPS, CMP_OPS, FCMP_OPS, FLOAT_OPS, INT_FROM_FLOAT,
)


def minmax(op: str, xs: list[Expr]) -> Expr:
    """Canonical n-ary ``min``/``max``: flattened, deduplicated, constant offsets resolved."""
    pick = min if op == "min" else max
    flat: list[Expr] = []
    for x in xs:
        if x.is_bool:
            raise TypeError(f"{op}() of a condition: {x}")
        flat.extend(x.args if x.op == op else (x,))
    cs = [int(x.value) for x in flat if x.op == "const"]  # type: ignore[arg-type]
    others: list[Expr] = []
    for x in flat:
        if x.op == "const" or x in others:
            continue
        keep = True
        for i, y in enumerate(others):
            d = sub(x, y)
            if d.op == "const":
                if pick(int(d.value), 0) == int(d.value) and d.value != 0:  # type: ignore
                    others[i] = x
                keep = False
                break
        if keep:
            others.append(x)
    if not others:
        return const(pick(cs))
    args = sorted(set(others), key=lambda e: e._key)
    if cs:
        args.append(const(pick(cs)))
    return args[0] if len(args) == 1 else make_node(op, tuple(args))


# --- comparisons and logic ------------------------------------------------------------------
def compare(op: str, a: Expr, b: Expr) -> Expr:
    """Canonical comparison ``a <op> b`` with op in lt, le, gt, ge, eq, ne."""
    if F.is_float(a) or F.is_float(b):
        return _int_cmp_of(F.fcmp(op, a, b))
    if a.op == "const" and b.op == "const":
        x, y = a.value, b.value
        r = {"lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y,  # type: ignore[operator]
             "eq": x == y, "ne": x != y}[op]
        return TRUE if r else FALSE
    if op == "le":
        return canon_cmp("le", sub(a, b))
    if op == "lt":
        return canon_cmp("le", add(sub(a, b), ONE))
    if op == "ge":
        return canon_cmp("le", sub(b, a))
    if op == "gt":
        return canon_cmp("le", add(sub(b, a), ONE))
    if op in ("eq", "ne"):
        if a.is_bool or b.is_bool:
            same = or_(and_(a, b), and_(not_(a), not_(b)))
            return same if op == "eq" else not_(same)
        return canon_cmp(op, sub(a, b))
    raise ValueError(f"unknown comparison {op!r}")


def _int_cmp_of(c: Expr) -> Expr:
    # a float comparison that came out between ints (``n >= 2.5`` is ``n >= 3``)
    if c.op in FCMP_OPS and not F.is_float(c.args[0]) and not F.is_float(c.args[1]):
        return compare(c.op[1:], c.args[0], c.args[1])
    return c


def canon_cmp(kind: str, d: Expr) -> Expr:
    """The canonical node for ``d <= 0`` (kind "le"), ``d == 0`` or ``d != 0``."""
    t: Terms = dict(terms(d))
    c = t.pop((), 0)
    if not t:
        r = c <= 0 if kind == "le" else (c == 0) == (kind == "eq")
        return TRUE if r else FALSE
    g = 0
    for k in t.values():
        g = math.gcd(g, k)
    if kind == "le":
        if g > 1:
            c = -((-c) // g)
            t = {m: k // g for m, k in t.items()}
        if len(t) == 1:
            ((mono, k),) = t.items()
            f = mono[0]
            if len(mono) == 1 and f.op == "floordiv" and f.args[1].op == "const" \
                    and int(f.args[1].value) > 0:  # type: ignore[arg-type]
                # a//m <= K is a <= K*m + m - 1, and a//m >= K is a >= K*m: a stride's
                # `(h + 1)//2 >= 1` is the range fact `h >= 1`, not a residual condition
                a, m = f.args[0], int(f.args[1].value)  # type: ignore[arg-type]
                if k > 0:
                    return canon_cmp("le", add(a, const(c * m - m + 1)))
                return canon_cmp("le", sub(const(c * m), a))
    else:
        if c % g:
            return FALSE if kind == "eq" else TRUE
        c //= g
        t = {m: k // g for m, k in t.items()}
        first = min(t, key=mono_key)
        if t[first] < 0:
            t = {m: -k for m, k in t.items()}
            c = -c
        if len(t) == 1 and len(first) == 1 and first[0].op == "mod":
            solved = _solve_mod(kind, first[0], -c)
            if solved is not None:
                return solved
    p = {m: k for m, k in t.items() if k > 0}
    n = {m: -k for m, k in t.items() if k < 0}
    if not n:
        return make_node(kind, (from_terms(p), const(-c)))
    if not p:
        return make_node("ge", (from_terms(n), const(c)))
    if kind == "le" and c == 1:
        return make_node("lt", (from_terms(p), from_terms(n)))
    if c > 0:
        p[()] = c
    elif c < 0:
        n[()] = -c
    return make_node(kind, (from_terms(p), from_terms(n)))


def _solve_mod(kind: str, f: Expr, r: int) -> Expr | None:
    """``(k*x + c0) % m == r`` (or ``!=``) with k coprime to m as ``x % m == r'``, where
    r' = (r - c0) * k^-1 mod m: `(3*b) % 4 == 0` is `b % 4 == 0`, whose derived-dim fix
    (``b = 4*q``) the exporter gives.  A remainder outside [0, m) never holds.  None when
    the node has no such form."""
    a, b = f.args
    if b.op != "const" or type(b.value) is not int or b.value <= 1:
        return None
    m = b.value
    if not 0 <= r < m:
        return FALSE if kind == "eq" else TRUE
    t: Terms = dict(terms(a))
    c0 = t.pop((), 0)
    if len(t) != 1:
        return None
    ((mono, k),) = t.items()
    if (k == 1 and c0 == 0) or math.gcd(k, m) != 1:
        return None
    x = from_terms({mono: 1})
    return canon_cmp(kind, sub(mod(x, b), const((r - c0) * pow(k, -1, m) % m)))


def diff(c: Expr) -> Expr:
    """For a comparison node, the ``d`` of its normal form ``d <= 0`` / ``d == 0`` / ``d != 0``."""
    d = c._d
    if d is None:
        lhs, rhs = c.args
        if c.op == "ge":
            d = sub(rhs, lhs)
        elif c.op == "lt":
            d = add(sub(lhs, rhs), ONE)
        else:
            d = sub(lhs, rhs)
        c._d = d
    return d  # type: ignore[no-any-return]


def not_(x: ExprLike) -> Expr:
    """Canonical negation; comparisons are complemented instead of wrapped."""
    x = to_expr(x)
    op = x.op
    if op == "const":
        return FALSE if x.value else TRUE
    if op == "not":
        return x.args[0]
    if op in ("le", "lt", "ge"):
        return canon_cmp("le", sub(ONE, diff(x)))
    if op == "eq":
        return make_node("ne", x.args)
    if op == "ne":
        return make_node("eq", x.args)
    if op in FCMP_OPS:
        return F.negate(x)
    if op not in BOOL_OPS:
        raise TypeError(f"not of a non-condition: {x}")
    return make_node("not", (x,))


def _junction(op: str, xs: Iterable[ExprLike]) -> Expr:
    absorbing = op == "or"
    flat: list[Expr] = []
    for v in xs:
        x = to_expr(v)
        if x.op == "const":
            if bool(x.value) == absorbing:
                return TRUE if absorbing else FALSE
            continue
        if not x.is_bool:
            raise TypeError(f"{op} of a non-condition: {x}")
        for y in (x.args if x.op == op else (x,)):
            if y not in flat:
                flat.append(y)
    if not flat:
        return FALSE if absorbing else TRUE
    seen = set(flat)
    for y in flat:
        if not_(y) in seen:
            return TRUE if absorbing else FALSE
    if len(flat) > 1 and _every_residue(flat, "eq" if absorbing else "ne"):
        return TRUE if absorbing else FALSE
    if len(flat) == 1:
        return flat[0]
    flat.sort(key=_cond_key)
    return make_node(op, tuple(flat))


def _every_residue(flat: list[Expr], op: str) -> bool:
    """Whether the ``or`` (``op`` "eq") or the ``and`` (``op`` "ne") of ``flat`` is
    decided by its comparisons of one expression with constants: the ``or`` true where it
    holds ``t % k == r`` for every remainder ``r`` of one ``t % k`` (Python's ``%`` by a
    constant ``k > 0`` is one of ``0 .. k-1`` for every int ``t``; ``k < 0``: ``k+1 ..
    0``), or ``x != a`` and ``x != b`` with ``a != b`` (``x`` is not both); the ``and``
    false for the negations.  (Nested relation splits on ``x.size(1) % 3`` wrote ``s1 % 3
    == 0 or s1 % 3 == 1 or s1 % 3 == 2`` into a contract, session 35.)"""
    seen: dict[Expr, set[object]] = {}
    other: dict[Expr, object] = {}
    for y in flat:
        if y.op not in ("eq", "ne") or y.args[1].op != "const":
            continue
        x, r = y.args[0], y.args[1].value
        if y.op != op:  # (the or's ``!=``, the and's ``==``)
            if other.setdefault(x, r) != r:
                return True
        elif x.op == "mod" and x.args[1].op == "const":
            seen.setdefault(x, set()).add(r)
    for m, rs in seen.items():
        k = m.args[1].value
        if isinstance(k, int) and 0 < abs(k) <= len(rs) and \
                rs.issuperset(range(0, k) if k > 0 else range(k + 1, 1)):
            return True
    return False


def _cond_key(e: Expr) -> tuple[object, ...]:
    # order conditions by the symbols they mention first, so "s0 ..." reads before "s1 ..."
    return (tuple(sorted(sym(n)._key for n in e.free_symbols)), e._key)


def and_(*xs: ExprLike) -> Expr:
    """Canonical conjunction (flattened, sorted, constants folded)."""
    return _junction("and", xs)


def or_(*xs: ExprLike) -> Expr:
    """Canonical disjunction (flattened, sorted, constants folded)."""
    return _junction("or", xs)


def rebuild(op: str, args: tuple[Expr, ...]) -> Expr:
    """Rebuild (and re-canonicalize) a node of kind ``op`` from new arguments."""
    if op == "add":
        return add_many(args)
    if op == "mul":
        r = args[0]
        for a in args[1:]:
            r = mul(r, a)
        return r
    if op == "floordiv":
        return floordiv(*args)
    if op == "mod":
        return mod(*args)
    if op in ("min", "max"):
        return minmax(op, list(args))
    if op in CMP_OPS:
        return compare(op, args[0], args[1])
    if op == "and":
        return and_(*args)
    if op == "or":
        return or_(*args)
    if op == "not":
        return not_(args[0])
    if op in FLOAT_OPS or op in INT_FROM_FLOAT:
        return F.rebuild(op, args)
    if op in FCMP_OPS:
        return _int_cmp_of(F.rebuild(op, args))
    raise ValueError(f"cannot rebuild {op!r}")


def substitute(e: Expr, f: Callable[[Expr], Expr | None],
               memo: dict[Expr, Expr] | None = None) -> Expr:
    """Replace each symbol ``s`` by ``f(s)`` (kept when None) and re-canonicalize."""
    if memo is None:
        memo = {}
    r = memo.get(e)
    if r is not None:
        return r
    if e.op == "sym":
        r = f(e)
        if r is None:
            r = e
    elif e.op == "const" or e.op == "fconst":
        r = e
    else:
        new = tuple([substitute(a, f, memo) for a in e.args])
        r = e if all(x is y for x, y in zip(new, e.args)) else rebuild(e.op, new)
    memo[e] = r
    return r


def subs(e: Expr, mapping: Mapping[Expr | str, ExprLike]) -> Expr:
    """``e`` with symbols (given as symbol Exprs or names) replaced, re-canonicalized."""
    by_name = {(k if isinstance(k, str) else k.name): to_expr(v) for k, v in mapping.items()}
    return substitute(e, lambda x: by_name.get(x.name or ""))


# --- conditions and min/max from ints or expressions -------------------------------------------
def lt(a: ExprLike, b: ExprLike) -> Expr:
    """Symbolic ``a < b``."""
    return compare("lt", to_expr(a), to_expr(b))


def le(a: ExprLike, b: ExprLike) -> Expr:
    """Symbolic ``a <= b``."""
    return compare("le", to_expr(a), to_expr(b))


def gt(a: ExprLike, b: ExprLike) -> Expr:
    """Symbolic ``a > b``."""
    return compare("gt", to_expr(a), to_expr(b))


def ge(a: ExprLike, b: ExprLike) -> Expr:
    """Symbolic ``a >= b``."""
    return compare("ge", to_expr(a), to_expr(b))


def eq(a: ExprLike, b: ExprLike) -> Expr:
    """Symbolic ``a == b``."""
    return compare("eq", to_expr(a), to_expr(b))


def ne(a: ExprLike, b: ExprLike) -> Expr:
    """Symbolic ``a != b``."""
    return compare("ne", to_expr(a), to_expr(b))


def min_(*xs: ExprLike) -> Expr:
    """Symbolic ``min``."""
    return minmax("min", [to_expr(x) for x in xs])


def max_(*xs: ExprLike) -> Expr:
    """Symbolic ``max``."""
    return minmax("max", [to_expr(x) for x in xs])


def indicator(c: Expr) -> Expr | None:
    """``int(c)`` (1 where the int condition ``c`` holds, else 0) as an exact integer
    expression of min/max, so ``int(a == b) + 1`` is a size without a guard; None for a
    condition with no such form (a float comparison)."""
    op = c.op
    if op == "const":
        return const(int(bool(c.value)))
    if op in ("le", "lt", "ge"):  # d <= 0
        return minmax("min", [minmax("max", [sub(ONE, diff(c)), const(0)]), ONE])
    if op in ("eq", "ne"):
        d = diff(c)
        # |d| as max(d, 0) + max(-d, 0): each part's range starts at 0, so the prover
        # sees the result is >= 0 (max(d, -d) would need a case split)
        size = add(minmax("max", [d, const(0)]), minmax("max", [mul(const(-1), d), const(0)]))
        differs = minmax("min", [size, ONE])
        return differs if op == "ne" else sub(ONE, differs)
    if op in ("and", "or", "not"):
        parts = [indicator(a) for a in c.args]
        if any(p is None for p in parts):
            return None
        if op == "not":
            return sub(ONE, parts[0])  # type: ignore[arg-type]
        return minmax("min" if op == "and" else "max", parts)  # type: ignore[arg-type]
    return None


def single_symbol(f: Expr) -> tuple[Expr, int, int] | None:
    """``(s, k, c)`` when ``f == k*s + c`` for one symbol ``s``."""
    t = terms(f)
    s = None
    k = c = 0
    for m, v in t:
        if not m:
            c = v
        elif len(m) == 1 and m[0].op == "sym" and s is None:
            s, k = m[0], v
        else:
            return None
    return None if s is None else (s, k, c)
