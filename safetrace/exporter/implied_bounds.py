"""Input-size bounds that the program's own run-time checks imply: refused before running.

A check on a size read from data (``u0``, a static cache's length read with ``.item()``)
is an assertion inside the graph, not part of the input contract.  Together with the
other checks it may rule out every input size past a bound: transformers' StaticCache
writes ``arange(seq) + cache_len`` into a cache of 64 slots, so OPT's program asserts
``u0 >= 0`` and ``seq + u0 <= 64`` (eager raises IndexError there), and no call with
``seq > 64`` can pass both.  Such a call used to run until the assertion (the cache
length already written), or, lowered to a runtime that drops the assertion, fail inside
the runtime.  This module derives those bounds and puts them in the contract, so the
input check refuses the call before anything runs, naming the check that implies it.
The same holds for an indexing op whose indices are distinct (``arange(seq) + offset``) and
must lie in a dim of static size: ``seq <= 64`` however the offset is read (llama's
StaticCache: exporter/index_bounds.py).

Sound: an assertion of the main graph runs on every call that succeeds (the graph is
straight-line; an assertion inside a ``torch.cond`` branch or a loop body is not used), so
every accepted call meets all of them at once.  Only linear conditions are used
(``a*s0 + b*u0 + c <= 0``), with each other symbol's bound taken from the contract or
from another such assertion; the derived bound excludes only sizes at which some check
fails for every value read from data.  A program exported with
``prefer_deferred_runtime_asserts_over_guards`` keeps its checks at run time, as asked.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from typing import Any

import torch

from safetrace.exporter.contract import Contract, SymbolRange
from safetrace.exporter.index_bounds import index_relations
from safetrace.exporter.program import ExportedProgram
from safetrace.symbolic.canon import and_, eq, ge, gt, le, lt
from safetrace.symbolic.expr import Expr, const, sub, terms
from safetrace.trace.asserts import assert_sym
from safetrace.trace.source import from_text

# (coefficient per symbol, constant): sum(coef * symbol) + constant <= 0
Linear = tuple[dict[str, int], int]


def bound_by_checks(ep: ExportedProgram) -> ExportedProgram:
    """`ep` with the input-size bounds its main graph's assertions imply in its contract
    (the same program when they imply none tighter than it has)."""
    if ep.defers_checks or not ep.contract.symbols:  # (no input symbol: nothing to narrow)
        return ep
    found = _assertions(ep.graph) + _index_limits(ep.graph)
    if not found:
        return ep
    contract = ep.contract
    narrowed = _narrowed(contract, found)
    if not narrowed:
        return ep
    ep.contract = dataclasses.replace(contract, symbols=tuple(
        narrowed.get(s.name, s) for s in contract.symbols))
    ep._ranges = None  # (range_constraints and the checks are views of the contract)
    ep._check_fn = None
    return ep


def _assertions(graph: Any) -> list[tuple[Linear, Expr, str, str]]:
    """(inequality, condition, source) of each linear condition the main graph asserts,
    read from the nodes that compute it (a condition node's recorded value may be a
    simplification that holds only where the program needs it: a data split's check)."""
    out = []
    for node in graph.find_nodes(op="call_function", target=assert_sym):
        cond = _condition(node.args[0]) if node.args else None
        if cond is None:
            continue
        for lin in _linear(cond):
            out.append((lin, cond, node.meta.get("stack_trace", ""), ""))
    return out


def _index_limits(graph: Any) -> list[tuple[Linear, Expr, str, str]]:
    """``n <= L`` for each indexing op whose `n` distinct indices must lie in a dim of `L`
    (exporter/index_bounds.py): the op raises IndexError past it, in eager too."""
    out = []
    for n, most, node, what in index_relations(graph):
        cond = le(n, most)
        for lin in _linear(cond):
            out.append((lin, cond, node.meta.get("stack_trace", ""), what))
    return out


_COMPARE = {operator.le: le, operator.lt: lt, operator.ge: ge, operator.gt: gt,
            operator.eq: eq}
_ARITH = {operator.add: operator.add, operator.sub: operator.sub, operator.mul: operator.mul}
_READS = (torch.ops.aten.sym_size.int, torch.ops.aten.item.default)


def _condition(node: Any) -> Expr | None:
    """The boolean a node computes, when it is a comparison of sizes or a conjunction of
    them (None otherwise)."""
    target = getattr(node, "target", None)
    if target is operator.and_:
        parts = [_condition(a) for a in node.args]
        return None if None in parts else and_(*parts)
    fn = _COMPARE.get(target)  # type: ignore[call-overload]
    if fn is None or len(node.args) != 2:
        return None
    lhs, rhs = (_size(a) for a in node.args)
    return None if lhs is None or rhs is None else fn(lhs, rhs)


def _size(arg: Any) -> Expr | None:
    """The integer a node computes: a size, a value read from data, or +, -, * of them."""
    if type(arg) is int:
        return const(arg)
    target = getattr(arg, "target", None)
    if target in _READS:
        val = getattr(arg.meta.get("val"), "expr", None)
        return val if isinstance(val, Expr) and val.op == "sym" else None
    fn = _ARITH.get(target)  # type: ignore[call-overload]
    if fn is None or len(arg.args) != 2:
        return None
    a, b = (_size(x) for x in arg.args)
    return None if a is None or b is None else fn(a, b)


def _linear(cond: Expr) -> list[Linear]:
    """`cond` as inequalities ``... <= 0`` over integer symbols ([] when not linear)."""
    if cond.op == "and":
        return [lin for arg in cond.args for lin in _linear(arg)]
    if cond.op not in ("le", "lt", "ge", "eq") or len(cond.args) != 2:
        return []
    lhs, rhs = cond.args
    diff = _terms(sub(lhs, rhs))
    if diff is None:
        return []
    coefs, c = diff
    if cond.op == "le":
        return [(coefs, c)]
    if cond.op == "lt":
        return [(coefs, c + 1)]  # (integers: a < b is a - b + 1 <= 0)
    flipped = ({k: -v for k, v in coefs.items()}, -c)
    return [flipped] if cond.op == "ge" else [(coefs, c), flipped]


def _terms(e: Expr) -> Linear | None:
    coefs: dict[str, int] = {}
    c = 0
    for mono, k in terms(e):
        if not mono:
            c += k
        elif len(mono) == 1 and mono[0].op == "sym":
            coefs[mono[0].name] = coefs.get(mono[0].name, 0) + k  # type: ignore[index]
        else:
            return None
    return coefs, c


def _narrowed(contract: Contract, found: list) -> dict[str, SymbolRange]:
    """The input symbols whose range the assertions narrow, each with its new range and
    the origin naming the check."""
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    for s in contract.symbols:
        lo[s.name] = s.checked_lo if s.where is not None else (
            -math.inf if s.lo is None else s.lo)
        hi[s.name] = math.inf if s.hi is None else s.hi
    why: dict[tuple[str, str], tuple[Expr, str, dict, str]] = {}
    for _ in range(4):  # (a bound found may tighten another: a few rounds)
        changed = False
        for (coefs, c), cond, stack, what in found:
            for name, a in coefs.items():
                rest, used = _least_rest(coefs, name, lo, hi)
                if rest is None:
                    continue
                room = -c - rest  # a * name <= room
                if a > 0:
                    new = room // a
                    if new < hi.get(name, math.inf):
                        hi[name], changed = new, True
                        why[name, "hi"] = (cond, stack, used, what)
                else:
                    new = -(room // -a)  # (ceil(room / a) for a < 0)
                    if new > lo.get(name, -math.inf):
                        lo[name], changed = new, True
                        why[name, "lo"] = (cond, stack, used, what)
        if not changed:
            break
    out = {}
    for s in contract.symbols:
        if s.where is None or not s.backed:
            continue
        new_lo = lo[s.name] if (s.name, "lo") in why else s.lo
        new_hi = hi[s.name] if (s.name, "hi") in why else s.hi
        if (new_lo, new_hi) == (s.lo, s.hi) or (
                new_lo is not None and new_hi is not None and new_lo > new_hi):
            continue  # (no size passes: the checks fail for every call; left to them)
        side = "hi" if (s.name, "hi") in why else "lo"
        out[s.name] = dataclasses.replace(
            s, lo=None if new_lo is None else int(new_lo),
            hi=None if new_hi is None else int(new_hi),
            origin=_origin(contract, side, *why[s.name, side]))
    return out


def _least_rest(coefs: dict, name: str, lo: dict, hi: dict) -> tuple[Any, dict]:
    """The least value of the sum's terms other than `name`'s, from each symbol's bounds
    (None when one is unbounded the wrong way), and the bounds it used."""
    total = 0
    used = {}
    for other, k in coefs.items():
        if other == name:
            continue
        bound = lo.get(other, -math.inf) if k > 0 else hi.get(other, math.inf)
        if bound in (math.inf, -math.inf):
            return None, {}
        total += k * bound
        used[other] = (">=" if k > 0 else "<=", int(bound))
    return total, used


def _origin(contract: Contract, side: str, cond: Expr, stack: str, used: dict,
            what: str) -> str:
    """`` (every larger size fails the program's run-time check `x.shape[0] + u0 <= 8`
    (from ...), with u0 >= 0)``; for an index relation (`what` says why it holds): `` (every
    larger size indexes out of bounds: `x.shape[0] <= 64` (from ...): `index_copy_` takes
    ...; eager raises IndexError)``."""
    given = ", ".join(f"{n} {op} {v}" for n, (op, v) in sorted(used.items()))
    given = f", with {given}" if given else ""
    side = "larger" if side == "hi" else "smaller"
    if what:
        return (f" (every {side} size indexes out of bounds: `{contract.where_text(cond)}`"
                f"{from_text(stack)}{given}: {what}; eager raises IndexError)")
    return (f" (every {side} size fails the program's run-time check "
            f"`{contract.where_text(cond)}`{from_text(stack)}{given})")


__all__ = ["bound_by_checks"]
