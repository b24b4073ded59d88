"""Property tests: canonical forms keep values, ranges contain values, decisions are sound."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from safetrace.symbolic import Env, Expr, eq, parse
from tests.symbolic.strategies import SYMBOLS, bindings, build, raw_conds, raw_exprs, value

# SYMBOLIC_EXAMPLES=5000 for a deeper soak; the default keeps the folder fast
SETTINGS = settings(max_examples=int(os.environ.get("SYMBOLIC_EXAMPLES", "300")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _env(hints: dict[str, int] | None = None) -> Env:
    env = Env()
    for name, lo, hi in SYMBOLS:
        if hints is None:
            env.new_unbacked(lo=lo, hi=hi, name=name)
        else:
            env.new_backed(hints[name], lo=lo, hi=hi, name=name)
    return env


def _env_with_facts(hints, facts, b):  # type: ignore[no-untyped-def]
    """`_env(hints)` knowing each of `facts` that holds at binding `b`."""
    env = _env(hints)
    for f in facts:
        if _value_or_none(f, b):
            env.add_fact(build(f))
    return env


def _build(r):  # type: ignore[no-untyped-def]
    """The Expr, or skip the example when a divisor is identically zero."""
    try:
        return build(r)
    except ZeroDivisionError:
        assume(False)


def _value_or_none(r, b):  # type: ignore[no-untyped-def]
    try:
        return value(r, b)
    except ZeroDivisionError:
        return None


@SETTINGS
@given(raw_exprs(), bindings())
def test_canonical_form_keeps_value(r, b) -> None:  # type: ignore[no-untyped-def]
    v = _value_or_none(r, b)
    assume(v is not None)
    assert build(r).evaluate(b) == v


@SETTINGS
@given(raw_exprs())
def test_parse_of_str_is_identity(r) -> None:  # type: ignore[no-untyped-def]
    e = _build(r)
    assert parse(str(e)) is e


@SETTINGS
@given(raw_exprs(), bindings())
def test_printed_python_has_the_same_semantics(r, b) -> None:  # type: ignore[no-untyped-def]
    e = _build(r)
    try:
        expected = e.evaluate(b)
    except ZeroDivisionError:
        return
    assert eval(str(e), {}, dict(b)) == expected  # noqa: S307


@SETTINGS
@given(raw_exprs(), bindings())
def test_bounds_contain_the_value(r, b) -> None:  # type: ignore[no-untyped-def]
    v = _value_or_none(r, b)
    assume(v is not None)
    rng = _env().bounds(build(r))
    assert rng.lo <= v <= rng.hi


@SETTINGS
@given(raw_conds(), bindings())
def test_condition_bounds_are_sound(r, b) -> None:  # type: ignore[no-untyped-def]
    v = _value_or_none(r, b)
    assume(v is not None)
    rng = _env().bounds(build(r))
    assert rng.lo <= int(v) <= rng.hi


@SETTINGS
@given(st.lists(raw_conds(), max_size=4), raw_conds(), bindings())
def test_decisions_hold_on_bindings_that_satisfy_the_facts(facts, r, b) -> None:  # type: ignore
    env = _env_with_facts(b, facts, b)
    v = _value_or_none(r, b)
    assume(v is not None)
    d = env.decide(build(r))
    assert d is None or d == v


@SETTINGS
@given(st.lists(raw_conds(), min_size=1, max_size=5), bindings())
def test_guards_hold_on_hints_and_answers_match(conds, b) -> None:  # type: ignore
    env = _env(b)
    for r in conds:
        v = _value_or_none(r, b)
        if v is None:
            continue
        assert env.evaluate(build(r)) == v
    for g in env.guards:
        assert g.cond.evaluate(b) is True
    assert env.check_binding(b) == []
    for name, info in env.symbols.items():
        assert info.hint in info.range
        assert env.simplify(eq(env.simplify(build(("sym", name))), b[name])).evaluate(b)


@settings(max_examples=200, deadline=None)
@given(st.integers(-50, 50), st.integers(-9, 9).filter(bool), st.integers(-20, 20))
def test_floordiv_and_mod_match_python_on_negatives(x, m, k) -> None:
    env = Env()
    s = env.new_unbacked(name="x")
    for e, f in [((s * k + 3) // m, lambda: (x * k + 3) // m), (s % m, lambda: x % m),
                 ((s - 7) % m + s // m, lambda: (x - 7) % m + x // m),
                 (-(s // m), lambda: -(x // m)), ((s * m + k) // m, lambda: (x * m + k) // m)]:
        assert e.evaluate({"x": x}) == f()
        assert eval(str(e), {}, {"x": x}) == f()  # noqa: S307
        rng = env.bounds(e)
        assert rng.lo <= f() <= rng.hi


@SETTINGS
@given(st.lists(raw_conds(), max_size=4), raw_conds(), bindings())
def test_decisions_with_unbacked_symbols_are_sound(facts, r, b) -> None:  # type: ignore
    env = _env_with_facts(None, facts, b)
    v = _value_or_none(r, b)
    assume(v is not None)
    d = env.decide(build(r))
    assert d is None or d == v
    rng = env.bounds(build(r))
    assert rng.lo <= int(v) <= rng.hi


@settings(max_examples=300, deadline=None)
@given(st.integers(-60, 60), st.integers(-60, 60), st.integers(1, 9), st.integers(-3, 3).filter(bool),
       st.integers(-9, 9), st.integers(-9, 9))
def test_inner_mods_with_a_multiple_divisor_keep_values(x, y, m, j, c1, c2) -> None:
    """(a + c*(b % (j*m))) % m and products with such factors: the inner mod drops out."""
    env = Env()
    sx, sy = env.new_unbacked(name="x"), env.new_unbacked(name="y")
    b = {"x": x, "y": y}
    cases = [
        ((sx + c1 * (sy % (j * m))) % m, (x + c1 * (y % (j * m))) % m),
        ((c1 * (sx % (j * m)) * (sy % m) + c2) % m, (c1 * (x % (j * m)) * (y % m) + c2) % m),
        (((sx % (j * m)) % m + sy) % m, ((x % (j * m)) % m + y) % m),
    ]
    for e, want in cases:
        assert e.evaluate(b) == want
        assert eval(str(e), {}, dict(b)) == want  # noqa: S307


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 200), st.integers(0, 50), st.integers(1, 12))
def test_padding_to_a_multiple_is_proved_divisible(x, b, m) -> None:
    """Swin-style padding: x + (m - x % m) % m is a multiple of m, so m * (it // m) is it."""
    env = Env()
    sx = env.new_backed(x, lo=0, name="x")
    sb = env.new_backed(b, lo=0, name="b")
    padded = sx + (m - sx % m) % m
    assert env.decide(eq(padded % m, 0)) is True
    assert env.decide(eq(sb * m * (padded // m) * m * (padded // m), sb * padded * padded))
    assert padded.evaluate({"x": x}) == x + (m - x % m) % m


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.integers(1, 12), st.integers(-5, 5), st.integers(-5, 5))
def test_exact_division_by_a_positive_symbol(x, y, k, c) -> None:
    """(k*x*y) // y == k*x and (k*x*y + c*y) % y == 0 when y's range excludes 0."""
    env = Env()
    sx = env.new_backed(x, lo=0, name="x")
    sy = env.new_backed(y, lo=1, name="y")
    e1 = env.simplify((k * sx * sy + c * sy) // sy)
    assert e1.evaluate({"x": x, "y": y}) == (k * x * y + c * y) // y
    assert e1.free_symbols <= {"x"}
    assert env.simplify((k * sx * sy) % sy).evaluate({}) == 0
    assert env.decide(eq(sx + (-sx * sy) // sy, 0)) is True
    env2 = Env()
    u = env2.new_unbacked(name="u")  # a divisor that may be 0 is left alone
    assert "//" in str(env2.simplify((3 * u * u) // u))


@SETTINGS
@given(st.lists(raw_conds(), max_size=3), raw_conds(), bindings())
@example([], ("lt", ("sym", "s0"), ("floordiv", ("sym", "s0"), ("mod", ("sym", "s0"), ("const", 2)))),
         {"s0": 1, "s1": 2, "s2": 0, "s3": 1})  # (a residue case dividing by zero)
@example([], ("lt", ("sym", "s0"), ("mod", ("sym", "s0"), ("mod", ("sym", "s0"), ("const", 2)))),
         {"s0": 1, "s1": 2, "s2": 0, "s3": 1})
def test_case_by_case_decisions_are_sound(facts, r, b) -> None:  # type: ignore
    """``symbolic.cases.by_cases`` (st.load compares two forms of one size with it): an
    answer holds at every binding that satisfies the facts, and the env is left as it
    was (its cases are assumed inside only)."""
    from safetrace.symbolic.cases import by_cases
    env = _env_with_facts(None, facts, b)
    v = _value_or_none(r, b)
    assume(v is not None)
    known, linear = set(env.known), list(env.linear)
    d = by_cases(env, build(r))
    assert d is None or d == v
    assert env.known == known and env.linear == linear
