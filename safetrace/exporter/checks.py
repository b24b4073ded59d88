"""Run-time input checks of an exported program, generated once as straight-line Python.

Every call is checked before computing: the structure of the inputs, then per tensor its
type, dtype, rank and static sizes, then the symbolic contract: each dynamic size is bound
to its symbol where it first appears, every other occurrence must equal its expression
(equalities, derived dims), symbols must lie in their ranges, and the residual guards must
hold.  Non-tensor inputs must equal their specialized values.
"""

from __future__ import annotations

import functools
import math
import re
import types
from typing import Any, Callable

import torch

from safetrace import errors as E
from safetrace.exporter.contract import ConstInput, Contract, InputDim, TensorInput
from safetrace.symbolic import Range
from safetrace.symbolic.describe import passing_runs, passing_sizes
from safetrace.symbolic.expr import sym
from safetrace.symbolic.semantics import holds


class CheckBuilder:
    """Turns a Contract into one straight-line Python function (lines + constants)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.env: dict[str, Any] = {"Tensor": torch.Tensor, "_fail": _fail,
                                    "_UNDEFINED": _UNDEFINED, "_Mismatch": E.InputMismatchError,
                                    "_copysign": math.copysign, "math": math,
                                    "_holds": holds, "_row_major": _row_major}

    def const(self, value: Any) -> str:
        name = f"_k{len(self.env)}"
        self.env[name] = value
        return name

    def build(self, contract: Contract) -> Callable[[list], None]:
        bound: set[str] = set()
        for i, inp in enumerate(contract.inputs):
            if isinstance(inp, ConstInput):
                self.constant(i, inp.path, inp.value)
            else:
                self.tensor(i, inp)
        # (the contract's binding order: static and bound dims above, then these)
        for i, inp in enumerate(contract.inputs):
            if isinstance(inp, TensorInput):
                for d, dim in enumerate(inp.dims):
                    if dim.kind in ("derived", "equal"):
                        self.relation(i, d, inp, dim, contract)
        for i, inp in enumerate(contract.inputs):
            if isinstance(inp, TensorInput) and inp.layout is not None:
                p = self.const(inp.path)
                # (is_contiguous() and its channels-last form ignore the offset and the
                # strides of dims of size 0 / 1; stride() and storage_offset() do not)
                exact = f" and v{i}.storage_offset() == 0 and _row_major(v{i})" \
                    if inp.exact_strides else ""
                kind = "'strides'" if inp.exact_strides else "'layout'"
                self.lines.append(f"if not (v{i}.is_contiguous(){exact}): _fail({p}, {kind}, "
                                  f"v{i}, {self.const(inp.layout)})")
        # an int input may be negative where a size may not: its lower bound is checked
        ints = {dim.symbol for inp in contract.inputs if isinstance(inp, TensorInput) and
                inp.scalar for dim in inp.dims}
        for s in contract.symbols:
            if s.where is None:
                continue
            bound.add(s.name)
            why = self.const(s.origin)
            where = self.const(s.where)
            if s.checked_lo > 0 or (s.name in ints and s.lo is not None):
                self.lines.append(f"if {s.name} < {s.lo}: _fail({where}, 'min', {s.name}, "
                                  f"({s.lo}, {why}))")
            if s.hi is not None:
                self.lines.append(f"if {s.name} > {s.hi}: _fail({where}, 'max', {s.name}, "
                                  f"({s.hi}, {why}))")
        for c in contract.conditions:
            if not c.cond.free_symbols <= bound:
                continue  # on data-dependent values: asserted inside the graph
            text = self.const(contract.where_text(c.cond))
            why = self.const(_Why(c.origin, c.cond, contract, c.kind))
            # evaluated total: a domain error (sqrt of a negative, log(0), int(nan), a
            # complex power compared) is a rejection of these sizes, not a crash -- unless
            # the condition holds anyway (a defined disjunct of an `or` is true, whatever
            # the order Python evaluates them in): the engine's `holds` decides then
            binding = "{" + ", ".join(f"{n!r}: {n}" for n in sorted(c.cond.free_symbols)) + "}"
            self.lines += ["try:", f"    _ok = ({c.cond})",
                           "except _UNDEFINED as _e:",
                           f"    if not _holds({self.const(c.cond)}, {binding}): "
                           f"_fail({text}, 'undefined', _e, {why})",
                           "    _ok = True",
                           f"if not _ok: _fail({text}, 'guard', None, {why})"]
        return self._compile(len(contract.inputs))

    def scalar(self, i: int, inp: TensorInput) -> None:
        """An int declared dynamic: an int (not a bool), its value the one "dim"."""
        p = self.const(inp.path)
        self.lines.append(f"v{i} = leaves[{i}]")
        self.lines.append(f"if type(v{i}) is not int: _fail({p}, 'int', v{i}, None)")
        self.lines.append(f"sh{i} = (v{i},)")
        dim = inp.dims[0]
        if dim.kind == "static":  # the trace needed this value
            self.lines.append(f"if v{i} != {dim.size}: _fail({p}, 'value', v{i}, {dim.size})")
        elif dim.kind == "bind":
            self.lines.append(f"{dim.symbol} = v{i}")

    def tensor(self, i: int, inp: TensorInput) -> None:
        if inp.scalar:
            return self.scalar(i, inp)
        v = f"v{i}"
        p = self.const(inp.path)
        self.lines.append(f"{v} = leaves[{i}]")
        self.lines.append(f"if not isinstance({v}, Tensor) or {v}.is_meta: "
                          f"_fail({p}, 'type', {v}, None)")
        dt = self.const(inp.dtype)
        self.lines.append(f"if {v}.dtype is not {dt}: _fail({p}, 'dtype', {v}.dtype, {dt})")
        self.lines.append(f"sh{i} = {v}.shape")
        shown = tuple(str(dim.size) for dim in inp.dims)
        self.lines.append(f"if len(sh{i}) != {len(shown)}: _fail({p}, 'rank', sh{i}, "
                          f"{self.const(shown)})")
        for d, dim in enumerate(inp.dims):
            if dim.kind == "static":
                kind = "static" if dim.why is None else "required"
                extra = "" if dim.why is None else f", {self.const(dim.why)}"
                self.lines.append(f"if sh{i}[{d}] != {dim.size}: _fail({p}, '{kind}', sh{i}, "
                                  f"({d}, {dim.size}{extra}))")
            elif dim.kind == "bind":
                self.lines.append(f"{dim.symbol} = sh{i}[{d}]")

    def relation(self, i: int, d: int, inp: TensorInput, dim: InputDim,
                 contract: Contract) -> None:
        if dim.kind == "derived":
            self.lines.append(f"{dim.symbol} = (sh{i}[{d}] - ({dim.offset})) // {dim.coef}")
        info = self.const((contract.where_text(dim.size), dim.why or ""))
        kind = "int_relation" if inp.scalar else "relation"
        self.lines.append(f"if sh{i}[{d}] != ({dim.size}): _fail({self.const(inp.path)}, "
                          f"'{kind}', sh{i}, ({d}, ({dim.size}), {info}))")

    def constant(self, i: int, path: str, value: Any) -> None:
        k = self.const(value)
        p = self.const(path)
        same = f"leaves[{i}] == {k}"
        if type(value) is torch.ScriptObject:  # a torchbind object: that very object (its
            same = f"leaves[{i}] is {k}"          # class may define no __eq__)
        elif isinstance(value, float) and value != value:  # NaN equals only NaN here
            same = f"leaves[{i}] != leaves[{i}]"
        elif isinstance(value, float) and value == 0:  # 0.0 and -0.0 differ (1/x)
            sign = math.copysign(1.0, value)
            same = f"leaves[{i}] == {k} and _copysign(1.0, leaves[{i}]) == {sign}"
        self.lines.append(f"if type(leaves[{i}]) is not type({k}) or not ({same}): "
                          f"_fail({p}, 'value', leaves[{i}], {k})")

    def _compile(self, n: int) -> Callable[[list], None]:
        body = [f"if len(leaves) != {n}: _fail('inputs', 'count', len(leaves), {n})"]
        body += self.lines
        # any other size expression (a derived dim, a relation) is evaluated total too
        src = "def check_inputs(leaves):\n    try:\n" + "".join(f"        {line}\n"
                                                             for line in body)
        src += ("    except _Mismatch:\n        raise\n"
                "    except _UNDEFINED as _e:\n"
                "        _fail('a size expression of the contract', 'undefined', _e, '')\n"
                "    return None\n")
        code = compiled(src, "<safetrace input checks>")
        scope = dict(self.env)
        exec(code, scope)  # noqa: S102  (generated from a validated Contract, never from text)
        fn = scope["check_inputs"]
        fn.__source__ = src
        return fn


@functools.lru_cache(maxsize=512)
def compiled(src: str, filename: str) -> types.CodeType:
    """Generated code (input checks, ``ProgramModule.forward``), compiled once per text:
    programs exported again make the same text; their constants are in the scope each
    runs it in, not in the code."""
    return compile(src, filename, "exec")


def _dims_spec(path: str, dim: int) -> str:
    top = re.split(r"[\[.]", path, maxsplit=1)[0]
    if top == path:
        return f"dynamic_shapes={{{top!r}: {{{dim}: Dim.DYNAMIC}}}}"
    return f"a dynamic_shapes entry Dim.DYNAMIC for {path} dim {dim}"


# what evaluating a size expression may raise on sizes where it is undefined
_UNDEFINED = (ArithmeticError, ValueError, TypeError)


def _fail(path: str, kind: str, got: Any, expected: Any) -> None:
    """Called by the generated checks: raise the InputMismatchError of that check."""
    raise _BUILD[kind](path, got, expected)


def mismatch(kind: str, path: str, got: Any, expected: Any) -> E.InputMismatchError:
    """The error a check of `kind` raises (the same arguments as the generated checks
    pass): other check generators (an AOTInductor package's) reuse its wording."""
    return _BUILD[kind](path, got, expected)


def condition_origin(cond: Any, origin: str, contract: Contract, kind: str = "") -> Any:
    """What a failed residual condition names as its origin (the ``'guard'`` check's
    `expected`): `origin`, then which sizes pass when one size decides; `kind`: the
    condition's (``Condition.kind``)."""
    return _Why(origin, cond, contract, kind)


_BUILD: dict[str, Callable[[str, Any, Any], E.InputMismatchError]] = {
    "count": lambda path, got, n: E.wrong_input_count(got, n),
    "type": lambda path, got, _: E.wrong_input_type(path, got),
    "dtype": E.wrong_dtype,
    "rank": lambda path, got, shown: E.wrong_rank(path, list(got), shown),
    "static": lambda path, got, exp: E.static_size(path, exp[0], list(got), exp[1],
                                                   _dims_spec(path, exp[0])),
    "required": lambda path, got, exp: E.required_size(path, exp[0], list(got), *exp[1:]),
    "relation": lambda path, got, exp: E.related_size(path, exp[0], list(got), exp[2][0],
                                                      exp[1], exp[2][1]),
    "min": lambda where, got, exp: E.out_of_range(where, got, ">=", *exp),
    "max": lambda where, got, exp: E.out_of_range(where, got, "<=", *exp),
    "layout": lambda path, got, origin: E.wrong_layout(path, tuple(got.stride()),
                                                       got.storage_offset(), origin),
    "strides": lambda path, got, origin: E.wrong_layout(path, tuple(got.stride()),
                                                        got.storage_offset(), origin,
                                                        _row_major_strides(tuple(got.shape))),
    "guard": lambda text, got, origin: E.failed_condition(text, str(origin), *_kind(origin)),
    "undefined": lambda text, err, origin: E.failed_condition(
        text, f"{origin}; it is undefined at these sizes ({type(err).__name__}: "
              f"{str(err)[:100]})", *_kind(origin)),
    "value": E.wrong_constant,
    "int": lambda path, got, _: E.dynamic_int_type(path, got),
    "int_relation": lambda path, got, exp: E.dynamic_int_relation(path, got[0], exp[2][0],
                                                                  exp[1], exp[2][1]),
}


def _row_major(t: torch.Tensor) -> bool:
    """Row-major strides on every dim (of a contiguous tensor: dims of size 0 / 1 too)."""
    acc = 1
    for n, s in zip(reversed(t.shape), reversed(t.stride())):
        if s != acc:
            return False
        acc *= n if n > 1 else 1
    return True


def _row_major_strides(shape: tuple) -> tuple:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n if n > 1 else 1
    return tuple(reversed(out))


class _Why:
    """The origin of a residual condition and its kind, and (worked out only when a check
    fails) which sizes pass it and a declaration that keeps it."""

    def __init__(self, origin: str, cond: Any, contract: Any, kind: str = "") -> None:
        self.origin, self.cond, self.contract, self.kind = origin, cond, contract, kind

    def __str__(self) -> str:
        return self.origin + _passing(self.cond, self.contract)


def _kind(why: Any) -> tuple[str, str]:
    """(kind, fix) of a failed condition's origin: for a branch's condition on one size, the
    dynamic_shapes entry of a range where it holds ('' where none is found)."""
    if not isinstance(why, _Why):
        return "", ""
    return why.kind, _keeping_range(why.cond, why.contract) if why.kind == "branch" else ""


def _keeping_range(cond: Any, contract: Any) -> str:
    """``dynamic_shapes={'x': {0: Dim('x_0', min=2, max=6)}}``: the widest run of sizes of
    the one size `cond` is on, within its range, where `cond` holds ('' if none is found
    or the size is not a top-level input's dim)."""
    if len(cond.free_symbols) != 1:
        return ""
    (name,) = cond.free_symbols
    spec = next((s for s in contract.symbols if s.name == name), None)
    m = re.fullmatch(r"(\w+)\.shape\[(\d+)\]", spec.where or "") if spec else None
    if m is None:
        return ""
    runs, top = passing_runs(cond, name, Range(spec.lo or 0, math.inf if spec.hi is None
                                               else spec.hi))
    if not runs:
        return ""
    a, b = max(runs, key=lambda r: (r[1] - r[0], r[0]))
    bounds = ([f"min={a}"] if a > 0 else []) + (
        [] if b == top - 1 and spec.hi is None else [f"max={b}"])
    if b == top - 1 and spec.hi is None and len(runs) > 1:
        return ""  # (no single run to the end of the window: not one range)
    dim = f"Dim({m.group(1) + '_' + m.group(2)!r}{''.join(', ' + x for x in bounds)})"
    return f"dynamic_shapes={{{m.group(1)!r}: {{{m.group(2)}: {dim}}}}}"


def _passing(cond: Any, contract: Any) -> str:
    """"; it holds when x.shape[2] is a multiple of 32" for a condition on one size."""
    if len(cond.free_symbols) != 1:
        return ""
    (name,) = cond.free_symbols
    spec = next((s for s in contract.symbols if s.name == name), None)
    lo = spec.lo if spec is not None and spec.lo is not None else 0
    hi = spec.hi if spec is not None and spec.hi is not None else math.inf
    words = passing_sizes(cond, name, Range(lo, hi), contract.where_text(sym(name)))
    return f"; it holds when {words}" if words else ""
