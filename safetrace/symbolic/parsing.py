"""Parsing the Python form of expressions (``str(e)``) back into expressions.

Types follow Python: a float operand or a true division makes a float operation, so
``s0*0.7 >= 3.5`` parses to the float comparison it prints from.
"""

from __future__ import annotations

import ast
from typing import Iterable

import safetrace.symbolic.floats as F
from safetrace.symbolic.canon import and_, compare, minmax, not_, or_
from safetrace.symbolic.semantics import MATH_FNS
from safetrace.symbolic.expr import (
    Expr, add_many, const, fconst, floordiv, fsym, mod, mul, neg, sub, sym,
)


def parse(src: str, floats: Iterable[str] = ()) -> Expr:
    """Parse the Python form printed by ``str(expr)`` back into an Expr.

    A float read from data (``fsym``) prints as its bare name, like an int symbol: the
    names in ``floats`` are such floats (``Env.float_names()`` of the env that made them)."""
    try:
        tree = ast.parse(src.strip(), mode="eval")
    except SyntaxError as err:
        raise ValueError(f"cannot parse symbolic expression {src!r}: {err.msg}") from None
    return _Parser(src, frozenset(floats)).conv(tree.body)


def _float_arg(x: Expr) -> Expr:
    return x if F.is_float(x) else F.fun("float", x)


_BIN = {ast.Add: lambda a, b: add_many((a, b)), ast.Sub: sub, ast.Mult: mul,
        ast.FloorDiv: floordiv, ast.Mod: mod}
_CMPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt",
         ast.GtE: "ge"}


_FBIN_AST = {ast.Add: "fadd", ast.Sub: "fsub", ast.Mult: "fmul", ast.Div: "fdiv",
             ast.FloorDiv: "ffloordiv", ast.Pow: "fpow"}


class _Parser:
    """One parse: the source (for messages) and the names of float symbols."""

    def __init__(self, src: str, floats: frozenset[str]) -> None:
        self.src, self.floats = src, floats

    def conv(self, n: ast.AST) -> Expr:
        if isinstance(n, ast.Constant) and isinstance(n.value, float):
            return fconst(n.value)
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return const(n.value)
        if isinstance(n, ast.Name):
            return fsym(n.id) if n.id in self.floats else sym(n.id)
        if isinstance(n, ast.BinOp) and type(n.op) in _FBIN_AST:
            a, b = self.conv(n.left), self.conv(n.right)
            # Python's own typing: a float operand, or a true division, makes the result a float
            if F.is_float(a) or F.is_float(b) or isinstance(n.op, (ast.Div, ast.Pow)):
                return F.fbin(_FBIN_AST[type(n.op)], a, b)
            return _BIN[type(n.op)](a, b)
        if isinstance(n, ast.BinOp) and type(n.op) in _BIN:
            return _BIN[type(n.op)](self.conv(n.left), self.conv(n.right))
        if isinstance(n, ast.UnaryOp):
            x = self.conv(n.operand)
            if isinstance(n.op, ast.USub):
                return F.fun("fneg", x) if F.is_float(x) else neg(x)
            if isinstance(n.op, ast.UAdd):
                return x
            if isinstance(n.op, ast.Not):
                return not_(x)
        if isinstance(n, ast.BoolOp):
            xs = [self.conv(v) for v in n.values]
            return and_(*xs) if isinstance(n.op, ast.And) else or_(*xs)
        if isinstance(n, ast.Compare):
            left = self.conv(n.left)
            conds = []
            for o, r in zip(n.ops, n.comparators):
                if type(o) not in _CMPS:
                    break
                right = self.conv(r)
                conds.append(compare(_CMPS[type(o)], left, right))
                left = right
            else:
                return and_(*conds)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and len(n.args) == 1 and \
                isinstance(n.func.value, ast.Name) and n.func.value.id == "math" and \
                f"f{n.func.attr}" in MATH_FNS and not n.keywords:
            return F.fun(f"f{n.func.attr}", _float_arg(self.conv(n.args[0])))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.args and not n.keywords:
            name = n.func.id
            if name in ("min", "max"):
                items = [self.conv(a) for a in n.args]
                if len(items) > 1 and all(F.is_float(x) for x in items):
                    acc = items[0]
                    for x in items[1:]:
                        acc = F.fbin(f"f{name}", acc, x)
                    return acc
                return minmax(name, items)
            ops = {"float": "float", "int": "trunc", "round": "round"}
            if name in ops and len(n.args) == 1:
                x = self.conv(n.args[0])
                if name == "float" or F.is_float(x):
                    return F.fun(ops[name], x)
        raise ValueError(f"unsupported syntax in symbolic expression {self.src!r}: "
                         f"{ast.dump(n)[:60]}")
