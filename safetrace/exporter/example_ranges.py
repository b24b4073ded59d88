"""Example sizes against the ranges a spec declares.

An example outside a named Dim's range is refused at once (torch.export's "3 not in range
[6, int_oo]").  An example outside a dim hint's range (``Dim.DYNAMIC(min=33)`` given 16) is
traced with the dim unbounded, then refused with every such conflict in one error, each
with the range the traced program works for, as torch.export lists them after its trace
("conflicting with the inferred min/max range of [2, 32]"; ours keeps sizes 0 and 1 where
the program runs them: ``[0, 32]``).
"""

from __future__ import annotations

import math
from typing import Any

from safetrace import errors

__all__ = ["in_range", "refuse_conflicts"]


def in_range(dyn: Any, where: str, n: int, lo: float, hi: float, what: str,
             place: str = "", user: tuple | None = None) -> bool:
    """Whether example size `n` is in [lo, hi]; outside a named Dim's range (`user` None)
    an error at once, outside a dim hint's a conflict kept (``refuse_conflicts``)."""
    if lo <= n <= hi:
        return True
    if user is None:
        raise errors.example_out_of_range(where, what, lo, hi, n, place, user)
    dyn.conflicts.append((where, what, lo, hi, n, place, user))
    return False


def refuse_conflicts(dyn: Any, contract: Any = None) -> None:
    """Refuse the example sizes outside their dim hints' ranges, all in one error: with
    the traced program's `contract`, each names the range the program works for (without
    one, the trace stopped: the example's size)."""
    if not dyn.conflicts:
        return
    if contract is None:
        raise errors.examples_out_of_range(dyn.conflicts)
    dims = contract.dims_by_where()
    raise errors.examples_out_of_range(
        [(*c, _inferred(dyn, contract, dims.get(c[5]), c[4])) for c in dyn.conflicts])


def _inferred(dyn: Any, contract: Any, dim: Any, size: int) -> tuple:
    """The sizes the traced program admits at one dim: (lo, hi), hi ``math.inf`` when
    unbounded; the example's size alone where the trace made the dim static."""
    if dim is None or isinstance(dim.size, int):
        return (size, size)
    spec = contract.symbol(dim.symbol) if dim.kind == "bind" and dim.symbol else None
    if spec is not None:
        return (spec.lo or 0, math.inf if spec.hi is None else spec.hi)
    r = dyn.env.bounds(dim.size)
    return (max(int(r.lo), 0), r.hi if r.hi == math.inf else int(r.hi))
