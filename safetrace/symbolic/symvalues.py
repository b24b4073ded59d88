"""Python-facing symbolic values: SymInt, SymBool and SymFloat over an Env.

Arithmetic with ints and other Sym values builds expressions without guarding; a result
whose expression is constant comes back as a plain ``int``/``bool``/``float``.  Questions
Python must answer with a real value (``bool()``, ``int()``, ``__index__``, ``hash()``,
``float()``) go through ``Env.evaluate`` and so record guards.  ``n / m`` and mixing with
floats give a SymFloat: the float operations as written, evaluated as Python evaluates
them; ``math.floor(n * 0.5)`` is ``n//2`` where that is exactly Python's answer.
"""

from __future__ import annotations

from typing import Any, Callable

import math
from fractions import Fraction

import safetrace.symbolic.decide as D
import safetrace.symbolic.floats as F
from safetrace.symbolic.canon import and_, compare, minmax, not_, or_
from safetrace.symbolic.env import Env
from safetrace.symbolic.expr import Expr, add, const, fconst, floordiv, mod, mul, neg, sub, to_expr
from safetrace.symbolic.semantics import FLOAT_OPS
from safetrace.symbolic.zerodiv import nonzero_divisor

Fn = Callable[[Expr, Expr], Expr]
_DIVIDE = ("floordiv", "mod")


def _wrap_int(e: Expr, env: Env) -> Any:
    if e.op == "const":
        return e.value
    if env.subst or env.atoms or env.divisors:
        e = D.simplify(env, e)
        if e.op == "const":
            return int(e.value)  # type: ignore[arg-type]
    return (env.int_cls or SymInt)(e, env)


def _wrap_bool(e: Expr, env: Env) -> Any:
    if e.op == "const":
        return bool(e.value)
    if env.subst or env.atoms or env.divisors:
        e = D.simplify(env, e)
        if e.op == "const":
            return bool(e.value)
    return (env.bool_cls or SymBool)(e, env)


def _int_operand(o: object) -> Expr | None:
    c = type(o)  # (not o.__class__: an export may answer it in Python, pycalls.py)
    if c is int:
        return const(o)  # type: ignore[arg-type]
    if c is SymInt or isinstance(o, SymInt):
        return o.expr  # type: ignore[attr-defined, no-any-return]
    if isinstance(o, (int, SymBool)):  # a SymBool is an int too (`n * (m > 2)`): decided
        return const(int(o))
    return None


def _binop(fn: Fn, fop: str) -> Callable[[SymInt, object], Any]:
    divides = fop in _DIVIDE  # (Python raises where the divisor is 0: zerodiv.py)
    def op(self: SymInt, o: object) -> Any:
        e = _int_operand(o)
        if e is None:
            return SymFloat._mixed(fop, self, o, False)
        if divides and e.op != "const":
            nonzero_divisor(self.env, e)
        return _wrap_int(fn(self.expr, e), self.env)
    return op


def _rbinop(fn: Fn, fop: str) -> Callable[[SymInt, object], Any]:
    divides = fop in _DIVIDE
    def op(self: SymInt, o: object) -> Any:
        e = _int_operand(o)
        if e is None:
            return SymFloat._mixed(fop, self, o, True)
        if divides:
            nonzero_divisor(self.env, self.expr)
        return _wrap_int(fn(e, self.expr), self.env)
    return op


def _quick(kind: str, lo: float, hi: float, o: int) -> bool | None:
    """Decide ``x <kind> o`` from an interval of x alone (None when it does not)."""
    if kind == "ge":
        return True if lo >= o else False if hi < o else None
    if kind == "gt":
        return True if lo > o else False if hi <= o else None
    if kind == "le":
        return True if hi <= o else False if lo > o else None
    if kind == "lt":
        return True if hi < o else False if lo >= o else None
    if lo > o or hi < o:
        return kind == "ne"
    if lo == hi == o:
        return kind == "eq"
    return None


def _cmpop(kind: str) -> Callable[[SymInt, object], Any]:
    def op(self: SymInt, o: object) -> Any:
        # sizes against constants are mostly settled by ranges alone; data-dependent
        # values keep their SymBool so that a user's check of it stays visible
        if o.__class__ is int and self.expr.free_symbols <= self.env.hints.keys():
            r = D.bounds_of(self.env, self.expr)
            known = _quick(kind, r.lo, r.hi, o)
            if known is not None:
                return known
        e = _int_operand(o)
        if e is None:
            return SymFloat._mixed(kind, self, o, False)
        return _wrap_bool(compare(kind, self.expr, e), self.env)
    return op


class SymInt:
    """A symbolic int seen by traced code."""

    __slots__ = ("expr", "env")

    def __init__(self, expr: Expr, env: Env) -> None:
        self.expr = expr
        self.env = env

    __add__, __radd__ = _binop(add, "add"), _rbinop(add, "add")
    __sub__, __rsub__ = _binop(sub, "sub"), _rbinop(sub, "sub")
    __mul__, __rmul__ = _binop(mul, "mul"), _rbinop(mul, "mul")
    __floordiv__, __rfloordiv__ = _binop(floordiv, "floordiv"), _rbinop(floordiv, "floordiv")
    __mod__, __rmod__ = _binop(mod, "mod"), _rbinop(mod, "mod")
    __lt__, __le__, __gt__, __ge__ = _cmpop("lt"), _cmpop("le"), _cmpop("gt"), _cmpop("ge")
    __eq__, __ne__ = _cmpop("eq"), _cmpop("ne")

    def __truediv__(self, o: object) -> Any:
        return SymFloat._mixed("truediv", self, o, False)

    def __rtruediv__(self, o: object) -> Any:
        return SymFloat._mixed("truediv", self, o, True)

    def __divmod__(self, o: object) -> tuple[Any, Any]:
        return self // o, self % o

    def __rdivmod__(self, o: object) -> tuple[Any, Any]:
        return o // self, o % self

    def __pow__(self, k: object) -> Any:
        if not isinstance(k, int) or isinstance(k, SymFloat):
            # a float power: a float expr (base >= 0), opaque, else of the base's value
            if isinstance(k, (float, SymFloat)) and D.bounds_of(self.env, self.expr).lo >= 0:
                return SymFloat._mixed("pow", self, k, False)
            if self.env.opaque_float is not None and isinstance(k, (float, SymFloat)):
                return self.env.opaque_float("pow", (self, k))
            number = isinstance(k, (float, SymInt, SymFloat))   # (a tensor's: its __rpow__)
            return float(self) ** k if number else NotImplemented  # type: ignore[operator]
        n = int(k)
        if n < 0:
            return SymFloat._make(F.fbin("fpow", self.expr, const(n)), self.env)
        r: Any = 1
        for _ in range(n):
            r = r * self
        return r

    def __rpow__(self, base: object) -> Any:
        if self.env.opaque_float is not None and isinstance(base, float):
            return self.env.opaque_float("pow", (base, self))  # 10000.0 ** (-2*i/d)
        return base ** int(self)  # type: ignore[operator]

    def __lshift__(self, k: object) -> Any:
        return self * (1 << int(k))  # type: ignore[call-overload]

    def __rshift__(self, k: object) -> Any:
        return self // (1 << int(k))  # type: ignore[call-overload]

    def __neg__(self) -> Any:
        return _wrap_int(neg(self.expr), self.env)

    __pos__ = __floor__ = __ceil__ = __trunc__ = lambda self: self  # noqa: E731
    __round__ = lambda self, ndigits=None: self  # noqa: E731

    def __abs__(self) -> Any:
        return _wrap_int(minmax("max", [self.expr, neg(self.expr)]), self.env)

    def __bool__(self) -> bool:
        return self.env.evaluate(compare("ne", self.expr, const(0)))

    def __int__(self) -> int:
        """Specialize: guard ``expr == hint`` and return the hint."""
        v = int(self.env.hint(self.expr))
        self.env.evaluate(compare("eq", self.expr, const(v)))
        return v

    __index__ = __int__

    def __float__(self) -> float:
        return float(int(self))

    def __hash__(self) -> int:
        return hash(int(self))

    def __format__(self, spec: str) -> str:
        return str(self) if not spec else format(int(self), spec)

    def __repr__(self) -> str:
        return str(self.expr)

    __str__ = __repr__

    __copy__ = __pos__
    __deepcopy__ = lambda self, memo: self  # noqa: E731

    @property
    def hint(self) -> int:
        """The example value (raises DataDependentQuestion for unbacked expressions)."""
        v = self.env.cache.hint_values.get(self.expr)
        return int(v if v is not None else self.env.hint(self.expr))


class SymBool:
    """A symbolic condition; ``bool()`` answers it through ``Env.evaluate`` (a guard)."""

    __slots__ = ("expr", "env")

    def __init__(self, expr: Expr, env: Env) -> None:
        self.expr = expr
        self.env = env

    def __bool__(self) -> bool:
        return self.env.evaluate(self.expr)

    def _logic(self, o: object, f: Callable[..., Expr]) -> Any:
        if isinstance(o, SymBool):
            return _wrap_bool(f(self.expr, o.expr), self.env)
        if isinstance(o, bool):
            return _wrap_bool(f(self.expr, const(o)), self.env)
        return NotImplemented

    def __and__(self, o: object) -> Any:
        return self._logic(o, and_)

    __rand__ = __and__

    def __or__(self, o: object) -> Any:
        return self._logic(o, or_)

    __ror__ = __or__

    def __invert__(self) -> Any:
        """Logical not (like torch's SymBool), not bitwise."""
        return _wrap_bool(not_(self.expr), self.env)

    def __eq__(self, o: object) -> Any:  # 0 or 1 is that bool, as in Python (True == 1)
        return self._logic(bool(o) if type(o) in (int, float) and o in (0, 1) else o,
                           lambda a, b: compare("eq", a, b))

    def __ne__(self, o: object) -> Any:
        return self._logic(bool(o) if type(o) in (int, float) and o in (0, 1) else o,
                           lambda a, b: compare("ne", a, b))

    def __int__(self) -> int:
        return int(bool(self))

    def __hash__(self) -> int:
        return hash(bool(self))

    def __repr__(self) -> str:
        return str(self.expr)

    __str__ = __repr__

    def __copy__(self) -> SymBool:
        return self

    def __deepcopy__(self, memo: object) -> SymBool:
        return self

    @property
    def hint(self) -> bool:
        """The value under the hints."""
        return bool(self.env.hint(self.expr))


class SymFloat:
    """A float computed from sizes: an expression of Python float operations in the user's
    order (module ``floats``), so every value and decision is exactly what eager Python
    computes (``5 * 0.7 >= 3.5`` is True)."""

    __slots__ = ("expr", "env")
    FLOAT_OPS = FLOAT_OPS  # the expression kinds a SymFloat holds

    def __init__(self, expr: Expr, env: Env) -> None:
        self.expr, self.env = expr, env

    @staticmethod
    def _of(v: object, env: Env) -> Any:
        """``v`` as a SymFloat (``torch.sym_float``): ints and floats become constants."""
        if isinstance(v, SymFloat):
            return v
        cls = env.float_cls or SymFloat
        if isinstance(v, SymInt):
            return cls(F.fun("float", v.expr), env)
        if isinstance(v, (int, float)):
            return cls(fconst(float(v)), env)
        return None

    @staticmethod
    def _make(e: Expr, env: Env) -> Any:
        if e.op == "fconst":
            return float(e.value)  # type: ignore[arg-type]
        if env.subst or env.atoms:
            e = D.simplify(env, e)
            if e.op == "fconst":
                return float(e.value)  # type: ignore[arg-type]
        return (env.float_cls or SymFloat)(e, env)

    @staticmethod
    def _operand(v: object) -> Expr | None:
        if isinstance(v, (SymFloat, SymInt)):
            return v.expr
        if isinstance(v, bool):
            return const(int(v))
        if isinstance(v, int):
            return const(v)
        if isinstance(v, float):
            return fconst(v)
        return None

    @staticmethod
    def _mixed(op: str, a: Any, b: Any, reverse: bool) -> Any:
        env = a.env
        x, y = SymFloat._operand(a), SymFloat._operand(b)
        if x is None or y is None:
            return NotImplemented
        if reverse:
            x, y = y, x
        if op in _CMP:
            return _wrap_bool(compare(op, x, y), env)
        if op == "mod":  # float % float: Python's fmod-based rule, no graph form yet
            return float(SymFloat._of(a, env)) % b if not reverse else \
                b % float(SymFloat._of(a, env))
        if op in ("truediv", "floordiv") and y.op in ("const", "fconst") and not y.value:
            raise ZeroDivisionError("float division by zero")
        return SymFloat._make(F.fbin(_FOPS[op], x, y), env)

    def _bin(op: str, rev: bool = False) -> Callable[[SymFloat, object], Any]:  # type: ignore
        def f(self: SymFloat, o: object) -> Any:
            return SymFloat._mixed(op, self, o, rev)
        return f

    __add__, __radd__ = _bin("add"), _bin("add", True)
    __sub__, __rsub__ = _bin("sub"), _bin("sub", True)
    __mul__, __rmul__ = _bin("mul"), _bin("mul", True)
    __truediv__, __rtruediv__ = _bin("truediv"), _bin("truediv", True)
    __floordiv__, __rfloordiv__ = _bin("floordiv"), _bin("floordiv", True)
    __mod__, __rmod__ = _bin("mod"), _bin("mod", True)
    __pow__, __rpow__ = _bin("pow"), _bin("pow", True)
    __lt__, __le__, __gt__, __ge__ = _bin("lt"), _bin("le"), _bin("gt"), _bin("ge")
    __eq__, __ne__ = _bin("eq"), _bin("ne")

    def __neg__(self) -> Any:
        return SymFloat._make(F.fun("fneg", self.expr), self.env)

    def __pos__(self) -> SymFloat:
        return self

    def __abs__(self) -> Any:
        return self if self >= 0 else -self  # a guard on the sign

    def __floor__(self) -> Any:
        return _wrap_int(_floor_of(self.expr, self.env, False), self.env)

    def __ceil__(self) -> Any:
        return _wrap_int(_floor_of(self.expr, self.env, True), self.env)

    def __trunc__(self) -> Any:
        return _wrap_int(F.fun("trunc", self.expr), self.env)

    def __round__(self, ndigits: int | None = None) -> Any:
        if ndigits is not None:
            return round(float(self), ndigits)
        return _wrap_int(F.fun("round", self.expr), self.env)

    def __int__(self) -> int:
        """Python needs a real int here: the truncated value, specialized (a guard)."""
        v = self.__trunc__()
        return v if isinstance(v, int) else int(v)

    def __float__(self) -> float:
        """Python needs a real float: the value, specialized (an exact guard)."""
        v = float(self.env.hint(self.expr))
        self.env.evaluate(compare("eq", self.expr, fconst(v)))
        return v

    def __bool__(self) -> bool:
        return self.env.evaluate(compare("ne", self.expr, fconst(0.0)))

    def __hash__(self) -> int:
        return hash(float(self))

    def __repr__(self) -> str:
        return str(self.expr)

    __str__ = __repr__

    def __copy__(self) -> SymFloat:
        return self

    __deepcopy__ = lambda self, memo: self  # noqa: E731

    @property
    def hint(self) -> float:
        """The value under the hints."""
        return float(self.env.hint(self.expr))

    def is_finite(self) -> bool | None:
        """``math.isfinite`` proven from the env's ranges (True / False), else None."""
        lo, hi = F.fbounds(self.expr, lambda x: D.bounds_of(self.env, x))
        return True if math.isfinite(lo + hi) else False if lo == hi else None


_CMP = frozenset(("lt", "le", "gt", "ge", "eq", "ne"))
_FOPS = {"add": "fadd", "sub": "fsub", "mul": "fmul", "truediv": "fdiv",
         "floordiv": "ffloordiv", "pow": "fpow"}
EXACT = 1 << 53  # ints up to here convert to float exactly


def _floor_of(e: Expr, env: Env, ceil: bool) -> Expr:
    """``math.floor`` (``math.ceil``) of a float expression.  ``x * c``, ``x / c`` and
    ``x / d`` of an int ``x`` become ``(x*p)//q`` where that equals Python's float result
    for every x up to a bound (a run-time requirement when the range is wider); anything
    else stays the exact float expression ``int(e // 1)``."""
    exact = _rational_floor(e, env, ceil)
    if exact is not None:
        return exact
    return F.ceil(e) if ceil else F.floor(e)


def _rational_floor(e: Expr, env: Env, ceil: bool) -> Expr | None:
    if e.op not in ("fmul", "fdiv", "float"):
        return None
    if e.op == "float":
        x, r = e.args[0], Fraction(1)
    else:
        a, b = e.args
        if e.op == "fmul" and a.op == "fconst":
            a, b = b, a
        if F.is_float(a) or b.op not in ("fconst", "const") or not b.value:
            return None
        c = b.value
        if not math.isfinite(c):
            return None
        x = a
        r = Fraction(c) if e.op == "fmul" else 1 / Fraction(c)
    if F.is_float(x) or r <= 0:
        return None
    rng = D.bounds_of(env, D.simplify(env, x))
    if rng.lo < 0:
        return None
    pq = r if r.denominator <= (1 << 16) else r.limit_denominator(1 << 16)
    delta = r - pq  # the exact error of the float constant (0 for 0.5, 1.5, 1/d)
    # A product that is an integer k: the double result stays on k's side when the constant
    # errs towards it, or errs by less than half a unit in the last place of k.
    if delta and (delta < 0) != ceil and abs(delta) * (1 << 54) >= pq:
        return None
    # Any other product lies at least 1/q from an integer; the double result (float(x)
    # exact, one rounding of relative size 2**-53) must not cross it.
    err = abs(delta) + r / (1 << 53)
    limit = min(EXACT, math.floor(1 / (pq.denominator * err))) if err else EXACT
    if limit < 1:
        return None
    if rng.hi > limit:
        env.require(compare("le", x, const(limit)),
                    f"float arithmetic on sizes: the int rewrite of `{e}` is exact up to "
                    f"{limit}")
    p, q = const(pq.numerator), const(pq.denominator)
    if ceil:
        return floordiv(add(mul(x, p), const(pq.denominator - 1)), q)
    return floordiv(mul(x, p), q)


def make_int(e: Expr, env: Env) -> Any:
    """The Python value of an int expression: an int when constant, else a SymInt."""
    return _wrap_int(e, env)


def make_float(e: Expr, env: Env) -> Any:
    """The Python value of a float expression: a float when constant, else a SymFloat."""
    return SymFloat._make(e, env)


def make_bool(e: Expr, env: Env) -> Any:
    """The Python value of a condition: a bool when constant, else a SymBool."""
    return _wrap_bool(e, env)


def math_floor(x: Any) -> Any:
    """``math.floor`` that stays symbolic for Sym values."""
    return x.__floor__() if isinstance(x, SymFloat) else math.floor(x)


def is_symbolic(v: object) -> bool:
    """True for SymInt, SymBool and SymFloat."""
    return isinstance(v, (SymInt, SymBool, SymFloat))


def _env_of(xs: tuple[object, ...]) -> Env | None:
    for x in xs:
        if isinstance(x, (SymInt, SymBool)):
            return x.env
    return None


def sym_min(a: Any, b: Any) -> Any:
    """``min`` without a guard: an int for ints, else a SymInt of ``min(a, b)``."""
    env = _env_of((a, b))
    if env is None or isinstance(a, (float, SymFloat)) or isinstance(b, (float, SymFloat)):
        return min(a, b)
    return _wrap_int(minmax("min", [to_expr(a), to_expr(b)]), env)


def sym_max(a: Any, b: Any) -> Any:
    """``max`` without a guard: an int for ints, else a SymInt of ``max(a, b)``."""
    env = _env_of((a, b))
    if env is None or isinstance(a, (float, SymFloat)) or isinstance(b, (float, SymFloat)):
        return max(a, b)
    return _wrap_int(minmax("max", [to_expr(a), to_expr(b)]), env)


def sym_not(a: Any) -> Any:
    """Logical not without a guard."""
    if isinstance(a, SymBool):
        return _wrap_bool(not_(a.expr), a.env)
    return not a


def sym_and(*xs: Any) -> Any:
    """Logical and of bools/SymBools without a guard."""
    env = _env_of(xs)
    if env is None:
        return all(xs)
    return _wrap_bool(and_(*[to_expr(x) for x in xs]), env)


def sym_or(*xs: Any) -> Any:
    """Logical or of bools/SymBools without a guard."""
    env = _env_of(xs)
    if env is None:
        return any(xs)
    return _wrap_bool(or_(*[to_expr(x) for x in xs]), env)
