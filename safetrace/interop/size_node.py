"""The SymNode of a symbolic size the conversion builds itself: torch's ``SymNode`` with
the answers of ``expr`` and ``maybe_as_int`` read without sympy's ``is_number``.

torch's C++ asks a SymInt argument's Python node ``maybe_as_int()`` (is it a constant
after all?) once or twice per argument of every operation (``as_strided``, a tensor's
sizes and strides being set), and torch's Python reads ``node.expr`` everywhere.  Both
first test ``self._expr.is_number``, which sympy answers by walking the expression's
arguments (``2*((s23//4))``: 4 calls, ~3 µs): a rank-4 layout of a conv net's spatial
sizes cost ~90 µs in ``as_strided``, two thirds of it these walks.  An expression's
``is_number`` never changes (sympy's are immutable), so a node known at build time to
hold a non-number answers from that: while its ShapeEnv has made no replacement its
``expr`` is ``_expr`` (torch's property returns the same then) and ``maybe_as_int()`` is
None; once one is made, torch's own code runs.  Used only for nodes the conversion builds
(``symops``' direct path, ``symbols``' input symbols), whose expressions are tested once
when first made; everything else about them is torch's ``SymNode`` (same fields, same
methods; results of their operations are torch's plain SymNodes).  ``symops``' check made
once per process compares the answers with torch's.
"""

from __future__ import annotations

from typing import Any

from torch.fx.experimental.sym_node import SymNode

_TORCH_EXPR = SymNode.expr.fget
# (the ShapeEnv's count of replacements made, in recent torch releases: where a release has
# none, every node answers through torch's own code)
_COUNTER = "_replacements_version_counter"


class SizeNode(SymNode):
    """A SymNode whose expression is not a number (checked by the caller)."""

    @property
    def expr(self) -> Any:
        env = self.shape_env
        if env is not None and getattr(env, _COUNTER, 1) == 0:
            return self._expr
        return _TORCH_EXPR(self)

    def maybe_as_int(self) -> int | None:
        env = self.shape_env
        if env is not None and getattr(env, _COUNTER, 1) == 0:
            return None  # (not a number: the class's condition; no replacement yet)
        return SymNode.maybe_as_int(self)


class IntSizeNode(SizeNode):
    """A SizeNode of an int (``pytype`` int, set once by the constructor): ``is_int``,
    ``is_float`` and ``is_bool`` answer without a Python frame.  torch's C++ asks a
    SymInt argument's node ``is_int()`` as it parses it (a rank-4 ``as_strided``: 12
    calls); the answers are the bound ``__bool__`` of True and False, C methods that
    torch's ``getattr(node, "is_int")()`` calls as it would the Python method."""

    is_int = True.__bool__
    is_float = False.__bool__
    is_bool = False.__bool__


def node_class(expr: Any, pytype: type = bool) -> type:
    """SizeNode for an expression that is not a number (IntSizeNode for an int's), else
    torch's SymNode."""
    if isinstance(expr, int) or expr.is_number:
        return SymNode
    return IntSizeNode if pytype is int else SizeNode
