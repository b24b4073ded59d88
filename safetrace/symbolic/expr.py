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

import re
import sys
from typing import Any, Dict, Iterable, Mapping, Tuple, Union

ExprLike = Union["Expr", int, bool]
Mono = Tuple["Expr", ...]
Terms = Dict[Mono, int]

_TABLE: dict[tuple[object, ...], Expr] = {}
_NAME_RE = re.compile(r"^(.*?)(\d+)$")
_OPRANK = {op: i for i, op in enumerate(
    "floordiv mod min max mul add eq ne lt le ge not and or".split())}
BOOL_OPS = frozenset(("eq", "ne", "lt", "le", "ge", "and", "or", "not"))
CMP_OPS = frozenset(("eq", "ne", "lt", "le", "ge"))


def table_mark() -> int:
    """The intern table's size now (give it to ``release_since`` to undo growth after)."""
    return len(_TABLE)


def release_since(mark: int) -> int:
    """Drop the expressions interned after ``mark`` that nothing else references.

    A loader calls this after rejecting a file, so hostile input cannot grow the table;
    an expression still referenced anywhere stays (identity keeps meaning equality).
    Returns how many were dropped.
    """
    items = list(_TABLE.items())[mark:]
    dropped = 0
    while items:  # newest first: a parent goes before the children it references
        key, e = items.pop()
        if sys.getrefcount(e) <= 3 and _TABLE.get(key) is e:  # the table, `e`, the call
            del _TABLE[key]
            dropped += 1
        del key, e
    return dropped


class Expr:
    """An interned symbolic expression node; see the module docstring for the node kinds."""

    __slots__ = ("op", "args", "value", "name", "_key", "_terms", "_str", "_free", "_d",
                 "__weakref__")

    op: str
    args: tuple[Expr, ...]
    value: int | bool | None
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
        if self.op == "sym":
            return (sym, (self.name,))
        return (_c.rebuild, (self.op, self.args))

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
        return _c.substitute(self, lambda e: by_name.get(e.name))

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
        return _c.floordiv(self, to_expr(o))

    def __rfloordiv__(self, o: ExprLike) -> Expr:
        return _c.floordiv(to_expr(o), self)

    def __mod__(self, o: ExprLike) -> Expr:
        return _c.mod(self, to_expr(o))

    def __rmod__(self, o: ExprLike) -> Expr:
        return _c.mod(to_expr(o), self)

    def __neg__(self) -> Expr:
        return neg(self)

    def __pos__(self) -> Expr:
        return self

    # --- symbolic comparisons and logic (call as Expr.lt(a, b) or a.lt(b)) -----------------
    def lt(a: ExprLike, b: ExprLike) -> Expr:  # noqa: N805
        """Symbolic ``a < b``."""
        return _c.compare("lt", to_expr(a), to_expr(b))

    def le(a: ExprLike, b: ExprLike) -> Expr:  # noqa: N805
        """Symbolic ``a <= b``."""
        return _c.compare("le", to_expr(a), to_expr(b))

    def gt(a: ExprLike, b: ExprLike) -> Expr:  # noqa: N805
        """Symbolic ``a > b``."""
        return _c.compare("gt", to_expr(a), to_expr(b))

    def ge(a: ExprLike, b: ExprLike) -> Expr:  # noqa: N805
        """Symbolic ``a >= b``."""
        return _c.compare("ge", to_expr(a), to_expr(b))

    def eq(a: ExprLike, b: ExprLike) -> Expr:  # noqa: N805
        """Symbolic ``a == b``."""
        return _c.compare("eq", to_expr(a), to_expr(b))

    def ne(a: ExprLike, b: ExprLike) -> Expr:  # noqa: N805
        """Symbolic ``a != b``."""
        return _c.compare("ne", to_expr(a), to_expr(b))

    def and_(*xs: ExprLike) -> Expr:
        """Symbolic conjunction."""
        return _c.and_(*xs)

    def or_(*xs: ExprLike) -> Expr:
        """Symbolic disjunction."""
        return _c.or_(*xs)

    def not_(a: ExprLike) -> Expr:  # noqa: N805
        """Symbolic negation."""
        return _c.not_(to_expr(a))

    def min(*xs: ExprLike) -> Expr:
        """Symbolic ``min``."""
        return _c.minmax("min", [to_expr(x) for x in xs])

    def max(*xs: ExprLike) -> Expr:
        """Symbolic ``max``."""
        return _c.minmax("max", [to_expr(x) for x in xs])


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


from safetrace.symbolic import canon as _c  # noqa: E402  (canon builds on this module)
