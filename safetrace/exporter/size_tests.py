"""Size tests on sizes read from data whose every answer traces the same graph: their
run-time checks are dropped (``same_either_way``, called by exporter/splits.py)."""

from __future__ import annotations

import dataclasses
from typing import Callable

import torch

from safetrace.exporter.compare import (canonical, contract_key, is_size_fn, note,
                                        residual_conditions, same_constants, signature_key)
from safetrace.exporter.program import ExportedProgram
from safetrace.trace.asserts import assert_sym, asserts_condition


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
    ref = canonical(ep.graph, {}, _checks_of(ep.size_checks))
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
            try:
                other = run(overrides, flipped | {test})
            except Exception:  # noqa: BLE001 - the other side does not export: kept
                dead.setdefault(id(prog), (prog, []))[1].append(test)
                continue
            if not _same_frame(ep, other) or \
                    canonical(other.graph, {}, _checks_of(other.size_checks)) != ref:
                return ep
            todo.append((flipped | {test}, other))
            traced.append(other)
    if len(dead) > 1:
        return ep  # (kept checks from two graphs: not attempted)
    prog, kept = next(iter(dead.values())) if dead else (ep, [])
    gone = tuple(t for t in prog.size_checks if t not in kept)
    for node in [n for n in prog.graph.nodes if _checks_of(gone)(n)]:
        _erase_with_inputs(prog.graph, node)
    note(prog.graph, [f"`{t}` (a size read from data) traces the same graph either way: "
                       f"run-time check dropped" for t in ep.size_tests if t not in kept])
    prog.size_tests = prog.size_checks = tuple(kept)
    widen_unbacked(prog, traced)
    return prog


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
    symbols = tuple(dataclasses.replace(x, lo=hull[x.name][0], hi=hull[x.name][1])
                    if x.name in hull else x for x in prog.contract.symbols)
    prog.contract = dataclasses.replace(prog.contract, symbols=symbols)
    prog._ranges = None
    prog._check_fn = None


def _checks_of(tests: tuple[str, ...]) -> Callable[[torch.fx.Node], bool]:
    """Whether a node is the run-time check of one of `tests` (conditions as text)."""
    def check(node: torch.fx.Node) -> bool:
        return node.op == "call_function" and node.target is assert_sym and \
            len(node.args) > 1 and isinstance(node.args[1], str) and \
            any(asserts_condition(node.args[1], t) for t in tests)
    return check


def _same_frame(g: ExportedProgram, h: ExportedProgram) -> bool:
    """The same signature, constants and input contract (data-dependent symbols' ranges
    aside: the answers narrow them)."""
    skip = {x.name for c in (g.contract, h.contract) for x in c.symbols if not x.backed}
    return signature_key(g) == signature_key(h) and same_constants(g, h) and \
        contract_key(g.contract, {}, skip) == contract_key(h.contract, {}, skip) and \
        residual_conditions(g.contract, {}) == residual_conditions(h.contract, {})


def _erase_with_inputs(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    """Erase `node` and the size arithmetic that only it used."""
    inputs = [a for a in node.all_input_nodes]
    graph.erase_node(node)
    for a in inputs:
        if not a.users and a.op == "call_function" and is_size_fn(a):
            _erase_with_inputs(graph, a)
