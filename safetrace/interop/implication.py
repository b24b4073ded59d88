"""Whether a condition of a retraced program is implied by the original program's contract
(``ep.run_decompositions()``: a decomposition may state a size another way than the
program did; it narrows nothing when the contract's ranges and conditions imply it).

Proved, never sampled: the contract's ranges as symbol ranges of an `Env`, its conditions
assumed, then the engine's decision; failing that, the same after two rewrites that keep
every integer value: a floor division or remainder that takes one value on the whole
space becomes that value, and a size padded up to a multiple (``t + ((c*t) % k)``,
c = -1 modulo k) becomes ``k*((t + k - 1)//k)``.
"""

from __future__ import annotations

import contextlib
from typing import Any

from safetrace.symbolic import Env
from safetrace.symbolic.canon import rebuild
from safetrace.symbolic.expr import add, const, floordiv, mul
from safetrace.symbolic.scope import assuming
from safetrace.symbolic.semantics import FCMP_OPS, FLOAT_OPS, INT_FROM_FLOAT


def implied(contract: Any, cond: Any, where: tuple = ()) -> bool:
    """Whether `cond` (over the contract's symbols) holds for every input the contract
    accepts, proved from its ranges and conditions alone: ``16*b == b*((h + 15)//16)**2``
    for ``49 <= h <= 64`` (a retrace's view of a size the program reads another way);
    with `where`, for every such input where those conditions hold too (the predicates
    choosing a cond branch)."""
    ranges = {s.name: s for s in contract.symbols}
    given = [c.cond for c in contract.conditions] + list(where)
    names = set(cond.free_symbols).union(*(c.free_symbols for c in given))
    if not names <= ranges.keys():
        return False
    env = _env(ranges, names)
    with contextlib.ExitStack() as stack:
        for c in given:
            if not stack.enter_context(assuming(env, c)):
                return True  # (no input meets the contract's conditions)
        if env.decide(cond) is True or env.decide(_fold_points(env, cond, {})) is True:
            return True
    # A size padded to a multiple (``a + ((6*a) % 7)``, DaViT's windows) in both forms: as
    # ``7*((a + 6)//7)``, the retrace's count of windows and the program's are one term
    memo: dict = {}
    rounded = _round_up(cond, memo)
    if rounded is cond:
        return False
    env = _env(ranges, names)
    with contextlib.ExitStack() as stack:
        for c in given:
            if not stack.enter_context(assuming(env, _round_up(c, memo))):
                return True
        return env.decide(rounded) is True or \
            env.decide(_fold_points(env, rounded, {})) is True


def _env(ranges: dict, names: set) -> Env:
    env = Env()
    env.shares_state_names = False
    for name in sorted(names):
        lo = 0 if ranges[name].lo is None else int(ranges[name].lo)
        env.new_backed(lo, lo, None if ranges[name].hi is None else int(ranges[name].hi),
                       name=name)
    return env


def _round_up(e: Any, memo: dict) -> Any:
    """`e` with each ``t + ((c*t) % k)`` (c = -1 modulo k: the padding that rounds t up to a
    multiple of k) written ``k*((t + k - 1)//k)``, the same value for every integer t."""
    if e in memo:
        return memo[e]
    out = e
    if e.args and e.op not in _FLOATS:
        args = tuple(_round_up(a, memo) for a in e.args)
        if any(x is not y for x, y in zip(args, e.args)):
            out = rebuild(e.op, args)
        if out.op == "add":
            terms = list(out.args)
            for m in list(terms):
                k = m.args[1].value if m.op == "mod" and m.args[1].op == "const" else 0
                if m not in terms or type(k) is not int or k < 2:
                    continue
                x = m.args[0]
                c, t = (x.args[0].value, rebuild("mul", x.args[1:]) if len(x.args) > 2
                        else x.args[1]) if x.op == "mul" and x.args[0].op == "const" else (1, x)
                if (c + 1) % k == 0 and t in terms:
                    terms.remove(m)
                    terms.remove(t)
                    terms.append(mul(const(k), floordiv(add(t, const(k - 1)), const(k))))
            if len(terms) != len(out.args):
                out = terms[0]
                for t in terms[1:]:
                    out = add(out, t)
    memo[e] = out
    return out


def _fold_points(env: Env, e: Any, memo: dict) -> Any:
    """`e` with each floor division, remainder, min and max that takes one value on the
    whole space (its bounds a single int: ``(h + 15)//16`` is 4 for ``49 <= h <= 64``)
    replaced by that value; the decision sees such an atom only as an opaque term."""
    if e in memo:
        return memo[e]
    out = e
    if e.args and e.op not in _FLOATS:
        args = tuple(_fold_points(env, a, memo) for a in e.args)
        if any(x is not y for x, y in zip(args, e.args)):
            out = rebuild(e.op, args)
        if out.op in _ATOMS:
            r = env.bounds(out)
            if r.lo == r.hi and isinstance(r.lo, int):
                out = const(r.lo)
    memo[e] = out
    return out


_ATOMS = ("floordiv", "mod", "min", "max")
_FLOATS = FLOAT_OPS | FCMP_OPS | INT_FROM_FLOAT  # (float arithmetic: left as it is)


__all__ = ["implied"]
