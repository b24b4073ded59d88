"""Size tests on sizes read from data whose every answer traces the same graph: their
run-time checks are dropped (``same_either_way``, called by exporter/splits.py); one whose
two answers trace two graphs is asked where the program runs (``data_splits.py``)."""

from __future__ import annotations

import dataclasses
from typing import Callable

from safetrace.exporter.branches import env_of
from safetrace.exporter.compare import (canonical, contract_key, narrower_ranges, note,
                                        residual_conditions, same_constants, signature_key)
from safetrace.exporter.data_splits import checks_of, erase_with_inputs, join_on_data
from safetrace.exporter.program import ExportedProgram
from safetrace.exporter.split_report import header, where_of_trace
from safetrace.symbolic.expr import sym


def same_either_way(run: Callable, overrides: dict, ep: ExportedProgram,
                    max_splits: int) -> ExportedProgram:
    """`ep` without the run-time checks of its size-oblivious size tests (``q_length > 1``
    on a size read from data) where the other answers trace the same graph.

    A size test is answered as for every size >= 2 and asserted, since the other branch
    was not traced.  Here the other answer of each is traced (``run(overrides, flipped)``,
    a complete export, sound where its own checks hold), and so on for the size tests
    that trace asks in turn (at most `max_splits` traces).  If every trace gives `ep`'s
    graph apart from the size tests' checks, that graph computes eager's result on every
    answer the traces cover: all of them, or, where an answer does not export (eager
    raises there: ``reshape`` of an empty tensor with ``-1``), all but that one, whose
    check stays.  Otherwise `ep` is returned as it is.

    Why it is sound: an input that passes the kept checks passes every natural test of
    some trace (walk from `ep`: at a failed test, its other side exported, since the
    tests whose other side failed are the kept checks), and that trace, sound there,
    is the same graph.
    """
    if not getattr(ep, "size_tests", ()) or max_splits <= 0:
        return ep
    ref = canonical(ep.graph, {}, checks_of(ep.size_checks))
    todo: list[tuple[frozenset, ExportedProgram]] = [(frozenset(), ep)]
    dead: dict[int, tuple[ExportedProgram, list[str]]] = {}  # the program that asked
    traced = [ep]
    traces = 0
    while todo:
        flipped, prog = todo.pop()
        for test in prog.size_tests:
            traces += 1
            if traces > max_splits:
                return ep
            alone = prog is ep and len(ep.size_tests) == 1  # (a join: one test only)
            try:
                other = run(overrides, flipped | {test})
            except Exception as exc:  # noqa: BLE001 - the other side does not export: kept
                other = _narrowed(run, overrides, flipped | {test}, exc) if alone else None
                if other is None:
                    dead.setdefault(id(prog), (prog, []))[1].append(test)
                    continue
                ranges = narrower_ranges(ep.contract, other.contract)
                return ep if ranges is None else _joined(ep, other, test, ranges)
            if not _same_frame(ep, other, writes_differ=True):
                apart = _apart(ep, other) if alone else None
                return ep if apart is None else _joined(ep, other, test, *apart)
            if not _same_frame(ep, other) or \
                    canonical(other.graph, {}, checks_of(other.size_checks)) != ref:
                return _joined(ep, other, test) if alone else ep
            todo.append((flipped | {test}, other))
            traced.append(other)
    if len(dead) > 1:
        return ep  # (kept checks from two graphs: not attempted)
    prog, kept = next(iter(dead.values())) if dead else (ep, [])
    gone = tuple(t for t in prog.size_checks if t not in kept)
    where = {t: where_of_trace(n.meta.get("stack_trace", "")) for t in gone
             for n in prog.graph.nodes if checks_of((t,))(n)}
    for node in [n for n in prog.graph.nodes if checks_of(gone)(n)]:
        erase_with_inputs(prog.graph, node)
    note(prog.graph, [line for t in ep.size_tests if t not in kept for line in (
        header("data", t, where.get(t, "")),
        "  either answer traces the same graph: no torch.cond, run-time check dropped")])
    prog.size_tests = prog.size_checks = tuple(kept)
    widen_unbacked(prog, traced)
    return prog


def _narrowed(run: Callable, overrides: dict, flipped: frozenset,
              exc: Exception) -> ExportedProgram | None:
    """The other answer's program traced for the input ranges its trace narrowed (``u0 ==
    1`` of a read from ``n`` rows: n >= 1), when narrowing is all it refused; else None."""
    narrowed = getattr(exc, "st_narrowed", None)
    if not narrowed:
        return None
    side = dict(overrides)
    for name, lo, hi, _, _, hint, _ in narrowed:
        side[name] = (hint, lo, hi)
    try:
        return run(side, flipped)
    except Exception:  # noqa: BLE001 - the other side does not export: kept
        return None


def _apart(ep: ExportedProgram, other: ExportedProgram) -> tuple | None:
    """({input size symbol: `other`'s (lo, hi)} where `other` was traced for part of
    `ep`'s range only, the same where `ep` was traced for part of `other`'s) where the two
    sides' ranges differ so (one inside the other, for each symbol); else None."""
    mine = {x.name: (x.lo, x.hi) for x in ep.contract.symbols if x.backed}
    theirs = {x.name: (x.lo, x.hi) for x in other.contract.symbols if x.backed}
    if mine.keys() != theirs.keys():
        return None
    ranges, own = {}, {}
    for name, (lo, hi) in mine.items():
        olo, ohi = theirs[name]
        if (lo, hi) == (olo, ohi):
            continue
        if _inside((olo, ohi), (lo, hi)):
            ranges[name] = (olo, ohi)
        elif _inside((lo, hi), (olo, ohi)):
            own[name] = (lo, hi)
        else:
            return None
    return (ranges, own) if ranges or own else None


def _inside(a: tuple, b: tuple) -> bool:
    """Whether range `a` (lo, hi; None: unbounded) lies inside range `b`."""
    return (b[0] is None or (a[0] is not None and a[0] >= b[0])) and \
        (b[1] is None or (a[1] is not None and a[1] <= b[1]))


def _joined(ep: ExportedProgram, other: ExportedProgram, test: str,
            ranges: dict | None = None, own: dict | None = None) -> ExportedProgram:
    """`ep` and its size test's other side as one program that asks the test where it
    runs (``data_splits.py``), or `ep` with its assert where they cannot be joined."""
    if not _same_frame(ep, other, writes_differ=True, narrowed={**(ranges or {}),
                                                                **(own or {})}):
        return ep
    checks = [n for n in ep.graph.nodes if checks_of((test,))(n)]
    joined = join_on_data(ep, other, test, checks[0], ranges, own) \
        if len(checks) == 1 else None
    if joined is None:
        return ep
    widen_unbacked(joined, [ep, other])
    return joined


def _written_aside(ep: ExportedProgram) -> tuple:
    k = signature_key(ep)
    return k[:1] + (tuple(o for o in k[1] if o[0] != "buffer_mutation"),) + k[2:]


def widen_unbacked(prog: ExportedProgram, traced: list[ExportedProgram]) -> None:
    """The ranges of `prog`'s data-dependent symbols: the hull of the traces' (each side's
    answer narrowed them: ``u0 >= 2`` on one side, ``u0 <= 1`` on the other)."""
    hull: dict[str, tuple] = {}
    for t in traced:
        for x in t.contract.symbols:
            if not x.backed:
                lo, hi = hull.get(x.name, (x.lo, x.hi))
                hull[x.name] = (None if lo is None or x.lo is None else min(lo, x.lo),
                                None if hi is None or x.hi is None else max(hi, x.hi))
    for t in traced:  # (a side whose answer made one a number: ``u0 == 0``; its value, or
        mine = {x.name for x in t.contract.symbols}  # any where it is not known)
        for name, (lo, hi) in list(hull.items()):
            if name not in mine:
                v = _pinned_value(t, name)
                hull[name] = (None, None) if v is None else (
                    None if lo is None else min(lo, v), None if hi is None else max(hi, v))
    symbols = tuple(dataclasses.replace(x, lo=hull[x.name][0], hi=hull[x.name][1])
                    if x.name in hull else x for x in prog.contract.symbols)
    prog.contract = dataclasses.replace(prog.contract, symbols=symbols)
    prog._ranges = None
    prog._check_fn = None


def _pinned_value(ep: ExportedProgram, name: str) -> int | None:
    """The number a trace's answers made its symbol `name`, else None."""
    env = env_of(ep.graph)
    v = None if env is None else env.replacements.get(sym(name))
    return int(v.value) if v is not None and v.op == "const" else None


def _same_frame(g: ExportedProgram, h: ExportedProgram, writes_differ: bool = False,
                narrowed: dict | None = None) -> bool:
    """The same signature, constants and input contract (data-dependent symbols' ranges
    aside: the answers narrow them); with `writes_differ`, the buffers each writes aside
    (a torch.cond's branches return every buffer either writes); `narrowed`: input size
    symbols whose ranges may differ too."""
    skip = {x.name for c in (g.contract, h.contract) for x in c.symbols if not x.backed}
    skip |= set(narrowed or ())
    key = _written_aside if writes_differ else signature_key
    return key(g) == key(h) and same_constants(g, h) and \
        contract_key(g.contract, {}, skip) == contract_key(h.contract, {}, skip) and \
        residual_conditions(g.contract, {}) == residual_conditions(h.contract, {})
