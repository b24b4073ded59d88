"""Printing expressions as Python source, parsing it back, and evaluating under a binding.

The printed form is valid Python with exactly the semantics of the expression when the
symbol names are local int variables: ``//`` and ``%`` floor like Python, ``min``/``max`` are
the builtins, conditions use ``and``/``or``/``not``.  ``parse(str(e)) is e`` for every ``e``.
"""

from __future__ import annotations

import ast
from typing import Mapping

import math

from safetrace.symbolic import floats as F
from safetrace.symbolic.canon import and_, compare, floordiv, minmax, mod, not_, or_
from safetrace.symbolic.expr import Expr, add_many, const, fconst, mul, neg, sub, sym

_OR, _AND, _NOT, _CMP, _ADD, _MUL, _UNARY, _POW, _ATOM = 1, 2, 3, 4, 5, 6, 7, 8, 9
_CMP_SYM = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "ge": ">=",
            "flt": "<", "fle": "<=", "fgt": ">", "fge": ">=", "feq": "==", "fne": "!="}
_FBIN_SYM = {"fadd": (" + ", _ADD), "fsub": (" - ", _ADD), "fmul": ("*", _MUL),
             "fdiv": ("/", _MUL), "ffloordiv": (" // ", _MUL), "fpow": ("**", _POW)}
_CALL = {"float": "float", "trunc": "int", "round": "round"}


def _prec(e: Expr) -> int:
    op = e.op
    if op == "const":
        return _UNARY if type(e.value) is int and e.value < 0 else _ATOM
    if op == "fconst":
        v = float(e.value)  # type: ignore[arg-type]
        return _UNARY if math.copysign(1.0, v) < 0 or v != v else _ATOM
    if op in ("sym", "min", "max") or op in _CALL:
        return _ATOM
    if op in _FBIN_SYM:
        return _FBIN_SYM[op][1]
    if op == "fneg":
        return _UNARY
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
    if op in F.FLOAT_OPS or op in _CALL:
        return _float_str(e)
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


def _float_str(e: Expr) -> str:
    op = e.op
    if op == "fconst":
        v = float(e.value)  # type: ignore[arg-type]
        if math.isinf(v):  # valid Python in the generated checks, which know no `inf`
            return "1e999" if v > 0 else "-1e999"
        return "(1e999 - 1e999)" if v != v else repr(v)
    if op in _CALL:
        return f"{_CALL[op]}({e.args[0]})"
    if op == "fneg":
        return f"-{_p(e.args[0], _UNARY)}"
    sep, prec = _FBIN_SYM[op]
    a, b = e.args
    if op == "fpow":  # right-associative, binds tighter than a unary minus on its left
        left = f"({a})" if _prec(a) <= _POW else str(a)
        return f"{left}**{_p(b, _UNARY)}"
    # left-associative: the same precedence needs parentheses on the right only
    return f"{_p(a, prec)}{sep}{_p(b, prec + 1)}"


def evaluate(e: Expr, b: Mapping[str, int]) -> int | bool | float:
    """Value of ``e`` with symbols bound by name, with Python semantics."""
    op = e.op
    if op == "const" or op == "fconst":
        return e.value  # type: ignore[return-value]
    if op == "sym":
        return b[e.name]  # type: ignore[index]
    if op == "add":
        s: int | float = 0
        for a in e.args:
            s += evaluate(a, b)
        return s
    if op == "mul":
        p: int | float = 1
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
    if op in F.FUN_OPS:
        return F.fun_value(op, evaluate(e.args[0], b))
    x, y = evaluate(e.args[0], b), evaluate(e.args[1], b)
    if op in F.FBIN_OPS:
        return F.FBIN_OPS[op](x, y)  # type: ignore[no-any-return]
    if op in F.FCMP_FNS:
        return F.FCMP_FNS[op](x, y)  # type: ignore[no-any-return]
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


_FBIN_AST = {ast.Add: "fadd", ast.Sub: "fsub", ast.Mult: "fmul", ast.Div: "fdiv",
             ast.FloorDiv: "ffloordiv", ast.Pow: "fpow"}


def _conv(n: ast.AST, src: str) -> Expr:
    if isinstance(n, ast.Constant) and isinstance(n.value, float):
        return fconst(n.value)
    if isinstance(n, ast.Constant) and isinstance(n.value, int):
        return const(n.value)
    if isinstance(n, ast.Name):
        return sym(n.id)
    if isinstance(n, ast.BinOp) and type(n.op) in _FBIN_AST:
        a, b = _conv(n.left, src), _conv(n.right, src)
        # Python's own typing: a float operand, or a true division, makes the result a float
        if F.is_float(a) or F.is_float(b) or isinstance(n.op, (ast.Div, ast.Pow)):
            return F.fbin(_FBIN_AST[type(n.op)], a, b)
        return _BIN[type(n.op)](a, b)
    if isinstance(n, ast.BinOp) and type(n.op) in _BIN:
        return _BIN[type(n.op)](_conv(n.left, src), _conv(n.right, src))
    if isinstance(n, ast.UnaryOp):
        x = _conv(n.operand, src)
        if isinstance(n.op, ast.USub):
            return F.fun("fneg", x) if F.is_float(x) else neg(x)
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
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.args and not n.keywords:
        name = n.func.id
        if name in ("min", "max"):
            return minmax(name, [_conv(a, src) for a in n.args])
        ops = {"float": "float", "int": "trunc", "round": "round"}
        if name in ops and len(n.args) == 1:
            x = _conv(n.args[0], src)
            if name == "float" or F.is_float(x):
                return F.fun(ops[name], x)
    raise ValueError(f"unsupported syntax in symbolic expression {src!r}: {ast.dump(n)[:60]}")
