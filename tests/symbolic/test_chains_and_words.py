"""Nested floor divisions of stride-2 stages collapse, what follows from divisibility is
decided, and conditions on one size are described by the sizes that pass (issue 15.9)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from safetrace.symbolic import Env, Range, eq, parse
from safetrace.symbolic.describe import passing_sizes
from safetrace.symbolic.expr import sym

H = sym("H")


def test_stride_two_chain_is_one_division() -> None:
    e = H
    for k in range(1, 6):
        e = (e + 1) // 2
        assert e is (H + 2**k - 1) // 2**k
    conv = H
    for _ in range(4):  # k=3, p=1, stride 2: (H + 2 - 3)//2 + 1
        conv = (conv + 2 - 3) // 2 + 1
    assert conv is (H + 15) // 16


@settings(max_examples=200, deadline=None)
@given(st.integers(-50, 200), st.integers(1, 9), st.integers(-9, 9), st.integers(1, 9),
       st.integers(-9, 9))
def test_nested_division_keeps_value(x: int, k: int, c: int, m: int, c0: int) -> None:
    e = ((H + c0) // k + c) // m
    assert e.evaluate({"H": x}) == ((x + c0) // k + c) // m


def test_divisibility_decides_what_follows() -> None:
    env = Env()
    h = env.new_backed(64, lo=1)
    assert env.decide(eq((h + 31) // 32, h // 32)) is None
    env.add_fact(eq(h % 32, 0))
    assert env.decide(eq((h + 31) // 32, h // 32)) is True
    assert env.simplify((h + 5) % 8).value == 5
    assert env.decide(eq(((((h + 1) // 2 + 1) // 2 + 1) // 2) * 8, h)) is True


def test_passing_sizes_in_words() -> None:
    cases = {
        "(s0 + 31)//32*32 == s0": "H is a multiple of 32",
        "((s0 + 15)//16) % 2 == 0": "H % 32 is 0 or in 17..31",
        "s0 % 4 != 3": "H % 4 != 3",
        "(s0 + 1)//2 == 3": "H is in 5..6",
        "s0 >= 5": "H >= 5",
        "s0 % 3 == 0 and s0 >= 10": "H is a multiple of 3, and H >= 12",
        "int(s0*0.333 // 1) != 1": "H is not in 4..6",
    }
    for src, words in cases.items():
        assert passing_sizes(parse(src), "s0", Range(1, float("inf")), "H") == words, src
    assert passing_sizes(parse("s0 == s1"), "s0", Range(1, 10)) is None


def test_passing_sizes_on_small_ranges() -> None:
    """A bounded range shorter than any period search (a fuzzer finding: IndexError)."""
    for hi in range(0, 6):
        for src in ["s0 >= 1", "s0 % 2 == 0", "s0 != 2", "s0 >= 0"]:
            words = passing_sizes(parse(src), "s0", Range(0, hi), "H")
            assert words is None or isinstance(words, str)
    assert passing_sizes(parse("s0 % 2 == 0"), "s0", Range(1, 3), "H") == "H is 2"
