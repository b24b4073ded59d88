"""Size arithmetic a retrace would fold wrongly at a size of 0.

torch's size symbols are positive in sympy (its convention; the conversion's are too), and
torch's symbolic value of each size node in a converted graph is simplified with that
assumption, also where the Dim's range holds 0: ``max(n, 1)`` has the value ``n``.  The
converted program computes the node at run time (1 at n == 0, as eager), but a tool that
retraces it (ExecuTorch's ``to_edge``, AOTInductor, torch's ``run_decompositions``) keeps
the symbolic value instead of the node: measured, the ``.pte`` and the AOTI package of
``x.new_ones(max(n, 1))`` returned 0 elements at n == 0, eager 1.

`folded_at_zero` finds such a node: each size node of the graph is computed at sizes where
one symbol whose range holds 0 is 0 (the others at their example values) and compared with
torch's symbolic value there, where something other than size arithmetic reads it (a
tensor operator, an assert, a cond's predicate).  A value that differs is reported, but a
condition only asserted that torch's value makes false where it holds (the retrace then
refuses an input the program accepts) narrows only, and is left."""

from __future__ import annotations

import operator
from typing import Any

import torch

_aten = torch.ops.aten
_SIZE_OPS = {operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
             operator.neg, operator.eq, operator.ne, operator.lt, operator.le, operator.gt,
             operator.ge, operator.and_, operator.or_, operator.not_, torch.sym_max,
             torch.sym_min, torch.sym_not, torch.sym_ite}


def folded_at_zero(graph: torch.fx.Graph) -> tuple[torch.fx.Node, str] | None:
    """The first size node of `graph` whose torch value differs from what it computes at a
    size of 0 in its range, with that symbol's name (see the module docstring); None where
    there is none.  A binding the graph's own asserts refuse is out of its space: left."""
    for zero, binding in _zero_bindings(graph):
        values: dict[torch.fx.Node, Any] = {}
        for node in graph.nodes:
            if node.target is _aten._assert_scalar.default and \
                    values.get(node.args[0]) is False:
                break  # (the program refuses these sizes)
            value = _computed(node, values, binding)
            if value is None:
                continue
            values[node] = value
            if node.target is _aten.sym_size.int:
                continue
            theirs = _evaluated(node.meta.get("val"), binding)
            if theirs is None or theirs == value:
                continue
            read = [u for u in node.users if u.target not in _SIZE_OPS]
            if not read:
                continue  # (only more size arithmetic reads it: judged where that is read)
            if isinstance(value, bool) and value and not theirs and \
                    all(u.target is _aten._assert_scalar.default for u in read):
                continue  # (narrowing only: the retrace refuses where this accepts)
            return node, zero
    return None


def _zero_bindings(graph: torch.fx.Graph) -> list[tuple[str, dict]]:
    """One binding per input symbol whose range holds 0: it at 0, the others at their
    example values."""
    env = None
    for node in graph.find_nodes(op="placeholder"):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and hasattr(val, "fake_mode") and \
                val.fake_mode.shape_env is not None:
            env = val.fake_mode.shape_env
            break
    if env is None:
        return []
    hints = dict(env.backed_var_to_val)
    out = []
    for s in hints:
        vr = env.var_to_range.get(s)
        if vr is not None and vr.lower <= 0 <= vr.upper and hints[s] != 0:
            out.append((str(s), {**hints, s: 0}))
    return out


def _computed(node: torch.fx.Node, values: dict, binding: dict) -> Any:
    """`node`'s value at `binding` (an int or bool) where it is a size node; else None."""
    if node.op != "call_function":
        return None
    if node.target is _aten.sym_size.int:
        x, d = node.args[0], node.args[1]
        val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
        if not isinstance(val, torch.Tensor) or not isinstance(d, int):
            return None
        return _evaluated(val.shape[d], binding)
    if node.target not in _SIZE_OPS:
        return None
    args = []
    for a in node.args:
        if isinstance(a, torch.fx.Node):
            if a not in values:
                return None
            a = values[a]
        elif not isinstance(a, (int, bool)):
            return None
        args.append(a)
    try:
        return node.target(*args)
    except (ArithmeticError, TypeError, ValueError):
        return None


def _evaluated(val: Any, binding: dict) -> Any:
    """A torch SymInt / SymBool (or int / bool) at `binding`; None where not a number."""
    if isinstance(val, (bool, int)):
        return val
    if not isinstance(val, (torch.SymInt, torch.SymBool)):
        return None
    try:
        out = val.node.expr.xreplace(binding)
        return bool(out) if isinstance(val, torch.SymBool) else int(out)
    except (TypeError, ValueError, AttributeError):
        return None
