"""The records the shape environment hands out: questions it cannot settle, contradictions,
what it knows of a symbol, guards, size-oblivious answers and the per-symbol contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from safetrace.symbolic.expr import Expr
from safetrace.symbolic.ranges import Range


class DataDependentQuestion(Exception):
    """A condition on data-dependent (unbacked) symbols that the known facts do not settle."""

    def __init__(self, expr: Expr, origin: object = None,
                 hints: Mapping[str, int] | None = None) -> None:
        self.expr = expr
        self.origin = origin
        self.hints = dict(hints or {})
        unbacked = sorted(n for n in expr.free_symbols if n not in self.hints)
        where = f" (at {origin})" if origin is not None else ""
        super().__init__(
            f"could not decide `{expr}`{where}: it depends on data-dependent value(s) "
            f"{', '.join(unbacked)} with no example value; known hints: {self.hints}")


class Contradiction(ValueError):
    """A new fact contradicts what the env knows (the inputs would have to be impossible)."""


@dataclass
class SymbolInfo:
    """What the env knows about one symbol; ``range`` is narrowed as facts arrive."""

    name: str
    backed: bool
    hint: int | None
    range: Range
    origin: object
    index: int
    is_float: bool = False  # a float read from data (the expression ``fsym(name)``)


@dataclass(frozen=True)
class Guard:
    """A condition recorded while tracing, with where it came from; ``precondition``: an
    op's own requirement (eager raises where it fails), not a choice between branches."""

    cond: Expr
    origin: object = None
    precondition: bool = False
    # an op's requirement only where each of its sizes is at least this (broadcasting's
    # equality: eager broadcasts a size 1 instead of raising); 0: none
    required_from: int = 0
    # broadcasting's two sizes (Exprs) where ``required_from`` is set: eager raises exactly
    # where they differ and neither is 1; (): not known
    sizes: tuple[Expr, ...] = ()


@dataclass(frozen=True)
class Settled:
    """A question on data-dependent sizes answered by size-oblivious reasoning: ``cond`` is
    assumed from here on; ``asserted``: checked at run time, because the excluded values
    would give another result (or an error in eager); else the answer holds for them too."""

    cond: Expr
    kind: str
    why: str
    origin: object = None
    asserted: bool = True


@dataclass(frozen=True)
class Fate:
    """A symbol's fate: kind is "static" (value), "equal" or "derived" (expr), or "free"."""

    kind: str
    range: Range
    value: int | None = None
    expr: Expr | None = None


@dataclass
class Solution:
    """What the engine solved: per-symbol fates plus the guards that ranges and
    replacements do not capture (``exporter/contract.build_contract`` turns it into the
    program's one ``Contract``)."""

    fates: dict[str, Fate] = field(default_factory=dict)
    residual: list[Guard] = field(default_factory=list)
