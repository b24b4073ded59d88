"""Unit tests: the Python-facing SymInt / SymBool / SymFloat values."""

from __future__ import annotations

import copy
import math
import operator

import pytest

from safetrace.symbolic import (
    DataDependentQuestion, Env, SymBool, SymFloat, SymInt, eq, is_symbolic, sym_and, sym_max,
    sym_min, sym_not, sym_or, to_expr,
)


def _n(hint: int = 10, **kw: int) -> tuple[Env, SymInt]:
    env = Env()
    return env, SymInt(env.new_backed(hint, **kw), env)


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.floordiv,
                                operator.mod])
@pytest.mark.parametrize("k", [-7, -1, 1, 3, 8])
def test_arithmetic_with_ints_matches_python(op, k) -> None:  # type: ignore[no-untyped-def]
    env, n = _n(10)
    for r, expected in [(op(n, k), op(10, k)), (op(k, n), op(k, 10))]:
        assert isinstance(r, SymInt) or isinstance(r, int)
        assert (r.hint if isinstance(r, SymInt) else r) == expected
    assert env.guards == []


def test_operators_build_expressions_without_guards() -> None:
    env = Env()
    n, m = SymInt(env.new_backed(6), env), SymInt(env.new_backed(4), env)
    assert repr(n + 1) == "s0 + 1" and str(n * m) == "s0*s1" and repr(-n) == "-s0"
    assert repr(n // 2) == "s0//2" and repr(n % 8) == "s0 % 8" and repr(n - m) == "s0 - s1"
    assert repr(abs(n - m)) == "max(s0 - s1, -s0 + s1)"
    assert repr(n ** 2) == "s0*s0" and repr(n << 1) == "2*s0" and repr(n >> 1) == "s0//2"
    assert divmod(n, 4)[1].hint == 2
    assert isinstance(n > 20, SymBool) and repr(n > 20) == "s0 >= 21"
    assert isinstance(n == m, SymBool) and isinstance(3 == n, SymBool)
    assert repr(n != 3) == "s0 != 3"
    assert math.floor(n) is n and math.ceil(n) is n and round(n) is n
    assert env.guards == []


def test_constant_results_are_plain_ints() -> None:
    env, n = _n(10)
    assert type(n - n) is int and (n * 0) == 0 and type(n // n) is int
    assert (n + 1 > n) is True and type(n == n) is bool
    env.evaluate(eq(n.expr, 10))
    assert type(n + 1) is int and n + 1 == 11


def test_bool_guards_and_branch() -> None:
    env, n = _n(10)
    assert (n > 20) is not True
    taken = "then" if n > 20 else "else"
    assert taken == "else" and str(env.guards[0].cond) == "s0 <= 20"
    assert max(n, 3) is n  # via __gt__ + bool: a guard
    assert bool(n) is True
    assert all(g.cond.evaluate({"s0": 10}) for g in env.guards)


def test_specialization_via_int_index_hash() -> None:
    env, n = _n(10)
    assert int(n) == 10 and list(range(n)) == list(range(10))
    assert str(env.guards[-1].cond) == "s0 == 10"
    assert hash(n) == hash(10) and float(n) == 10.0 and f"{n:03d}" == "010"
    assert env.solution().fates["s0"].kind == "static"


def test_symfloat_rationals() -> None:
    env, n = _n(10)
    h = n / 4
    assert isinstance(h, SymFloat) and h.hint == 2.5 and repr(h) == "s0/4"
    assert repr(math.floor(h)) == "s0//4" and repr(math.ceil(h)) == "(s0 + 3)//4"
    assert repr(math.floor(n * 0.5)) == "s0//2"
    assert math.floor(n * 0.5 + 1.5) .hint == 6
    assert (n / 4 > 2) is not None and env.guards == []
    assert bool(h > 2) is True
    assert float(h) == 2.5 and (n / n) == 1.0


def test_symbool_logic() -> None:
    env = Env()
    n, m = SymInt(env.new_backed(6), env), SymInt(env.new_backed(4), env)
    a, b = n > 3, m > 5
    assert repr(a & b) == "(s0 >= 4) and (s1 >= 6)" and repr(a | b) == "(s0 >= 4) or (s1 >= 6)"
    assert repr(~a) == "s0 <= 3" and repr(sym_not(a)) == "s0 <= 3"
    assert (a & True) is a or repr(a & True) == repr(a)
    assert sym_and(True, False) is False and sym_or(a, True) is True
    assert repr(sym_and(a, b)) == repr(a & b) and env.guards == []
    assert bool(a | b) is True and int(a) == 1


@pytest.mark.parametrize("k", [0, 1, 2, -1, 0.0, 1.0, 0.5])
@pytest.mark.parametrize("truth", [True, False])
def test_symbool_compares_with_numbers_as_python_bool(k, truth) -> None:  # type: ignore[no-untyped-def]
    """A bool is the number 0 or 1 (``True == 1``, ``False != 0.0`` is False), never
    another one; the answers are Python's for the bool the condition takes."""
    env = Env()
    u = SymInt(env.new_unbacked(lo=0, hi=1), env)
    c = u == 1
    env.add_fact((u == 1).expr if truth else (u == 0).expr)
    for op in (operator.eq, operator.ne):
        for r in (op(c, k), op(k, c)):
            assert bool(r) is op(truth, k), (op, k, truth, r)


def test_sym_min_max_do_not_guard() -> None:
    env, n = _n(10)
    assert sym_min(3, 4) == 3 and sym_max(3, 4) == 4
    assert repr(sym_min(n, 3)) == "min(s0, 3)" and repr(sym_max(n, n + 2)) == "s0 + 2"
    assert env.guards == []


def test_unbacked_values() -> None:
    env = Env()
    u = SymInt(env.new_unbacked(lo=0), env)
    with pytest.raises(DataDependentQuestion):
        u.hint
    with pytest.raises(DataDependentQuestion):
        bool(u > 5)
    assert bool(u >= 0) is True
    with pytest.raises(DataDependentQuestion):
        int(u)


def test_helpers_and_slots() -> None:
    env, n = _n(10)
    assert is_symbolic(n) and is_symbolic(n > 1) and not is_symbolic(3)
    assert to_expr(n) is n.expr and to_expr(4).value == 4
    assert copy.deepcopy(n) is n and n.env is env
    with pytest.raises(AttributeError):
        n.other = 1  # type: ignore[attr-defined]
