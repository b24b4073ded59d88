"""The ready-to-paste ``dynamic_shapes`` of a declared-space violation: the user's spec
with every fix ``DynamicDims.violations`` found applied."""

from __future__ import annotations

import re
from typing import Any

from torch.utils import _pytree as pytree

from safetrace.dims import DerivedDim, Dim
from safetrace.exporter.spec import OMITTED, ScalarSpec


def suggestion_text(dyn: Any, specs: list, leaves: list, in_spec: Any,
                    names: list[str]) -> str:
    """A ready-to-paste ``dynamic_shapes`` value with every fix applied: a line for each
    Dim the fixes change or add; a Dim kept as declared is not restated (as in
    torch.export's suggested fixes) but written where it is used, ``Dim('n')``, so the
    text runs whatever the user's variables are called."""
    defs: dict[str, str] = {}
    declared = dyn.declared

    def define(dim: Dim) -> str:
        """The name to write for `dim` (defined once), or `dim` itself, kept."""
        same = declared.get(dim.name)
        if same is not None and (same.min, same.max) == (dim.min, dim.max) and \
                dim.name not in defs:
            return repr(dim)
        defs[dim.name] = f"{dim.name} = {dim!r}"
        return dim.name

    def render(entry: Any, path: str, d: int) -> str:
        fixed = dyn.fixes.get((path, d), entry)
        for _ in range(3):  # a fix may point to a Dim that has a fix of its own
            if isinstance(fixed, Dim) and fixed.name in dyn.dim_fixes:
                fixed = dyn.dim_fixes[fixed.name]
            elif isinstance(fixed, DerivedDim) and fixed.root.name in dyn.dim_fixes \
                    and isinstance(dyn.dim_fixes[fixed.root.name], Dim):
                fixed = DerivedDim(dyn.dim_fixes[fixed.root.name], fixed.coef, fixed.offset)
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
