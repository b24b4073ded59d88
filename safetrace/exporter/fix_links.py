"""Suggested fixes for Dims the program relates by a constant offset, composed into one
family as torch.export suggests them.

Each relation problem of a ``DeclaredSpaceViolation`` (``x + y[1:]``: ``dy = dx + 1``)
links two declared Dims; a range or a residue class found on one of them
(``6 <= dy <= 37``, ``dy % 3 == 0``) then holds for the whole family, shifted.  The
suggestion derives every Dim of the family from its first one (torch's root), carrying
what was found on any of them (``_dx = Dim('_dx', min=2, max=12); dx = 3*_dx - 1;
dy = 3*_dx; dz = 3*_dx + 2``, torch's test_suggested_fixes_new_roots).  A suggestion,
never a proof: the export with the new spec traces again and checks every input it allows.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from safetrace.dims import DerivedDim, Dim, DimHint
from safetrace.exporter.clamps import branch_at_example
from safetrace.symbolic import Env, Expr
from safetrace.symbolic.expr import terms

__all__ = ["example_side_link", "compose_links"]


def example_side_link(env: Env, cond: Expr, a: str, b: str) -> int | None:
    """``k`` when the equality `cond` reads ``a == b + k`` on the example's side of its
    clamps (``y + min(z, 3) == z + min(y, 1)`` at y = 12, z = 14: ``z == y + 2``), else
    None (not an equality, or not one of unit coefficients in `a` and `b` alone)."""
    if cond.op != "eq":
        return None
    coefs: dict[str, int] = {}
    for side, sign in zip(cond.args, (1, -1)):
        for mono, k in terms(branch_at_example(env, side)):
            if mono and (len(mono) != 1 or mono[0].op != "sym"):
                return None
            key = mono[0].name if mono else ""
            coefs[key] = coefs.get(key, 0) + sign * int(k)
    ca, cb, c0 = coefs.pop(a, 0), coefs.pop(b, 0), coefs.pop("", 0)
    if any(coefs.values()) or abs(ca) != 1 or ca != -cb:
        return None
    return -c0 * ca  # ca*a - ca*b + c0 == 0


def compose_links(dim_fixes: dict[str, Any], links: dict[str, tuple[str, int]],
                  declared: dict[str, Dim], order: list[str],
                  new_root: Callable[[str], str]) -> None:
    """Rewrite `dim_fixes` for each family of `links` (Dim name -> (other, k): the Dim
    equals ``other + k``) in which a range or a residue class was found on some Dim: each
    derived from the family's first Dim in `order`, or from a new root ``_<first>`` for a
    residue class (`new_root`: that name).  `declared`: each Dim as the spec gives it.
    A family whose fixes disagree (two residue classes, an empty range, a static size)
    keeps its fixes as they are."""
    offsets: dict[str, dict[str, int]] = {}  # family root -> member -> offset from it
    for name in order:
        if name in links and not any(name in fam for fam in offsets.values()):
            fam = _family(name, links)
            if fam is not None:
                first = min(fam, key=lambda n: order.index(n) if n in order else len(order))
                base = fam[first]
                offsets[first] = {n: off - base for n, off in fam.items()}
    for root, members in offsets.items():
        found = _carried(members, dim_fixes, declared)
        if found is not None:
            _rewrite(dim_fixes, members, declared[root], *found, new_root(root))


def _family(start: str, links: dict[str, tuple[str, int]]) -> dict[str, int] | None:
    """Every Dim linked to `start`, with its offset from `start`; None when two paths
    give one Dim two offsets."""
    edges: dict[str, list[tuple[str, int]]] = {}
    for a, (b, k) in links.items():
        edges.setdefault(a, []).append((b, -k))  # b = a - k
        edges.setdefault(b, []).append((a, k))   # a = b + k
    fam, todo = {start: 0}, [start]
    while todo:
        n = todo.pop()
        for m, k in edges.get(n, ()):
            if m not in fam:
                fam[m] = fam[n] + k
                todo.append(m)
            elif fam[m] != fam[n] + k:
                return None
    return fam


def _carried(members: dict[str, int], dim_fixes: dict[str, Any],
             declared: dict[str, Dim]) -> tuple | None:
    """``(lo, hi, residue)`` of the family's root: each member's declared range and the
    range or residue class its fix found, shifted to the root (``residue``: ``(k, r)``
    with root == k*q + r, or None); None when nothing was found or they disagree."""
    lo: float = 0
    hi: float = math.inf
    residue = None
    found = False
    for name, off in members.items():
        dim = declared.get(name)
        if dim is None:
            return None
        lo, hi = max(lo, dim.min - off), min(hi, dim.max - off)
        fix = dim_fixes.get(name)
        if isinstance(fix, DerivedDim) and fix.root.name not in declared:  # k*q + r
            here = (fix.coef, fix.offset - off)
            if residue is not None and (residue[0] != here[0] or
                                        (residue[1] - here[1]) % here[0]):
                return None
            q = fix.root
            residue, found = here, True
            lo = max(lo, fix.coef * q.min + fix.offset - off)
            if q.max != math.inf:
                hi = min(hi, fix.coef * q.max + fix.offset - off)
        elif isinstance(fix, Dim) and fix.name == name:  # a narrowed range
            lo, hi, found = max(lo, fix.min - off), min(hi, fix.max - off), True
        elif fix is not None and not isinstance(fix, (DerivedDim, DimHint)):
            return None  # (a static size, Dim.AUTO: kept as it is)
    if not found or lo > hi:
        return None
    return lo, hi, residue


def _rewrite(dim_fixes: dict[str, Any], members: dict[str, int], root: Dim, lo: float,
             hi: float, residue: tuple | None, q_name: str) -> None:
    if residue is None:
        base: Any = root if (lo, hi) == (root.min, root.max) else Dim(
            root.name, min=int(lo) or None, max=None if hi == math.inf else int(hi))
        for name, off in members.items():
            dim_fixes[name] = base if off == 0 else DerivedDim(base, 1, off)
        return
    k, r = residue
    q = Dim(q_name, min=max(-(-(int(lo) - r) // k), 0) or None,
            max=None if hi == math.inf else (int(hi) - r) // k)
    for name, off in members.items():
        dim_fixes[name] = DerivedDim(q, k, r + off)
