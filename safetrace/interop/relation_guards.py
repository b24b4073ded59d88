"""The converted program's input relations as torch guard code.

torch's ``ep.module()`` checks its inputs in a guard function built from the program's
``_guards_code`` (Python expressions over ``L['x'].size()[0]``), raising
``AssertionError("Guard failed: ...")`` before the graph runs.  Our contract's checks are
``aten._assert_scalar`` nodes of the graph (a RuntimeError); torch's own guards see only
what its placeholders' fake values say (static sizes, one symbol in two places, ranges),
not a derived dim, a relation our engine found or a residual condition.  This module
writes those checks of ours as guard code too, so a wrong input fails where torch's
program fails it, with torch's class of error.  The graph keeps its asserts (tools that
drop ``_guards_code`` still check); a guard only repeats one of them.

Each guard is our check's own expression (``Contract.where_text``) with every input dim
written as torch's source; one that is not plain Python over those sources (a function
torch's guard namespace lacks, a size no input carries), or that is not true of the
example inputs, is left to the graph's assert.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

import torch
from torch.utils import _pytree

from safetrace.exporter.contract import TensorInput

_ALLOWED_NAMES = frozenset(("L", "min", "max", "abs", "math", "True", "False"))


def relation_guards(contract: Any, leaves: list, ctx: dict, deferred: bool) -> list[str]:
    """Guard code for the contract's equalities, derived dims, bound ranges and (unless
    the export deferred them to run time, as torch's ``prefer_deferred_runtime_asserts_
    over_guards`` does) its residual conditions.  `leaves`: (key path, leaf) of each
    input, in the contract's order; `ctx`: the example inputs by argument name."""
    sources = {}
    for (path, _), inp in zip(leaves, contract.inputs):
        if isinstance(inp, TensorInput) and not inp.scalar:
            for d in range(len(inp.dims)):
                sources[inp.where(d)] = f"L{_pytree.keystr(path)}.size()[{d}]"
    if not sources:
        return []
    pattern = re.compile(r"(?<![\w\]'\".])(" + "|".join(
        re.escape(w) for w in sorted(sources, key=len, reverse=True)) + ")")

    def code(text: str) -> str:
        return pattern.sub(lambda m: sources[m.group(1)], text)

    wanted: list[str] = []
    for (path, _), inp in zip(leaves, contract.inputs):
        if not isinstance(inp, TensorInput) or inp.scalar:
            continue
        for d, dim in enumerate(inp.dims):
            if dim.kind in ("derived", "equal"):
                wanted.append(f"{sources[inp.where(d)]} == {code(contract.where_text(dim.size))}")
    bound = set()
    for s in contract.symbols:
        if s.where is None:
            continue
        bound.add(s.name)
        if s.checked_lo > 0:
            wanted.append(f"{code(s.where)} >= {s.lo}")
        if s.hi is not None:
            wanted.append(f"{code(s.where)} <= {s.hi}")
    if not deferred:
        for cond in contract.conditions:
            if {str(x) for x in cond.cond.free_symbols} <= bound:
                wanted.append(code(contract.where_text(cond.cond)))
    return [g for g in dict.fromkeys(wanted) if _holds(g, ctx)]


def _holds(guard: str, ctx: dict) -> bool:
    """Plain Python over the input sources, true of the example inputs."""
    try:
        tree = ast.parse(guard, mode="eval")
    except SyntaxError:
        return False
    if any(isinstance(n, ast.Name) and n.id not in _ALLOWED_NAMES for n in ast.walk(tree)):
        return False
    if any(isinstance(n, ast.Attribute) and n.attr != "size" for n in ast.walk(tree)):
        return False
    try:
        ok = eval(compile(tree, "<guard>", "eval"),  # noqa: S307 - our own expression
                  {"__builtins__": {"min": min, "max": max, "abs": abs}, "math": math,
                   "torch": torch}, {"L": ctx})
    except Exception:  # noqa: BLE001 - not evaluable on the example: the graph checks it
        return False
    return ok is True
