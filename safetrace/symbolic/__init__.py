"""Symbolic shape engine (pure Python, never imports torch).

Public names: ``Expr`` (interned expressions with ``+ - * // %``), the condition builders
``lt/le/gt/ge/eq/ne``, ``and_/or_/not_``, ``min_/max_`` and ``subs``, ``Env`` (symbols,
guards, facts, prover),
``Range``, ``SymInt``/``SymBool``/``SymFloat`` (what traced code sees),
``DataDependentQuestion``, ``Contradiction`` (a fact contradicting the known ones),
``sym_min``/``sym_max``/``sym_not``/``sym_and``/``sym_or``,
``is_symbolic``, ``to_expr`` and ``parse``.
"""

from __future__ import annotations

from safetrace.symbolic.env import Env
from safetrace.symbolic.records import (
    Contradiction, DataDependentQuestion, Fate, Guard, Settled, Solution, SymbolInfo,
)
from safetrace.symbolic.canon import (
    and_, eq, ge, gt, le, lt, max_, min_, ne, not_, or_, subs,
)
from safetrace.symbolic.expr import Expr, to_expr
from safetrace.symbolic.parsing import parse
from safetrace.symbolic.ranges import Range
from safetrace.symbolic.symvalues import (
    SymBool, SymFloat, SymInt, is_symbolic, make_bool, make_float, make_int, sym_and, sym_max,
    sym_min, sym_not, sym_or,
)

__all__ = [
    "Contradiction", "DataDependentQuestion", "Env", "Expr", "Fate", "Guard",
    "Range", "Solution", "SymBool", "SymFloat", "SymInt", "SymbolInfo", "and_", "eq", "ge", "gt",
    "is_symbolic", "le", "lt", "make_bool", "make_float", "make_int", "max_", "min_", "ne",
    "not_", "or_", "parse", "subs", "sym_and", "sym_max", "sym_min", "sym_not", "sym_or",
    "to_expr",
]
