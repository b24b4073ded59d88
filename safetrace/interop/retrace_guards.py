"""The decisions a deploy tool's retrace took on the example's sizes, checked over the
program's declared space.

A tool that lowers ``ep.to_torch()`` runs the program again on fake tensors (ExecuTorch's
passes, torch's decompositions), all at one stand-in size per dim.  Each decision on a
dynamic size it meets (``is_contiguous`` of a tensor of ``n - 1`` rows, a broadcast, a
size split's branch run at the other side's size) is kept as a fact of the program's
ShapeEnv: a guard, a narrowed range, a symbol replaced by a number.  The artifact is then
planned and specialized for the sizes where those facts hold (ExecuTorch: memory capacity,
static output sizes), and runs other sizes the program accepts wrongly, or stops in a
kernel.

``taken_guards`` reads those facts from the lowered program's input placeholders and
evaluates them at the sizes the contract accepts (every size of a bounded Dim, up to a
budget of points; past it the ends, the ends' neighbours and a spread); the first size the
program accepts where one fails is returned, with the stretch of sizes around the example
where all hold (for the fix).
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any

import sympy
import torch

from safetrace.errors import interop as EI
from safetrace.exporter.contract import TensorInput
from safetrace.interop.divisions import safe_conditions
from safetrace.interop.hops import shape_env_of
from safetrace.interop.retrace_pins import new_guards

_BUDGET = 4096  # points of the declared space evaluated


def taken_guards(placeholders: list[Any], contract: Any, guards: bool = False,
                 checked: frozenset = frozenset(), extra: tuple = (),
                 ranges: bool = True) -> tuple | None:
    """`(where, size, fact, lo, hi, symbol)`: the input dim (``z.shape[0]``) and a size of it the
    program accepts where a fact the retrace took (`fact`, text) does not hold, and the
    stretch ``lo..hi`` of that dim's sizes around the example where every fact holds; None
    where every fact holds wherever the program accepts.  `placeholders`: the lowered
    program's user-input nodes, one per contract input.  The facts: each input symbol's
    range and replacement (what ExecuTorch plans memory and specializes from); with
    `guards`, also every guard on input symbols (torch records benign ones, ``n != 1`` from
    a broadcast, in any program: read them where a branch ran at a foreign size).
    `checked`: (tensor input, dim) pairs the .pte checks at one size (left out).
    `extra`: more facts, as ``decided_facts`` and ``executorch_plans`` make them (those on
    input symbols only are read); `ranges`: False leaves the ranges and replacements out
    (a tool that plans no memory from them)."""
    symbols: dict[str, Any] = {}   # contract symbol -> torch symbol
    where: dict[str, str] = {}
    env = None
    tensors = [(inp, node) for inp, node in zip(contract.inputs, placeholders)
               if isinstance(inp, TensorInput)]
    for k, (inp, node) in enumerate(tensors):
        if inp.scalar or node is None:
            continue
        shape = getattr(node.meta.get("val"), "shape", None)
        if shape is None or len(shape) != len(inp.dims):
            continue
        for d, dim in enumerate(inp.dims):
            size = shape[d]
            if dim.kind != "bind" or not isinstance(size, torch.SymInt) or (k, d) in checked:
                continue  # (pinned where the .pte checks that size: `specialized`)
            expr = size.node._expr
            if isinstance(expr, sympy.Symbol):
                symbols[dim.symbol] = expr
                where[dim.symbol] = inp.where(d)
                env = size.node.shape_env
    if env is None or not symbols:
        return None
    mine = set(symbols.values())
    facts = _facts(env, mine, guards) if ranges else []
    facts += [f for f in extra if f[3] and f[3] <= mine]
    if not facts:
        return None
    ranges = {s.name: (s.checked_lo, s.hi) for s in contract.symbols if s.name in symbols}
    if any(hi is None for _, hi in ranges.values()):
        return None  # (an unbounded Dim: refused before, `_bounded`)
    conditions = safe_conditions(contract)
    names = sorted(symbols)
    hints = {n: _hint(symbols[n], env, ranges[n]) for n in names}
    for point in _points(names, ranges, hints):
        if not _accepts(contract, conditions, point):
            continue
        binding = {symbols[n]: sympy.Integer(v) for n, v in point.items()}
        small = any(v < 2 for v in point.values())
        for text, holds, guard, syms in facts:
            if guard and small:
                continue  # (torch's guards at sizes 0 and 1: see `_facts`)
            if holds(binding) is False:
                name = next((n for n in names if symbols[n] in syms and
                             point[n] != hints[n]), None) or \
                    next(n for n in names if symbols[n] in syms)
                lo, hi = _stretch(name, hints, ranges, facts, symbols, contract, conditions)
                return where[name], point[name], text, lo, hi, name
    return None


# (where torch's kernels decide on sizes for a tensor's strides only: its contiguity, a
# functional wrapper's layout; ExecuTorch keeps a dim order, not these strides)
_LAYOUT_ONLY = ("in is_contiguous)", "in check_contiguous_sizes_strides)",
                "in is_non_overlapping_and_dense)", "in is_channels_last_contiguous",
                "in _compute_contiguous_strides)", "functional_tensor.py")


def layout_decisions(env: Any, since: int) -> set:
    """The guards `env` holds after its first `since` that torch's kernels took for a
    tensor's layout alone (``Eq(n % 3, 0)`` of an empty slice's wrapper at the example):
    ``mod_head`` of benchmarks/deploy_sizes.py lowers and runs every size as eager with
    them false.  A decision on sizes the program computes with (``unfold``'s step
    ``max(w//2, 1)`` taken as 1: the .pte gave other values at w = 4..9) is read."""
    guards = getattr(env, "guards", ())[since:] if env is not None else ()
    return {g.expr for g in guards
            if any(site in str(getattr(g, "sloc", "")) for site in _LAYOUT_ONLY)}


def decided_facts(tep: Any, since: int) -> list[tuple[str, Any, bool, set]]:
    """Facts of the decisions a lowering of `tep` took on size expressions after the
    ShapeEnv's first `since` guards (``retrace_pins.new_guards``, less the layout-only
    ones), read as guards are: at sizes of 2 or more."""
    env = shape_env_of([n.meta.get("val") for n in tep.graph.find_nodes(op="placeholder")])
    layout = layout_decisions(env, since)
    return [(str(e), _evaluator(e), True, e.free_symbols) for e in new_guards(tep, since)
            if e not in layout]


def refuse_decisions(tep: Any, contract: Any, since: int, tool: str) -> None:
    """Raise where a decision `tool`'s retrace of `tep` took at the example's sizes
    (after the first `since` guards) is false at a size the program accepts: the
    artifact holds that decision as a fact of its graph."""
    facts = decided_facts(tep, since)
    if not facts or size_split(tep):
        # (a size split's branches are traced at each other's sizes: their decisions hold
        # under the branch's predicate, which torch.onnx and inductor keep as a cond)
        return
    user = set(tep.graph_signature.user_inputs)
    placeholders = [n for n in tep.graph.find_nodes(op="placeholder") if n.name in user]
    found = taken_guards(placeholders, contract, extra=tuple(facts), ranges=False)
    if found is not None:
        raise_taken(found, contract, tep, tool, False)


def size_split(tep: Any) -> bool:
    """Whether `tep` holds a ``torch.cond`` on a condition of sizes (a size split)."""
    return any(n.op == "call_function" and n.target is torch.ops.higher_order.cond and
               isinstance(getattr(n.args[0], "meta", {}).get("val"), torch.SymBool)
               for m in tep.graph_module.modules() if isinstance(m, torch.fx.GraphModule)
               for n in m.graph.nodes)


def raise_taken(found: tuple, contract: Any, tep: Any, tool: str, split: bool) -> None:
    """The catalogue's ``lowering_specialized`` of a `taken_guards` result, the fact's
    symbols named as the user's Dims."""
    where, size, fact, lo, hi, symbol = found
    dims = [dim for inp in contract.inputs if isinstance(inp, TensorInput)
            for dim in inp.dims if dim.symbol == symbol]
    declared = next((d.declared for d in dims if d.declared), "") or ""
    label = re.search(r"Dim\('([^']+)'", declared)
    labels = tep.graph_module.meta.get("safetrace_dim_labels") or {}
    if labels:
        names = sorted(labels, key=len, reverse=True)
        fact = re.sub(r"\b(" + "|".join(map(re.escape, names)) + r")\b",
                      lambda m: labels[m.group(1)], fact)
    raise EI.lowering_specialized(tool, where, size, fact, lo, hi,
                                  label.group(1) if label else symbol, split)


def _facts(env: Any, mine: set, guards: bool) -> list[tuple[str, Any]]:
    """(text, holds, is a guard, its symbols) of each range and replacement (and with `guards`, each
    guard) `env` holds on `mine` only.  A guard is judged at sizes >= 2 only: torch
    assumes any size symbol is at least 2 and records ``n != 1`` (a broadcast) in almost
    every program, which ExecuTorch's kernels do not rely on (measured: the .pte runs 0 and
    1 as eager where such a guard stands); a guard false at a larger size is a
    specialization (a size split's branch sized at the other side's stand-in size)."""
    out = []
    for guard in getattr(env, "guards", ()) if guards else ():
        expr = guard.expr
        if expr.free_symbols and expr.free_symbols <= mine:
            out.append((str(expr), _evaluator(expr), True, expr.free_symbols))
    for sym in mine:
        vr = env.var_to_range.get(sym)
        if vr is not None:
            # (a lower end of 2 is torch's assumption on any size symbol, which
            # ExecuTorch's kernels do not rely on: read past 2 only)
            if _above_two(vr.lower):
                out.append((f"{sym} >= {vr.lower}", _in_range(sym, vr.lower, sympy.oo),
                            False, {sym}))
            # (and the upper end, which plans memory: a .pte planned below the declared
            # maximum refuses the sizes above it, in set_inputs or a kernel, with
            # ExecuTorch's bare error code; a convolution's backend choice at one thread
            # guards `batch < 16`)
            if _finite(vr.upper):
                out.append((f"{sym} <= {vr.upper}", _in_range(sym, -sympy.oo, vr.upper),
                            False, {sym}))
        value = env.replacements.get(sym)
        if value is not None and value != sym and value.free_symbols <= mine:
            out.append((f"{sym} == {value}", _evaluator(sympy.Eq(sym, value)), False,
                        {sym}))
    return out


def _finite(hi: Any) -> bool:
    try:
        return bool(hi < sympy.oo) and bool(hi < int(1e18))
    except TypeError:
        return False


def _above_two(lo: Any) -> bool:
    try:
        return bool(lo > 2)
    except TypeError:
        return False


def _evaluator(expr: Any) -> Any:
    def holds(binding: dict) -> bool | None:
        try:
            value = expr.xreplace(binding)
            value = value.doit() if hasattr(value, "doit") else value
        except Exception:  # noqa: BLE001 - a fact sympy cannot evaluate: not judged
            return None
        if value in (sympy.true, True):
            return True
        if value in (sympy.false, False):
            return False
        return None
    return holds


def _in_range(sym: Any, lo: Any, hi: Any) -> Any:
    def holds(binding: dict) -> bool | None:
        v = binding.get(sym)
        if v is None:
            return None
        try:
            return bool(lo <= v) and bool(v <= hi)
        except TypeError:  # (an end sympy cannot compare: not judged)
            return None
    return holds


def _hint(sym: Any, env: Any, rng: tuple) -> int:
    values = getattr(env, "backed_var_to_val", None)
    if values is None:
        values = getattr(env, "var_to_val", {})
    hint = values.get(sym)
    return int(hint) if hint is not None else rng[0]


def _points(names: list[str], ranges: dict, hints: dict) -> Any:
    """Every point of the box (in order of distance from the hints, per axis), or, past
    the budget, each axis's ends, their neighbours, the hint's neighbours and a spread."""
    axes = []
    total = 1
    for n in names:
        lo, hi = ranges[n]
        total *= hi - lo + 1
        axes.append(list(range(lo, hi + 1)))
    if total > _BUDGET:
        per = max(2, int(_BUDGET ** (1 / len(names))))
        axes = []
        for n in names:
            lo, hi = ranges[n]
            picks = {lo, lo + 1, hi, hi - 1, hints[n] - 1, hints[n] + 1}
            step = max(1, (hi - lo) // per)
            picks.update(range(lo, hi + 1, step))
            axes.append(sorted(v for v in picks if lo <= v <= hi))
    for values in itertools.product(*axes):
        yield dict(zip(names, values))


def _accepts(contract: Any, conditions: list, point: dict) -> bool:
    for c in conditions:
        if not c.free_symbols <= {*point}:
            continue  # (a condition on a symbol read from data, or another input)
        try:
            if not bool(c.evaluate(point)):
                return False
        except (ZeroDivisionError, ValueError):
            return False
    return True


def _stretch(name: str, hints: dict, ranges: dict, facts: list, symbols: dict,
             contract: Any, conditions: list) -> tuple[int, int]:
    """The sizes of `name` around its hint (others at theirs) where every fact holds."""
    def ok(v: int) -> bool:
        point = {**hints, name: v}
        binding = {symbols[n]: sympy.Integer(x) for n, x in point.items()}
        return all(holds(binding) is not False for _, holds, guard, _ in facts
                   if not (guard and min(point.values()) < 2))

    lo, hi = ranges[name]
    a = b = min(max(hints[name], lo), hi)
    while a - 1 >= lo and ok(a - 1):
        a -= 1
    while b + 1 <= hi and ok(b + 1):
        b += 1
    return a, b if b < math.inf else hi
