"""Hash-consed symbolic integer and boolean expressions in canonical form.

Node kinds, as ``Expr.op``:

* ``"const"`` (``.value``: int or bool) and ``"sym"`` (``.name``);
* ``"add"``: two or more terms sorted by a fixed order, the int constant last;
* ``"mul"``: an optional int coefficient first (never 0 or 1), then sorted factors;
* ``"floordiv"``, ``"mod"``: ``(a, b)`` with Python's floor semantics;
* ``"min"``, ``"max"``: two or more sorted arguments;
* ``"eq"``, ``"ne"``, ``"lt"``, ``"le"``, ``"ge"``: ``(lhs, rhs)``;
* ``"and"``, ``"or"``: two or more sorted arguments; ``"not"``: ``(arg,)``;
* floats (module ``floats``), kept in the user's order of operations with IEEE double
  semantics: ``"fconst"`` (``.value``: a float), ``"float"``, ``"fadd"``, ``"fsub"``,
  ``"fmul"``, ``"fdiv"``, ``"ffloordiv"``, ``"fpow"``, ``"fmin"``, ``"fmax"``, ``"fneg"``;
  the int-valued ``"trunc"``
  (Python's ``int(x)``) and ``"round"``; the conditions ``"flt"``, ``"fle"``, ``"fgt"``,
  ``"fge"``, ``"feq"``, ``"fne"``.

There are no "neg", "sub" or "gt" nodes: ``-x`` is ``mul(-1, x)``, ``a > b`` is stored as
``b < a``, and every comparison is normalized from ``lhs - rhs``.  Expressions are interned,
so structural equality is identity: ``==`` and ``hash`` are identity based and agree with
structure.  ``canon.eq(a, b)`` builds the symbolic equality.
"""

from __future__ import annotations

import itertools
import math
import re
import weakref
from typing import Any, Dict, Iterable, Iterator, Mapping, Tuple, Union

from safetrace.symbolic.printing import to_str
from safetrace.symbolic.semantics import BOOL_OPS, evaluate

ExprLike = Union["Expr", int, bool]
Mono = Tuple["Expr", ...]
Terms = Dict[Mono, int]

_TABLE: dict[tuple[object, ...], Expr] = {}
_NAME_RE = re.compile(r"^(.*?)(\d+)$")
_OPRANK = {op: i for i, op in enumerate(
    "floordiv mod min max mul add eq ne lt le ge not and or float fadd fsub fmul fdiv ffloordiv "
    "fpow fneg trunc round flt fle fgt fge feq fne fsqrt fexp flog flog2 flog10 fmin fmax".split())}


def table_mark() -> int:
    """The intern table's size now (give it to ``release_since`` to undo growth after)."""
    return len(_TABLE)


def release_since(mark: int) -> int:
    """Drop the expressions interned after ``mark`` that nothing else references.

    A loader calls this after rejecting a file, so hostile input cannot grow the table;
    an expression still referenced anywhere stays (identity keeps meaning equality).
    Returns how many were dropped.
    """
    # Take the entries after ``mark`` out of the table (read from its end, not a copy of
    # the whole table) and keep only weak references: what nothing else holds dies at
    # once (a parent first, then the children it held), the rest goes back in order.
    # Ownership decides, not reference counts, which interpreters count differently.
    n = max(len(_TABLE) - mark, 0)
    keys = list(itertools.islice(reversed(_TABLE), n))
    refs = [weakref.ref(_TABLE.pop(key)) for key in keys]
    del keys  # the keys hold the children of their nodes
    survivors = [e for e in (r() for r in reversed(refs)) if e is not None]
    for e in survivors:
        _TABLE[_table_key(e)] = e
    return n - len(survivors)


def _table_key(e: Expr) -> tuple[object, ...]:
    """The key ``e`` is interned under (as built by the constructors below)."""
    if e.op == "const":
        return ("const", type(e.value) is bool, e.value)
    if e.op in ("sym", "fsym"):
        return (e.op, e.name)
    if e.op == "fconst":
        return ("fconst", float(e.value).hex())  # type: ignore[arg-type]
    return (e.op, e.args)


class Expr:
    """An interned symbolic expression node; see the module docstring for the node kinds."""

    __slots__ = ("op", "args", "value", "name", "_key", "_terms", "_str", "_free", "_d",
                 "__weakref__")

    op: str
    args: tuple[Expr, ...]
    value: int | bool | float | None
    name: str | None
    # caches, filled on first use
    _key: tuple[Any, ...]
    _terms: tuple[tuple[tuple[Expr, ...], int], ...] | None
    _str: str | None
    _free: frozenset[str] | None
    _d: Any

    # --- value semantics ---------------------------------------------------------------
    def __copy__(self) -> Expr:
        return self

    def __deepcopy__(self, memo: object) -> Expr:
        return self

    def __reduce__(self) -> tuple[object, ...]:
        if self.op == "const":
            return (const, (self.value,))
        if self.op == "fconst":
            return (fconst, (self.value,))
        if self.op == "fsym":
            return (fsym, (self.name,))
        if self.op == "sym":
            return (sym, (self.name,))
        return (make_node, (self.op, self.args))  # the arguments are canonical already

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
            s = self._str = to_str(self)
        return s

    @property
    def free_symbols(self) -> frozenset[str]:
        """Names of the symbols that occur in the expression."""
        f = self._free
        if f is None:
            if self.op == "sym" or self.op == "fsym":
                f = frozenset((self.name,))  # type: ignore[arg-type]
            elif self.op in ("const", "fconst"):
                f = frozenset()
            else:
                f = frozenset().union(*(a.free_symbols for a in self.args))
            self._free = f
        return f

    @property
    def is_bool(self) -> bool:
        """True for conditions (comparisons, and/or/not, bool constants)."""
        return self.op in BOOL_OPS or (self.op == "const" and type(self.value) is bool)

    def evaluate(self, binding: Mapping[str, int]) -> int | bool | float:
        """Value under ``binding`` (name -> int), with Python's semantics for every op."""
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


def make_node(op: str, args: tuple[Expr, ...]) -> Expr:
    """The interned node ``(op, args)``; ``args`` must already be in canonical form."""
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
        if type(v) is not int and type(v) is not bool:
            v = int.__index__(v)  # (an int subclass, a watched number: held as a plain int)
            key = ("const", False, v)
        e = object.__new__(Expr)
        e.op, e.args, e.value, e.name = "const", (), v, None
        e._key = (0, int(v), type(v) is bool)
        e._terms = e._str = e._free = e._d = None
        _TABLE[key] = e
    return e


def dag_nodes(e: Expr) -> Iterator[Expr]:
    """Every distinct node of ``e`` once (a shared subexpression is not walked twice)."""
    stack, seen = [e], set()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        stack.extend(x.args)


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


def fconst(v: float) -> Expr:
    """The float constant ``v`` (0.0 and -0.0 are different nodes, as are NaNs' bits)."""
    key = ("fconst", float(v).hex())
    e = _TABLE.get(key)
    if e is None:
        e = object.__new__(Expr)
        e.op, e.args, e.value, e.name = "fconst", (), float(v), None
        e._key = (0, v if v == v else math.inf, 2, key[1])
        e._terms = e._str = e._free = e._d = None
        _TABLE[key] = e
    return e


def fsym(name: str) -> Expr:
    """The float symbol ``name``: a float read from data (``x.max().item()``), which may be
    any double, inf and nan included."""
    key = ("fsym", name)
    e = _TABLE.get(key)
    if e is None:
        e = object.__new__(Expr)
        e.op, e.args, e.value, e.name = "fsym", (), None, name
        e._key = (1, name, -2, name)
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


def mono_key(m: Mono) -> tuple[object, ...]:
    """The order of monomials in sums (a fixed total order)."""
    return tuple([f._key for f in m])


def _term(m: Mono, c: int) -> Expr:
    if c == 1:
        return m[0] if len(m) == 1 else make_node("mul", m)
    return make_node("mul", (const(c),) + m)


def from_terms(d: Terms) -> Expr:
    """Build the canonical sum of a ``{monomial: coeff}`` dict."""
    c = d.get((), 0)
    items = [(m, k) for m, k in d.items() if k and m]
    if not items:
        return const(c)
    if len(items) > 1:
        items.sort(key=lambda mk: mono_key(mk[0]))
    ts = [_term(m, k) for m, k in items]
    if c:
        ts.append(const(c))
    return ts[0] if len(ts) == 1 else make_node("add", tuple(ts))


def add(a: Expr, b: Expr) -> Expr:
    """Canonical ``a + b``."""
    if b.op == "const":
        if a.op == "const":
            return const(int(a.value) + int(b.value))  # type: ignore[arg-type]
        return add_const(a, int(b.value))  # type: ignore[arg-type]
    if a.op == "const":
        return add_const(b, int(a.value))  # type: ignore[arg-type]
    d: Terms = dict(terms(a))
    for m, k in terms(b):
        d[m] = d.get(m, 0) + k
    return from_terms(d)


def add_const(a: Expr, c: int) -> Expr:
    """Canonical ``a + c`` for an int ``c`` (no term dictionary)."""
    if not c:
        return a
    if a.op == "add":
        last = a.args[-1]
        if last.op == "const":
            nv = int(last.value) + c  # type: ignore[arg-type]
            rest = a.args[:-1]
            if not nv:
                return rest[0] if len(rest) == 1 else make_node("add", rest)
            return make_node("add", rest + (const(nv),))
        return make_node("add", a.args + (const(c),))
    return make_node("add", (a, const(c)))


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
        return make_node("mul", (const(c), a))
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


# --- floor division and modulo -------------------------------------------------------------
def _is_posconst(e: Expr) -> bool:
    return e.op == "const" and type(e.value) is int and e.value > 0


def floordiv(a: Expr, b: Expr) -> Expr:
    """Canonical ``a // b``: multiples of a constant divisor move out, gcds cancel."""
    if b.op != "const":
        if a is ZERO:
            return ZERO
        if a is b:
            return ONE
        return make_node("floordiv", (a, b))
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
    atom = inner.args[0] if inner.op == "add" and len(inner.args) == 2 else inner
    if atom.op == "floordiv" and _is_posconst(atom.args[1]) and (atom is inner or (
            inner.args[1].op == "const" and type(inner.args[1].value) is int)):
        # (x//k + c)//m == (x + c*k)//(k*m): stride-2 stages nest as (x + 2**n - 1)//2**n
        k = int(atom.args[1].value)  # type: ignore[arg-type]
        c = 0 if atom is inner else int(inner.args[1].value)  # type: ignore[arg-type]
        node = floordiv(add_const(atom.args[0], c * k), const(k * m))
    else:
        node = make_node("floordiv", (inner, const(m)))
    return add(from_terms(q), node) if q else node


def mod(a: Expr, b: Expr) -> Expr:
    """Canonical ``a % b``: multiples of a constant divisor drop out, gcds factor out."""
    if b.op != "const":
        if a is ZERO or a is b:
            return ZERO
        return make_node("mod", (a, b))
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
        reduced = _drop_inner_mods(r, m)
        if reduced is not None:  # (x % 14) % 7 == x % 7, also inside sums and products
            return mod(add_const(reduced, rc), b)
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
    return make_node("mod", (from_terms(r), b))


def _drop_inner_mods(r: Terms, m: int) -> Expr | None:
    """The terms with every factor ``x % k`` (m dividing k) replaced by ``x``: congruent
    modulo m, as ``x % k`` differs from x by a multiple of k.  None when there is none."""
    changed = False
    parts = []
    for mono, k in r.items():
        t = const(k)
        for f in mono:
            d = f.args[1] if f.op == "mod" else None
            if d is not None and d.op == "const" and type(d.value) is int and d.value and \
                    d.value % m == 0:
                f = f.args[0]
                changed = True
            t = mul(t, f)
        parts.append(t)
    return add_many(parts) if changed else None
