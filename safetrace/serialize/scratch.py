"""The scratch environment the loader evaluates a file's program in (``memory.py``), and
which size expressions it reasons about.
"""

from __future__ import annotations

from typing import Any

from safetrace.meta.symtypes import torch_env
from safetrace.symbolic import not_
from safetrace.symbolic.expr import dag_nodes

_MAX_EXPR = 48  # nodes of a size expression the analysis works with (beyond: unknown)
_MAX_DIVS = 6   # floor divisions and modulos in one (the engine's cost grows fast in them)
# the prover's decisions one load spends comparing two forms of a size case by case
# (``symbolic.cases``: a recorded size against the loader's, a cond's branches' sizes), at
# most: past them such a size is compared as if one form.  Counted, not timed, so that a
# file loads or is refused alike on every machine
CASE_DECISIONS = 512


def simple(e: Any) -> bool:
    """Whether ``e`` is small enough for the engine to answer questions about it fast (a
    file's size expressions are its author's: a product of 40 floor divisions would take
    the simplifier minutes)."""
    n = divs = 0
    for x in dag_nodes(e):
        n += 1
        divs += x.op in ("floordiv", "mod")
        if n > _MAX_EXPR or divs > _MAX_DIVS:
            return False
    return True


def scratch_env(contract: Any) -> Any:
    """An env of the contract's symbols, each ranging over its declared range with no
    example value (an undecided question then raises instead of being assumed), and its
    residual conditions as facts."""
    env = torch_env()
    env.enumerate_up_to = 16  # (a size of one symbol a branch's fact pins to a few values)
    env.case_decisions = CASE_DECISIONS
    env.positive_factors = True  # (``s0*s1 >= 1``: each >= 1, as the exporter may know)
    # (its states are never shared: a file's expressions are not kept in history.py's
    # table, and no trace replays a computation of this env)
    env.shares_state_names = False
    if contract is None:
        return env
    for s in contract.symbols:
        env.new_unbacked(s.lo if s.lo is not None else (0 if s.backed else None), s.hi,
                         name=s.name)
    conds = [c.cond for c in contract.conditions]
    for cond in conds + _resolved(conds):
        if not simple(cond):
            continue
        try:
            env.add_fact(cond)
        except Exception:  # noqa: BLE001 - a fact the engine cannot take: not assumed
            pass
    return env


def _resolved(conds: list) -> list:
    """``a`` for each pair ``a or b``, ``a or not b`` among ``conds``: a program merged
    from size specializations holds each side's condition as ``a or <not this side>``
    (``s0 % 2 == 0 or s2 >= 3`` and ``s0 % 2 == 0 or s2 <= 2``), which the engine takes
    one by one, not as the ``s0 % 2 == 0`` they give together (the exporter wrote the
    program's sizes knowing it: ``(s0 + 1)//2`` recorded as ``s0//2``)."""
    pairs = set()
    for c in conds:
        if c.op == "or" and len(c.args) == 2:
            a, b = c.args
            pairs.add((a, b))
            pairs.add((b, a))
    out: list = []
    for c in conds:  # (in the contract's order: the facts' order is the file's)
        if c.op == "or" and len(c.args) == 2:
            for a, b in (c.args, c.args[::-1]):
                if (a, not_(b)) in pairs and a not in out:
                    out.append(a)
    return out


__all__ = ["CASE_DECISIONS", "scratch_env", "simple"]
