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
example inputs, is left to the graph's assert.  A guard never divides by zero: torch's
guard function would raise ``ZeroDivisionError`` instead of refusing (``_no_zero_division``).
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

import torch
from torch.utils import _pytree

from safetrace.exporter.contract import TensorInput
from safetrace.rules.kernel_checks import kernel_checked

_ALLOWED_NAMES = frozenset(("L", "min", "max", "abs", "math", "torch", "True", "False"))


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
            # (a kernel's own check: torch raises the kernel's RuntimeError there, which
            # the graph's assert does, not a guard's AssertionError)
            if {str(x) for x in cond.cond.free_symbols} <= bound and \
                    not kernel_checked(cond.origin):
                wanted.append(code(contract.where_text(cond.cond)))
    return [g for g in map(_symbolic_min_max, map(_no_zero_division, dict.fromkeys(wanted)))
            if _holds(g, ctx)]


def _symbolic_min_max(guard: str) -> str:
    """`guard` with each ``min(a, b, ...)`` / ``max(...)`` as ``torch.sym_min`` /
    ``torch.sym_max`` (the same value on ints): Python's builtins compare their operands,
    so a tracer re-exporting the converted module (torch's, or ours) would record a branch
    on ``b < a`` where the guard only asserts the relation."""
    if "min(" not in guard and "max(" not in guard:
        return guard
    tree = ast.parse(guard, mode="eval")

    class _Sym(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            f = node.func
            if not (isinstance(f, ast.Name) and f.id in ("min", "max") and
                    len(node.args) >= 2 and not node.keywords):
                return node
            out = node.args[0]
            for arg in node.args[1:]:
                fn = ast.Attribute(ast.Name("torch", ast.Load()), f"sym_{f.id}", ast.Load())
                out = ast.Call(fn, [out, arg], [])
            return out

    return ast.unparse(_Sym().visit(tree))


def _no_zero_division(guard: str) -> str:
    """`guard` evaluated so that no ``%`` or ``//`` meets a zero divisor.

    Our conditions are in canonical order (``(a % b == 0) or (b == 0)``), which Python's
    short-circuit evaluates left to right: the operands of each ``and``/``or`` that divide
    go after those that do not (the same value wherever the original evaluates without
    raising, as no operand has an effect).  A divisor still unguarded after that (no
    earlier ``d == 0`` in an ``or`` above it, no ``d != 0`` in an ``and``) makes the guard
    ``d == 0 or (...)``: at zero the graph's own assert decides."""
    try:
        tree = ast.parse(guard, mode="eval")
    except SyntaxError:
        return guard
    if not any(isinstance(n, ast.BinOp) and isinstance(n.op, _DIVISIONS)
               for n in ast.walk(tree)):
        return guard
    tree.body = _divisions_last(tree.body)
    open_divisors = list(dict.fromkeys(_unguarded(tree.body, frozenset(), frozenset())))
    body = ast.unparse(tree.body)
    if open_divisors:
        tests = " or ".join(f"{d} == 0" for d in open_divisors)
        return f"{tests} or ({body})"
    return body


_DIVISIONS = (ast.Mod, ast.FloorDiv)


def _divides(node: ast.AST) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, _DIVISIONS) for n in ast.walk(node))


def _divisions_last(node: ast.expr) -> ast.expr:
    for child in ast.walk(node):
        if isinstance(child, ast.BoolOp):
            child.values = [v for v in child.values if not _divides(v)] + \
                           [v for v in child.values if _divides(v)]
    return node


def _unguarded(node: ast.expr, zero: frozenset, nonzero: frozenset) -> list[str]:
    """The divisors (as text) of `node`'s divisions that may be zero when reached: `zero`
    holds the divisors an enclosing ``or`` has found non-zero before (its earlier operands
    ``d == 0`` were false), `nonzero` those an enclosing ``and`` has."""
    out: list[str] = []
    if isinstance(node, ast.BoolOp):
        seen = set()
        for value in node.values:
            out += _unguarded(value, zero | seen, nonzero | seen)
            test = _zero_test(value, isinstance(node.op, ast.Or))
            if test is not None:
                seen.add(test)
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, _DIVISIONS):
        divisor = ast.unparse(node.right)
        if divisor not in zero and divisor not in nonzero and not _positive(node.right):
            out.append(divisor)
    for child in ast.iter_child_nodes(node):
        out += _unguarded(child, zero, nonzero)  # type: ignore[arg-type]
    return out


def _zero_test(node: ast.expr, in_or: bool) -> str | None:
    """``d`` where `node` is ``d == 0`` (an ``or``'s operand: false past it) or ``d != 0``
    (an ``and``'s: true past it)."""
    want = ast.Eq if in_or else ast.NotEq
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
            isinstance(node.ops[0], want) and isinstance(node.comparators[0], ast.Constant) \
            and node.comparators[0].value == 0:
        return ast.unparse(node.left)
    return None


def _positive(node: ast.expr) -> bool:
    """A divisor that cannot be zero: a non-zero constant, or ``max(..., k)`` with k > 0."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and node.value != 0
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == "max" and any(isinstance(a, ast.Constant) and isinstance(a.value, int)
                                      and a.value > 0 for a in node.args)


def _holds(guard: str, ctx: dict) -> bool:
    """Plain Python over the input sources, true of the example inputs."""
    try:
        tree = ast.parse(guard, mode="eval")
    except SyntaxError:
        return False
    if any(isinstance(n, ast.Name) and n.id not in _ALLOWED_NAMES for n in ast.walk(tree)):
        return False
    if any(isinstance(n, ast.Attribute) and n.attr not in ("size", "sym_min", "sym_max")
           for n in ast.walk(tree)):
        return False
    try:
        ok = eval(compile(tree, "<guard>", "eval"),  # noqa: S307 - our own expression
                  {"__builtins__": {"min": min, "max": max, "abs": abs}, "math": math,
                   "torch": torch}, {"L": ctx})
    except Exception:  # noqa: BLE001 - not evaluable on the example: the graph checks it
        return False
    return ok is True
