"""Printing expressions as Python source, parsing it back, and evaluating under a binding.

The printed form is valid Python with exactly the semantics of the expression when the
symbol names are local int variables: ``//`` and ``%`` floor like Python, ``min``/``max`` are
the builtins, conditions use ``and``/``or``/``not``.  ``parse(str(e)) is e`` for every ``e``.
"""

from __future__ import annotations

import ast
from typing import Mapping

from safetrace.symbolic.canon import and_, compare, floordiv, minmax, mod, not_, or_
from safetrace.symbolic.expr import Expr, add_many, const, mul, neg, sub, sym

_OR, _AND, _NOT, _CMP, _ADD, _MUL, _UNARY, _ATOM = 1, 2, 3, 4, 5, 6, 7, 9
_CMP_SYM = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "ge": ">="}


def _prec(e: Expr) -> int:
    op = e.op
    if op == "const":
        return _UNARY if type(e.value) is int and e.value < 0 else _ATOM
    if op in ("sym", "min", "max"):
        return _ATOM
    if op == "add":
        return _ADD
    if op in ("mul", "floordiv", "mod"):
        return _MUL
    if op in _CMP_SYM:
        return _CMP
    return {"not": _NOT, "and": _AND, "or": _OR}[op]


def _p(e: Expr, ctx: int) -> str:
    s = str(e)
    return f"({s})" if _prec(e) < ctx else s


def _is_negative_term(t: Expr) -> bool:
    if t.op == "const":
        return type(t.value) is int and t.value < 0
    return t.op == "mul" and t.args[0].op == "const" and t.args[0].value < 0  # type: ignore


def to_str(e: Expr) -> str:
    """Python source for ``e`` (used by ``str(e)``)."""
    op = e.op
    if op == "const":
        return repr(e.value)
    if op == "sym":
        return e.name  # type: ignore[return-value]
    if op == "add":
        parts: list[str] = []
        for i, t in enumerate(e.args):
            negative = i > 0 and _is_negative_term(t)
            if negative:
                t = neg(t)
            s = f"({t})" if t.op == "mod" else _p(t, _ADD)
            parts.append((" - " if negative else " + ") + s if i else s)
        return "".join(parts)
    if op == "mul":
        args = e.args
        coeff = ""
        if args[0].op == "const":
            c = args[0].value
            coeff = "-" if c == -1 else f"{c}*"
            args = args[1:]
        body = "*".join(_p(a, _MUL + 1) for a in args)
        if coeff == "-" and len(args) == 1 and _prec(args[0]) < _UNARY:
            return f"-({args[0]})"
        return coeff + body
    if op == "floordiv":
        return f"{_p(e.args[0], _MUL + 1)}//{_p(e.args[1], _MUL + 1)}"
    if op == "mod":
        return f"{_p(e.args[0], _MUL + 1)} % {_p(e.args[1], _MUL + 1)}"
    if op in ("min", "max"):
        return f"{op}({', '.join(str(a) for a in e.args)})"
    if op in _CMP_SYM:
        return f"{_p(e.args[0], _CMP + 1)} {_CMP_SYM[op]} {_p(e.args[1], _CMP + 1)}"
    if op == "not":
        return f"not ({e.args[0]})"
    return f" {op} ".join(f"({a})" for a in e.args)


def evaluate(e: Expr, b: Mapping[str, int]) -> int | bool:
    """Value of ``e`` with symbols bound by name, with Python semantics."""
    op = e.op
    if op == "const":
        return e.value  # type: ignore[return-value]
    if op == "sym":
        return b[e.name]  # type: ignore[index]
    if op == "add":
        s = 0
        for a in e.args:
            s += evaluate(a, b)
        return s
    if op == "mul":
        p = 1
        for a in e.args:
            p *= evaluate(a, b)
        return p
    if op == "floordiv":
        return evaluate(e.args[0], b) // evaluate(e.args[1], b)
    if op == "mod":
        return evaluate(e.args[0], b) % evaluate(e.args[1], b)
    if op == "min":
        return min(evaluate(a, b) for a in e.args)
    if op == "max":
        return max(evaluate(a, b) for a in e.args)
    if op == "and":
        return all(evaluate(a, b) for a in e.args)
    if op == "or":
        return any(evaluate(a, b) for a in e.args)
    if op == "not":
        return not evaluate(e.args[0], b)
    x, y = evaluate(e.args[0], b), evaluate(e.args[1], b)
    if op == "eq":
        return x == y
    if op == "ne":
        return x != y
    if op == "lt":
        return x < y
    if op == "le":
        return x <= y
    return x >= y


_BIN = {ast.Add: lambda a, b: add_many((a, b)), ast.Sub: sub, ast.Mult: mul,
        ast.FloorDiv: floordiv, ast.Mod: mod}
_CMPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt",
         ast.GtE: "ge"}


def parse(src: str) -> Expr:
    """Parse the Python form printed by ``str(expr)`` back into an Expr."""
    try:
        tree = ast.parse(src.strip(), mode="eval")
    except SyntaxError as err:
        raise ValueError(f"cannot parse symbolic expression {src!r}: {err.msg}") from None
    return _conv(tree.body, src)


def _conv(n: ast.AST, src: str) -> Expr:
    if isinstance(n, ast.Constant) and isinstance(n.value, int):
        return const(n.value)
    if isinstance(n, ast.Name):
        return sym(n.id)
    if isinstance(n, ast.BinOp) and type(n.op) in _BIN:
        return _BIN[type(n.op)](_conv(n.left, src), _conv(n.right, src))
    if isinstance(n, ast.UnaryOp):
        x = _conv(n.operand, src)
        if isinstance(n.op, ast.USub):
            return neg(x)
        if isinstance(n.op, ast.UAdd):
            return x
        if isinstance(n.op, ast.Not):
            return not_(x)
    if isinstance(n, ast.BoolOp):
        xs = [_conv(v, src) for v in n.values]
        return and_(*xs) if isinstance(n.op, ast.And) else or_(*xs)
    if isinstance(n, ast.Compare):
        left = _conv(n.left, src)
        conds = []
        for o, r in zip(n.ops, n.comparators):
            if type(o) not in _CMPS:
                break
            right = _conv(r, src)
            conds.append(compare(_CMPS[type(o)], left, right))
            left = right
        else:
            return and_(*conds)
    if (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("min", "max")
            and n.args and not n.keywords):
        return minmax(n.func.id, [_conv(a, src) for a in n.args])
    raise ValueError(f"unsupported syntax in symbolic expression {src!r}: {ast.dump(n)[:60]}")
