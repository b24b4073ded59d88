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
import re
from typing import Any

import torch
from torch.utils import _pytree as pytree

from safetrace.dims import DerivedDim, Dim, DimHint
from safetrace import errors
from safetrace.errors import Violation, count_pinned, declared_space, spec_entry
from safetrace.errors import torch_words as torch_said
from safetrace.exporter.clamps import branch_at_example, clamp_fix
from safetrace.exporter.contract import Contract, linear_in
from safetrace.exporter.dim_conditions import (
    holding_range, holds_outside, pinned_by_conditions, residue_span,
)
from safetrace.exporter.eager_raises import (
    condition_assumed_away, range_assumed_away, refuted, relation_assumed_away,
    relation_required,
)
from safetrace.exporter.example_ranges import in_range
from safetrace.exporter.fix_links import compose_links, example_side_link
from safetrace.exporter.sides import auto_alias, only_value, point_narrowing
from safetrace.exporter.spec import OMITTED, ScalarSpec
from safetrace.meta.pins import CountPin
from safetrace.symbolic import Env, Expr, Range, make_int
from safetrace.symbolic.describe import passing_sizes
from safetrace.symbolic.expr import sym
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
    scalar: bool = False  # the int input itself (an int declared dynamic)

    @property
    def where(self) -> str:
        return self.path if self.scalar else f"{self.path}.shape[{self.dim}]"


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
        # a size split's side (exporter/splits.py): Dim name -> (hint, lo, hi) traced
        # instead of the example size and the declared range
        self.overrides: dict[str, tuple[int, int, float]] = {}
        # named Dims narrowed around their hint, one per problem found narrowing one:
        # (Dim name, lo, hi it works for, declared lo, declared hi, hint, soft); soft: the
        # condition also holds beyond [lo, hi] (`s != 7`): a split there may not end
        self.narrowed: list[tuple[str, int, float, int, float, int, bool]] = []
        self.omitted: dict[str, tuple] = {}             # path -> shape, left out of the spec
        # example sizes outside a dim hint's range (example_out_of_range's arguments):
        # every input is read before one error lists them all (``example_ranges``)
        self.conflicts: list[tuple] = []
        self.declared: dict[str, Dim] = {}  # Dim name -> the Dim as the user declared it
        self.links: dict[str, tuple[str, int]] = {}  # Dim name -> (other, k): other + k

    # -- before tracing ---------------------------------------------------------------
    def sizes(self, path: str, t: torch.Tensor, entries: list | None) -> tuple:
        """The traced shape of input `t`: ints for static dims, SymInts for dynamic ones."""
        shape = tuple(t.shape)
        for s in shape:  # (a real tensor's sizes are ints: converted only otherwise)
            if s.__class__ is not int:
                shape = tuple(int(s) for s in shape)
                break
        if entries is OMITTED:
            self.omitted[path] = shape
        if entries is None or entries is OMITTED:
            return shape
        out: list = []
        scalar = not isinstance(t, torch.Tensor)  # an int input: one "dim", the value
        for d, (n, e) in enumerate(zip(shape, entries)):
            place = path if scalar else f"{path}.shape[{d}]"
            where = f"dynamic_shapes for {place}"
            if e is None or (isinstance(e, DimHint) and e.kind == "static"):
                if e is not None and (e.min is not None or e.max is not None):
                    in_range(self, where, n, 0 if e.min is None else e.min,
                             math.inf if e.max is None else e.max, repr(e), place,
                             (e.min, e.max))
                out.append(n)
            elif isinstance(e, int):
                if e != n:
                    raise errors.example_size(where, path, d, e, n)
                out.append(n)
            elif isinstance(e, DimHint):
                lo = 0 if e.min is None else e.min
                hi = math.inf if e.max is None else e.max
                if not in_range(self, where, n, lo, hi, repr(e), place, (e.min, e.max)):
                    lo, hi = 0, math.inf  # (traced unbounded, refused after: example_ranges)
                s = self.env.new_backed(n, lo=lo, hi=None if hi == math.inf else hi,
                                        origin=f"{path}.shape[{d}]")
                self._declare(DimDecl(path, d, e.kind, s, n, e, lo, hi))
                if e.kind == "auto" and s.op == "sym":
                    self.env.flexible.add(s.name)
                out.append(make_int(s, self.env))
            elif isinstance(e, Dim):
                self.declared.setdefault(e.name, e)
                s = self._root(e, n, where, path, d)
                self.env.named.update(s.free_symbols)
                eff = self.roots[e.name][0]  # the declared Dim, or a split side's range
                self._declare(DimDecl(path, d, "named", s, self.env.hint(s), e, eff.min,
                                      eff.max))
                out.append(make_int(s, self.env))
            elif isinstance(e, DerivedDim):
                self.declared.setdefault(e.root.name, e.root)
                root_hint = n - e.offset
                if root_hint % e.coef and e.root.name not in self.overrides:
                    raise errors.example_not_derived(where, path, d, e, n, e.root.name)
                s = self._root(e.root, root_hint // e.coef, where, path, d, derived=e)
                self.env.named.update(s.free_symbols)
                expr = s * e.coef + e.offset
                self._declare(DimDecl(path, d, "derived", expr,
                                      self.env.hint(s) * e.coef + e.offset, e))
                out.append(make_int(expr, self.env))
            else:  # pragma: no cover - spec.py validated entries
                raise spec_entry(where, e)
        return tuple(out)

    def _root(self, dim: Dim, hint: int, where: str, path: str, d: int,
              derived: DerivedDim | None = None) -> Expr:
        side = self.overrides.get(dim.name)
        if side is not None:  # a split's side: its own hint and range
            hint = side[0]
            dim = Dim(dim.name, min=side[1], max=None if side[2] == math.inf else int(side[2]))
        found = self.roots.get(dim.name)
        if found is not None:
            other, s = found
            if (other.min, other.max) != (dim.min, dim.max):
                raise errors.dim_name_clash(where, dim.name, other, dim)
            if self.env.hint(s) != hint and side is None:
                first = self.owner.get(s.name) or next(  # (only derived dims use it)
                    x for x in self.decls if s.name in x.expr.free_symbols)
                shown = f"{derived!r} = {hint * derived.coef + derived.offset}" if derived \
                    else f"{dim.name} = {hint}"
                raise errors.dim_sizes_disagree(where, dim.name, first.where,
                                                self.env.hint(s), path, d, shown)
            return s
        in_range(self, where, hint, dim.min, dim.max, repr(dim))
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
        return from_text(self._deciding(name, excluded))

    def _deciding(self, name: str, excluded: int | None = None) -> object:
        """The origin of that guard (None when no guard mentions `name`)."""
        guards = [g for g in self.env.guards + self.env.facts if name in g.cond.free_symbols]
        if excluded is not None:
            binding = {n: info.hint for n, info in self.env.symbols.items() if info.backed}
            binding[name] = excluded
            for g in guards:
                try:
                    if not g.cond.evaluate(binding):
                        return g.origin
                except (KeyError, ZeroDivisionError):
                    continue
        return guards[0].origin if guards else None

    def violations(self, contract: Contract) -> list[Violation]:
        """Every declared relation the traced program broke (empty when all hold), read
        from the contract (what each dim became) and the engine's fates (what each
        declared root symbol became)."""
        if not self.decls and not self.dim_names:  # nothing declared, nothing to break
            return []
        env = self.env
        dims = contract.dims_by_where()
        problems: list[Violation] = []
        seen: set[str] = set()
        pins: dict[str, tuple | None] = {}  # root symbol -> its single possible value
        for decl in self.decls:
            if decl.kind == "auto":
                continue
            dim = dims[decl.where]
            label = f"{decl.where} ({decl.spec!r})"
            if dim.kind == "static":
                if only_value(decl.spec, self.overrides) == dim.size:
                    continue  # the declared range is that one size: nothing was narrowed
                key = f"static:{decl.where}"
                if key in seen:
                    continue
                seen.add(key)
                name = next(iter(decl.expr.free_symbols), "")
                self.fixes[(decl.path, decl.dim)] = dim.size
                if decl.kind in ("named", "derived"):  # a size split can keep it
                    self.narrowed += filter(None, [point_narrowing(decl.spec, dim.size,
                                                                   self.roots)])
                origin = self._deciding(name, dim.size + 1)  # the guard ruling out others
                if isinstance(origin, CountPin):  # a list or loop as long as the dim
                    problems.append(count_pinned(label, decl.where, dim.size,
                                                 from_text(origin), origin.what))
                    continue
                cause = (f"was specialized to {dim.size}{from_text(origin)}"
                         f"{torch_said.quoted(_torch_specialized(decl, dim.size))}.")
                fix = _static_fix(decl.where, dim.size)
                cause, fix = self._omitted_note(decl, dim.size, cause, fix)
                problems.append(Violation(label, cause, fix))
                continue
            if decl.kind not in ("named", "derived"):
                continue
            root = next(iter(decl.expr.free_symbols))
            dim_name = self.dim_names.get(root, root)
            free = contract.symbol(root)
            alias = auto_alias(env, self.decls, root) if free is None else None
            if alias and self.dim_names.setdefault(alias, dim_name) == dim_name:  # AUTO dims
                root, free = alias, contract.symbol(alias)  # (only): now this named Dim
            if free is None:  # the root symbol became an expression of others
                key = f"rel:{root}"
                if key in seen:
                    continue
                seen.add(key)
                problems.append(self._relation_problem(root, dim_name,
                                                       env.simplify(sym(root)), label))
                continue
            declared = self.roots[dim_name][0]
            lo = 0 if free.lo is None else free.lo
            hi = math.inf if free.hi is None else free.hi
            if (lo > declared.min or hi < declared.max) and not range_assumed_away(
                    env, root, declared, lo, hi):  # (sizes 0/1 where eager raises: checked)
                key = f"range:{root}"
                if key in seen:
                    continue
                seen.add(key)
                self.dim_fixes[dim_name] = Dim(dim_name, min=lo, max=free.hi)
                self.narrowed.append((dim_name, lo, hi, declared.min, declared.max,
                                      self.env.hints[root], False))
                args = [repr(dim_name)] + ([f"min={lo}"] if lo > 0 else []) + (
                    [f"max={hi}"] if hi != math.inf else [])
                outside = lo - 1 if lo > declared.min else int(hi) + 1
                problems.append(Violation(
                    label, f"only works for {_range_text(dim_name, lo, hi)}"
                           f"{self.origin_of(root, outside)}, but {declared!r} allows "
                           f"[{declared.min}, {declared.max}]" + torch_said.quoted(
                               torch_said.not_all_values(
                                   dim_name, decl.where, _range_text(decl.where, lo, hi),
                                   _range_text(dim_name, declared.min, declared.max))) + ".",
                    f"{dim_name} = Dim({', '.join(args)})"))
                continue
            if root not in pins:
                pins[root] = pinned_by_conditions(root, lo, hi, contract.conditions)
            pinned = pins[root]
            if pinned is not None and f"pin:{decl.where}" not in seen:
                seen.add(f"pin:{decl.where}")
                seen.add(f"pin:{root}")
                value, origin = pinned
                value = int(decl.expr.evaluate({root: value}))  # a derived dim: 2*d -> 2*v
                self.fixes[(decl.path, decl.dim)] = value
                problems.append(Violation(
                    label, f"can only be {value}{origin}: the program's run-time condition "
                           f"holds for no other value in {declared!r}'s range.",
                    _static_fix(decl.where, value)))
        problems += self._named_relations(contract, seen)
        compose_links(self.dim_fixes, self.links, self.declared, list(self.roots),
                      self._new_root_name)  # (fix_links.py: one family, torch's form)
        return problems

    def _omitted_note(self, decl: DimDecl, size: int, cause: str, fix: str) -> tuple[str, str]:
        """A dim specialized where an input left out of the spec has a dim of that size:
        name the missing key (the likely cause) and the fix that shares the Dim."""
        same = [(p, d) for p, shape in self.omitted.items()
                for d, n in enumerate(shape) if n == size]
        if not same:
            return cause, fix
        tops = list(dict.fromkeys(_top_key(p) for p, _ in same))
        keys = ", ".join(repr(k) for k in tops)
        dims = ", ".join(f"{p}.shape[{d}]" for p, d in same)
        cause += (f" dynamic_shapes has no entry for {keys}, so its dims are static, "
                  f"{dims} (also {size}) among them: an op that needs {decl.where} to equal "
                  f"{'it' if len(same) == 1 else 'one of them'} pins it (torch.export refuses "
                  f"a dict without a key for every input).")
        spec = decl.spec.name if isinstance(decl.spec, Dim) else repr(decl.spec)
        p, d = same[0]
        share = (f"dynamic_shapes[{p!r}] = {{{d}: {spec}}}" if p == tops[0] else
                 f"add {tops[0]!r} to dynamic_shapes with {spec} for {p}.shape[{d}]")
        return cause, f"if {p}.shape[{d}] goes with {decl.where}, give it the same Dim: " \
                      f"{share}; otherwise {fix}"

    def _named_relations(self, contract: Contract, seen: set[str]) -> list[Violation]:
        """Run-time conditions that rule out sizes the spec declares: a named Dim promises
        that every value in its range works, so a residual condition that some named Dims
        inside their ranges break (every other dim as in the example) is a problem, with
        the fix that is true: the narrower range where it holds, the one value it allows,
        or, for a relation between independent named Dims or a condition that no range
        expresses (``x.shape[0] % 2 == 0``), Dim.DYNAMIC to accept it as a run-time check."""
        order = list(self.env.symbols)
        out = []
        for c in contract.conditions:
            named = sorted({s for s in c.cond.free_symbols if s in self.dim_names
                            and contract.symbol(s) is not None}, key=order.index)
            names = list(dict.fromkeys(self.dim_names[s] for s in named))
            if not names or f"rel:{names[-1]}" in seen or (
                    len(names) == 1 and any(f"{k}:{named[0]}" in seen for k in _DONE)):
                continue
            if len(names) == 1 and not self._all_backed(contract, c.cond):
                continue  # a data-dependent check (u0 <= x.shape[0]): not the spec's space
            point = refuted(self.env, contract, c, named)
            if point is None or condition_assumed_away(self.env, contract, c, named, point):
                # no size in the declared ranges breaks it (e.g. `(3*b*n) % (b*n) == 0`,
                # which the prover cannot simplify), or only sizes below 2 where eager
                # raises (eager_raises.py): a run-time check, as torch's program raises
                continue
            if len(names) >= 2:
                if relation_required(self.env, c, point) or relation_assumed_away(
                        self.env, contract, c, named):
                    continue  # an op's requirement between Dims: checked, as torch's program
                out.append(self._relation(contract, c, named, names))
            else:
                out.append(self._narrowing(contract, c, named[0], point))
            seen.add(f"rel:{names[-1]}")
            if len(names) == 1:
                seen.add(f"rel:{named[0]}")
        return out

    def _all_backed(self, contract: Contract, cond: Expr) -> bool:
        for name in cond.free_symbols:
            spec = contract.symbol(name)
            if spec is None or not spec.backed:
                return False
        return True

    def _relation(self, contract: Contract, c: Any, named: list[str],
                  names: list[str]) -> Violation:
        where = ", ".join(f"{self._where_of(s)} ({self.roots[n][0]!r})"
                          for s, n in zip(named, names))
        cause = (f"must satisfy `{contract.where_text(c.cond)}`{c.origin}, a relation "
                 f"between Dims the spec declares independent ({', '.join(names)}).")
        k = example_side_link(self.env, c.cond, *named[1::-1]) if len(named) == 2 else None
        if k is not None:  # one Dim is the other plus a constant (on the example's side)
            self.links[names[1]] = (names[0], k)
            return Violation(where, cause, f"declare it: {names[1]} = "
                             f"{DerivedDim(self.roots[names[0]][0], 1, k)!r}  (the relation "
                             f"at the example's sizes; export then checks it)")
        # With one of them Dim.DYNAMIC (at its example size) the others would still be
        # narrowed: every named Dim in the relation becomes Dim.DYNAMIC
        relaxed = []
        for n in names:
            dim = self.roots[n][0]
            loose = Dim.DYNAMIC(min=dim.min or None, max=None if dim.max == math.inf else dim.max)
            self.dim_fixes[n] = loose
            relaxed.append(f"{n} as {loose!r}")
        return Violation(
            where, cause, f"declare {' and '.join(relaxed)} to accept it as a run-time "
                          f"check of the inputs, or change the code so that it does not "
                          f"need the relation")

    def _narrowing(self, contract: Contract, c: Any, root: str, point: dict) -> Violation:
        """One named Dim that a residual condition narrows: the fix is the range around
        the example where every condition holds, when that is exactly where they hold."""
        name = self.dim_names[root]
        dim = self.roots[name][0]
        spec = contract.symbol(root)
        lo = spec.lo if spec is not None and spec.lo is not None else 0
        hi = spec.hi if spec is not None and spec.hi is not None else math.inf
        others = {n: self.env.hints[n] for n in sorted(c.cond.free_symbols) if n != root}
        conds = [o.cond for o in contract.conditions if root in o.cond.free_symbols and (
            o is c or o.cond.op != "eq" or o.cond.free_symbols == {root})]  # (a relation
        # to other dims, at their example sizes, would pin this one: reported on its own)
        fixed = {n: self.env.hints.get(n, 0) for o in conds for n in o.free_symbols if n != root}
        held = holding_range(conds, root, int(self.env.hints[root]), lo, hi, fixed)
        text = contract.where_text(c.cond)
        at = f" (with {', '.join(f'{self._where_of(n)} = {v}' for n, v in others.items())} " \
             f"as in the example)" if others else ""
        bad = point[root]
        first = self._decl_of(root)
        torch_words = torch_said.quoted(torch_said.not_all_values(
            name, first.where if first else name, text))
        cause = (f"must satisfy `{text}`{c.origin}{torch_words}, which fails for {name} = "
                 f"{bad}{at}, inside {dim!r}'s range [{dim.min}, {dim.max}]")
        words = passing_sizes(c.cond, root, Range(lo, hi), name) if not others else None
        said = words and not (held is not None and held[2])
        if said:
            cause += f"; it holds when {words}"  # the sizes that pass, beyond any range
        relaxed = Dim.DYNAMIC(min=dim.min or None, max=None if dim.max == math.inf else dim.max)
        dynamic = (f"declare {name} as {relaxed!r} to accept it as a run-time check of the "
                   f"inputs")
        if held is not None and held[0] != held[1]:
            a, b = held[0], held[1]
            narrowed = Dim(name, min=a, max=None if b == math.inf else int(b))
            self.dim_fixes[name] = narrowed
            self.narrowed.append((name, a, b, dim.min, dim.max, int(self.env.hints[root]),
                                  holds_outside(conds, root, a, b, lo, hi, fixed)))
            args = [repr(name)] + ([f"min={a}"] if a > 0 else []) + (
                [f"max={int(b)}"] if b != math.inf else [])
            return Violation(self._label(root),
                             cause + f"; {'around the example, ' if words else ''}it holds "
                                     f"for {_range_text(name, a, b)}.",
                             f"{name} = Dim({', '.join(args)}); or {dynamic}")
        found = residue_span(conds, c.cond, root, int(self.env.hints[root]), lo, hi, fixed,
                             lambda e: branch_at_example(self.env, e))
        if found is not None:  # `s % k == r` and the others hold around it: s = k*q + r
            k, r, a, b = found
            q = Dim(self._new_root_name(name), min=max(-(-(a - r) // k), 0),
                    max=None if b == math.inf else int(b - r) // k)
            self.dim_fixes[name] = DerivedDim(q, k, r)
            holds = "." if said else (  # `words` said it already
                f"; it holds for the sizes {k}*q + {r}" if r else
                f"; it holds for the multiples of {k}") + (
                f" in [{a}, {b}]." if (a, b) != (lo, hi) else ".")
            return Violation(self._label(root), cause + holds,
                             f"derive the dim: {name} = {DerivedDim(q, k, r)!r} with "
                             f"{q.name} = {q!r}; or {dynamic}")
        if held is not None and held[2]:
            value = held[0]
            first = self._decl_of(root)
            where = first.where if first is not None else name
            for decl in self.decls:
                if decl.expr.free_symbols == {root} and decl.kind in ("named", "derived"):
                    self.fixes[(decl.path, decl.dim)] = int(decl.expr.evaluate({root: value}))
            self.narrowed.append((name, value, value, dim.min, dim.max, value, False))
            return Violation(self._label(root),
                             cause + f": it holds for {name} = {value} alone.",
                             f"{_static_fix(where, value)}; or {dynamic}")
        self.dim_fixes[name] = relaxed
        also = [f"`{contract.where_text(o)}`" for o in conds if o is not c.cond]
        return Violation(self._label(root),
                         cause + ("; " if not words else ", and ") + "no range of " + name
                         + " expresses it" + (f" together with {', '.join(also)}"
                                              if also else "") + ".",
                         f"{dynamic}, or change the code so that it holds for every {name}")

    def _new_root_name(self, name: str) -> str:
        """The root of a derived fix for Dim `name` (`name = k*_name + r`): torch.export's
        ``_name``, with more underscores if the spec already has a Dim of that name."""
        taken = set(self.roots) | set(self.declared) | set(self.dim_fixes) | {
            getattr(getattr(f, "root", None), "name", None) for f in self.dim_fixes.values()}
        root = f"_{name}"
        while root in taken:
            root = f"_{root}"
        return root

    def _relation_problem(self, root: str, dim_name: str, rep: Expr, label: str) -> Violation:
        names = {s: self.dim_names.get(s) or self._where_of(s) for s in rep.free_symbols}
        text = str(rep)
        for s, n in names.items():
            text = text.replace(s, n)
        piece = None  # `max(dy - min(dy, 4), 0)` (a clamped slice): `dy - 4` around the example
        if len(rep.free_symbols) == 1:
            other = next(iter(rep.free_symbols))
            other_dim = self.dim_names.get(other)
            lin = linear_in(rep, other)
            if lin is None and other_dim is not None:
                lin = linear_in(branch_at_example(self.env, rep), other)
                piece = lin
            if other_dim is not None and lin is not None and lin[0] == 1:
                self.links[dim_name] = (other_dim, lin[1])
            if other_dim is not None and lin is not None and piece is None:
                base = self.roots[other_dim][0]
                self.dim_fixes[dim_name] = base if lin == (1, 0) else DerivedDim(base, *lin)
            elif other_dim is not None and piece is not None:
                piece = clamp_fix(self.dim_fixes, self.roots, dim_name, other_dim, *lin)
        if piece is not None:
            fix = (f"declare it: {piece}  (the relation on the example's side of the "
                   f"clamp, where {dim_name} == {text}; export then checks it on every input "
                   f"the new spec allows)")
        elif dim_name in self.dim_fixes:
            fix = (f"declare it: {dim_name} = {text}  (derive the dim from the other Dim, or "
                   f"use the same Dim in both places)")
        else:  # min/max/floor of a Dim, several Dims: nothing a Dim can be
            self.dim_fixes[dim_name] = Dim.AUTO
            fix = (f"declare it: {dim_name} = Dim.AUTO  (derive the dim automatically: no Dim "
                   f"can be {text}; the program then checks {dim_name} == {text} on every "
                   f"input)")
        equal = rep.op == "sym" and isinstance(getattr(self._decl_of(rep.name), "spec", None),
                                               Dim)
        said = torch_said.related(dim_name, label.split(" (")[0], self._first_uses(rep), text, equal)
        return Violation(label, f"must equal {text}{self.origin_of(root)}, a relation the spec "
                                f"does not declare{torch_said.quoted(said)}.", fix)

    def _first_uses(self, rep: Expr) -> str:
        """``_dimz - 2 = x.shape[0]``: each symbol of `rep` as its first declared dim (the
        declaration and where), as torch.export names the other side of a relation."""
        out = []
        for s in sorted(rep.free_symbols):
            decl = self._decl_of(s)
            if decl is None:
                out.append(self.dim_names.get(s) or self._where_of(s))
                continue
            spec = decl.spec.name if isinstance(decl.spec, Dim) else repr(decl.spec)
            out.append(f"{spec} = {decl.where}")
        return ", ".join(out)

    def _decl_of(self, root: str) -> DimDecl | None:
        return self.owner.get(root) or next(
            (d for d in self.decls if root in d.expr.free_symbols), None)

    def _label(self, root: str) -> str:
        """``x.shape[0] (Dim('b'))``: the first declared dim using root symbol `root`."""
        decl = self._decl_of(root)
        if decl is None:
            return repr(self.roots[self.dim_names[root]][0])
        return f"{decl.where} ({decl.spec!r})"

    def _where_of(self, name: str) -> str:
        decl = self.owner.get(name)
        return decl.where if decl else name

    def suggestion(self, specs: list, leaves: list, in_spec: Any, names: list[str]) -> str:
        """A ready-to-paste ``dynamic_shapes`` value with every fix applied: a line for each
        Dim the fixes change or add; a Dim kept as declared is not restated (as in
        torch.export's suggested fixes) but written where it is used, ``Dim('n')``, so the
        text runs whatever the user's variables are called."""
        defs: dict[str, str] = {}
        declared = self.declared

        def define(dim: Dim) -> str:
            """The name to write for `dim` (defined once), or `dim` itself, kept."""
            same = declared.get(dim.name)
            if same is not None and (same.min, same.max) == (dim.min, dim.max) and \
                    dim.name not in defs:
                return repr(dim)
            defs[dim.name] = f"{dim.name} = {dim!r}"
            return dim.name

        def render(entry: Any, path: str, d: int) -> str:
            fixed = self.fixes.get((path, d), entry)
            for _ in range(3):  # a fix may point to a Dim that has a fix of its own
                if isinstance(fixed, Dim) and fixed.name in self.dim_fixes:
                    fixed = self.dim_fixes[fixed.name]
                elif isinstance(fixed, DerivedDim) and fixed.root.name in self.dim_fixes \
                        and isinstance(self.dim_fixes[fixed.root.name], Dim):
                    fixed = DerivedDim(self.dim_fixes[fixed.root.name], fixed.coef, fixed.offset)
            if isinstance(fixed, DerivedDim):
                root = define(fixed.root)
                return re.sub(rf"\b{fixed.root.name}\b", lambda _: root, repr(fixed))
            if isinstance(fixed, Dim):
                return define(fixed)
            return repr(fixed)

        rendered = []
        for (path, _), entries in zip(leaves, specs):
            if entries is None or entries is OMITTED:
                rendered.append(_Raw("None"))
            else:  # (an int declared dynamic: its one entry as it is)
                text = ", ".join(render(e, path, d) for d, e in enumerate(entries))
                rendered.append(_Raw(text if isinstance(entries, ScalarSpec) else
                                     "(" + text + ("," if len(entries) == 1 else "") + ")"))
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


_DONE = ("rel", "pin")  # a dim with one of these problems gets no second one (a narrowed
# range may: the condition is then searched, and its fix given, inside the narrowed range)


def _torch_specialized(decl: DimDecl, size: int) -> str:
    if isinstance(decl.spec, DerivedDim):
        return torch_said.specialized(decl.where, size, derived=repr(decl.spec),
                                 root=decl.spec.root.name)
    return torch_said.specialized(decl.where, size, decl.spec.name if isinstance(decl.spec, Dim)
                             else None)


def _range_text(name: str, lo: float, hi: float) -> str:
    if hi == math.inf:
        return f"{name} >= {int(lo)}"
    if lo <= 0:
        return f"{name} <= {int(hi)}"
    return f"{int(lo)} <= {name} <= {int(hi)}"


def _top_key(path: str) -> str:
    """The top-level input of a leaf path: ``xs[1]['a']`` -> ``xs``."""
    return path.split("[", 1)[0].split(".", 1)[0]


def _static_fix(where: str, value: int) -> str:
    return (f"make it static: {where} -> {value} (or Dim.STATIC), or let safetrace decide: "
            f"Dim.AUTO")


def raise_violations(problems: list[Violation], suggestion: str, dyn: DynamicDims) -> None:
    if problems:
        places = {d.name: x.where for x in reversed(dyn.decls)  # each Dim's first input dim
                  for d in (x.spec, getattr(x.spec, "root", None))
                  if isinstance(getattr(d, "name", None), str)}
        exc = declared_space(problems, suggestion, dyn.fixes, dyn.dim_fixes,
                             {n: (d.min, d.max) for n, d in dyn.declared.items()}, places)
        # every problem narrows a named Dim around its hint: a size split can keep the
        # declared space (exporter/splits.py)
        exc.st_narrowed = list(dyn.narrowed) if len(dyn.narrowed) == len(problems) else []
        raise exc

