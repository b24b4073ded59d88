"""The problems of a traced program's run-time conditions against the declared Dims.

A named Dim promises that every value in its range works: a residual condition of the
contract that some sizes inside the declared ranges break is a problem, reported with
the fix that is true (a narrower range, one value, a derived dim, or Dim.DYNAMIC to
accept it as a run-time check); a declared root symbol that became an expression of
others is a relation the spec does not declare.  Mixed into ``dynamic.DynamicDims``,
whose tables (``roots``, ``dim_names``, ``fixes``, ``dim_fixes``, ``narrowed``,
``links``) these methods read and fill.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any

from safetrace.dims import DerivedDim, Dim
from safetrace.errors import Violation, eager_fails
from safetrace.errors import torch_words as torch_said
from safetrace.exporter.clamps import branch_at_example, clamp_fix
from safetrace.exporter.contract import Contract, linear_in
from safetrace.exporter.declared_ranges import declared_range
from safetrace.exporter.dim_conditions import holding_range, holds_outside, residue_span
from safetrace.exporter.eager_raises import (
    ASSUMED_MIN, condition_assumed_away, fails_in_eager, refuted, relation_assumed_away,
    relation_required, requirements_only,
)
from safetrace.exporter.fix_links import example_side_link
from safetrace.exporter.relation_splits import plain_relation
from safetrace.exporter.sides import ASSUMED, assumed_imply
from safetrace.meta.pins import CountPin
from safetrace.rules.kernel_checks import kernel_checked
from safetrace.symbolic import Env, Expr, Range
from safetrace.symbolic.canon import eq
from safetrace.symbolic.expr import sym
from safetrace.symbolic.describe import passing_sizes
from safetrace.trace.source import from_text


class NamedRelations:
    """The relation and narrowing problems of ``DynamicDims`` (see the module's doc)."""

    env: Env
    decls: list
    roots: dict[str, tuple[Dim, Expr]]
    owner: dict
    dim_names: dict[str, str]
    fixes: dict[tuple[str, int], Any]
    dim_fixes: dict[str, Any]
    narrowed: list
    declared: dict[str, Dim]
    links: dict[str, tuple[str, int]]
    assumed: tuple[Expr, ...]
    checked: tuple[Expr, ...]
    refused: list  # (contract, condition, its named symbols): a relation split's candidates
    branched: list  # (relation, side, origin): a branch's relation a split may keep
    defer_keys: frozenset
    deferred: list

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
            if declared_range(c.origin) or kernel_checked(c.origin):
                continue  # a declared range of a dim the program related (checked), or
                # an op's check torch's kernel makes (torch's program raises there too)
            named = sorted({s for s in c.cond.free_symbols if s in self.dim_names
                            and contract.symbol(s) is not None}, key=order.index)
            names = list(dict.fromkeys(self.dim_names[s] for s in named))
            if c.cond in self.assumed or assumed_imply(self.assumed, c.cond, {
                    s: (self.roots[n][0].min, self.roots[n][0].max)
                    for s, n in self.dim_names.items() if n in self.roots}):
                continue  # a relation split's side: the program runs only where it holds
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
            small = refuted(self.env, contract, c, named, ASSUMED_MIN) is None
            key = small_key(c.cond, {s: self.dim_names[s] for s in named},
                            self.roots[names[0]][0])
            if len(names) >= 2:
                if relation_required(self.env, c, point) or relation_assumed_away(
                        self.env, contract, c, named) or c.cond in self.checked:
                    continue  # an op's requirement between Dims: checked, as torch's program
                problem = self._kept(lambda: self._relation(contract, c, named, names),
                                     small, key)
                if problem is not None:
                    out.append(problem)
                    self.refused.append((contract, c, named))
            else:
                before = len(self.narrowed)
                problem = self._kept(lambda: self._narrowing(contract, c, named[0], point),
                                     small, key)
                if problem is not None:
                    out.append(problem)
                    if len(self.narrowed) == before or self.narrowed[-1][6]:  # no range,
                        # or one that holds beyond it too (`s % 20 < 10`): a relation split
                        # may keep it where the range splits cannot (splits.py)
                        self.refused.append((contract, c, named))
            seen.add(f"rel:{names[-1]}")
            if len(names) == 1:
                seen.add(f"rel:{named[0]}")
        return out

    def deferring(self, problem: Violation) -> bool:
        """Whether `problem` is one of the small problems this export keeps as run-time
        checks (``defer_keys``, matched by its condition and Dim names): kept in
        ``deferred`` then, for ``ExportedProgram.deferred_checks``."""
        key = problem.key
        if not problem.small or not key:
            return False
        # one Dim's condition: the sizes below 2 it breaks, each among those of a deferred
        # condition on that Dim (`s0 != 1` at the first export is `s0 >= 2` on a side
        # from 1); else the same condition, in the same symbols and Dims
        if key[2] is None and key not in self.defer_keys:
            return False
        if key[2] is not None and not (key[2] and key[2] <= {
                v for k in self.defer_keys if k[1] == key[1] and k[2] is not None
                for v in k[2]}):
            return False
        self.deferred.append(problem)
        return True

    def _kept(self, make: Any, small: bool, key: tuple) -> Violation | None:
        """``make()``'s problem with `small` and `key`, or None where ``deferring`` it:
        what making it wrote for the refusal's fixes and splits is undone then."""
        before = len(self.narrowed), dict(self.fixes), dict(self.dim_fixes), dict(self.links)
        problem = replace(make(), small=small, key=key)
        if not self.deferring(problem):
            return problem
        del self.narrowed[before[0]:]
        for table, was in zip((self.fixes, self.dim_fixes, self.links), before[1:]):
            table.clear()
            table.update(was)
        return None

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
            cut = [(x, y) for x, y in ((lo, a - 1), (b + 1, hi)) if x <= y and x != math.inf]
            if not others and len(conds) == 1 and all(
                    fails_in_eager(self.env, c.cond, root, x, y) for x, y in cut):
                return eager_fails(self._label(root), name, " and ".join(
                    range_text(name, x, y) for x, y in cut), text, c.origin,
                    range_text(name, a, b), f"{name} = Dim({', '.join(args)})")
            return Violation(self._label(root),
                             cause + f"; {'around the example, ' if words else ''}it holds "
                                     f"for {range_text(name, a, b)}.",
                             f"{name} = Dim({', '.join(args)}); or {dynamic}")
        found = residue_span(conds, c.cond, root, int(self.env.hints[root]), lo, hi, fixed,
                             lambda e: branch_at_example(self.env, e))
        if found is not None:  # `s % k == r` and the others hold around it: s = k*q + r
            k, r, a, b, alone = found  # alone: `words` said the class already
            q = Dim(self._new_root_name(name), min=max(-(-(a - r) // k), 0),
                    max=None if b == math.inf else int(b - r) // k)
            self.dim_fixes[name] = DerivedDim(q, k, r)
            holds = "." if said and alone else (
                f"; {f'with the other conditions on {name}, ' if said else ''}it holds for the "
                + (f"sizes {k}*q + {r}" if r else f"multiples of {k}")) + (
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
                             f"{static_fix(where, value)}; or {dynamic}")
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

    def required_relation(self, root: str, rep: Expr) -> bool:
        """Root symbol `root` became `rep`, an expression of two or more input sizes
        (``z.shape[0] == x.shape[0]*x.shape[1]`` of ``x.reshape(-1) + z``), that no Dim
        declaration can express, and only the code's requirements made it so: at the
        example's sizes with `root` one more than `rep`, every recorded condition on
        `root` that fails is one (eager raises there; a broadcast's equality where each
        size is at least 2).  torch.export keeps such a relation as a run-time check of
        its program and so does safetrace (the contract checks `root`'s dim against `rep`,
        and its declared range, ``declared_ranges.py``), refused before computing."""
        env = self.env
        if len(rep.free_symbols) < 2 or not all(
                n in env.symbols and env.symbols[n].backed for n in rep.free_symbols):
            return False
        binding = {n: info.hint for n, info in env.symbols.items() if info.backed}
        try:
            binding[root] = int(rep.evaluate(binding)) + 1
        except (ArithmeticError, KeyError, ValueError, TypeError):
            return False
        checks = {id(f) for f in env.facts}
        failed = []
        for g in env.guards + env.facts + [r for r in env.requirements if r.precondition]:
            if root not in g.cond.free_symbols:
                continue
            try:
                if not g.cond.evaluate(binding):
                    failed.append(g)
            except (ArithmeticError, KeyError, ValueError, TypeError):
                return False
        return bool(failed) and all(
            g.precondition or id(g) in checks or (g.required_from > 0 and all(
                binding[n] >= g.required_from for n in g.cond.free_symbols))
            for g in failed)

    def branch_relation(self, root: str, rep: Expr) -> bool:
        """Root symbol `root` became `rep`, a plain expression of two or more backed
        sizes that no Dim expresses (``if a*b == c:`` at the example), by a branch of the
        code: torch.export keeps it as a run-time check of its program, and so does
        safetrace (the contract checks `root`'s dim against `rep`); where the relation's
        other answer is in the declared ranges, ``branched`` gets it for a relation split
        (``relation_splits.relation_sides``: both answers traced, ``torch.cond`` on it).
        A side that assumes the relation (``assumed``) runs only where it holds."""
        env = self.env
        if not rep.free_symbols or not plain_relation(rep) or not all(
                n in env.symbols and env.symbols[n].backed for n in rep.free_symbols):
            return False
        cond = eq(sym(root), rep)
        ranges = {s: (self.roots[n][0].min, self.roots[n][0].max)
                  for s, n in self.dim_names.items() if n in self.roots}
        if cond in self.assumed or assumed_imply(self.assumed, cond, ranges):
            return True  # (`b == a` too: the side of `if a == b:` that a split traced)
        if len(rep.free_symbols) < 2:
            return False
        named = sorted(rep.free_symbols | {root})
        if not all(s in self.dim_names for s in named):
            return True  # (a relation to Dim.AUTO sizes: checked, not split)
        try:
            at = int(rep.evaluate({n: env.hints[n] for n in rep.free_symbols}))
        except (ArithmeticError, KeyError, ValueError, TypeError):
            return True
        dim = self.roots[self.dim_names[root]][0]
        point = next((v for v in (at + 1, at - 1, dim.min, at + 2) if
                      dim.min <= v <= dim.max and v != at and
                      not requirements_only(env, {root: v}, True)), None)
        if point is None:
            return True
        side = {self.dim_names[s]: (env.hints[s] if s != root else point,
                                    self.roots[self.dim_names[s]][0].min,
                                    self.roots[self.dim_names[s]][0].max) for s in named}
        self.branched.append((cond, {**side, **self.relations(), ASSUMED: self.assumed},
                              self.origin_of(root)))
        return True

    def branch_between(self, c: Any, named: list[str]) -> bool:
        """Refused condition `c` relates two or more named Dims, pins no expression of
        them to one value (``len(x.split(2)) == 3``, a count: a pin, not a relation) and
        no guard pinning a count (``CountPin``) decided its sizes: a branch's relation,
        which torch.export's program keeps as a run-time check."""
        syms = set(c.cond.free_symbols)
        if c.cond.op == "eq" and any(a.op == "const" for a in c.cond.args):
            return False
        return len({self.dim_names[s] for s in named}) >= 2 and not any(
            isinstance(g.origin, CountPin) and g.cond.free_symbols <= syms
            for g in self.env.guards) and not self._narrows_one(c.cond)

    def _narrows_one(self, cond: Expr) -> bool:
        """Some size of one of `cond`'s Dims at an end of its range (its smallest three,
        its largest) breaks `cond` whatever the others' sizes (a grid of their smallest
        and largest): ``a > c`` rules out ``a == 0``, a narrowing of one Dim, which
        torch.export refuses too (``3 <= a``), not a relation kept as a check."""
        grid, ends = {}, {}
        for s in sorted(cond.free_symbols):
            dim = self.roots[self.dim_names[s]][0] if s in self.dim_names else None
            if dim is None:
                grid[s] = ends[s] = [self.env.hints.get(s, 0)]
                continue
            top = [] if dim.max == math.inf else [int(dim.max) - 1, int(dim.max)]
            grid[s] = [v for v in range(dim.min, dim.min + _GRID) if v <= dim.max] + top
            ends[s] = [v for v in range(dim.min, dim.min + 3) if v <= dim.max] + top[1:]
        for s in grid:
            others = [n for n in grid if n != s]
            for v in ends[s]:
                points = itertools.islice(itertools.product(*(grid[n] for n in others)),
                                          4096)
                if not any(_holds(cond, {s: v, **dict(zip(others, p))}) for p in points):
                    return True
        return False

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

    def _decl_of(self, root: str) -> Any:
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


_GRID = 12  # sizes of each Dim tried where `_narrows_one` looks for one that holds


def _holds(cond: Expr, point: dict) -> bool:
    try:
        return bool(cond.evaluate(point))
    except (ArithmeticError, KeyError, ValueError, TypeError):
        return True  # (no answer: not counted as ruling the size out)


def small_key(cond: Expr, named: dict[str, str], dim: Dim) -> tuple:
    """``Violation.key`` of `cond`: its text, its named symbols with their Dim names and,
    where its one symbol is `dim`'s, the sizes in `dim`'s range below 2 that break it
    (None otherwise, or where one cannot be evaluated)."""
    names = tuple(sorted(named.items()))
    if len(cond.free_symbols) != 1 or len(names) != 1:
        return str(cond), names, None
    try:
        broken = frozenset(v for v in range(ASSUMED_MIN) if dim.min <= v <= dim.max and
                           not cond.evaluate({names[0][0]: v}))
    except (ArithmeticError, KeyError, TypeError, ValueError):
        return str(cond), names, None
    return str(cond), names, broken


_DONE = ("rel", "pin")  # a dim with one of these problems gets no second one (a narrowed
# range may: the condition is then searched, and its fix given, inside the narrowed range)


def range_text(name: str, lo: float, hi: float) -> str:
    """``2 <= n <= 8``, ``n >= 2``, ``n <= 8``: a range of sizes as text."""
    if hi == math.inf:
        return f"{name} >= {int(lo)}"
    if lo <= 0:
        return f"{name} <= {int(hi)}"
    return f"{int(lo)} <= {name} <= {int(hi)}"


def static_fix(where: str, value: int) -> str:
    """The fix that pins a dim to `value`."""
    return (f"make it static: {where} -> {value} (or Dim.STATIC), or let safetrace decide: "
            f"Dim.AUTO")
