"""The fix to suggest for a declared Dim that equals another Dim plus a constant on the
example's side of a clamp only (``x + y[4:]``: ``dx0 == max(dy0 - min(dy0, 4), 0)``):
the relation there (``dx0 == dy0 - 4``), as the derived dim torch.export suggests
(``dy0 = dx0 + 4``).  A suggestion, never a proof: the export with the new spec traces
again and checks every input it allows."""

from __future__ import annotations

from typing import Any

from safetrace.dims import DerivedDim
from safetrace.symbolic import Env, Expr
from safetrace.symbolic.canon import rebuild
from safetrace.symbolic.decide import hint_value


def branch_at_example(env: Env, e: Expr) -> Expr:
    """`e` with each min/max replaced by the argument the example's sizes select."""
    if e.op in ("min", "max"):
        vals = [(hint_value(env, a), a) for a in e.args]
        if any(type(v) is not int for v, _ in vals):
            return e
        pick = min if e.op == "min" else max
        return branch_at_example(env, pick(vals, key=lambda va: va[0])[1])
    if e.op not in ("add", "mul", "mod", "eq"):  # (`(y + min(y, 2)) % 2 == 0` too)
        return e
    return rebuild(e.op, tuple(branch_at_example(env, a) for a in e.args))


def clamp_fix(dim_fixes: dict[str, Any], roots: dict[str, Any], dim_name: str,
              other_dim: str, coef: int, offset: int) -> str | None:
    """Record in `dim_fixes` the fix for ``dim_name == coef*other_dim + offset`` and return
    it as text (``dy0 = dx0 + 4``): the Dim with the larger sizes derived from the other,
    or from the root `other_dim` was derived from already; None when no Dim expresses it
    (the caller suggests Dim.AUTO).  `roots`: Dim name -> (its Dim, ...)."""
    other_fix = dim_fixes.get(other_dim)
    if dim_name in dim_fixes:
        return None
    if isinstance(other_fix, DerivedDim) and other_fix.coef == 1:  # other = root + k
        root, off = other_fix.root, coef * other_fix.offset + offset
        if coef == 1 and off == 0:
            dim_fixes[dim_name] = root
            return f"{dim_name} = {root.name}"
        if off < 0:
            return None
        dim_fixes[dim_name] = DerivedDim(root, coef, off)
        return f"{dim_name} = {dim_fixes[dim_name]!r}"
    if other_fix is not None:
        return None
    if coef == 1 and offset < 0:  # other = mine - offset: derive the other from this one
        dim_fixes[other_dim] = DerivedDim(roots[dim_name][0], 1, -offset)
        return f"{other_dim} = {dim_fixes[other_dim]!r}"
    if offset < 0:
        return None
    dim_fixes[dim_name] = DerivedDim(roots[other_dim][0], coef, offset)
    return f"{dim_name} = {dim_fixes[dim_name]!r}"
