"""Hash-consed symbolic integer and boolean expressions in canonical form.

Node kinds, as ``Expr.op``:

* ``"const"`` (``.value``: int or bool) and ``"sym"`` (``.name``);
* ``"add"``: two or more terms sorted by a fixed order, the int constant last;
* ``"mul"``: an optional int coefficient first (never 0 or 1), then sorted factors;
* ``"floordiv"``, ``"mod"``: ``(a, b)`` with Python's floor semantics;
* ``"min"``, ``"max"``: two or more sorted arguments;
* ``"eq"``, ``"ne"``, ``"lt"``, ``"le"``, ``"ge"``: ``(lhs, rhs)``;
* ``"and"``, ``"or"``: two or more sorted arguments; ``"not"``: ``(arg,)``.

There are no "neg", "sub" or "gt" nodes: ``-x`` is ``mul(-1, x)``, ``a > b`` is stored as
``b < a``, and every comparison is normalized from ``lhs - rhs``.  Expressions are interned,
so structural equality is identity: ``==`` and ``hash`` are identity based and agree with
structure.  ``Expr.eq(a, b)`` builds the symbolic equality.
"""

from __future__ import annotations

import math
import re
from typing import Callable, Dict, Iterable, Mapping, Tuple, Union

ExprLike = Union["Expr", int, bool]
Mono = Tuple["Expr", ...]
Terms = Dict[Mono, int]

_TABLE: dict[tuple[object, ...], Expr] = {}
_NAME_RE = re.compile(r"^(.*?)(\d+)$")
_OPRANK = {op: i for i, op in enumerate(
    "floordiv mod min max mul add eq ne lt le ge not and or".split())}
BOOL_OPS = frozenset(("eq", "ne", "lt", "le", "ge", "and", "or", "not"))
CMP_OPS = frozenset(("eq", "ne", "lt", "le", "ge"))


class Expr:
    """An interned symbolic expression node; see the module docstring for the node kinds."""

    __slots__ = ("op", "args", "value", "name", "_key", "_terms", "_str", "_free", "_d",
                 "__weakref__")

    op: str
    args: tuple[Expr, ...]
    value: int | bool | None
    name: str | None

    # --- value semantics ---------------------------------------------------------------
    def __copy__(self) -> Expr:
        return self

    def __deepcopy__(self, memo: object) -> Expr:
        return self

    def __reduce__(self) -> tuple[object, ...]:
        if self.op == "const":
            return (const, (self.value,))
        if self.op == "sym":
            return (sym, (self.name,))
        return (rebuild, (self.op, self.args))

    def __bool__(self) -> bool:
        if self.op == "const":
            return bool(self.value)
        raise TypeError(f"truth value of symbolic expression `{self}` is unknown; "
                        "use Env.evaluate or Env.decide")

    def __repr__(self) -> str:
        return f"Expr({str(self)!r})"

    def __str__(self) -> str:
        s = self._str
        if s is None:
            from safetrace.symbolic.printing import to_str
            s = self._str = to_str(self)
        return s

    @property
    def free_symbols(self) -> frozenset[str]:
        """Names of the symbols that occur in the expression."""
        f = self._free
        if f is None:
            if self.op == "sym":
                f = frozenset((self.name,))  # type: ignore[arg-type]
            elif self.op == "const":
                f = frozenset()
            else:
                f = frozenset().union(*(a.free_symbols for a in self.args))
            self._free = f
        return f

    @property
    def is_bool(self) -> bool:
        """True for conditions (comparisons, and/or/not, bool constants)."""
        return self.op in BOOL_OPS or (self.op == "const" and type(self.value) is bool)

    def subs(self, mapping: Mapping[Expr | str, ExprLike]) -> Expr:
        """Replace symbols (given as symbol Exprs or names) and re-canonicalize."""
        by_name = {(k if isinstance(k, str) else k.name): to_expr(v) for k, v in mapping.items()}
        return substitute(self, lambda e: by_name.get(e.name))  # type: ignore[arg-type]

    def evaluate(self, binding: Mapping[str, int]) -> int | bool:
        """Value under ``binding`` (name -> int), with Python's semantics for every op."""
        from safetrace.symbolic.printing import evaluate
        return evaluate(self, binding)

    # --- arithmetic operators ------------------------------------------------------------
    def __add__(self, o: ExprLike) -> Expr:
        return add(self, to_expr(o))

    def __radd__(self, o: ExprLike) -> Expr:
        return add(to_expr(o), self)

    def __sub__(self, o: ExprLike) -> Expr:
        return add(self, neg(to_expr(o)))

    def __rsub__(self, o: ExprLike) -> Expr:
        return add(to_expr(o), neg(self))

    def __mul__(self, o: ExprLike) -> Expr:
        return mul(self, to_expr(o))

    def __rmul__(self, o: ExprLike) -> Expr:
        return mul(to_expr(o), self)

    def __floordiv__(self, o: ExprLike) -> Expr:
        return floordiv(self, to_expr(o))

    def __rfloordiv__(self, o: ExprLike) -> Expr:
        return floordiv(to_expr(o), self)

    def __mod__(self, o: ExprLike) -> Expr:
        return mod(self, to_expr(o))

    def __rmod__(self, o: ExprLike) -> Expr:
        return mod(to_expr(o), self)

    def __neg__(self) -> Expr:
        return neg(self)

    def __pos__(self) -> Expr:
        return self

    # --- symbolic comparisons and logic (call as Expr.lt(a, b) or a.lt(b)) -----------------
    def lt(a: ExprLike, b: ExprLike) -> Expr:  # noqa: N805
        """Symbolic ``a < b``."""
        return compare("lt", to_expr(a), to_expr(b))

    def le(a: ExprLike, b: ExprLike) -> Expr:  # noqa: N805
        """Symbolic ``a <= b``."""
        return compare("le", to_expr(a), to_expr(b))

    def gt(a: ExprLike, b: ExprLike) -> Expr:  # noqa: N805
        """Symbolic ``a > b``."""
        return compare("gt", to_expr(a), to_expr(b))

    def ge(a: ExprLike, b: ExprLike) -> Expr:  # noqa: N805
        """Symbolic ``a >= b``."""
        return compare("ge", to_expr(a), to_expr(b))

    def eq(a: ExprLike, b: ExprLike) -> Expr:  # noqa: N805
        """Symbolic ``a == b``."""
        return compare("eq", to_expr(a), to_expr(b))

    def ne(a: ExprLike, b: ExprLike) -> Expr:  # noqa: N805
        """Symbolic ``a != b``."""
        return compare("ne", to_expr(a), to_expr(b))

    def and_(*xs: ExprLike) -> Expr:
        """Symbolic conjunction."""
        return and_(*xs)

    def or_(*xs: ExprLike) -> Expr:
        """Symbolic disjunction."""
        return or_(*xs)

    def not_(a: ExprLike) -> Expr:  # noqa: N805
        """Symbolic negation."""
        return not_(to_expr(a))

    def min(*xs: ExprLike) -> Expr:
        """Symbolic ``min``."""
        return minmax("min", [to_expr(x) for x in xs])

    def max(*xs: ExprLike) -> Expr:
        """Symbolic ``max``."""
        return minmax("max", [to_expr(x) for x in xs])


def _make(op: str, args: tuple[Expr, ...]) -> Expr:
    key = (op, args)
    e = _TABLE.get(key)
    if e is None:
        e = object.__new__(Expr)
        e.op, e.args, e.value, e.name = op, args, None, None
        e._key = (2, _OPRANK[op], tuple([a._key for a in args]))
        e._terms = e._str = e._free = e._d = None
        _TABLE[key] = e
    return e


def const(v: int | bool) -> Expr:
    """The constant ``v`` (bools stay bools)."""
    key = ("const", type(v) is bool, v)
    e = _TABLE.get(key)
    if e is None:
        if not isinstance(v, int):
            raise TypeError(f"symbolic constants must be int or bool, got {v!r}")
        e = object.__new__(Expr)
        e.op, e.args, e.value, e.name = "const", (), v, None
        e._key = (0, int(v), type(v) is bool)
        e._terms = e._str = e._free = e._d = None
        _TABLE[key] = e
    return e


def sym(name: str) -> Expr:
    """The symbol called ``name``."""
    key = ("sym", name)
    e = _TABLE.get(key)
    if e is None:
        e = object.__new__(Expr)
        e.op, e.args, e.value, e.name = "sym", (), None, name
        m = _NAME_RE.match(name)
        e._key = (1, m.group(1), int(m.group(2)), name) if m else (1, name, -1, name)
        e._terms = e._str = e._free = e._d = None
        _TABLE[key] = e
    return e


ZERO, ONE, TRUE, FALSE = const(0), const(1), const(True), const(False)


def to_expr(v: object) -> Expr:
    """Coerce an int, bool or Expr to an Expr."""
    if isinstance(v, Expr):
        return v
    if isinstance(v, int):
        return const(v)
    ex = getattr(v, "expr", None)
    if isinstance(ex, Expr):
        return ex
    raise TypeError(f"cannot use {type(v).__name__} {v!r} in a symbolic expression")


# --- polynomial normal form ---------------------------------------------------------------
def terms(e: Expr) -> tuple[tuple[Mono, int], ...]:
    """The expression as a sum of ``coeff * monomial``; the constant has monomial ``()``."""
    t = e._terms
    if t is None:
        op = e.op
        if op == "const":
            v = int(e.value)  # type: ignore[arg-type]
            t = (((), v),) if v else ()
        elif op == "add":
            t = tuple(p for a in e.args for p in terms(a))
        elif op == "mul":
            a0 = e.args[0]
            if a0.op == "const":
                t = ((e.args[1:], int(a0.value)),)  # type: ignore[arg-type]
            else:
                t = ((e.args, 1),)
        else:
            t = (((e,), 1),)
        e._terms = t
    return t


def _mono_key(m: Mono) -> tuple[object, ...]:
    return tuple([f._key for f in m])


def _term(m: Mono, c: int) -> Expr:
    if c == 1:
        return m[0] if len(m) == 1 else _make("mul", m)
    return _make("mul", (const(c),) + m)


def from_terms(d: Terms) -> Expr:
    """Build the canonical sum of a ``{monomial: coeff}`` dict."""
    c = d.get((), 0)
    items = [(m, k) for m, k in d.items() if k and m]
    if not items:
        return const(c)
    if len(items) > 1:
        items.sort(key=lambda mk: _mono_key(mk[0]))
    ts = [_term(m, k) for m, k in items]
    if c:
        ts.append(const(c))
    return ts[0] if len(ts) == 1 else _make("add", tuple(ts))


def add(a: Expr, b: Expr) -> Expr:
    """Canonical ``a + b``."""
    if b.op == "const":
        if a.op == "const":
            return const(int(a.value) + int(b.value))  # type: ignore[arg-type]
        return _add_const(a, int(b.value))  # type: ignore[arg-type]
    if a.op == "const":
        return _add_const(b, int(a.value))  # type: ignore[arg-type]
    d: Terms = dict(terms(a))
    for m, k in terms(b):
        d[m] = d.get(m, 0) + k
    return from_terms(d)


def _add_const(a: Expr, c: int) -> Expr:
    if not c:
        return a
    if a.op == "add":
        last = a.args[-1]
        if last.op == "const":
            nv = int(last.value) + c  # type: ignore[arg-type]
            rest = a.args[:-1]
            if not nv:
                return rest[0] if len(rest) == 1 else _make("add", rest)
            return _make("add", rest + (const(nv),))
        return _make("add", a.args + (const(c),))
    return _make("add", (a, const(c)))


def add_many(xs: Iterable[Expr]) -> Expr:
    """Canonical sum of many expressions."""
    d: Terms = {}
    for x in xs:
        for m, k in terms(x):
            d[m] = d.get(m, 0) + k
    return from_terms(d)


def neg(a: Expr) -> Expr:
    """Canonical ``-a``."""
    return scale(a, -1)


def sub(a: Expr, b: Expr) -> Expr:
    """Canonical ``a - b``."""
    return add(a, scale(b, -1))


def scale(a: Expr, c: int) -> Expr:
    """Canonical ``c * a`` for an int ``c``."""
    if a.op == "const":
        return const(int(a.value) * c)  # type: ignore[arg-type]
    if c == 1:
        return a
    if c == 0:
        return ZERO
    if a.op != "add" and a.op != "mul":
        return _make("mul", (const(c), a))
    return from_terms({m: k * c for m, k in terms(a)})


def _merge(m1: Mono, m2: Mono) -> Mono:
    if not m1:
        return m2
    if not m2:
        return m1
    return tuple(sorted(m1 + m2, key=lambda f: f._key))


def mul(a: Expr, b: Expr) -> Expr:
    """Canonical ``a * b`` (products of sums are distributed)."""
    if a.op == "const":
        return scale(b, int(a.value))  # type: ignore[arg-type]
    if b.op == "const":
        return scale(a, int(b.value))  # type: ignore[arg-type]
    d: Terms = {}
    for m1, k1 in terms(a):
        for m2, k2 in terms(b):
            m = _merge(m1, m2)
            d[m] = d.get(m, 0) + k1 * k2
    return from_terms(d)


def _is_posconst(e: Expr) -> bool:
    return e.op == "const" and type(e.value) is int and e.value > 0


def floordiv(a: Expr, b: Expr) -> Expr:
    """Canonical ``a // b``: multiples of a constant divisor move out, gcds cancel."""
    if b.op != "const":
        if a is ZERO:
            return ZERO
        if a is b:
            return ONE
        return _make("floordiv", (a, b))
    m = int(b.value)  # type: ignore[arg-type]
    if m == 0:
        raise ZeroDivisionError(f"symbolic division by zero: ({a})//0")
    if a.op == "const":
        return const(int(a.value) // m)  # type: ignore[arg-type]
    if m < 0:
        a, m = neg(a), -m
    if m == 1:
        return a
    q: Terms = {}
    r: Terms = {}
    for mono, k in terms(a):
        qk, rk = divmod(k, m)
        if qk:
            q[mono] = q.get(mono, 0) + qk
        if rk:
            r[mono] = rk
    rc = r.pop((), 0)
    if not r:
        return from_terms(q)
    g = m
    for k in r.values():
        g = math.gcd(g, k)
    if g > 1:
        r = {mono: k // g for mono, k in r.items()}
        rc, m = rc // g, m // g
    if rc:
        r[()] = rc
    inner = from_terms(r)
    if inner.op == "floordiv" and _is_posconst(inner.args[1]):
        node = floordiv(inner.args[0], const(int(inner.args[1].value) * m))  # type: ignore
    else:
        node = _make("floordiv", (inner, const(m)))
    return add(from_terms(q), node) if q else node


def mod(a: Expr, b: Expr) -> Expr:
    """Canonical ``a % b``: multiples of a constant divisor drop out, gcds factor out."""
    if b.op != "const":
        if a is ZERO or a is b:
            return ZERO
        return _make("mod", (a, b))
    m = int(b.value)  # type: ignore[arg-type]
    if m == 0:
        raise ZeroDivisionError(f"symbolic modulo by zero: ({a}) % 0")
    if a.op == "const":
        return const(int(a.value) % m)  # type: ignore[arg-type]
    am = abs(m)
    if am == 1:
        return ZERO
    r: Terms = {}
    for mono, k in terms(a):
        rk = k % am
        if rk:
            r[mono] = rk
    rc = r.pop((), 0)
    if not r:
        return const(rc % m)
    if m > 0:
        g = m
        for k in r.values():
            g = math.gcd(g, k)
        if g > 1:
            inner: Terms = {mono: k // g for mono, k in r.items()}
            inner[()] = rc // g
            return add(scale(mod(from_terms(inner), const(m // g)), g), const(rc % g))
        if len(r) == 1 and not rc:
            (mono, k), = r.items()
            x = mono[0]
            if k == 1 and len(mono) == 1 and x.op == "mod" and _is_posconst(x.args[1]):
                k2 = int(x.args[1].value)  # type: ignore[arg-type]
                if k2 % m == 0:
                    return mod(x.args[0], b)
                if m % k2 == 0:
                    return x
    if rc:
        r[()] = rc
    return _make("mod", (from_terms(r), b))


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
    return args[0] if len(args) == 1 else _make(op, tuple(args))


# --- comparisons and logic ------------------------------------------------------------------
def compare(op: str, a: Expr, b: Expr) -> Expr:
    """Canonical comparison ``a <op> b`` with op in lt, le, gt, ge, eq, ne."""
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
    else:
        if c % g:
            return FALSE if kind == "eq" else TRUE
        c //= g
        t = {m: k // g for m, k in t.items()}
        first = min(t, key=_mono_key)
        if t[first] < 0:
            t = {m: -k for m, k in t.items()}
            c = -c
    p = {m: k for m, k in t.items() if k > 0}
    n = {m: -k for m, k in t.items() if k < 0}
    if not n:
        return _make(kind, (from_terms(p), const(-c)))
    if not p:
        return _make("ge", (from_terms(n), const(c)))
    if kind == "le" and c == 1:
        return _make("lt", (from_terms(p), from_terms(n)))
    if c > 0:
        p[()] = c
    elif c < 0:
        n[()] = -c
    return _make(kind, (from_terms(p), from_terms(n)))


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
    return d


def not_(x: Expr) -> Expr:
    """Canonical negation; comparisons are complemented instead of wrapped."""
    op = x.op
    if op == "const":
        return FALSE if x.value else TRUE
    if op == "not":
        return x.args[0]
    if op in ("le", "lt", "ge"):
        return canon_cmp("le", sub(ONE, diff(x)))
    if op == "eq":
        return _make("ne", x.args)
    if op == "ne":
        return _make("eq", x.args)
    if op not in BOOL_OPS:
        raise TypeError(f"not of a non-condition: {x}")
    return _make("not", (x,))


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
    if len(flat) == 1:
        return flat[0]
    flat.sort(key=_cond_key)
    return _make(op, tuple(flat))


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
    elif e.op == "const":
        r = e
    else:
        new = tuple([substitute(a, f, memo) for a in e.args])
        r = e if all(x is y for x, y in zip(new, e.args)) else rebuild(e.op, new)
    memo[e] = r
    return r
