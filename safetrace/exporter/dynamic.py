"""Dynamic dims: symbols for declared dims, then the solved contract after tracing.

Before tracing, every dim declared dynamic gets a backed symbol (its example size is the
hint); a named Dim used twice gets one symbol; a derived dim ``2*d`` is an expression of
its root's symbol.  After tracing, the engine's guards say what each symbol became; dims
the program specialized or related beyond what was declared are constraint violations,
reported all at once with a ready-to-paste fix.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

from safetrace.dims import DerivedDim, Dim, _Hint
from safetrace.errors import ConstraintViolationError, SpecError
from safetrace.symbolic import Env, Expr, SymInt, make_int
from safetrace.trace.source import from_text


@dataclasses.dataclass
class DimDecl:
    """One declared dynamic dim of one input."""

    path: str         # user path of the tensor ("x", "xs[1]")
    dim: int
    kind: str         # "auto" | "dynamic" | "named" | "derived"
    expr: Expr        # its size as declared (a symbol or coef*root + offset)
    hint: int
    spec: Any         # the user's entry (for messages)
    lo: float = 0
    hi: float = math.inf

    @property
    def where(self) -> str:
        return f"{self.path}.shape[{self.dim}]"


@dataclasses.dataclass
class ValueRange:
    """Inclusive range of a symbol; ``math.inf`` when unbounded."""

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


def _key(key: Any) -> Any:
    if isinstance(key, str):
        from safetrace.symbolic.expr import sym

        return sym(key)
    if isinstance(key, SymInt):
        return key.expr
    return key


class DynamicDims:
    """Symbols of one export: created from the spec, solved after tracing."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.decls: list[DimDecl] = []
        self.roots: dict[str, tuple[Dim, Expr]] = {}   # Dim name -> (Dim, symbol)
        self.owner: dict[str, DimDecl] = {}             # symbol name -> first decl
        self.dim_names: dict[str, str] = {}             # symbol name -> Dim name
        self.fixes: dict[tuple[str, int], Any] = {}     # (path, dim) -> replacement entry
        self.dim_fixes: dict[str, Any] = {}             # Dim name -> replacement Dim/expr

    # -- before tracing ---------------------------------------------------------------
    def sizes(self, path: str, t: torch.Tensor, entries: list | None) -> tuple:
        """The traced shape of input `t`: ints for static dims, SymInts for dynamic ones."""
        shape = tuple(int(s) for s in t.shape)
        if entries is None:
            return shape
        out: list = []
        for d, (n, e) in enumerate(zip(shape, entries)):
            where = f"dynamic_shapes for {path}.shape[{d}]"
            if e is None or (isinstance(e, _Hint) and e.kind == "static"):
                out.append(n)
            elif isinstance(e, int):
                if e != n:
                    raise SpecError(f"{where} is {e}, but the example input has {path}.shape"
                                    f"[{d}] = {n}.\nFix: use {n} or None (static), or a Dim")
                out.append(n)
            elif isinstance(e, _Hint):
                lo = 0 if e.min is None else e.min
                hi = math.inf if e.max is None else e.max
                self._in_range(where, n, lo, hi, repr(e))
                s = self.env.new_backed(n, lo=lo, hi=None if hi == math.inf else hi,
                                        origin=f"{path}.shape[{d}]")
                self._declare(DimDecl(path, d, e.kind, s, n, e, lo, hi))
                out.append(make_int(s, self.env))
            elif isinstance(e, Dim):
                s = self._root(e, n, where, path, d)
                self._declare(DimDecl(path, d, "named", s, n, e, e.min, e.max))
                out.append(make_int(s, self.env))
            elif isinstance(e, DerivedDim):
                root_hint = n - e.offset
                if root_hint % e.coef:
                    raise SpecError(f"{where} is {e!r}, but {path}.shape[{d}] = {n} is not of "
                                    f"that form for any integer {e.root.name}")
                s = self._root(e.root, root_hint // e.coef, where, path, d, derived=e)
                expr = s * e.coef + e.offset
                self._declare(DimDecl(path, d, "derived", expr, n, e))
                out.append(make_int(expr, self.env))
            else:  # pragma: no cover - spec.py validated entries
                raise SpecError(f"{where}: unsupported entry {e!r}")
        return tuple(out)

    def _in_range(self, where: str, n: int, lo: float, hi: float, what: str) -> None:
        if not lo <= n <= hi:
            raise SpecError(f"{where} is {what} with range [{lo}, {hi}], but the example "
                            f"input has size {n}.\nFix: widen the range or change the example")

    def _root(self, dim: Dim, hint: int, where: str, path: str, d: int,
              derived: DerivedDim | None = None) -> Expr:
        found = self.roots.get(dim.name)
        if found is not None:
            other, s = found
            if (other.min, other.max) != (dim.min, dim.max):
                raise SpecError(f"{where}: two different Dims are named {dim.name!r} "
                                f"({other!r} and {dim!r}); use one Dim object per name")
            if self.env.hint(s) != hint:
                first = self.owner[s.name]
                shown = f"{derived!r} = {hint * derived.coef + derived.offset}" if derived \
                    else f"{dim.name} = {hint}"
                raise SpecError(
                    f"{where} uses {dim.name}, but the example sizes disagree: "
                    f"{first.where} gives {dim.name} = {self.env.hint(s)} while "
                    f"{path}.shape[{d}] gives {shown}.\nFix: the same Dim means equal "
                    f"sizes; use separate Dims or consistent example inputs")
            return s
        self._in_range(where, hint, dim.min, dim.max, repr(dim))
        s = self.env.new_backed(hint, lo=dim.min, hi=None if dim.max == math.inf else dim.max,
                                origin=f"{path}.shape[{d}]")
        self.roots[dim.name] = (dim, s)
        self.dim_names[s.name] = dim.name
        return s

    def _declare(self, decl: DimDecl) -> None:
        self.decls.append(decl)
        if decl.expr.op == "sym":
            self.owner.setdefault(decl.expr.name, decl)

    # -- after tracing --------------------------------------------------------------------
    def origin_of(self, name: str, excluded: int | None = None) -> str:
        """Where the guard that decided symbol `name` came from: the one ruling out
        `excluded` (a value just outside its range) if given, else the first mentioning it."""
        guards = [g for g in self.env.guards + self.env.facts if name in g.cond.free_symbols]
        if excluded is not None:
            binding = {n: info.hint for n, info in self.env.symbols.items() if info.backed}
            binding[name] = excluded
            for g in guards:
                try:
                    if not g.cond.evaluate(binding):
                        return from_text(g.origin)
                except (KeyError, ZeroDivisionError):
                    continue
        return from_text(guards[0].origin) if guards else ""

    def violations(self) -> list[str]:
        """Every declared relation the traced program broke (empty when all hold)."""
        env = self.env
        problems: list[str] = []
        seen: set[str] = set()
        residual: list | None = None  # the contract's residual guards, computed when needed
        pins: dict[str, tuple | None] = {}  # root symbol -> its single possible value
        for decl in self.decls:
            if decl.kind == "auto":
                continue
            e = env.simplify(decl.expr)
            label = f"{decl.where} ({decl.spec!r})"
            if e.op == "const":
                key = f"static:{decl.where}"
                if key in seen:
                    continue
                seen.add(key)
                name = next(iter(decl.expr.free_symbols), "")
                self.fixes[(decl.path, decl.dim)] = e.value
                problems.append(
                    f"{label} was specialized to {e.value}"
                    f"{self.origin_of(name, int(e.value) + 1)}.\n"  # the guard ruling out others
                    f"    Fix: make it static: {decl.where} -> {e.value} (or Dim.STATIC), or "
                    f"let safetrace decide: Dim.AUTO")
                continue
            if decl.kind not in ("named", "derived"):
                continue
            root = next(iter(decl.expr.free_symbols))
            dim_name = self.dim_names.get(root, root)
            rep = env.simplify(_sym(root))  # what the root symbol became
            if rep.op != "sym" or rep.name != root:
                key = f"rel:{root}"
                if key in seen:
                    continue
                seen.add(key)
                problems.append(self._relation_problem(root, dim_name, rep, label))
                continue
            info = env.symbols[root]
            dim = self.roots[dim_name][0]
            if info.range.lo > dim.min or info.range.hi < dim.max:
                key = f"range:{root}"
                if key in seen:
                    continue
                seen.add(key)
                lo, hi = info.range.lo, info.range.hi
                self.dim_fixes[dim_name] = Dim(dim_name, min=int(lo),
                                               max=None if hi == math.inf else int(hi))
                args = [repr(dim_name)] + ([f"min={int(lo)}"] if lo > 0 else []) + (
                    [f"max={int(hi)}"] if hi != math.inf else [])
                outside = int(lo) - 1 if lo > dim.min else int(hi) + 1
                problems.append(
                    f"{label}: the program only works for {_range_text(dim_name, lo, hi)}"
                    f"{self.origin_of(root, outside)}, but {dim!r} allows "
                    f"[{dim.min}, {dim.max}].\n"
                    f"    Fix: {dim_name} = Dim({', '.join(args)})")
                continue
            if root not in pins:
                if residual is None:
                    residual = env.contract().residual
                pins[root] = self._pinned_by_residuals(root, info.range, residual)
            pinned = pins[root]
            if pinned is not None and f"pin:{decl.where}" not in seen:
                seen.add(f"pin:{decl.where}")
                value, origin = pinned
                value = int(decl.expr.evaluate({root: value}))  # a derived dim: 2*d -> 2*v
                self.fixes[(decl.path, decl.dim)] = value
                problems.append(
                    f"{label} can only be {value}{origin}: the program's run-time condition "
                    f"holds for no other value in {dim!r}'s range.\n"
                    f"    Fix: make it static: {decl.where} -> {value} (or Dim.STATIC), or "
                    f"let safetrace decide: Dim.AUTO")
        return problems

    def _pinned_by_residuals(self, root: str, rng: Any, residual: list) -> tuple | None:
        """The single value a bounded dim can take under the residual conditions on it alone
        (``s*s == 16``, ``(s*s)//4 == 4``), with their origin; None when more (or no
        enumerable range)."""
        conds = [g for g in residual if g.cond.free_symbols == {root}]
        lo, hi = rng.lo, rng.hi
        if not conds or hi == math.inf or hi - lo > 4096:
            return None
        found = []
        for v in range(int(lo), int(hi) + 1):
            try:
                ok = all(g.cond.evaluate({root: v}) for g in conds)
            except ZeroDivisionError:
                ok = False
            if ok:
                found.append(v)
                if len(found) > 1:
                    return None
        if len(found) != 1:
            return None
        return found[0], from_text(conds[0].origin)

    def _relation_problem(self, root: str, dim_name: str, rep: Expr, label: str) -> str:
        names = {s: self.dim_names.get(s) or self._where_of(s) for s in rep.free_symbols}
        text = str(rep)
        for s, n in names.items():
            text = text.replace(s, n)
        fix = f"{dim_name} = {text}"
        if len(rep.free_symbols) == 1:
            other = next(iter(rep.free_symbols))
            other_dim = self.dim_names.get(other)
            if other_dim is not None:
                at0 = rep.subs({_sym(other): 0}).evaluate({})
                coef = rep.subs({_sym(other): 1}).evaluate({}) - at0
                base = self.roots[other_dim][0]
                self.dim_fixes[dim_name] = base if (coef, at0) == (1, 0) else \
                    DerivedDim(base, coef, at0)
        return (f"{label} must equal {text}{self.origin_of(root)}, a relation the spec does "
                f"not declare.\n    Fix: declare it: {fix}  (derive the dim from the other "
                f"Dim, or use the same Dim in both places)")

    def _where_of(self, name: str) -> str:
        decl = self.owner.get(name)
        return decl.where if decl else name

    def range_constraints(self) -> RangeConstraints:
        out = RangeConstraints()
        for name, info in self.env.symbols.items():
            if not info.backed:
                continue
            e = self.env.simplify(_sym(name))
            if e.op == "sym" and e.name == name:
                lo, hi = info.range.lo, info.range.hi
                out[_sym(name)] = ValueRange(int(lo) if lo != -math.inf else lo,
                                             int(hi) if hi != math.inf else hi)
        return out

    def auto_report(self) -> dict[str, str]:
        """What each Dim.AUTO / Dim.DYNAMIC dim became: static value, relation or range."""
        out = {}
        for decl in self.decls:
            e = self.env.simplify(decl.expr)
            if e.op == "const":
                out[decl.where] = f"static {e.value}"
            else:
                out[decl.where] = f"dynamic {self.describe(e)}"
        return out

    def describe(self, e: Expr) -> str:
        """``s0`` -> ``s0 (x.shape[0])``: symbols with the input dims they come from."""
        text = str(e)
        extra = [f"{s} = {self._where_of(s)}" for s in sorted(e.free_symbols)]
        return f"{text}" + (f" where {', '.join(extra)}" if extra else "")


    def suggestion(self, specs: list, leaves: list, in_spec: Any, names: list[str]) -> str:
        """A ready-to-paste ``dynamic_shapes`` value with every fix applied."""
        from torch.utils import _pytree as pytree

        defs: dict[str, str] = {}

        def render(entry: Any, path: str, d: int) -> str:
            fixed = self.fixes.get((path, d), entry)
            for _ in range(3):  # a fix may point to a Dim that has a fix of its own
                if isinstance(fixed, Dim) and fixed.name in self.dim_fixes:
                    fixed = self.dim_fixes[fixed.name]
                elif isinstance(fixed, DerivedDim) and fixed.root.name in self.dim_fixes \
                        and isinstance(self.dim_fixes[fixed.root.name], Dim):
                    fixed = DerivedDim(self.dim_fixes[fixed.root.name], fixed.coef, fixed.offset)
            if isinstance(fixed, DerivedDim):
                defs[fixed.root.name] = f"{fixed.root.name} = {fixed.root!r}"
                return repr(fixed)
            if isinstance(fixed, Dim):
                defs[fixed.name] = f"{fixed.name} = {fixed!r}"
                return fixed.name
            return repr(fixed)

        rendered = []
        for (path, _), entries in zip(leaves, specs):
            if entries is None:
                rendered.append(_Raw("None"))
            else:
                rendered.append(_Raw("(" + ", ".join(render(e, path, d)
                                                     for d, e in enumerate(entries))
                                     + ("," if len(entries) == 1 else "") + ")"))
        args, kwargs = pytree.tree_unflatten(rendered, in_spec)
        top = dict(zip(names, args))
        top.update(kwargs)
        body = "{" + ", ".join(f"{k!r}: {_render(v)}" for k, v in top.items()) + "}"
        lines = ["from safetrace import Dim"] + list(defs.values())
        lines.append(f"dynamic_shapes = {body}")
        return "\n".join("    " + line for line in lines)


class _Raw:
    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _render(v: Any) -> str:
    if isinstance(v, _Raw):
        return v.text
    if isinstance(v, list):
        return "[" + ", ".join(_render(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(_render(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {_render(x)}" for k, x in v.items()) + "}"
    if hasattr(v, "__dataclass_fields__"):
        return "{" + ", ".join(f"{f!r}: {_render(getattr(v, f))}"
                               for f in v.__dataclass_fields__) + "}"
    return repr(v)


def _sym(name: str) -> Expr:
    from safetrace.symbolic.expr import sym

    return sym(name)


def _range_text(name: str, lo: float, hi: float) -> str:
    if hi == math.inf:
        return f"{name} >= {int(lo)}"
    if lo <= 0:
        return f"{name} <= {int(hi)}"
    return f"{int(lo)} <= {name} <= {int(hi)}"


def raise_violations(problems: list[str], suggestion: str = "") -> None:
    if problems:
        fix = f"\nSuggested fix (all problems at once):\n{suggestion}" if suggestion else ""
        raise ConstraintViolationError(
            f"the traced program does not work for the whole declared input space "
            f"({len(problems)} problem{'s' if len(problems) > 1 else ''}):\n"
            + "\n".join(f"  - {p}" for p in problems) + fix)
