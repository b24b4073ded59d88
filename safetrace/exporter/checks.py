"""Run-time input checks of an exported program, generated once as straight-line Python.

Every call is checked before computing: the structure of the inputs, then per tensor its
type, dtype, rank and static sizes, then the symbolic contract: each dynamic size is bound
to its symbol where it first appears, every other occurrence must equal its expression
(equalities, derived dims), symbols must lie in their ranges, and the residual guards must
hold.  Non-tensor inputs must equal their specialized values.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Callable

import torch

from safetrace.errors import InputMismatchError

_SYM = re.compile(r"\b([su]\d+)\b")


@dataclasses.dataclass
class InputContract:
    """What the checks need: per leaf its expected form, symbol ranges, residual guards."""

    leaves: list  # (path, "tensor", dtype, shape entries: int | Expr) or (path, "const", value)
    ranges: dict = dataclasses.field(default_factory=dict)     # name -> (lo, hi)
    residual: list = dataclasses.field(default_factory=list)   # (cond Expr, origin text)
    origins: dict = dataclasses.field(default_factory=dict)    # name -> " (from ...)"
    # declared dynamic dims the program made static or tied to others: "x.shape[1]" ->
    # " (from ...)", the guard that decided it
    static_why: dict = dataclasses.field(default_factory=dict)
    # tensor inputs that must be contiguous with storage offset 0 (the program branched on
    # a memory layout): (leaf index, origin text)
    layout: list = dataclasses.field(default_factory=list)


class CheckBuilder:
    """Accumulates check code lines and the constants they refer to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.env: dict[str, Any] = {"Tensor": torch.Tensor, "_fail": _fail,
                                    "_copysign": math.copysign}
        self.bound: dict[str, str] = {}  # symbol -> the input dim it was read from
        self.static_why: dict[str, str] = {}

    def const(self, value: Any) -> str:
        name = f"_k{len(self.env)}"
        self.env[name] = value
        return name

    def readable(self, expr: Any) -> str:
        """``2*s0 + 1`` -> ``2*x.shape[0] + 1``."""
        return _SYM.sub(lambda m: self.bound.get(m.group(1), m.group(1)), str(expr))

    def build(self, contract: InputContract) -> Callable[[list], None]:
        deferred = []
        self.static_why = contract.static_why
        for i, leaf in enumerate(contract.leaves):
            if leaf[1] == "const":
                self.constant(i, leaf[0], leaf[2])
            else:
                deferred += self.tensor(i, leaf[0], leaf[2], leaf[3])
        for i, d, path, e in deferred:
            self.relation(i, d, path, e, contract.origins)
        for i, origin in getattr(contract, "layout", ()):
            p = self.const(contract.leaves[i][0])
            self.lines.append(f"if not (v{i}.is_contiguous() and v{i}.storage_offset() == 0): "
                              f"_fail({p}, 'layout', v{i}, {self.const(origin)})")
        for name, (lo, hi) in contract.ranges.items():
            if name not in self.bound:
                continue
            why = self.const(contract.origins.get(name, ""))
            where = self.const(self.bound[name])
            if lo is not None and lo > 0:
                self.lines.append(f"if {name} < {lo}: _fail({where}, 'min', {name}, ({lo}, {why}))")
            if hi is not None:
                self.lines.append(f"if {name} > {hi}: _fail({where}, 'max', {name}, ({hi}, {why}))")
        for cond, origin in contract.residual:
            if not cond.free_symbols <= self.bound.keys():
                continue
            text = self.const(self.readable(cond))
            self.lines.append(f"if not ({cond}): _fail({text}, 'guard', None, "
                              f"{self.const(origin)})")
        return self._compile(len(contract.leaves))

    def tensor(self, i: int, path: str, dtype: torch.dtype, shape: tuple) -> list:
        v = f"v{i}"
        p = self.const(path)
        self.lines.append(f"{v} = leaves[{i}]")
        self.lines.append(f"if not isinstance({v}, Tensor) or {v}.is_meta: "
                          f"_fail({p}, 'type', {v}, None)")
        self.lines.append(f"if {v}.dtype is not {self.const(dtype)}: "
                          f"_fail({p}, 'dtype', {v}.dtype, {self.const(dtype)})")
        self.lines.append(f"sh{i} = {v}.shape")
        self.lines.append(f"if len(sh{i}) != {len(shape)}: _fail({p}, 'rank', sh{i}, "
                          f"{self.const(tuple(str(s) for s in shape))})")
        deferred = []
        for d, size in enumerate(shape):
            if isinstance(size, int):
                why = self.static_why.get(f"{path}.shape[{d}]")
                kind = "static" if why is None else "required"
                extra = "" if why is None else f", {self.const(why)}"
                self.lines.append(f"if sh{i}[{d}] != {size}: _fail({p}, '{kind}', sh{i}, "
                                  f"({d}, {size}{extra}))")
            elif size.op == "sym" and size.name not in self.bound:
                self.lines.append(f"{size.name} = sh{i}[{d}]")
                self.bound[size.name] = f"{path}.shape[{d}]"
            else:
                deferred.append((i, d, path, size))
        return deferred

    def relation(self, i: int, d: int, path: str, e: Any, origins: dict) -> None:
        free = sorted(e.free_symbols - self.bound.keys())
        if len(free) == 1:  # a dim declared only through a derived form, e.g. 2*d
            name = free[0]
            # evaluated, never substituted: substituting re-canonicalizes, which can expand
            # a product of sums (a loaded file's 40 factors: 2**40 terms)
            coef = at0 = None
            if e.free_symbols == {name}:
                try:
                    at0 = e.evaluate({name: 0})
                    coef = e.evaluate({name: 1}) - at0
                except ArithmeticError:
                    coef = None
            if coef:
                self.lines.append(f"{name} = (sh{i}[{d}] - ({at0})) // {coef}")
                self.bound[name] = f"(({path}.shape[{d}] - {at0}) // {coef})"
        if not e.free_symbols <= self.bound.keys():
            return
        why = self.static_why.get(f"{path}.shape[{d}]") or "".join(
            origins.get(s, "") for s in sorted(e.free_symbols))
        info = self.const((self.readable(e), why))
        self.lines.append(f"if sh{i}[{d}] != ({e}): _fail({self.const(path)}, 'relation', "
                          f"sh{i}, ({d}, ({e}), {info}))")

    def constant(self, i: int, path: str, value: Any) -> None:
        k = self.const(value)
        p = self.const(path)
        same = f"leaves[{i}] == {k}"
        if isinstance(value, float) and value != value:  # NaN equals only NaN here
            same = f"leaves[{i}] != leaves[{i}]"
        elif isinstance(value, float) and value == 0:  # 0.0 and -0.0 differ (1/x)
            sign = math.copysign(1.0, value)
            same = f"leaves[{i}] == {k} and _copysign(1.0, leaves[{i}]) == {sign}"
        self.lines.append(f"if type(leaves[{i}]) is not type({k}) or not ({same}): "
                          f"_fail({p}, 'value', leaves[{i}], {k})")

    def _compile(self, n: int) -> Callable[[list], None]:
        body = [f"if len(leaves) != {n}: _fail('inputs', 'count', len(leaves), {n})"]
        body += self.lines
        src = "def check_inputs(leaves):\n" + "".join(f"    {line}\n" for line in body)
        src += "    return None\n"
        code = compile(src, "<safetrace input checks>", "exec")
        scope = dict(self.env)
        exec(code, scope)  # noqa: S102  (our own generated code, never from a file)
        fn = scope["check_inputs"]
        fn.__source__ = src
        return fn


def _dims_spec(path: str, dim: int) -> str:
    top = re.split(r"[\[.]", path, maxsplit=1)[0]
    if top == path:
        return f"dynamic_shapes={{{top!r}: {{{dim}: Dim.DYNAMIC}}}}"
    return f"a dynamic_shapes entry Dim.DYNAMIC for {path} dim {dim}"


def _fail(path: str, kind: str, got: Any, expected: Any) -> None:
    if kind == "count":
        msg = f"expected {expected} flattened inputs, got {got}"
    elif kind == "type":
        if isinstance(got, torch.Tensor):  # a meta tensor has no data to compute with
            msg = (f"{path}: expected a tensor with data, got one on the meta device.\n"
                   f"Fix: pass a tensor with data on a real device (cpu, cuda, ...)")
        else:
            msg = f"{path}: expected a Tensor, got {type(got).__name__}"
    elif kind == "dtype":
        msg = f"{path}: expected dtype {expected}, got {got}"
    elif kind == "rank":
        msg = (f"{path}: expected a tensor with {len(expected)} dims "
               f"(shape [{', '.join(expected)}]), got {len(got)} dims (shape {list(got)})")
    elif kind == "static":
        d, size = expected
        msg = (f"{path}.shape[{d}]: expected {size}, got {got[d]} "
               f"(dim {d} was static at export; input shape {list(got)}).\n"
               f"Fix: pass a tensor with {path}.shape[{d}] == {size}, or export with "
               f"{path}.shape[{d}] declared dynamic, e.g. {_dims_spec(path, d)}")
    elif kind == "required":
        d, size, why = expected
        msg = (f"{path}.shape[{d}] = {got[d]}, but the program requires {size}{why} "
               f"(input shape {list(got)})")
    elif kind == "relation":
        d, value, (text, why) = expected
        msg = (f"{path}.shape[{d}] = {got[d]}, but it must equal {text} = {value}{why} "
               f"(input shape {list(got)})")
    elif kind in ("min", "max"):
        bound, why = expected
        op = ">=" if kind == "min" else "<="
        msg = f"{path} = {got}, but it must be {op} {bound}{why}"
    elif kind == "layout":
        msg = (f"{path}: expected a contiguous tensor (storage offset 0), got strides "
               f"{tuple(got.stride())} and offset {got.storage_offset()}; the program asked "
               f"for a memory layout{expected} and was traced for contiguous inputs.\n"
               f"Fix: pass {path}.contiguous()")
    elif kind == "guard":
        msg = f"the inputs violate `{path}`, required{expected}"
    elif kind == "value":
        msg = (f"{path}: expected {expected!r}, got {got!r}. Non-tensor inputs are specialized "
               f"at export: the graph was built for {path} = {expected!r}.\n"
               f"Fix: call with {path}={expected!r}, or export again with the new value")
    else:
        msg = f"{path}: {kind}"
    raise InputMismatchError(msg)
