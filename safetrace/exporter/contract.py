"""The input contract of an exported program: one typed object, built once after tracing.

Everything that says which inputs a program accepts reads this object, and nothing
recomputes it: the generated input checks (``checks.py``), ``ep.describe_contract()``,
``ep.range_constraints``, ``ep.dims_report``, the saved file (a generic dataclass codec)
and the torch.export bridge (``safetrace.interop``).

How to read it (``c = ep.contract``)::

    for inp in c.inputs:
        if isinstance(inp, ConstInput):        # a specialized non-tensor input
            inp.path, inp.value                # must be passed equal to `value`
            continue
        inp.path, inp.dtype, inp.layout        # TensorInput; layout: contiguity required
        for d, dim in enumerate(inp.dims):
            dim.kind == "static"     # size must be the int dim.size
            dim.kind == "bind"       # size is the symbol dim.symbol (its first occurrence)
            dim.kind == "derived"    # size == dim.coef * dim.symbol + dim.offset: the symbol
                                     # is read from here ((size - offset) // coef), then checked
            dim.kind == "equal"      # size must equal dim.size, an Expr of symbols bound by
                                     # earlier "bind"/"derived" dims
            dim.kind == "unchecked"  # an Expr of symbols that no input dim determines
    for s in c.symbols:                        # one per free symbol (its representative)
        s.name, s.lo, s.hi                     # inclusive range; None: unbounded
        s.backed                               # False: unbacked (computed from data, u0)
        s.where                                # "x.shape[0]": where the checks read it
    for cond in c.conditions:                  # residual conditions (Expr, boolean), with
        cond.cond, cond.origin                 # the user's source line that required them

Sizes and conditions are ``safetrace.symbolic.Expr`` values over the symbol names; the
order of ``inputs`` is the order of the flattened inputs (``ep.in_spec``).  The object is
immutable and validates itself on construction, so a contract decoded from a file is as
well-formed as one built by the exporter (the check generator turns it into code).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Callable, Union

import torch

from safetrace.exporter.declared_ranges import declared_range_conditions
from safetrace.rules.kernel_checks import kernel_note
from safetrace.symbolic import Env, Expr
from safetrace.symbolic.expr import sym, terms
from safetrace.trace.source import from_text

SYMBOL_NAME = re.compile(r"^[su][0-9]{1,9}$")
DIM_KINDS = ("static", "bind", "derived", "equal", "unchecked")
CONDITION_KINDS = ("", "requirement", "broadcast", "branch")


def _require(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(what)


@dataclasses.dataclass(frozen=True)
class InputDim:
    """One dim of a tensor input: what its size must be at run time (see the module doc)."""

    kind: str
    size: Union[int, Expr]
    symbol: Union[str, None] = None   # "bind" / "derived": the symbol read from this dim
    coef: int = 1                     # "derived": size == coef * symbol + offset
    offset: int = 0
    # "static" / "equal": why the program requires this (" (from `...` at f.py:3)"); None
    # for a static dim that was simply not declared dynamic
    why: Union[str, None] = None
    declared: Union[str, None] = None  # the dynamic_shapes entry of this dim, if any

    def __post_init__(self) -> None:
        _require(self.kind in DIM_KINDS, f"unknown dim kind {self.kind!r}")
        if self.kind == "static":
            _require(type(self.size) is int and 0 <= self.size < 1 << 62,
                     f"a static size must be an int >= 0, got {self.size!r}")
        else:
            _require(isinstance(self.size, Expr) and not self.size.is_bool,
                     f"a {self.kind} size must be an integer expression")
        if self.kind in ("bind", "derived"):
            _require(isinstance(self.symbol, str) and bool(SYMBOL_NAME.match(self.symbol)),
                     f"bad symbol name {self.symbol!r}")
            _require(linear_in(self.size, self.symbol) == (self.coef, self.offset)
                     and self.coef != 0 and (self.kind == "derived" or
                                             (self.coef, self.offset) == (1, 0)),
                     f"size {self.size} is not {self.coef}*{self.symbol} + {self.offset}")
        else:
            _require(self.symbol is None, f"a {self.kind} dim binds no symbol")


@dataclasses.dataclass(frozen=True)
class TensorInput:
    """A tensor input: dtype, one InputDim per dim, and the layout the program requires."""

    path: str
    dtype: torch.dtype
    dims: tuple[InputDim, ...]
    # the program asked for a memory layout: the input must be contiguous; the text is
    # where it asked (" (from ...)")
    layout: Union[str, None] = None
    # an int input declared dynamic: a Python int whose value is the one "dim" (dtype is
    # torch.int64 and unchecked)
    scalar: bool = False
    # a traceable tensor subclass given as the input (it dispatches when the program runs)
    subclass: bool = False
    # the program read strides: with `layout`, the storage offset must be 0 and the strides
    # of dims of size 0 / 1 row-major too (``is_contiguous()`` ignores them)
    exact_strides: bool = False

    def where(self, d: int) -> str:
        return self.path if self.scalar else f"{self.path}.shape[{d}]"


@dataclasses.dataclass(frozen=True)
class ConstInput:
    """A non-tensor input, specialized at export: it must be passed equal to ``value``."""

    path: str
    value: Any


@dataclasses.dataclass(frozen=True)
class SymbolRange:
    """A free symbol: its inclusive range and where the checks read it."""

    name: str
    lo: Union[int, None]     # None: unbounded below
    hi: Union[int, None]     # None: unbounded above
    backed: bool = True      # False: computed from data (.item(), nonzero) while running
    where: Union[str, None] = None   # the input dim it is read from ("x.shape[0]")
    origin: str = ""         # the guard behind its range (" (from ...)")

    def __post_init__(self) -> None:
        _require(bool(SYMBOL_NAME.match(self.name)), f"bad symbol name {self.name!r}")
        _require(self.lo is None or self.hi is None or self.lo <= self.hi,
                 f"{self.name}: empty range [{self.lo}, {self.hi}]")

    @property
    def checked_lo(self) -> int:
        """The lower bound an input check has to enforce: ``lo`` when positive, else 0 (a
        size is never negative)."""
        return self.lo if self.lo is not None and self.lo > 0 else 0


@dataclasses.dataclass(frozen=True)
class Condition:
    """A condition the inputs must meet that no range or dim relation expresses."""

    cond: Expr
    origin: str = ""
    # where it came from: "requirement" (an op's own check, torch._check, an assert: eager
    # raises where it fails), "broadcast" (broadcasting's equality: eager raises where the
    # sizes differ and neither is 1), "branch" (the answer the trace took of a branch or a
    # specialization: eager computes something else where it fails); "": not recorded
    kind: str = ""

    def __post_init__(self) -> None:
        _require(isinstance(self.cond, Expr) and self.cond.is_bool,
                 "a residual condition must be a boolean expression")
        _require(self.kind in CONDITION_KINDS, f"unknown condition kind {self.kind!r}")


@dataclasses.dataclass(frozen=True)
class Contract:
    """Every input's expected form, the symbols' ranges and the residual conditions."""

    inputs: tuple[Union[TensorInput, ConstInput], ...]
    symbols: tuple[SymbolRange, ...] = ()
    conditions: tuple[Condition, ...] = ()

    def __post_init__(self) -> None:
        table = {}
        for s in self.symbols:
            _require(s.name not in table, f"symbol {s.name} listed twice")
            table[s.name] = s
        object.__setattr__(self, "_table", table)
        bound: set[str] = set()
        for _, inp, d, dim in self._in_binding_order():
            where = inp.where(d)
            if dim.kind in ("bind", "derived"):
                s = table.get(dim.symbol)
                _require(s is not None and s.where is not None and dim.symbol not in bound,
                         f"{where} binds {dim.symbol}, which is not a free symbol bound once")
                bound.add(dim.symbol)  # type: ignore[arg-type]
            if dim.kind == "equal" or dim.kind == "derived":
                _require(dim.size.free_symbols <= bound,  # type: ignore[union-attr]
                         f"{where} refers to symbols bound by no earlier input dim")
            if dim.kind == "unchecked":
                _require(not dim.size.free_symbols <= bound,  # type: ignore[union-attr]
                         f"{where} is checkable but marked unchecked")
        for s in self.symbols:
            _require((s.where is not None) == (s.name in bound),
                     f"symbol {s.name}: its input dim does not bind it")

    def _in_binding_order(self) -> list[tuple[int, TensorInput, int, InputDim]]:
        """Tensor dims in the order the checks visit them: static and bound dims first
        (in input order), then derived and related ones (in input order)."""
        first, later = [], []
        for i, inp in enumerate(self.inputs):
            if isinstance(inp, TensorInput):
                for d, dim in enumerate(inp.dims):
                    group = first if dim.kind in ("static", "bind") else later
                    group.append((i, inp, d, dim))
        return first + later

    def derived(self, name: str, make: Callable[[Contract], Any]) -> Any:
        """``make(self)``, made once per contract and kept on it: a view that depends on
        nothing but the contract (immutable), such as the generated input checks, which
        programs sharing one contract (``build_contract``'s static ones) then share."""
        memo = self.__dict__.get("_derived")
        if memo is None:
            memo = {}
            object.__setattr__(self, "_derived", memo)
        hit = memo.get(name)
        if hit is None:
            hit = memo[name] = make(self)
        return hit

    def __getstate__(self) -> dict:
        # (what is derived is rebuilt on use: a generated function does not pickle)
        return {k: v for k, v in self.__dict__.items() if k != "_derived"}

    def symbol(self, name: str) -> SymbolRange | None:
        """The free symbol called ``name`` (None if it is not one)."""
        return self._table.get(name)  # type: ignore[attr-defined]

    def where_text(self, e: Any) -> str:
        """``2*s0 + 1`` -> ``2*x.shape[0] + 1``: symbols replaced by the dims they are read
        from (as the user sees them)."""
        table = self._table  # type: ignore[attr-defined]

        def name(m: re.Match) -> str:
            s = table.get(m.group(1))
            return m.group(1) if s is None or s.where is None else s.where

        return _SYM_IN_TEXT.sub(name, str(e))

    def dims_by_where(self) -> dict[str, InputDim]:
        """``{"x.shape[0]": InputDim}`` for every tensor dim."""
        return {inp.where(d): dim for inp in self.inputs if isinstance(inp, TensorInput)
                for d, dim in enumerate(inp.dims)}

    # -- derived views -------------------------------------------------------------------
    def range_constraints(self) -> RangeConstraints:
        """``{symbol: ValueRange}`` of every free symbol, backed and unbacked (as
        torch.export lists them)."""
        out = RangeConstraints()
        for s in self.symbols:
            out[sym(s.name)] = ValueRange(-math.inf if s.lo is None else s.lo,
                                          math.inf if s.hi is None else s.hi)
        for inp in self.inputs:  # and a derived dim's expression (3*s0 + 1), as torch's
            for dim in inp.dims if isinstance(inp, TensorInput) else ():
                if isinstance(dim.size, Expr) and dim.size.op != "sym" and \
                        dim.size not in out:
                    vr = _linear_range(dim.size, out)
                    if vr is not None:
                        out[dim.size] = vr
        return out

    def dims_report(self) -> dict[str, str]:
        """What each dim declared in dynamic_shapes became: ``static 3`` or ``dynamic s0
        where s0 = x.shape[0]``."""
        out = {}
        for _, inp, d, dim in sorted(self._in_binding_order(), key=lambda t: (t[0], t[2])):
            if dim.declared is None:
                continue
            if dim.kind == "static":
                out[inp.where(d)] = f"static {dim.size}"
            else:
                out[inp.where(d)] = f"dynamic {self.describe(dim.size)}"
        return out

    def describe(self, e: Expr) -> str:
        """``s0 + 1 where s0 = x.shape[0]``."""
        extra = []
        for name in sorted(e.free_symbols):
            s = self.symbol(name)
            extra.append(f"{name} = {s.where if s is not None and s.where else name}")
        return str(e) + (f" where {', '.join(extra)}" if extra else "")

    def text(self) -> str:
        """The input space in words: shapes with symbols, ranges, relations, checks."""
        lines = []
        ints = {inp.path for inp in self.inputs if getattr(inp, "scalar", False)}
        for inp in self.inputs:
            if isinstance(inp, ConstInput):
                lines.append(f"  {inp.path} == {inp.value!r} (specialized)")
                continue
            dims = ", ".join(str(dim.size) for dim in inp.dims)
            kind = "int " if inp.scalar else f"{str(inp.dtype).replace('torch.', '')}["
            lines.append(f"  {inp.path}: {kind}{dims}{'' if inp.scalar else ']'}")
        for s in self.symbols:
            if s.where is None:
                continue
            if s.checked_lo > 0 or s.hi is not None or s.where in ints:
                lo = s.checked_lo if s.where not in ints else s.lo
                rng = f"{lo} <= {s.name}" + (f" <= {s.hi}" if s.hi is not None else "")
                lines.append(f"  {s.name} = {s.where}, {rng}{s.origin}")
            else:
                lines.append(f"  {s.name} = {s.where}")
        for c in self.conditions:
            lines.append(f"  requires {self.where_text(c.cond)}{c.origin}")
        return "Input contract:\n" + "\n".join(lines)


_SYM_IN_TEXT = re.compile(r"\b([su]\d+)\b")


def linear_in(e: Expr, name: str) -> tuple[int, int] | None:
    """``(coef, offset)`` when ``e == coef * name + offset`` (ints), else None.

    The one place where a derived size (``2*d + 1``) is inverted: the checks read ``d`` as
    ``(size - offset) // coef``, the graph reads it the same way, and fixes name it.
    """
    coef = offset = 0
    for mono, k in terms(e):
        if not mono:
            offset = k
        elif len(mono) == 1 and mono[0].op == "sym" and mono[0].name == name:
            coef = k
        else:
            return None
    return (coef, offset) if coef else None


@dataclasses.dataclass
class ValueRange:
    """Inclusive range of a symbol; ``math.inf`` (or ``-math.inf``) when unbounded."""

    lower: int | float
    upper: int | float

    def __repr__(self) -> str:
        return f"VR[{self.lower}, {'int_oo' if self.upper == math.inf else self.upper}]"


class RangeConstraints(dict):
    """{symbol: ValueRange}; also indexable by symbol name or by a symbolic int."""

    def __getitem__(self, key: Any) -> ValueRange:
        return dict.__getitem__(self, _key(key))

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, _key(key))

    def get(self, key: Any, default: Any = None) -> Any:
        return dict.get(self, _key(key), default)

    def __repr__(self) -> str:  # as torch.export prints it: {s0: VR[2, 64]}
        return self.text()

    def text(self, names: dict | None = None) -> str:
        """``{s0: VR[2, 64]}``; with ``names`` (symbol -> the user's Dim name) each symbol
        has its Dim beside it: ``{s0 (batch): VR[2, 64]}``."""
        names = names or {}
        return "{" + ", ".join(
            f"{k}{f' ({names[str(k)]})' if str(k) in names else ''}: {v!r}"
            for k, v in self.items()) + "}"


def _linear_range(e: Expr, ranges: dict) -> ValueRange | None:
    """The range of ``a*s + b`` over the range of symbol ``s`` (None for other forms)."""
    free = sorted(e.free_symbols)
    lin = linear_in(e, free[0]) if len(free) == 1 else None
    vr = ranges.get(sym(free[0])) if lin is not None else None
    if vr is None or lin[0] == 0:
        return None
    a, b = lin
    ends = (a * vr.lower + b, a * vr.upper + b)
    return ValueRange(min(ends), max(ends))


def _key(key: Any) -> Any:
    if isinstance(key, str):
        return sym(key)
    ex = getattr(key, "expr", None)
    return ex if isinstance(ex, Expr) else key


# -- building it ---------------------------------------------------------------------------
def build_contract(env: Env, decls: list, leaves: list, shapes: list,
                   layout: dict[int, str], origin_of: Any,
                   scalars: set[int] = frozenset(),  # type: ignore[assignment]
                   exact: set[int] = frozenset()) -> Contract:  # type: ignore[assignment]
    """The contract of one export, from the engine's fates and the declarations.

    ``leaves``: (path, value) per flattened input; ``shapes``: per leaf its traced shape
    (ints and Exprs) or None for a non-tensor; ``decls``: the declared dynamic dims
    (``DimDecl``); ``layout``: leaf index -> origin, for inputs that must be contiguous;
    ``origin_of(name, excluded)``: the guard that decided a symbol (text); ``scalars``:
    leaves that are ints declared dynamic (their shape is their one value); ``exact``:
    leaves of ``layout`` whose strides the program read (row-major on every dim).
    """
    fates = env.solution()
    key = _static_key(leaves, shapes) if not (
        decls or layout or scalars or fates.fates or fates.residual) else None
    if key is not None:  # no symbol, no declaration, no condition: the same contract
        hit = _STATIC_CONTRACTS.get(key)
        if hit is not None:
            return hit
    declared = {(d.path, d.dim): d for d in decls}
    # a symbol's range as its declaration gave it: then the declaration is its origin
    as_declared = {d.expr.name: d for d in reversed(decls) if d.expr.op == "sym"}
    origins: dict[str, str] = {}

    def origin(name: str) -> str:
        if name not in origins:
            rng = fates.fates[name].range
            lo, hi = rng.lo, rng.hi
            decl = as_declared.get(name) if fates.fates[name].kind not in (
                "derived", "equal") else None  # (a replaced symbol: its guard, not its Dim)
            if decl is not None and (lo, hi) == (decl.lo, decl.hi) and (lo > 0 or
                                                                         hi < math.inf):
                origins[name] = f" (as declared: {decl.spec!r})"
                return origins[name]
            excluded = int(lo) - 1 if 0 < lo < math.inf else int(hi) + 1 if hi < math.inf \
                else None
            origins[name] = origin_of(name, excluded)
        return origins[name]

    # Pass 1 (the order the checks use): static dims and first plain occurrences bind.
    bound: dict[str, str] = {}
    kinds: dict[tuple[int, int], InputDim] = {}
    later = []
    for i, ((path, _), shape) in enumerate(zip(leaves, shapes)):
        for d, size in enumerate(shape or ()):
            at = path if i in scalars else f"{path}.shape[{d}]"
            decl = declared.get((path, d))
            spec = None if decl is None else repr(decl.spec)
            why = _why(env, decl, origin)
            if isinstance(size, int):
                kinds[i, d] = InputDim("static", size, why=why, declared=spec) \
                    if why is not None or spec is not None else _static(size)
            elif size.op == "sym" and size.name not in bound:
                bound[size.name] = at
                kinds[i, d] = InputDim("bind", size, size.name, declared=spec)
            else:
                later.append((i, d, at, size, spec, why))
    # Pass 2: a dim whose size has one unbound symbol, linearly, binds it by inversion.
    for i, d, at, size, spec, why in later:
        free = sorted(size.free_symbols - bound.keys())
        lin = linear_in(size, free[0]) if len(free) == 1 else None
        if lin is not None:
            coef, offset = lin
            text = at if offset == 0 else f"({at} - {offset})"
            bound[free[0]] = text if coef == 1 else f"({text} // {coef})"
            why = why or "".join(origin(s) for s in sorted(size.free_symbols - {free[0]}))
            kinds[i, d] = InputDim("derived", size, free[0], coef, offset, why, spec)
        elif size.free_symbols <= bound.keys():
            why = why or "".join(origin(s) for s in sorted(size.free_symbols))
            kinds[i, d] = InputDim("equal", size, why=why, declared=spec)
        else:
            kinds[i, d] = InputDim("unchecked", size, declared=spec)
    inputs: list[TensorInput | ConstInput] = []
    for i, ((path, value), shape) in enumerate(zip(leaves, shapes)):
        if shape is None:
            inputs.append(ConstInput(path, value))
        else:
            inputs.append(TensorInput(path, torch.int64 if i in scalars else value.dtype,
                                      tuple(kinds[i, d] for d in range(len(shape))),
                                      layout.get(i), i in scalars,
                                      hasattr(type(value), "__tensor_flatten__"), i in exact))
    symbols = []
    for name, fate in fates.fates.items():
        info = env.symbols[name]
        if fate.kind != "free":
            continue
        lo, hi = fate.range.lo, fate.range.hi
        symbols.append(SymbolRange(name, None if lo == -math.inf else int(lo),
                                   None if hi == math.inf else int(hi), info.backed,
                                   bound.get(name), origin(name) if name in bound else ""))
    conditions = tuple(Condition(g.cond, from_text(g.origin) + kernel_note(g.origin),
                                 _condition_kind(g)) for g in fates.residual) + \
        declared_range_conditions(decls, fates, Condition)  # (c == a*b: c's own range)
    contract = Contract(tuple(inputs), tuple(symbols), conditions)
    if key is not None:
        if len(_STATIC_CONTRACTS) > 1000:
            _STATIC_CONTRACTS.clear()
        _STATIC_CONTRACTS[key] = contract
    return contract


# the contract of an export with static inputs only (no symbol, declaration, layout or
# condition), by _static_key: it is a function of that key, and immutable, so programs
# exported again share it (and what is derived from it: their input checks)
_STATIC_CONTRACTS: dict[tuple, Contract] = {}


def _static_key(leaves: list, shapes: list) -> tuple | None:
    """(path, class, dtype, sizes) per input when every input is a tensor of int sizes,
    all that a static contract is made of; else None."""
    key = []
    for (path, value), shape in zip(leaves, shapes):
        if shape is None or not _INTS_ONLY(map(type, shape)):  # (in C: no generator)
            return None
        key.append((path, type(value), value.dtype, shape))
    return tuple(key)


def _static(size: int) -> InputDim:
    """The dim of a static size nothing declared (one shared, immutable InputDim per size:
    most dims of most programs are these)."""
    dim = _STATIC.get(size)
    if dim is None:
        dim = InputDim("static", size)
        if len(_STATIC) < 100_000:
            _STATIC[size] = dim
    return dim


_STATIC: dict[int, InputDim] = {}
_INTS_ONLY = frozenset((int,)).issuperset  # (whether an iterable of types holds int alone)


def _why(env: Env, decl: Any, origin: Any) -> str | None:
    """Why a declared dynamic dim is static or tied to others: the first guard on its
    symbol, or the declaration itself (a named Dim used twice); None if not declared."""
    if decl is None:
        return None
    if env.simplify(decl.expr) is not decl.expr:
        names = sorted(decl.expr.free_symbols)
        return origin(names[0]) if names else ""
    if decl.kind in ("named", "derived"):
        return f" (as declared: {decl.spec!r})"
    return None


def _condition_kind(g: Any) -> str:
    """``Condition.kind`` of a residual guard."""
    if g.precondition:
        return "requirement"
    return "broadcast" if g.required_from else "branch"
