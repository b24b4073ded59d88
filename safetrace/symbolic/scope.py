"""``scoped(env)``: assumptions that hold only inside a block.

For code that may not run (a branch of a program, a loop body), or whose needs are checked
where they are needed: a condition its ops establish is no fact for what follows it.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import safetrace.symbolic.decide as D
from safetrace.symbolic.disjunctions import narrow_disjunctions
from safetrace.symbolic.env import Env
from safetrace.symbolic.expr import Expr
from safetrace.symbolic.records import Contradiction


@contextmanager
def scoped(env: Env) -> Iterator[None]:
    """What ``env`` assumes inside (facts, settled answers, guards, requirements, narrowed
    ranges, replacements) is forgotten on exit: it then knows what it knew on entry.
    Symbols created inside stay (values computed inside may name them), with the ranges
    they were given."""
    kept = (dict(env.subst), dict(env.atoms), dict(env.divisors), list(env.linear),
            set(env.known), list(env.guards), list(env.facts), list(env.requirements),
            set(env._guard_set), list(env.settled))
    ranges = {name: info.range for name, info in env.symbols.items()}
    try:
        yield
    finally:
        (env.subst, env.atoms, env.divisors, env.linear, env.known, env.guards, env.facts,
         env.requirements, env._guard_set, env.settled) = kept
        for name, rng in ranges.items():
            env.symbols[name].range = rng
        env._bump()  # (answers cached under the block's facts are stale)


@contextmanager
def assuming(env: Env, cond: Expr) -> Iterator[bool]:
    """Inside ``scoped(env)``, ``cond`` taken as a fact as ``env.add_fact`` takes one
    (``or`` facts it narrows included), whatever the example sizes say (a branch that the
    example does not take); yields False where the facts refute it (the code it guards
    never runs), True otherwise."""
    with scoped(env):
        try:
            c = D.simplify(env, cond)
            answer = D.decide(env, c)
            if answer is False:
                raise Contradiction(f"`{c}` is false under the known facts")
            if answer is None:
                env._assume(c)
                narrow_disjunctions(env, c, env._assume)
        except Contradiction:
            yield False
            return
        yield True


__all__ = ["assuming", "scoped"]
