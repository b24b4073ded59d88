"""Python's integer division by a size that can be 0 (``n // (a - b)``, ``n % m``)."""

from __future__ import annotations

import safetrace.symbolic.decide as D
from safetrace.symbolic.canon import compare
from safetrace.symbolic.env import Env
from safetrace.symbolic.expr import Expr, const


def nonzero_divisor(env: Env, d: Expr) -> None:
    """Python's ``n // d`` and ``n % d`` raise ZeroDivisionError where the int `d` is 0:
    where the sizes' ranges admit that, the division at the example's sizes raises as
    Python does (a guard ``d == 0`` taken), and elsewhere ``d != 0`` is checked at run
    time, a requirement (eager raises there; code that catches it, ``try: n // (a - b)``,
    computes another branch, which the program does not hold: it refuses those sizes
    instead of raising ZeroDivisionError from the graph's size arithmetic)."""
    if env.subgraph_probe is not None and env.subgraph_probe():
        return  # (a torch.cond branch or a loop body: it may run only where d != 0)
    r = D.bounds_of(env, d)
    if r.lo > 0 or r.hi < 0:
        return
    probe = env.precondition_probe
    # (inside a ``try`` of the program's code: where d is 0 eager computes the ``except``
    # side, so ``d != 0`` is a branch the program was traced for, not a requirement; a
    # guard, which a split can trace the other side of)
    caught = probe is not None and not probe(True, True, d)
    if not d.free_symbols <= env.hints.keys():
        if caught:  # (a size read from data: the graph would raise ZeroDivisionError
            env.evaluate(compare("ne", d, const(0)))  # where eager computes: a decision
        return  # (uncaught: the graph computes it and raises as eager, as torch's does)
    if D.hint_value(env, d) == 0 and env.evaluate(compare("eq", d, const(0))):
        raise ZeroDivisionError("integer division or modulo by zero")
    if caught:
        env.evaluate(compare("ne", d, const(0)))
        return
    env.require(compare("ne", d, const(0)), env._origin(None), precondition=True)
