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

from safetrace.dims import DerivedDim, Dim, DimHint
from safetrace import errors
from safetrace.errors import Violation, count_pinned, declared_space, spec_entry
from safetrace.errors import torch_words as torch_said
from safetrace.exporter.contract import Contract
from safetrace.exporter.dim_conditions import pinned_by_conditions
from safetrace.exporter.dim_relations import NamedRelations, range_text, static_fix
from safetrace.exporter.eager_raises import ASSUMED_MIN, range_assumed_away
from safetrace.exporter.example_ranges import in_range
from safetrace.exporter.fix_links import compose_links
from safetrace.exporter.relation_splits import plain_relation, positive_sizes, relation_point
from safetrace.exporter.sides import (
    ASSUMED, CHECKED, RELATED, SPECIAL, assumed_out, auto_alias, only_value, point_narrowing, side_hint,
)
from safetrace.exporter.spec import OMITTED
from safetrace.exporter.suggestion import suggestion_text
from safetrace.meta.pins import CountPin
from safetrace.symbolic import Env, Expr, make_int
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


class DynamicDims(NamedRelations):
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
        # instead of the example size and the declared range; what the side assumes and
        # the sizes of AUTO / DYNAMIC dims related to its Dims (sides.py, set_overrides)
        self.overrides: dict[str, tuple[int, int, float]] = {}
        self.assumed: tuple[Expr, ...] = ()
        self.checked: tuple[Expr, ...] = ()  # relations kept as run-time checks (sides.py)
        self.related: dict[str, Expr] = {}
        self.refused: list = []  # relations refused where no range expresses them
        self.branched: list = []  # (c == a*b, side breaking it, origin): a branch's relation
        # named Dims narrowed around their hint, one per problem found narrowing one:
        # (Dim name, lo, hi it works for, declared lo, declared hi, hint, soft); soft: the
        # condition also holds beyond [lo, hi] (`s != 7`): a split there may not end
        self.narrowed: list[tuple[str, int, float, int, float, int, bool]] = []
        # a named Dim pinned to one value by run-time conditions outside a split's side:
        # where its split needs more than max_splits, the refusal keeps the static fix
        self.pinned_top = False
        self.omitted: dict[str, tuple] = {}             # path -> shape, left out of the spec
        # example sizes outside a dim hint's range (example_out_of_range's arguments):
        # every input is read before one error lists them all (``example_ranges``)
        self.conflicts: list[tuple] = []
        self.declared: dict[str, Dim] = {}  # Dim name -> the Dim as the user declared it
        self.links: dict[str, tuple[str, int]] = {}  # Dim name -> (other, k): other + k
        # the small problems (sizes below 2) this export keeps as run-time checks, by
        # ``Violation.key``, and those it kept (small_splits.checked_below_two)
        self.defer_keys: frozenset = frozenset()
        self.deferred: list[Violation] = []
        self.auto_named: dict[str, Dim] = {}  # Dim.AUTO dims traced as Dims (auto_small.py)
        self.examples: dict[str, int] = {}  # Dim name -> its example size (a side's hints
        # aside: splits._run_side traces a side again there where eager raises at its hint)

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
            if isinstance(e, DimHint) and e.kind in ("auto", "dynamic") and \
                    place in self.auto_named:
                e = self.auto_named[place]  # (its sizes 0 and 1 split apart: auto_small.py)
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
                n = side_hint(self.env, self.related.get(place), n, lo, hi)
                if not in_range(self, where, n, lo, hi, repr(e), place, (e.min, e.max)):
                    lo, hi = 0, math.inf  # (traced unbounded, refused after: example_ranges)
                s = self._related_symbol(place, e.kind, n, lo, hi)
                if s is None:
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

    def set_overrides(self, sides: dict) -> None:
        """A split's side (``sides.py``): the Dims' hints and ranges, what it assumes, and
        the sizes of Dim.AUTO / DYNAMIC dims as the first trace related them to others (their
        hints follow the side's: an example size would break the relation)."""
        self.overrides = {k: v for k, v in sides.items() if k not in SPECIAL}
        self.assumed = tuple(sides.get(ASSUMED, ()))
        self.checked = tuple(sides.get(CHECKED, ()))
        self.related = dict(sides.get(RELATED, {}))

    def relations(self) -> dict:
        """{RELATED: {"z.shape[1]": size}}: each Dim.AUTO / DYNAMIC dim this trace made an
        expression of other input sizes (a side's overrides, ``set_overrides``)."""
        out = {}
        for decl in self.decls:
            if decl.kind in ("auto", "dynamic") and decl.expr.op == "sym":
                e = self.env.simplify(decl.expr)
                if e != decl.expr and e.op != "const" and all(
                        self.env.symbols[n].backed for n in e.free_symbols):
                    out[decl.where] = e
        return {RELATED: out} if out else {}

    def _related_symbol(self, place: str, kind: str, hint: int, lo: float, hi: float
                        ) -> Expr | None:
        """On a split's side, the symbol of another Dim.AUTO / DYNAMIC dim read before that
        the first trace made this one equal to (``RELATED``: lfm2's mask batch, the ids'
        batch), where its hint and range agree: the side takes them equal as the first
        trace's program does (a side that reads them apart, at length 1, would need
        another input contract, and no one program joins the sides); else None."""
        e = self.related.get(place)
        if kind not in ("auto", "dynamic") or e is None or e.op != "sym" or \
                self.env.hints.get(e.name) != hint or e.name not in self.owner or \
                self.owner[e.name].kind not in ("auto", "dynamic"):
            return None
        rng = self.env.symbols[e.name].range
        return e if (max(rng.lo, 0), rng.hi) == (lo, hi) else None

    def refused_split(self) -> tuple | None:
        """(condition, overrides of a side breaking it) for the first refused relation
        (``relation_splits.split_refused``), or None."""
        contract, c, named = self.refused[0]
        if not plain_relation(c.cond, positive_sizes(contract, c.cond.free_symbols)):
            return None
        side = relation_point(self.env, contract, c, named, self)
        return None if side is None else (c.cond, side, c.origin)

    def _root(self, dim: Dim, hint: int, where: str, path: str, d: int,
              derived: DerivedDim | None = None) -> Expr:
        self.examples.setdefault(dim.name, hint)
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
                fix = static_fix(decl.where, dim.size)
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
                rep = env.simplify(sym(root))
                if not self.required_relation(root, rep) and not self.branch_relation(
                        root, rep):  # (c == a*b of an op or a branch: checked, or split)
                    problems.append(self._relation_problem(root, dim_name, rep, label))
                continue
            declared = self.roots[dim_name][0]
            lo = 0 if free.lo is None else free.lo
            hi = math.inf if free.hi is None else free.hi
            if (lo > declared.min or hi < declared.max) and not range_assumed_away(
                    env, root, declared, lo, hi) and not assumed_out(  # (sizes 0/1 where
                    env, self.assumed, root, declared, lo, hi):  # eager raises: checked)
                key = f"range:{root}"
                if key in seen:
                    continue
                seen.add(key)
                args = [repr(dim_name)] + ([f"min={lo}"] if lo > 0 else []) + (
                    [f"max={hi}"] if hi != math.inf else [])
                outside = lo - 1 if lo > declared.min else int(hi) + 1
                problem = Violation(
                    label, f"only works for {range_text(dim_name, lo, hi)}"
                           f"{self.origin_of(root, outside)}, but {declared!r} allows "
                           f"[{declared.min}, {declared.max}]" + torch_said.quoted(
                               torch_said.not_all_values(
                                   dim_name, decl.where, range_text(decl.where, lo, hi),
                                   range_text(dim_name, declared.min, declared.max))) + ".",
                    f"{dim_name} = Dim({', '.join(args)})",
                    small=hi >= declared.max and lo <= ASSUMED_MIN,
                    key=(f"{root} >= {lo}", ((root, dim_name),), frozenset(
                        v for v in range(declared.min, min(lo, ASSUMED_MIN)))))
                if self.deferring(problem):
                    continue  # (a run-time check: no fix, no split)
                self.dim_fixes[dim_name] = Dim(dim_name, min=lo, max=free.hi)
                self.narrowed.append((dim_name, lo, hi, declared.min, declared.max,
                                      self.env.hints[root], False))
                problems.append(problem)
                continue
            if root not in pins:
                pins[root] = pinned_by_conditions(root, lo, hi, contract.conditions)
            pinned = pins[root]
            if pinned is not None and f"pin:{decl.where}" not in seen:
                seen.add(f"pin:{decl.where}")
                seen.add(f"pin:{root}")
                value, origin = pinned
                value = int(decl.expr.evaluate(  # a derived dim: 2*d -> 2*v (its symbol,
                    {root: value, **dict.fromkeys(decl.expr.free_symbols, value)}))  # AUTO's
                self.fixes[(decl.path, decl.dim)] = value
                named = getattr(decl.spec, "root", decl.spec)  # (the Dim: every use of it,
                if decl.kind in ("named", "derived"):  # other inputs' too, pinned at once)
                    self.dim_fixes.setdefault(named.name, pinned[0])
                    self.narrowed += filter(None, [point_narrowing(  # (a size split
                        decl.spec, value, self.roots)])  # keeps it: bamba's `pad_size > 0`
                    # on the side from 2 to 8, at 8; dinov2's position table at 32 alone)
                    self.pinned_top = self.pinned_top or named.name not in self.overrides
                problems.append(Violation(
                    label, f"can only be {value}{origin}: the program's run-time condition "
                           f"holds for no other value in {declared!r}'s range.",
                    static_fix(decl.where, value)))
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

    def suggestion(self, specs: list, leaves: list, in_spec: Any, names: list[str]) -> str:
        """A ready-to-paste ``dynamic_shapes`` value with every fix applied
        (``suggestion.py``)."""
        return suggestion_text(self, specs, leaves, in_spec, names)


def _torch_specialized(decl: DimDecl, size: int) -> str:
    if isinstance(decl.spec, DerivedDim):
        return torch_said.specialized(decl.where, size, derived=repr(decl.spec),
                                 root=decl.spec.root.name)
    return torch_said.specialized(decl.where, size, decl.spec.name if isinstance(decl.spec, Dim)
                             else None)


def _top_key(path: str) -> str:
    """The top-level input of a leaf path: ``xs[1]['a']`` -> ``xs``."""
    return path.split("[", 1)[0].split(".", 1)[0]


def raise_violations(problems: list[Violation], suggestion: str, dyn: DynamicDims,
                     positional: list[str] | tuple = ()) -> None:
    """``positional``: the names of the inputs passed by position (a tuple spec's fixes are
    found by them in ``refine_dynamic_shapes_from_suggested_fixes``)."""
    if problems:
        places = {d.name: x.where for x in reversed(dyn.decls)  # each Dim's first input dim
                  for d in (x.spec, getattr(x.spec, "root", None))
                  if isinstance(getattr(d, "name", None), str)}
        exc = declared_space(problems, suggestion, dyn.fixes, dyn.dim_fixes,
                             {n: (d.min, d.max) for n, d in dyn.declared.items()}, places)
        exc.details["positional"] = list(positional)
        # every problem narrows a named Dim around its hint: a size split can keep the
        # declared space (exporter/splits.py)
        exc.st_narrowed = list(dyn.narrowed) if len(dyn.narrowed) == len(problems) else []
        exc.st_pinned = dyn.pinned_top  # (splits.py: too many splits keep this refusal)
        exc.st_related = dyn.relations()  # (the sides' hints of the dims related to them)
        # every problem a relation no range expresses: a relation split can keep the
        # declared space (exporter/relation_splits.py)
        exc.st_relation = dyn.refused_split() if len(dyn.refused) == len(problems) else None
        # every problem a branch's relation between named Dims: where no split keeps both
        # answers, the program checks them at run time, as torch.export's does (splits.py)
        between = [c.cond for _, c, named in dyn.refused if dyn.branch_between(c, named)]
        exc.st_checked = tuple(between) if len(between) == len(problems) else ()
        raise exc

