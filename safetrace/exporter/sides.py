"""What a size split's side (``exporter/splits.py``) changes in DynamicDims' reading of the
spec: a named Dim's range and hint come from the side (``overrides``: Dim name -> (hint,
lo, hi); under ``ASSUMED``, conditions that hold wherever the side runs: a relation split's
other answer, ``relation_splits.py``, is no narrowing of the Dims it relates), and a named
Dim pinned to one size is a narrowing to that point.  Also: a named
Dim unified with Dim.AUTO dims only (``auto_alias``), which is no narrowing either."""

from __future__ import annotations

from typing import Any

from safetrace.dims import DerivedDim, Dim
from safetrace.symbolic.expr import sym

ASSUMED = "(assumed)"  # a side's key for the conditions its program runs under (no Dim name)


def only_value(spec: Any, overrides: dict) -> int | None:
    """The one size a named or derived Dim allows (``Dim('d', min=4, max=4)``, or a side
    whose range is one size), else None."""
    root = spec.root if isinstance(spec, DerivedDim) else spec
    if not isinstance(root, Dim):
        return None
    lo, hi = overrides[root.name][1:] if root.name in overrides else (root.min, root.max)
    if lo != hi:
        return None
    return spec.coef * lo + spec.offset if isinstance(spec, DerivedDim) else int(lo)


def point_narrowing(spec: Any, size: int, roots: dict) -> tuple | None:
    """A named (or derived) Dim specialized to `size`: the narrowing of its root to that
    point, as ``DynamicDims.narrowed`` lists them (None when not of that form)."""
    root = spec.root if isinstance(spec, DerivedDim) else spec
    if not isinstance(root, Dim):
        return None
    coef, offset = (spec.coef, spec.offset) if isinstance(spec, DerivedDim) else (1, 0)
    if (size - offset) % coef:
        return None
    value = (size - offset) // coef
    dim = roots[root.name][0]  # the declared range, or the side's
    if dim.min <= value <= dim.max:
        return (root.name, value, value, dim.min, dim.max, value, False)
    return None


def auto_alias(env: Any, decls: list, root: str) -> str | None:
    """The symbol a named Dim's symbol `root` became, where only Dim.AUTO dims declared
    it: torch.export infers that relation (the AUTO dims become the named Dim) instead of
    refusing it; None otherwise."""
    e = env.simplify(sym(root))
    kinds = {d.kind for d in decls if d.expr.op == "sym" and d.expr.name == e.name}
    return e.name if e.op == "sym" and kinds == {"auto"} else None
