"""What the prover knows of floor divisions by a constant (issue 15.9, the vision zoo's TF
"same" padding and stride chains): chains stay one division with the same values, a
comparison of one division with a constant is the linear range fact it stands for,
``m*(a//m)`` is known to lie in ``[a - m + 1, a]``, and a monomial common to a symbolic
divisor and its dividend cancels.  Every rewrite is checked against plain evaluation."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from safetrace.symbolic import Env, eq, ge, gt, le, lt
from safetrace.symbolic.expr import Expr, sym

H = sym("H")
CMPS = {"le": (le, lambda a, b: a <= b), "lt": (lt, lambda a, b: a < b),
        "ge": (ge, lambda a, b: a >= b), "gt": (gt, lambda a, b: a > b)}


def _ops(e: Expr) -> set[str]:
    out = {e.op}
    for a in e.args:
        out |= _ops(a)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-9, 9), st.integers(1, 8)), min_size=1, max_size=6),
       st.integers(-300, 300))
def test_chain_of_divisions_keeps_value(levels: list[tuple[int, int]], x: int) -> None:
    """((x + c1)//m1 + c2)//m2 ... (any depth, any offsets) evaluates like Python."""
    e, v = H, x
    for c, m in levels:
        e, v = (e + c) // m, (v + c) // m
    assert e.evaluate({"H": x}) == v


def test_stride_two_chain_of_any_depth_is_one_division() -> None:
    e = H
    for k in range(1, 9):
        e = (e + 1) // 2
        assert e is (H + 2**k - 1) // 2**k


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(CMPS)), st.integers(-9, 9), st.integers(1, 9),
       st.integers(-5, 5), st.integers(-60, 60))
def test_comparison_of_a_division_is_linear(op: str, c: int, m: int, k: int, x: int) -> None:
    build, py = CMPS[op]
    cond = build((H + c) // m, k)
    assert "floordiv" not in _ops(cond), cond  # a range fact on H, not a residual guard
    assert cond.evaluate({"H": x}) == py((x + c) // m, k)


@settings(max_examples=300, deadline=None)
@given(st.integers(-4, 4), st.integers(1, 6), st.integers(-6, 6), st.integers(-6, 6),
       st.integers(-8, 8), st.integers(0, 40), st.integers(0, 40))
def test_floor_decisions_hold_on_the_whole_range(p: int, m: int, c: int, q: int, r: int,
                                                 lo: int, width: int) -> None:
    """p*((H + c)//m) + q*H + r >= 0: a True/False decision holds for every H in range."""
    env = Env()
    h = env.new_backed(lo, lo=lo, hi=lo + width)
    e = p * ((h + c) // m) + q * h + r
    got = env.decide(ge(e, 0))
    values = [p * ((x + c) // m) + q * x + r >= 0 for x in range(lo, lo + width + 1)]
    if got is not None:
        assert all(v == got for v in values)


def test_tf_same_padding_is_decided() -> None:
    """timm's pad_same: pad = (ceil(h/2) - 1)*2 + k - h is positive for k >= 3 (no guard),
    and a parity question stays open."""
    env = Env()
    h = env.new_backed(64, lo=1)
    assert env.decide(le(h, 2 * ((h + 1) // 2))) is True
    assert env.decide(gt(2 * ((h + 1) // 2) - 2 + 3 - h, 0)) is True
    assert env.decide(gt(4 * ((h + 3) // 4) - h + 1, 0)) is True
    assert env.decide(lt(h, 2 * ((h + 1) // 2))) is None          # h odd
    assert env.decide(le(3 * ((h + 2) // 3), h + 2)) is True


@settings(max_examples=200, deadline=None)
@given(st.integers(-20, 20), st.integers(-20, 20), st.integers(1, 9), st.integers(-9, 9),
       st.integers(1, 30), st.integers(-30, 30))
def test_common_monomial_cancels(a2: int, a1: int, j: int, jsign: int, b: int, y: int) -> None:
    """(a2*B*B + a1*B*Y) // (j*B) and % keep their values (B != 0) and lose the B."""
    env = Env()
    bb = env.new_backed(b, lo=1, hi=30)
    yy = env.new_backed(y, lo=-30, hi=30)
    d = j * (1 if jsign >= 0 else -1)
    n = a2 * bb * bb + a1 * bb * yy
    binding = {bb.name: b, yy.name: y}  # type: ignore[dict-item]
    nv = a2 * b * b + a1 * b * y
    assert env.simplify(n // (d * bb)).evaluate(binding) == nv // (d * b)
    assert env.simplify(n % (d * bb)).evaluate(binding) == nv % (d * b)
    assert env.simplify((256 * bb) % (4 * bb)).value == 0
    assert env.decide(eq((256 * bb) // (4 * bb), 64)) is True


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 9), st.integers(-3, 3), st.integers(0, 3), st.integers(1, 5),
       st.integers(-9, 9), st.integers(0, 200))
def test_padding_to_a_multiple_is_a_rounded_up_division(m: int, k: int, t: int, d: int,
                                                        c: int, x: int) -> None:
    """k*a + k*((t*m - a) % m) + c (a window pad, spelled as torch code spells it) is known
    to equal k*m*((a + m - 1)//m) + c, with a = H or H//d (both checked by evaluation)."""
    env = Env()
    h = env.new_backed(x, lo=0)
    a = h // d
    e = k * a + k * ((t * m - a) % m) + c
    up = k * m * ((a + m - 1) // m) + c
    assert up.evaluate({h.name: x}) == e.evaluate({h.name: x})  # type: ignore[dict-item]
    assert env.decide(eq(e, up)) is True


def test_window_padding_chain_collapses() -> None:
    """torchvision's patch merging pads H to even before halving, four times."""
    env = Env()
    h = env.new_backed(64, lo=1)
    e = h // 4
    for _ in range(3):
        e = (e + e % 2) // 2
    assert env.decide(eq(e, (h + 28) // 32)) is True
    assert env.decide(ge(e * 32, h - 3)) is True
    assert env.decide(ge(e * 32, h)) is None  # h in 1..3: h//4 is 0


def test_shared_subexpressions_evaluate_once() -> None:
    """Interned nodes are shared: a chain that uses each step twice has 2**40 paths as a
    tree, and must still evaluate (a window-padding chain's conditions did not)."""
    e = H
    for _ in range(40):
        e = (e + e % 7) // 2 + e // 3
    v = 1000
    for _ in range(40):
        v = (v + v % 7) // 2 + v // 3
    assert e.evaluate({"H": 1000}) == v


@settings(max_examples=150, deadline=None)
@given(st.integers(-3, 3).filter(bool), st.integers(-6, 6), st.integers(1, 5),
       st.integers(-4, 8), st.integers(0, 4), st.integers(-3, 3), st.integers(-12, 12))
def test_a_pinned_division_bounds_its_operand(k: int, c: int, m: int, v: int, lo: int,
                                             j: int, t: int) -> None:
    """``(k*s + c)//m == v`` (a contract's ``(x.shape[3] + 1)//2 == 3``) as a fact: every
    answer the env then gives (the range of ``s``, a comparison ``s + j*(s//m) >= t``)
    holds at each ``s`` of the declared range where the fact holds."""
    env = Env()
    s = env.new_unbacked(lo, lo + 40, name="s")
    fact = eq((k * s + c) // m, v)
    values = [x for x in range(lo, lo + 41) if (k * x + c) // m == v]
    try:
        env.add_fact(fact)
    except ValueError:
        assert not values
        return
    if not values:
        return  # (a fact no size meets: any answer holds at none)
    r = env.bounds(s)
    assert all(r.lo <= x <= r.hi for x in values)
    if k == 1:  # (a bare symbol's operand: the bounds are exact)
        assert (r.lo, r.hi) == (min(values), max(values))
    q = ge(s + j * (s // m), t)
    answer = env.decide(q)
    assert answer is None or all((x + j * (x // m) >= t) == answer for x in values)


_TERM = st.tuples(st.integers(-2, 2), st.integers(-3, 3), st.integers(1, 4), st.integers(-2, 2))


@settings(max_examples=120, deadline=None)
@given(st.lists(_TERM, min_size=1, max_size=3), st.lists(_TERM, max_size=3),
       st.integers(-2, 2), st.sampled_from(["eq", "le"]), st.integers(0, 3))
def test_residue_cases_hold_on_the_whole_range(left: list, right: list, c: int, op: str,
                                               lo: int) -> None:
    """``symbolic.cases`` splits a symbol under a floor division on its residue: an
    answer (``s - s//2 == (s + 1)//2`` is True) holds at every size of the range."""
    from safetrace.symbolic.cases import by_cases
    env = Env()
    s = env.new_unbacked(lo, lo + 30, name="s")

    def side(ts: list, x: Expr | int) -> Expr | int:
        out: Expr | int = 0
        for k, a, m, j in ts:
            out = out + j * ((k * x + a) // m)
        return out

    build = eq if op == "eq" else le
    cond = build(side(left, s), side(right, s) + c)
    plain = {"eq": lambda p, q: p == q, "le": lambda p, q: p <= q}[op]
    answer = by_cases(env, cond)
    truth = {plain(side(left, x), side(right, x) + c) for x in range(lo, lo + 31)}
    assert answer is None or truth == {answer}
    assert not env.facts and not env.linear


@settings(max_examples=300, deadline=None)
@given(st.integers(-4, 4), st.integers(1, 9), st.integers(-6, 6), st.integers(-4, 4),
       st.integers(-4, 4), st.integers(-9, 9), st.integers(-12, 30), st.integers(0, 40))
def test_remainder_decisions_hold_on_the_whole_range(p: int, m: int, c: int, q: int, f: int,
                                                     r: int, lo: int, width: int) -> None:
    """p*((H + c) % m) + q*H + f*((H + c)//m) + r >= 0: a True/False decision holds for
    every H in range (``a % m <= a`` where a >= 0 among them)."""
    env = Env()
    h = env.new_backed(lo, lo=lo, hi=lo + width)
    e = p * ((h + c) % m) + q * h + f * ((h + c) // m) + r
    got = env.decide(ge(e, 0))
    values = [p * ((x + c) % m) + q * x + f * ((x + c) // m) + r >= 0
              for x in range(lo, lo + width + 1)]
    if got is not None:
        assert all(v == got for v in values)


def test_a_remainder_is_at_most_its_dividend() -> None:
    env = Env()
    h = env.new_backed(64, lo=0)
    assert env.decide(le(h % 8, h)) is True
    assert env.decide(le((h + 5) % 8, h + 5)) is True
    assert env.decide(lt(h % 8, h)) is None  # h in 0..7
    env = Env()
    g = env.new_backed(4, lo=-5)
    assert env.decide(le(g % 8, g)) is None  # g = -1: 7 > -1


@settings(max_examples=200, deadline=None)
@given(st.integers(-6, 6), st.integers(-6, 6), st.integers(-6, 6), st.integers(1, 4),
       st.integers(-5, 5), st.integers(2, 9), st.integers(-9, 9), st.integers(-3, 3))
def test_polynomial_divisor_quotient(q1: int, q0: int, qy: int, dk: int, dc: int,
                                     s: int, y: int, extra: int) -> None:
    """(q*d + extra) // d and % keep their values for a divisor of two terms (d = dk*S + dc,
    never 0 in range), and an exact one loses the divisor: 3*Y*(2*S - 1) // (2*S - 1)."""
    env = Env()
    ss = env.new_backed(s, lo=2, hi=9)
    yy = env.new_backed(y, lo=-9, hi=9)
    dc = dc if dc else 1
    if any(dk * v + dc == 0 for v in range(2, 10)):
        return  # (a divisor that can be 0: no quotient is taken)
    d = dk * ss + dc
    q = q1 * ss * yy + q0 * ss + qy * yy
    n = q * d + extra
    binding = {ss.name: s, yy.name: y}  # type: ignore[dict-item]
    dv = dk * s + dc
    nv = (q1 * s * y + q0 * s + qy * y) * dv + extra
    assert env.simplify(n // d).evaluate(binding) == nv // dv
    assert env.simplify(n % d).evaluate(binding) == nv % dv
    if extra == 0:
        assert "//" not in str(env.simplify(n // d))
        assert env.simplify(n % d).value == 0  # type: ignore[union-attr]
