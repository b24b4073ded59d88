"""What a ``DeclaredSpaceViolation`` is made of: one ``Violation`` per way the traced
program needs less than the declared space, the message in our words and, after it, the
fixes in torch.export's ``Suggested fixes:`` form (the Dims they change or add), which
torch's ``refine_dynamic_shapes_from_suggested_fixes`` reads."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from safetrace.errors.base import ConstraintViolationError

__all__ = ["Violation", "count_pinned", "eager_fails", "DeclaredSpaceViolation",
           "declared_space", "sides_unjoined"]


@dataclasses.dataclass(frozen=True)
class Violation:
    """One way the traced program needs less than the declared space."""

    dim: str       # "x.shape[0] (Dim('batch'))": the declared dim, with its spec
    cause: str     # "was specialized to 3 (from ...)"
    fix: str       # "batch = Dim('batch', min=2)"
    count: bool = False  # specialized by a count of Python values (no size split keeps it)
    # breaks only sizes where a named Dim is below 2, which torch.export's trace assumes
    # away (its program runs them unchecked): kept as a run-time check (small_splits.py)
    small: bool = False
    # the condition, its symbols with their Dim names: an export deferring the small
    # problems a first refusal listed finds them by it (small_splits.py)
    key: tuple = ()

    def text(self) -> str:
        return f"{self.dim} {self.cause}\n    Fix: {self.fix}"


_HINT = re.compile(r"\(Dim\.(DYNAMIC|AUTO)\b")

_COUNTS = {"unbind": "makes one Python value per index of this dim (`unbind`, `list(x)` or "
                      "`for t in x`)",
           "index": "turns the size into a Python int (`range(n)`, a list index, `int(n)`)"}


def count_pinned(dim: str, where: str, size: int, origin: str, what: str) -> Violation:
    """`where` (``x.shape[0]``, declared `dim`) specialized to `size` because the code at
    `origin` made a Python count of it; `what`: ``unbind``, ``split``, ``index``..."""
    how = _COUNTS.get(what, f"makes a list as long as `{what}`'s count of pieces")
    return Violation(
        dim, f"was specialized to {size}{origin}: that line {how}. A program has one "
             f"Python structure (its loops, lists and outputs), so this count cannot stay "
             f"symbolic; no size split can keep it either, as each size is another "
             f"structure (torch.export specializes it too).",
        f"export one program per size: {where} -> {size} (or Dim.AUTO, which specializes "
        f"it); or keep the dim inside tensors: run the per-item code under "
        f"torch._higher_order_ops.map over {where.split('.shape')[0]} and return fixed-size "
        f"tensors (pad a variable count, with a mask): docs/deploying.md#batched-detectors",
        count=True)



def eager_fails(dim: str, name: str, sizes: str, text: str, origin: str, kept: str,
                fix: str) -> Violation:
    """`dim` (declared Dim `name`) includes `sizes` (``dec >= 64``) where the model itself
    fails in eager: `text`, an op's own requirement at `origin` (a broadcast, a view),
    fails at each of them (a size capped by a fixed tensor: a slice of a position table).
    The program cannot run there either; the fix declares the sizes eager runs, `kept`."""
    line = origin.strip().removeprefix("(from ").removesuffix(")") or "the traced code"
    return Violation(
        dim, f"includes sizes where the model itself fails in eager: for {sizes}, {line} "
             f"raises, in eager as in any program, as it needs `{text}` (an op's own size "
             f"check, not a branch; a size capped by a fixed tensor, such as a slice of a "
             f"position table, is the usual cause). Eager runs {kept} only.",
        f"{fix}  (the sizes eager runs)")

class DeclaredSpaceViolation(ConstraintViolationError):
    """Declared dynamic dims were specialized, narrowed or related by the program."""

    kind = "declared-space"

    @property
    def problems(self) -> list[Violation]:
        return self.details["problems"]

    def render(self) -> str:
        """Ours, then the fixes in torch.export's form (see ``msg``)."""
        fix = f"\nSuggested fix (all problems at once):\n{self.fix}" if self.fix else ""
        return self._torch_form(f"{self.cause}{fix}\n{self.see()}")

    @property
    def msg(self) -> str:
        """The message, as torch's ``UserError.msg`` (its last part in torch's form)."""
        return str(self)

    def _torch_form(self, ours: str) -> str:
        """The message with its fixes also in torch.export's form (``Suggested fixes:``,
        one ``name = ...`` per Dim), as torch's ``UserError.msg``: what
        ``torch.export.dynamic_shapes.refine_dynamic_shapes_from_suggested_fixes(exc.msg,
        dynamic_shapes)`` reads, for a spec written with torch's own Dims."""
        fixes = dict(self.details["dim_fixes"])
        for p in self.problems:  # a dim made static: its place's fix, under its Dim's name
            m = _PLACE.match(p.dim)
            value = m and self.details["fixes"].get((m.group(1), int(m.group(2))))
            if m and type(value) is int and m.group(3) not in fixes:
                fixes[m.group(3)] = value
        keyed = []  # (torch's order: the Dim's first input dim, a new root after the others)
        declared, places = self.details.get("declared", {}), self.details.get("places", {})
        for name, new in fixes.items():
            root = getattr(new, "root", None)
            if root is not None and root.name not in declared and root.name != name:
                keyed.append(((1, places.get(name, name)), _torch_fix(root.name, root)))
            if name in declared and _as_declared(name, new, *declared[name]):
                continue  # (torch's suggested fixes name only the Dims they change)
            keyed.append(((0, places.get(name, name)), _torch_fix(name, new)))
        ordered = list(dict.fromkeys(  # (a new root shared by several Dims: once)
            line for _, line in sorted(keyed, key=lambda kv: kv[0]) if line is not None))
        lines = ([x for x in ordered if " = Dim(" in x]  # Dims first, then `name = expr`
                 + [x for x in ordered if " = Dim(" not in x])
        if not lines:
            return ours
        return ours + "\n\nSuggested fixes:\n" + "\n".join(f"  {x}" for x in lines)


def _as_declared(name: str, new: Any, lo: Any, hi: Any) -> bool:
    """Whether fix `new` of Dim `name` is a Dim (or a Dim.DYNAMIC hint) of the declared
    range [lo, hi]: the Dim unchanged, in torch's syntax."""
    if getattr(new, "root", None) is not None or getattr(new, "name", name) != name:
        return False
    if not hasattr(new, "min") or isinstance(new, (int, bool)):
        return False
    return (_bound(new.min, 0), _bound(new.max, math.inf)) == (_bound(lo, 0),
                                                                _bound(hi, math.inf))


def _bound(value: Any, default: float) -> float:
    return default if value is None else value


_PLACE = re.compile(r"^(.*)\.shape\[(\d+)\] \(Dim\('(\w+)'")


def _torch_fix(name: str, new: Any) -> str | None:
    """One fix in torch.export's suggested-fixes syntax (None: one it cannot express)."""
    if isinstance(new, bool):
        return None
    if isinstance(new, int):
        return f"{name} = {new}"
    root = getattr(new, "root", None)
    if root is not None:  # a derived dim: coef * root + offset
        coef, offset = getattr(new, "coef", 1), getattr(new, "offset", 0)
        term = root.name if coef == 1 else f"{coef}*{root.name}"
        return f"{name} = {term}" + (f" + {offset}" if offset > 0 else
                                      f" - {-offset}" if offset < 0 else "")
    other = getattr(new, "name", None)
    if isinstance(other, str) and other != name:  # the same Dim as another: `dy1 = dx1`
        return f"{name} = {other}"
    lo, hi = getattr(new, "min", None), getattr(new, "max", None)
    if lo is None and hi is None:
        return None
    bounds = "".join([f", min={lo}" if isinstance(lo, int) and lo > 0 else "",
                      f", max={hi}" if isinstance(hi, int) else ""])
    return f"{name} = Dim('{getattr(new, 'name', name)}'{bounds})"


def _violated(dim: str) -> str:
    """The name torch.export's "Constraints violated (...)" gives a problem's dim: its
    Dim's name, else the input's dim (``x.shape[0] (Dim('b'))`` -> ``b``)."""
    m = re.search(r"\(Dim\('(\w+)'", dim)
    return m.group(1) if m else dim.split(" (")[0]


def declared_space(problems: list[Violation], suggestion: str, fixes: dict | None = None,
                   dim_fixes: dict | None = None,
                   declared: dict | None = None,
                   places: dict | None = None) -> DeclaredSpaceViolation:
    """``suggestion``: a ready-to-paste dynamic_shapes with every fix applied; ``fixes``:
    (input path, dim) -> new entry, ``dim_fixes``: Dim name -> new Dim (or derived dim),
    as data for ``st.refine_dynamic_shapes_from_suggested_fixes``; ``declared``: Dim name
    -> (min, max) as declared (a fix that keeps them is not restated in torch's form);
    ``places``: Dim name -> its first input dim (``x.shape[0]``), torch's order of fixes."""
    n = len(problems)
    names = ", ".join(dict.fromkeys(_violated(p.dim) for p in problems))
    # torch.export raises a ValueError where only dim hints (Dim.DYNAMIC / Dim.AUTO with a
    # range) are specialized ("Received user-specified dim hint Dim.DYNAMIC ..."), its
    # UserError where a named Dim is: ours is an instance of both there
    hints = bool(problems) and all(_HINT.search(p.dim) for p in problems)
    extra = {"torch_classes": ("ValueError",) + DeclaredSpaceViolation.torch_classes} \
        if hints else {}
    return DeclaredSpaceViolation(
        f"the traced program does not work for the whole declared input space "
        f"({n} problem{'s' if n > 1 else ''}; in torch.export's words: Constraints violated "
        f"({names})!):\n"
        + "\n".join(f"  - {p.text()}" for p in problems),
        fix=suggestion, problems=list(problems), fixes=dict(fixes or {}),
        dim_fixes=dict(dim_fixes or {}), declared=dict(declared or {}),
        places=dict(places or {}), **extra)


def sides_unjoined(exc: DeclaredSpaceViolation, detail: str) -> DeclaredSpaceViolation:
    """`exc`, a refusal whose size split traced both sides of the branch and could not
    join them (`detail`: the output that has another dtype or rank on the other side),
    saying so: its fixes narrow the Dim, as no torch.cond holds both sides either."""
    exc.cause += (f"\nBoth sides of that branch were traced (a size split): {detail}. One "
                  f"graph returns one dtype and rank per output, a torch.cond's branches "
                  f"too, so no program holds both: narrow the Dim as below, or make both "
                  f"sides return the same dtype and number of dims (a `.to(dtype)`, a "
                  f"`reshape`), which the export then splits on.")
    exc.args = (exc.render(),)
    return exc
