"""``branch_facts.tighten`` against evaluation at every point: the range and the steps it
gives a symbol from a one-symbol fact keep every value where the fact holds (session 27)."""

from __future__ import annotations

import pytest

from safetrace.serialize.branch_facts import steps, tighten
from safetrace.serialize.scratch import scratch_env
from safetrace.symbolic import parse
from safetrace.symbolic.semantics import holds_at


@pytest.mark.parametrize("fact", ["(3*s) % 4 <= 0", "s % 5 == 2", "s*s <= 100",
                                  "(s - 7) % 3 >= 1", "s >= 30", "s // 8 == 3",
                                  "(2*s) % 6 == 0", "s % 60 == 1"])
@pytest.mark.parametrize("hi", [64, 1000])
def test_the_range_and_steps_keep_every_value_the_fact_holds_at(fact, hi):
    env = scratch_env(None)
    env.new_unbacked(3, hi, name="s")
    cond = parse(fact)
    env.add_fact(cond)
    found = tighten(env)
    held = [v for v in range(3, hi + 1) if holds_at(cond, "s", v)]
    rng = env.symbol_range("s")
    assert held and rng.lo <= held[0] and held[-1] <= rng.hi
    if hi == 64:  # (every value tried: the range is the tightest)
        assert (rng.lo, rng.hi) == (held[0], held[-1])
    for name, m, c, lo, hi_t in found:
        assert name == "s" and set(held) <= {m * t + c for t in range(lo, hi_t + 1)}
    if fact == "(3*s) % 4 <= 0" and hi == 64:
        assert found == [("s", 4, 0, 1, 16)]
        assert steps(env, parse("((s*s)//16) == (s//4)*(s//4)"), found) is True
        assert steps(env, parse("s // 4 == s // 3"), found) is not True
