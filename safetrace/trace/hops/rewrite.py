"""A paste-ready ``torch.cond`` rewrite of a data-dependent ``if`` in the user's code.

Given the frame that branched on tensor data, the ``if`` statement (or ``a if c else b``)
at that line is found in the function's source.  When both branches are simple
expressions (``return a`` / ``return b``, or ``y = a`` / ``y = b``), the rewrite passes
the tensors the branches read as operands and leaves everything else to the closure.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from types import FrameType

import torch

_SKIP_NAMES = frozenset({"torch", "self", "F", "nn", "math", "np", "st"})


def cond_rewrite(frame: FrameType | None) -> str | None:
    """``return torch.cond(c, lambda x: a, lambda x: b, (x,))`` for the ``if`` at the
    frame's line, or None when its branches are not simple expressions."""
    if frame is None:
        return None
    tensors = frozenset(k for k, v in frame.f_locals.items() if isinstance(v, torch.Tensor))
    # (keyed by the instruction: st.explain asks again at each turn of a loop, and the
    # function's source is read and parsed each time; its f_lineno walks the line table)
    key = (frame.f_code, frame.f_lasti, tensors)
    if key in _REWRITES:
        return _REWRITES[key]
    if len(_REWRITES) > 10_000:
        _REWRITES.clear()
    text = _REWRITES[key] = _rewrite(frame, tensors)
    return text


_REWRITES: dict[tuple, str | None] = {}


def _rewrite(frame: FrameType, tensors: frozenset[str]) -> str | None:
    try:
        lines, start = inspect.getsourcelines(frame.f_code)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    line = frame.f_lineno - (start if start > 0 else 1) + 1
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and node.lineno == line:
            return _from_if(node, tree, tensors)
        if isinstance(node, (ast.Assign, ast.Return)) and isinstance(node.value, ast.IfExp) \
                and node.value.lineno == line:
            e = node.value
            prefix = "return " if isinstance(node, ast.Return) else \
                " = ".join(ast.unparse(t) for t in node.targets) + " = "
            return _format(e.test, e.body, e.orelse, tensors, prefix)
    for node in ast.walk(tree):
        if isinstance(node, ast.IfExp) and node.lineno == line:
            return _format(node.test, node.body, node.orelse, tensors, None)
    return None


def _from_if(node: ast.If, tree: ast.AST, tensors: frozenset[str]) -> str | None:
    body, orelse = node.body, node.orelse
    if not orelse:  # `if c: return a` followed by `return b`
        after = _next_statement(tree, node)
        if after is None or not (len(body) == 1 and isinstance(body[0], ast.Return)):
            return _outline(node, tensors)
        orelse = [after]
    if len(body) != 1 or len(orelse) != 1:
        return _outline(node, tensors)
    a, b = body[0], orelse[0]
    if isinstance(a, ast.Return) and isinstance(b, ast.Return) and a.value and b.value:
        return _format(node.test, a.value, b.value, tensors, "return ")
    if isinstance(a, ast.Assign) and isinstance(b, ast.Assign) and \
            len(a.targets) == len(b.targets) == 1 and \
            ast.dump(a.targets[0]) == ast.dump(b.targets[0]):
        return _format(node.test, a.value, b.value, tensors,
                       f"{ast.unparse(a.targets[0])} = ")
    return _outline(node, tensors)


def _outline(node: ast.If, tensors: frozenset[str]) -> str:
    """Branches with several statements: the shape of the call, the branches as functions."""
    used = _tensor_names(node.body + node.orelse, tensors)
    params = ", ".join(used)
    return (f"def true_fn({params}): ...  # the `if` body, returning what the code after "
            f"it uses\n        def false_fn({params}): ...  # the `else` part (or the "
            f"values unchanged)\n        ... = torch.cond({ast.unparse(node.test)}, true_fn, "
            f"false_fn, {_operands(used)})")


def _tensor_names(nodes: list, tensors: frozenset[str]) -> list[str]:
    names = [n for root in nodes for n in ast.walk(root) if isinstance(n, ast.Name)]
    used: list[str] = []
    for n in sorted(names, key=lambda n: (n.lineno, n.col_offset)):  # as they are written
        if n.id in tensors and n.id not in _SKIP_NAMES and n.id not in used:
            used.append(n.id)
    return used


def _operands(used: list[str]) -> str:
    return f"({used[0]},)" if len(used) == 1 else f"({', '.join(used)})"


def _next_statement(tree: ast.AST, node: ast.stmt) -> ast.stmt | None:
    for parent in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and node in block:
                i = block.index(node)
                return block[i + 1] if i + 1 < len(block) else None
    return None


def _format(test: ast.expr, a: ast.expr, b: ast.expr, tensors: frozenset[str],
            prefix: str | None) -> str:
    used = _tensor_names([a, b], tensors)
    params = ", ".join(used)
    operands = _operands(used)
    call = (f"torch.cond({ast.unparse(test)}, lambda {params}: {ast.unparse(a)}, "
            f"lambda {params}: {ast.unparse(b)}, {operands})")
    return f"{prefix}{call}" if prefix else call
