"""Float arithmetic on sizes: every value and decision equals Python's own float arithmetic
(IEEE double, the user's order of operations), at the example and at every size the
recorded guards admit."""

from __future__ import annotations

import math
from typing import Any, Callable

from hypothesis import given, settings
from hypothesis import strategies as st

import safetrace.symbolic.floats as F
from safetrace.symbolic import Env, SymBool, SymFloat, SymInt, parse
from safetrace.symbolic.expr import const, fconst
from safetrace.symbolic.semantics import evaluate

FLOATS = [0.1, 0.3, 0.7, 1.1, 1.7, 2.3, 1 / 3, 2 / 3, 0.5, 1.5, 1 / 49, 0.001, 2.0, 3.14159]
SIZES = list(range(0, 80)) + [97, 100, 128, 255, 256, 1000, 1023, 4096, 10**6 + 3]


def _program() -> st.SearchStrategy[Any]:
    leaf = st.one_of(st.just(("n",)), st.sampled_from(FLOATS).map(lambda c: ("c", c)),
                     st.integers(1, 9).map(lambda k: ("k", k)))
    return st.recursive(leaf, lambda kids: st.tuples(
        st.sampled_from(["add", "sub", "mul", "div", "div1"]), kids, kids), max_leaves=5)


def _run(tree: Any, n: Any) -> Any:
    op = tree[0]
    if op == "n":
        return n
    if op in ("c", "k"):
        return tree[1]
    a, b = _run(tree[1], n), _run(tree[2], n)
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / 7.0 if isinstance(b, (int, SymInt)) and not isinstance(b, bool) else a / 3
    return a / (n + 1)  # never zero for sizes


DECISIONS: dict[str, Callable[[Any], Any]] = {
    "ge": lambda v: v >= 3.5, "lt": lambda v: v < 7, "eq": lambda v: v == 3.5,
    "floor": math.floor, "ceil": math.ceil, "round": round, "trunc": math.trunc,
}


def _check(tree: Any, decision: str, hint: int) -> None:
    env = Env()
    n = SymInt(env.new_backed(hint, lo=0), env)
    want = DECISIONS[decision](_run(tree, hint))
    got = DECISIONS[decision](_run(tree, n))
    if isinstance(got, SymBool):
        got = bool(got)  # a guard, exactly as Python decided it
    if isinstance(got, (SymInt, SymFloat)):
        assert got.hint == want
    else:
        assert got == want
    for m in SIZES:
        if env.check_binding({"s0": m}):
            continue  # the program would reject m before computing
        expect = DECISIONS[decision](_run(tree, m))
        value = got.expr.evaluate({"s0": m}) if isinstance(got, (SymInt, SymFloat)) else got
        assert value == expect, (m, str(getattr(got, "expr", got)), env.guards)


@settings(max_examples=300, deadline=None)
@given(_program(), st.sampled_from(sorted(DECISIONS)), st.sampled_from([0, 1, 3, 5, 7, 10,
                                                                       49, 100]))
def test_float_decisions_match_python(tree: Any, decision: str, hint: int) -> None:
    _check(tree, decision, hint)


def test_the_issue_cases() -> None:
    env = Env()
    n = SymInt(env.new_backed(5), env)
    assert bool(n * 0.7 >= 3.5) is True  # 5 * 0.7 == 3.5 in Python; the exact 7/2 - 1e-16 not
    assert [str(g.cond) for g in env.guards] == ["s0 >= 5"]  # exact: 4 * 0.7 < 3.5
    for scale, size, eager in [(1.7, 10, 17), (1 / 3, 6, 2), (0.3, 10, 3), (2 / 3, 6, 4),
                               (2.3, 10, 23)]:
        env = Env()
        w = SymInt(env.new_backed(size), env)
        out = math.floor(w * scale)
        assert out.hint == eager == math.floor(size * scale)
        assert env.guards == []  # no decision, no guard: the size stays symbolic
        for m in range(0, 300):
            if not env.check_binding({"s0": m}):
                assert out.expr.evaluate({"s0": m}) == math.floor(m * scale), (scale, m)


def test_sizes_stay_symbolic() -> None:
    env = Env()
    s = SymInt(env.new_backed(10), env)
    r = round(s / 3)
    assert isinstance(r, SymInt) and r.hint == 3 and env.guards == []
    assert str(r) == "round(s0/3)"
    assert [r.expr.evaluate({"s0": m}) for m in range(12)] == [round(m / 3) for m in range(12)]
    f = math.floor(s * 1.1)
    assert isinstance(f, SymInt) and f.hint == 11
    assert bool(r >= 3) is True and str(env.guards[-1].cond) == "s0 >= 8"  # round(8/3) == 3
    assert int(s * 1.1) == 11  # int() must specialize: the guard admits exactly these sizes
    assert all((int(m * 1.1) == 11) == (not env.check_binding({"s0": m})) or m < 8
               for m in range(40))


def test_float_conditions_print_and_parse_as_python() -> None:
    for src in ["s0*0.7 >= 3.5", "int((s0 + 1)*0.5 // 1)", "2*s1 + round(s0/3)", "s0*-0.5 < s1",
                "float(s0)**0.5 <= 3.0", "-int(-(s0/7) // 1)"]:
        e = parse(src)
        assert str(e) == src and parse(str(e)) is e
        b = {"s0": 5, "s1": 2}
        assert e.evaluate(b) == eval(src, {}, dict(b))  # noqa: S307  (our own test strings)


def test_intervals_decide_without_guards() -> None:
    env = Env()
    n = SymInt(env.new_backed(4, lo=2, hi=10), env)
    assert bool(n * 0.5 >= 1.0) is True and bool(n / 3 < 4) is True
    assert env.guards == []
    assert bool(n * 0.5 < 3.0) is True and [str(g.cond) for g in env.guards] == ["s0 <= 5"]


def test_float_min_max_values_bounds_and_text() -> None:
    # min/max of two float expressions of sizes: Python's value at every size, inside the
    # bounds the prover gives, printed as Python and parsed back to the same expression
    env = Env()
    h = env.new_backed(128, lo=1)
    w = env.new_backed(160, lo=1)
    a, b = F.fbin("fdiv", const(800), h), F.fbin("fdiv", const(1333), w)
    for e, fn in ((F.fbin("fmin", a, b), min), (F.fbin("fmax", a, fconst(0.5)), max)):
        assert parse(str(e)) == e
        lo, hi = F.fbounds(e, env.bounds)
        for x in (1, 2, 7, 128, 160, 1000, 10**6):
            for y in (1, 3, 128, 160, 999):
                got = evaluate(e, {h.name: x, w.name: y})
                want = fn(800 / x, 1333 / y) if fn is min else max(800 / x, 0.5)
                assert got == want and lo <= got <= hi
