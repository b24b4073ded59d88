"""`(k*x + c) % m == r` with k coprime to m is solved for x: `(3*b) % 4 == 0` is
`b % 4 == 0` (issue 24), so the exporter can give the derived-dim fix ``b = 4*q``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from safetrace.symbolic import eq, ne
from safetrace.symbolic.expr import sym

B, N = sym("b"), sym("n")


def test_coprime_multiple_is_dropped() -> None:
    assert eq((3 * B) % 4, 0) is eq(B % 4, 0)
    assert ne((3 * B) % 4, 0) is ne(B % 4, 0)
    assert eq((3 * B * N) % 4, 0) is eq((B * N) % 4, 0)
    assert eq((6 * B) % 4, 0) is eq(B % 2, 0)  # the gcd 2 factors out first
    assert eq((3 * B + 1) % 4, 0) is eq(B % 4, 1)  # 3*b + 1 = 0 (mod 4) iff b = 1 (mod 4)


def test_a_remainder_outside_the_modulus_never_holds() -> None:
    assert eq(B % 4, 5).op == "const" and not eq(B % 4, 5).value
    assert ne(B % 4, -1).op == "const" and ne(B % 4, -1).value


@settings(max_examples=300, deadline=None)
@given(st.integers(-60, 60), st.integers(-12, 12), st.integers(-9, 9), st.integers(2, 12),
       st.integers(-2, 13))
def test_solved_condition_keeps_its_value(x: int, k: int, c: int, m: int, r: int) -> None:
    e = (k * B + c) % m
    for c_eq, truth in ((eq(e, r), (k * x + c) % m == r), (ne(e, r), (k * x + c) % m != r)):
        got = c_eq.evaluate({"b": x}) if c_eq.op != "const" else c_eq.value
        assert bool(got) == truth, (k, c, m, r, x, str(c_eq))
