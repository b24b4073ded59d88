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

from safetrace.exporter.api import _Exporter
from safetrace.trace.hops.rewrite import cond_rewrite
from safetrace.trace.source import short, user_frame


@dataclasses.dataclass
class Problem:
    """One problem: its kind, where (source line), the message and the fix."""

    kind: str
    where: str
    message: str
    fix: str = ""


class ExplainReport:
    """What ``st.explain`` returns: printable, and as data (``problems``, ``dims``, ...)."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.dims: dict[str, str] = {}
        self.guards: list[tuple[str, str]] = []
        self.suggestion = ""
        self.program: Any = None
        self.env: Any = None
        self.dyn: Any = None
        self.contract: Any = None  # the input contract, once tracing finished
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
    def question(self, q: Any, error: Exception) -> bool:
        where = short(q.origin) if isinstance(q.origin, str) else ""
        self._add(Problem("data-dependent", where, str(error).split("\nFix:")[0],
                          f"st.check({q.expr})  or  st.check(not ({q.expr}))"))
        return True  # assume the condition holds, to keep tracing

    def data_read(self, error: Exception) -> bool:
        """``if tensor:`` on data: recorded; the True branch is assumed to keep tracing."""
        msg, _, fix = str(error).partition("\nFix:")
        rewrite = cond_rewrite(user_frame(2))  # the frame of the `if` on data
        if rewrite is not None:
            fix = (f"use torch.cond, which keeps both branches in the graph:\n        "
                   f"{rewrite}\n     or {fix.strip()}")
        self._add(Problem(type(error).__name__, "", msg, fix.strip()))
        return True

    def stopped(self, exc: Exception) -> None:
        text = str(exc)
        msg, _, fix = text.partition("\nFix:")
        self._add(Problem(type(exc).__name__, "", msg, fix.strip()))

    def violations(self, problems: list[str], suggestion: str) -> None:
        for p in problems:
            msg, _, fix = p.partition("\n    Fix: ")
            self._add(Problem("constraint", "", msg, fix))
        self.suggestion = suggestion

    def finish(self) -> None:
        if self.contract is not None:
            self.dims = self.contract.dims_report()
        if self.env is not None:
            for g in self.env.guards:
                where = short(g.origin) if isinstance(g.origin, str) and g.origin else ""
                self.guards.append((str(g.cond), where))

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
        if self.dims:
            lines.append("Dims (declared dynamic -> as traced):")
            lines += [f"  {k}: {v}" for k, v in self.dims.items()]
        if self.guards:
            lines.append("Guards (conditions the traced program relies on):")
            lines += [f"  {c}  {'at ' + w if w else ''}" for c, w in self.guards]
        return "\n".join(lines)

    __repr__ = __str__


def explain(model: Any, args: tuple = (), kwargs: dict | None = None, *,
            dynamic_shapes: Any = None) -> ExplainReport:
    """Trace as far as possible and report every decision and problem at once."""
    if isinstance(args, list):
        args = tuple(args)
    fn = model.forward if isinstance(model, torch.nn.Module) else model
    report = ExplainReport()
    try:
        ep = _Exporter(model, fn).run(args, dict(kwargs or {}), dynamic_shapes, report=report)
    except Exception as exc:  # spec or input errors stop before tracing: report them too
        report.stopped(exc)
        ep = None
    if report.ok:
        report.program = ep
    report.finish()
    return report
