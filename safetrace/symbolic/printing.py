"""Printing expressions as Python source.

The printed form is valid Python with exactly the semantics of the expression when the
symbol names are local int variables: ``//`` and ``%`` floor like Python, ``min``/``max`` are
the builtins, conditions use ``and``/``or``/``not``, float operations keep the user's order.
``parsing.parse(str(e)) is e`` for every ``e``.  Nodes are read through the ``Node``
protocol only, so expressions can print themselves without a cycle of imports.
"""

from __future__ import annotations

import math

from safetrace.symbolic.semantics import FLOAT_OPS, Node

_OR, _AND, _NOT, _CMP, _ADD, _MUL, _UNARY, _POW, _ATOM = 1, 2, 3, 4, 5, 6, 7, 8, 9
_CMP_SYM = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "ge": ">=",
            "flt": "<", "fle": "<=", "fgt": ">", "fge": ">=", "feq": "==", "fne": "!="}
_FBIN_SYM = {"fadd": (" + ", _ADD), "fsub": (" - ", _ADD), "fmul": ("*", _MUL),
             "fdiv": ("/", _MUL), "ffloordiv": (" // ", _MUL), "fpow": ("**", _POW)}
_CALL = {"float": "float", "trunc": "int", "round": "round", "fsqrt": "math.sqrt",
         "fexp": "math.exp", "flog": "math.log", "flog2": "math.log2", "flog10": "math.log10"}


def _prec(e: Node) -> int:
    op = e.op
    if op == "const":
        return _UNARY if type(e.value) is int and e.value < 0 else _ATOM
    if op == "fconst":
        v = float(e.value)  # type: ignore[arg-type]
        return _UNARY if math.copysign(1.0, v) < 0 or v != v else _ATOM
    if op in ("sym", "fsym", "min", "max", "fmin", "fmax") or op in _CALL:
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


def _p(e: Node, ctx: int) -> str:
    s = str(e)
    return f"({s})" if _prec(e) < ctx else s


def _coeff_and_factors(t: Node) -> tuple[int, tuple[Node, ...]]:
    if t.op == "const":
        return int(t.value), ()  # type: ignore[arg-type]
    if t.op == "mul" and t.args[0].op == "const":
        return int(t.args[0].value), tuple(t.args[1:])  # type: ignore[arg-type]
    if t.op == "mul":
        return 1, tuple(t.args)
    return 1, (t,)


def _product(c: int, fs: tuple[Node, ...]) -> str:
    if not fs:
        return repr(c)
    coeff = "" if c == 1 else "-" if c == -1 else f"{c}*"
    if coeff == "-" and len(fs) == 1 and _prec(fs[0]) < _UNARY:
        return f"-({fs[0]})"
    return coeff + "*".join(_p(a, _MUL + 1) for a in fs)


def _sum_term(c: int, fs: tuple[Node, ...]) -> str:
    if c == 1 and len(fs) == 1:
        f = fs[0]
        return f"({f})" if f.op == "mod" else _p(f, _ADD)
    return _product(c, fs)


def to_str(e: Node) -> str:
    """Python source for ``e`` (used by ``str(e)``)."""
    op = e.op
    if op == "const":
        return repr(e.value)
    if op == "sym" or op == "fsym":
        return e.name  # type: ignore[return-value]
    if op in FLOAT_OPS or op in _CALL:
        return _float_str(e)
    args = e.args
    if op == "add":
        parts: list[str] = []
        for i, t in enumerate(args):
            c, fs = _coeff_and_factors(t)
            if i and c < 0:
                parts.append(" - " + _sum_term(-c, fs))
            else:
                parts.append((" + " if i else "") + _sum_term(c, fs))
        return "".join(parts)
    if op == "mul":
        c, fs = _coeff_and_factors(e)
        return _product(c, fs)
    if op == "floordiv":
        return f"{_p(args[0], _MUL + 1)}//{_p(args[1], _MUL + 1)}"
    if op == "mod":
        return f"{_p(args[0], _MUL + 1)} % {_p(args[1], _MUL + 1)}"
    if op in ("min", "max"):
        return f"{op}({', '.join(str(a) for a in args)})"
    if op in _CMP_SYM:
        return f"{_p(args[0], _CMP + 1)} {_CMP_SYM[op]} {_p(args[1], _CMP + 1)}"
    if op == "not":
        return f"not ({args[0]})"
    return f" {op} ".join(f"({a})" for a in args)


def _float_str(e: Node) -> str:
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
    if op in ("fmin", "fmax"):
        return f"{op[1:]}({e.args[0]}, {e.args[1]})"
    sep, prec = _FBIN_SYM[op]
    a, b = e.args
    if op == "fpow":  # right-associative, binds tighter than a unary minus on its left
        left = f"({a})" if _prec(a) <= _POW else str(a)
        return f"{left}**{_p(b, _UNARY)}"
    # left-associative: the same precedence needs parentheses on the right only
    return f"{_p(a, prec)}{sep}{_p(b, prec + 1)}"
