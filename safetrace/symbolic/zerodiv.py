"""Python's integer division by a size that can be 0 (``n // (a - b)``, ``n % m``)."""

from __future__ import annotations

import contextvars
from typing import Any, Callable

import safetrace.symbolic.decide as D
from safetrace.symbolic.canon import compare
from safetrace.symbolic.env import Env
from safetrace.symbolic.expr import Expr, const


# A division that can be by 0 inside the program's own ``try``: a branch (``caught``) that a
# split traces both sides of; where the export so made fails, ``with_caught_fallback``
# exports again with each as a run-time check instead (``_AS_CHECKS``), which refuses the
# sizes where eager computes the except side, saying so (``CAUGHT_NOTE``).
_AS_CHECKS: contextvars.ContextVar[bool] = contextvars.ContextVar("as_checks", default=False)
_SEEN: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar("caught_seen",
                                                                          default=None)
CAUGHT_MARK = "\n#caught-division: "
CAUGHT_NOTE = (" (the code catches the division by zero there: eager computes its except "
               "side, which the program does not contain)")


def caught(env: Env, cond: Any) -> bool:
    """Whether a division's requirement `cond` is inside a ``try`` of the program's code
    and is to be a branch (not while exporting again with such as checks)."""
    probe = env.precondition_probe
    if probe is None or probe(True, True, cond):
        return False
    if _AS_CHECKS.get():
        return False
    seen = _SEEN.get()
    if seen is not None:
        seen.append(True)
    return True


def caught_origin(env: Env) -> Any:
    """The origin of a caught division's run-time check (``_AS_CHECKS``): marked."""
    where = env.origin_provider() if env.origin_provider is not None else None
    return f"{where if isinstance(where, str) else ''}{CAUGHT_MARK}"


def with_caught_fallback(export: Callable[[], Any]) -> Any:
    """``export()``; where it fails after making a caught division a branch, ``export()``
    again with those as run-time checks (the error of that one if it fails too)."""
    seen: list[bool] = []
    token = _SEEN.set(seen)
    try:
        return export()
    except Exception:
        if not seen or _AS_CHECKS.get():
            raise
    finally:
        _SEEN.reset(token)
    again = _AS_CHECKS.set(True)
    try:
        return export()
    finally:
        _AS_CHECKS.reset(again)


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
    # (inside a ``try`` of the program's code: where d is 0 eager computes the ``except``
    # side, so ``d != 0`` is a branch the program was traced for, not a requirement; a
    # guard, which a split can trace the other side of)
    if not d.free_symbols <= env.hints.keys():
        if _AS_CHECKS.get() or caught(env, d):  # (a size read from data: the graph would
            env.evaluate(compare("ne", d, const(0)))  # raise ZeroDivisionError where eager
        return  # computes: a decision; uncaught, the graph raises as eager, as torch's)
    if D.hint_value(env, d) == 0 and env.evaluate(compare("eq", d, const(0))):
        raise ZeroDivisionError("integer division or modulo by zero")
    if caught(env, d):
        env.evaluate(compare("ne", d, const(0)))
        return
    probe = env.precondition_probe
    inside = probe is not None and not probe(True, True, d)   # (exporting again: a check)
    env.require(compare("ne", d, const(0)), caught_origin(env) if inside else
                env._origin(None), precondition=True)
