"""``st.explain``: every decision and problem of an export in one report.

Export stops at the first problem; explain goes on as far as it can: data-dependent
questions are noted and answered with an assumption (then tracing continues), constraint
violations are all listed with one combined fix, and what each declared dim became is
shown with the source line that decided it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from safetrace.errors import DeclaredSpaceViolation, StructuredError, Violation
from safetrace.exporter import auto_small, python_state
from safetrace.exporter.api import Exporter, export
from safetrace.exporter.global_caches import GlobalCaches
from safetrace.exporter.split_report import describe, named
from safetrace.exporter.splits import MAX_SPLITS, export_with_splits
from safetrace.trace.source import short


@dataclasses.dataclass
class Problem:
    """One problem: its family, where (source line), the message, the fix, and the
    catalogue id of the error (``docs/errors.md``)."""

    kind: str
    where: str
    message: str
    fix: str = ""
    code: str = ""


class ExplainReport:
    """What ``st.explain`` returns: printable, and as data (``problems``, ``dims``, ...)."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.dims: dict[str, str] = {}
        self.guards: list[tuple[str, str]] = []
        # guards of the first trace the program no longer relies on: a Dim.AUTO / DYNAMIC
        # size they refuse at 0 or 1 is a split's side of its own (exporter/auto_small.py)
        self.split_guards: list[tuple[str, str]] = []
        # questions on data-dependent sizes answered size-obliviously:
        # (condition assumed, kind, why, where, asserted at run time)
        self.settled: list[tuple[str, str, str, str, bool]] = []
        self.suggestion = ""
        self.program: Any = None
        self.env: Any = None
        self.dyn: Any = None
        self.contract: Any = None  # the input contract, once tracing finished
        # the program's splits (exporter/split_report.py): a header line each, then its sides
        self.splits: list[str] = []
        self._n_violations = 0
        self._seen: set[tuple[str, str]] = set()

    @property
    def ok(self) -> bool:
        """True when the export would succeed as written."""
        return not self.problems

    def _add(self, p: Problem) -> None:
        key = (p.kind, p.where or p.message)
        if key not in self._seen:  # one entry per source line and kind
            self._seen.add(key)
            self.problems.append(p)
            return
        for old in self.problems:  # same line: one entry with every fix it needs
            if (old.kind, old.where or old.message) == key and p.fix and p.fix not in old.fix:
                old.fix += f"\n          and {p.fix}"

    # -- called by the exporter --------------------------------------------------------
    def question(self, q: Any, error: Any) -> bool:
        where = short(q.origin) if isinstance(q.origin, str) else ""
        self._add(Problem("data-dependent", where, error.cause,
                          f"st.check({q.expr})  or  st.check(not ({q.expr}))", error.kind))
        return True  # assume the condition holds, to keep tracing

    def data_read(self, error: Any) -> bool:
        """``if tensor:`` on data: recorded (its fix names the torch.cond rewrite where the
        branches are simple); the True branch is assumed to keep tracing."""
        self._add(_problem(error))
        return True

    def stopped(self, exc: Exception) -> None:
        self._add(_problem(exc))

    def violations(self, problems: list[Violation], suggestion: str) -> None:
        self._n_violations = len(problems)
        for p in problems:
            self._add(Problem("constraint", "", f"{p.dim} {p.cause}", p.fix,
                              DeclaredSpaceViolation.kind))
        self.suggestion = suggestion

    def finish(self, dropped: list[bool] | None = None) -> None:
        """The report's data; ``dropped``: per guard of the first trace, whether the
        program no longer relies on it (``auto_small.dropped_guards``)."""
        if self.contract is not None:
            self.dims = self.contract.dims_report()
        if self.env is not None:
            names = auto_small.labels(self.dyn)  # (a split Dim's names: named, or AUTO's)
            for i, g in enumerate(self.env.guards):
                where = short(g.origin) if isinstance(g.origin, str) and g.origin else ""
                split = dropped is not None and i < len(dropped) and dropped[i] or any(
                    f"split on `{named(self.env.simplify(g.cond), names)}`" in line
                    for line in self.splits)  # (a split on it: both answers traced)
                (self.split_guards if split else self.guards).append((str(g.cond), where))
            for s in self.env.settled:
                where = short(s.origin) if isinstance(s.origin, str) and s.origin else ""
                self.settled.append((str(s.cond), s.kind, s.why, where, s.asserted))

    # -- printing ---------------------------------------------------------------------
    def __str__(self) -> str:
        lines = [f"safetrace.explain: {'OK' if self.ok else f'{len(self.problems)} problem(s)'}"]
        if self.problems:
            lines.append("Problems:")
            for i, p in enumerate(self.problems, 1):
                lines.append(f"  {i}. [{p.kind}] {p.message}")
                if p.fix:
                    lines.append(f"     Fix: {p.fix}")
        if self.suggestion:
            lines.append("Suggested dynamic_shapes (fixes every constraint problem):")
            lines.append(self.suggestion)
        if self.splits:
            lines.append("Splits (one program; each part of the declared space runs its own "
                         "graph):")
            lines += [f"  {line}" for line in self.splits]
        if self.dims:
            lines.append("Dims (declared dynamic -> as traced):")
            lines += [f"  {k}: {v}" for k, v in self.dims.items()]
        if self.guards or self.split_guards:
            lines.append("Guards (conditions the traced program relies on):" if not self.splits
                         else "Guards (of the first trace; the splits dispatch on their "
                              "conditions; [split]: each answer traced, see Splits):")
            lines += [f"  {c}  {'at ' + w if w else ''}" for c, w in self.guards]
            lines += [f"  {c} [split]  {'at ' + w if w else ''}" for c, w in self.split_guards]
        if self.settled:
            lines.append("Settled size-obliviously (data-dependent questions answered for "
                         "every size; [asserted]: checked at run time; [split]: both answers "
                         "traced, see Splits):")
            for c, kind, why, w, asserted in self.settled:
                if any(f"split on `{c}`" in line for line in self.splits):  # (its other
                    # answer was traced too: no longer checked, see Splits)
                    lines.append(f"  {c} [split]  {'at ' + w if w else ''}")
                    continue
                mark = " [asserted]" if asserted else ""
                lines.append(f"  {c}{mark}  {'at ' + w if w else ''}\n    {kind}: {why}")
        return "\n".join(lines)

    __repr__ = __str__


def _problem(exc: Exception) -> Problem:
    """A problem from any exception: safetrace's carry their fields; others their text."""
    family = next((c.__name__ for c in type(exc).__mro__ if c.__name__ in _FAMILIES),
                  type(exc).__name__)
    if isinstance(exc, StructuredError):
        return Problem(family, exc.where.source or "", exc.cause, exc.fix.strip(), exc.kind)
    return Problem(family, "", str(exc))


_FAMILIES = frozenset(("UnsupportedInputError", "SpecError", "ConstraintViolationError",
                       "DataDependentError", "UnsupportedOpError", "OpShapeError",
                       "ExportError", "InputMismatchError", "LoadError"))


def _splittable(report: ExplainReport) -> bool:
    """Every problem is a named Dim narrowed around its example size, or every one a
    relation no range expresses (``tuple(x.shape) == tuple(y.shape)`` of other ranks asks
    `s0 == s1`): st.export splits these (``dynamic.py``: ``st_narrowed``, ``st_relation``)."""
    dyn = report.dyn
    return bool(report.problems) and dyn is not None and report._n_violations > 0 and \
        all(p.kind == "constraint" for p in report.problems) and \
        report._n_violations in (len(dyn.narrowed), len(dyn.refused))


def _splits(report: ExplainReport, ep: Any) -> bool:
    """The traced program would be split by st.export (its size tests, small sizes or
    relations, exporter/split_report.py)."""
    return report.ok and ep is not None and any(
        getattr(ep, a, ()) for a in ("size_tests", "small_sides", "relation_sides"))


def explain(model: Any, args: tuple = (), kwargs: dict | None = None, *,
            dynamic_shapes: Any = None) -> ExplainReport:
    """Trace as far as possible and report every decision and problem at once."""
    if isinstance(args, list):
        args = tuple(args)
    fn = model.forward if isinstance(model, torch.nn.Module) else model
    report = ExplainReport()
    first = Exporter(model, fn)
    try:
        with GlobalCaches(model, fn) as caches:  # (module-level state, as st.export's)
            ep = first.run(args, dict(kwargs or {}), dynamic_shapes, report=report)
            if ep is not None:  # self.n += 1 in forward: as st.export checks it
                runs = [first]

                def again() -> Any:
                    runs.append(Exporter(model, fn))
                    return runs[-1].run(args, dict(kwargs or {}), dynamic_shapes)
                python_state.check(ep, runs, again, caches)
    except Exception as exc:  # spec or input errors stop before tracing: report them too
        report.stopped(exc)
        ep = None
    if _splittable(report) or _splits(report, ep):  # as st.export splits: the same program
        try:
            ep = export_with_splits(lambda sides, flipped=frozenset(): Exporter(
                model, fn, (), sides, flipped).run(
                args, dict(kwargs or {}), dynamic_shapes), MAX_SPLITS)
        except Exception as exc:  # noqa: BLE001 - the refusals stand; say why
            report.splits.append(f"not possible: {str(exc).splitlines()[0]}")
        else:
            report.problems = [p for p in report.problems if p.kind != "constraint"]
            report.suggestion = ""
            report.splits = describe(ep.graph)
            report.contract = ep.contract
    dropped = None
    if report.ok and ep is not None and auto_small.wanted(ep):  # (as st.export does)
        ep, dropped = _auto_split(report, ep, model, args, kwargs, dynamic_shapes)
    if report.ok:
        report.program = ep
    report.finish(dropped)
    return report


def _auto_split(report: ExplainReport, ep: Any, model: Any, args: tuple, kwargs: dict | None,
                dynamic_shapes: Any) -> tuple[Any, list[bool] | None]:
    """The program st.export returns where a Dim.AUTO / DYNAMIC dim's sizes 0 and 1 are
    split apart (``exporter/auto_small.py``), its splits, contract and refused splits in
    the report; and which guards of `ep`'s trace it no longer relies on."""
    try:
        final = export(model, args, kwargs, dynamic_shapes=dynamic_shapes)
    except Exception as exc:  # noqa: BLE001 - the first trace's report stands; say why
        report.splits.append(f"Dim.AUTO / DYNAMIC sizes 0 and 1: not possible: "
                             f"{(str(exc).splitlines() or [''])[0]}")
        return ep, None
    report.splits = describe(final.graph) + [
        f"Dim.AUTO / DYNAMIC sizes 0 and 1 of {line}"
        for line in getattr(final, "auto_split_refusals", ())]
    report.contract = final.contract
    env = report.env  # (a guard on a symbol made equal to another after: in its terms)
    conds = [env.simplify(g.cond) for g in env.guards] if env is not None else []
    return final, auto_small.dropped_guards(ep, final, conds)
