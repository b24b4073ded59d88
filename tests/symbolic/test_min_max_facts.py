"""A fact that a ``min``/``max`` of sizes equals a value bounds each argument (session 26).

``min(a, b) == v`` holds exactly where both are at least ``v`` and one is ``v``, so each is
``>= v``; ``max(a, b) == v``: each ``<= v``.  A program requiring ``min(z.shape[1], 1) == 1``
(``unbind`` of a dim that must not be empty) records ``hsplit``'s second piece as
``s2 - 1``; the loader, taking the requirement as a fact, computed ``max(s2 - 1, 0)`` and
refused the exporter's own file until it knew ``s2 >= 1`` from it (fuzz seed 263).
Each conclusion is checked against plain evaluation over every point of the ranges."""

from __future__ import annotations

import itertools

import pytest

from safetrace.symbolic import Env, parse


@pytest.mark.parametrize("fact", [
    "min(a, 1) == 1", "min(a, b) == 2", "max(a, 3) == 3", "max(a, b) == 1",
    "min(a + b, 4) == 4", "max(2*a, b) == 4"])
def test_each_argument_is_bounded_by_the_value_and_nothing_false_is_proved(fact):
    env = Env()
    env.new_unbacked(0, 6, name="a")
    env.new_unbacked(0, 6, name="b")
    env.add_fact(parse(fact))
    cond = parse(fact)
    points = [dict(zip("ab", p)) for p in itertools.product(range(7), repeat=2)]
    holding = [p for p in points if cond.evaluate(p)]
    assert holding
    for q in ("a >= 1", "a >= 2", "a <= 3", "a <= 1", "b >= 2", "b <= 1", "a + b >= 4",
              "2*a <= 4", "a != 0"):
        answer = env.decide(parse(q))
        truth = {bool(parse(q).evaluate(p)) for p in holding}
        if answer is True:
            assert truth == {True}, (fact, q)
        if answer is False:
            assert truth == {False}, (fact, q)


@pytest.mark.parametrize("fact,known", [
    ("min(a, 1) == 1", "a >= 1"), ("min(a, b) == 2", "b >= 2"), ("max(a, 3) == 3", "a <= 3"),
    ("max(a, b) == 1", "b <= 1")])
def test_the_bound_is_known(fact, known):
    env = Env()
    env.new_unbacked(0, 6, name="a")
    env.new_unbacked(0, 6, name="b")
    env.add_fact(parse(fact))
    assert env.decide(parse(known)) is True
