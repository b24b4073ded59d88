"""The bytes a graph's tensors keep alive at once, over the sizes its inputs may take.

``candidates`` walks a graph in order: each allocating node adds its result's bytes, a
tensor is freed after the last use of it or of any view of it (an op that allocates
nothing may alias any of its inputs), and the live sum after every allocation is a
candidate for the peak (with a control-flow node's subgraphs' own peaks on top of what is
alive around them).  Sizes are ints or symbolic ints of the input sizes; ``prune`` drops
candidates another provably dominates, and ``CallCheck`` evaluates what the declared
ranges leave open with the sizes of each call, before the graph runs.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import torch

from safetrace.errors.load import memory_at_call, requirement_at_call, work_at_call

MAX_OPEN = 64  # open candidates kept after pruning (the rest become one max expression)


def candidates(graph: torch.fx.Graph, nbytes: dict, inner: dict) -> list[tuple[Any, Any]]:
    """(live bytes, node) after each allocation of ``graph``; ``nbytes``: node -> bytes
    of what it allocates (absent: unknown, counted as a view), ``inner``: control-flow node
    -> its subgraphs' candidates."""
    nodes = list(graph.nodes)
    order = {n: i for i, n in enumerate(nodes)}
    end = len(nodes)
    owners: dict = {}
    last: dict = {}
    for n in nodes:
        if n.op != "call_function":
            continue
        b = nbytes.get(n)
        if b is not None and not (isinstance(b, int) and b == 0):
            own = {n}
        else:  # a view, a Python value or unknown: keeps alive what it may alias
            own = set()
            for a in n.all_input_nodes:
                own |= owners.get(a, set())
        owners[n] = own
        use = max((end if u.op == "output" else order[u] for u in n.users), default=order[n])
        for o in own:
            last[o] = max(last.get(o, 0), use)
    frees = defaultdict(list)
    for o, i in last.items():
        frees[i].append(o)
    live: Any = 0
    out: list = []
    for n in nodes:
        if n.op != "call_function":
            continue
        for c, where in inner.get(n, ()):
            out.append((live + c, where))
        if owners[n] == {n}:
            live = live + nbytes[n]
            out.append((live, n))
        for o in frees.get(order[n], ()):
            live = live - nbytes[o]
    return _distinct(out)


def _distinct(items: list) -> list:
    """The largest int candidate and one of each distinct symbolic one."""
    best, seen, out = None, set(), []
    for value, node in items:
        if isinstance(value, int):
            if best is None or value > best[0]:
                best = (value, node)
            continue
        key = value.expr
        if key not in seen:
            seen.add(key)
            out.append((value, node))
    return ([best] if best is not None else []) + out


def prune(opened: list, env: Any) -> list:
    """Drop each open candidate that another kept one provably bounds from above."""
    kept: list = []
    for expr, node in opened:
        if any(_at_least(env, k, expr) for k, _ in kept):
            continue
        kept = [(k, w) for k, w in kept if not _at_least(env, expr, k)]
        kept.append((expr, node))
        if len(kept) > 4 * MAX_OPEN:
            break
    return kept[:MAX_OPEN] if len(kept) <= MAX_OPEN else kept


def _at_least(env: Any, a: Any, b: Any) -> bool:
    try:
        return env.bounds(a - b).lo >= 0
    except Exception:  # noqa: BLE001 - not provable
        return False


class CallCheck:
    """Refuse a call whose input sizes would make the program keep more than ``limit``
    bytes alive (InputMismatchError naming the node and the budget), before it runs."""

    def __init__(self, opened: list, contract: Any, limit: int, opaque: dict,
                 work: list | None = None, work_limit: float = math.inf,
                 required: list | None = None) -> None:
        self.limit, self.work_limit = limit, work_limit
        # symbol -> (leaf index, dim or None, coef, offset)
        self.read: dict = {k: (i, d, 1, 0) for k, (i, d) in opaque.items()}
        for i, inp in enumerate(contract.inputs):
            for d, dim in enumerate(getattr(inp, "dims", ()) or ()):
                if dim.symbol is None or dim.kind not in ("bind", "derived") or (
                        dim.kind == "derived" and dim.symbol in self.read):
                    continue  # (a symbol is read where it is bound, else derived)
                at = None if getattr(inp, "scalar", False) else d
                self.read[dim.symbol] = (i, at, dim.coef, dim.offset)
        self.items = [(e, n) for e, n in opened if e.free_symbols <= self.read.keys()]
        # what the graph's kernels require of the sizes (memory.StaticMemory.required)
        self.required = [(c, n, why) for c, n, why in required or ()
                         if c.free_symbols <= self.read.keys()]
        # the work of one call: the terms >= 0 over the declared sizes as one expression
        # (a polynomial of the input sizes: its like terms collected), each other term on
        # its own, at least 0 (negative only where its node does not run: work.Tally.bounds);
        # terms of sizes read from data are checked before their kernel
        self.work = [(c, e, n) for c, e, n, _ in work or ()
                     if e is None or e.free_symbols <= self.read.keys()]
        self.total: Any = sum(c for c, e, _ in self.work if e is None)
        self.loose: list = []
        for c, e, n, sure in work or ():
            if e is not None and e.free_symbols <= self.read.keys():
                if sure:
                    self.total = e * c + self.total
                else:
                    self.loose.append((c, e))

    def __call__(self, leaves: list) -> None:
        binding = {}
        for name, (i, d, coef, offset) in self.read.items():
            v = leaves[i] if d is None else leaves[i].shape[d]
            binding[name] = (int(v) - offset) // coef
        for cond, node, why in self.required:
            try:
                holds = cond.evaluate(binding)
            except (ArithmeticError, ValueError, TypeError):
                continue
            if not holds:
                raise requirement_at_call(node.name, str(node.target), str(cond), why,
                                          binding)
        worst, where = self.limit, None
        for expr, node in self.items:
            try:
                need = expr.evaluate(binding)
            except (ArithmeticError, ValueError, TypeError):
                continue
            if isinstance(need, (int, float)) and not isinstance(need, bool) and (
                    not math.isfinite(need) or need > worst):  # (inf, nan: no number of
                worst, where = need, node  # bytes the budget admits)
                if not math.isfinite(need):
                    break
        if where is not None:  # (the largest need, not the first over the budget)
            raise memory_at_call(where.name, str(where.target), worst, self.limit, binding)
        if self.work:
            self._work(binding)

    def _work(self, binding: dict) -> None:
        try:
            need = self.total if isinstance(self.total, int) else self.total.evaluate(binding)
        except (ArithmeticError, ValueError, TypeError):  # (a term of a node that does not
            need = sum(_term(c, e, binding) for c, e, _ in self.work)  # run here: one by one)
        else:
            for c, e in self.loose:
                need = need + _term(c, e, binding)
        if isinstance(need, (int, float)) and math.isfinite(need) and \
                need <= self.work_limit:
            return  # (else over the budget, or no finite number: inf, nan, not a number)
        largest, where = -1, self.work[0][2]
        for c, e, n in self.work:  # (the node of the largest term, for the message)
            v = _term(c, e, binding)
            if v > largest and n is not None:
                largest, where = v, n
        raise work_at_call(getattr(where, "name", "?"), str(getattr(where, "target", "?")),
                           need if isinstance(need, (int, float)) else math.nan,
                           int(self.work_limit), binding)


def _term(count: int, expr: Any, binding: dict) -> Any:
    """One work term at these sizes, at least 0: negative, or failing to evaluate (a
    ``s1 // s0`` at ``s0 == 0``), only where its node does not run."""
    if expr is None:
        return count
    try:
        v = expr.evaluate(binding)
    except (ArithmeticError, ValueError, TypeError):
        return 0
    if isinstance(v, float) and math.isnan(v):
        return v  # (no number of elements: refused)
    return count * v if isinstance(v, (int, float)) and v > 0 else 0
