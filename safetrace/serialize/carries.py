"""What a loop body returns for its carried tensors, against what it was given.

A ``while_loop`` body may return a carried tensor at another size (torch's loop takes it:
``cat([x, x])`` grows x each iteration); the loader evaluated the body once, at the first
iteration's sizes, so it evaluates it again with any size for those dims (``grown``): the
sizes inside are then ones the call cannot tell, checked in the body as it runs.  A
``scan`` body carries its tensors at their sizes (``changed``: a requirement).
"""

from __future__ import annotations

from typing import Any

from safetrace.meta import TensorMeta
from safetrace.serialize.codec import new_symbolic


def _same(env: Any, x: Any, y: Any) -> bool | None:
    e = x == y
    return e if isinstance(e, bool) else env.decide(e.expr)


def grown(env: Any, before: list, after: list) -> list | None:
    """``before`` with each tensor dim that ``after`` may change replaced by a symbol of
    any size, or None when the body keeps every size."""
    out, any_changed = [], False
    for a, b in zip(before, after):
        if isinstance(a, TensorMeta) and isinstance(b, TensorMeta) and \
                len(a.shape) == len(b.shape):
            dims = [x if _same(env, x, y) is True else
                    new_symbolic(env.new_unbacked(0, None), env)
                    for x, y in zip(a.shape, b.shape)]
            any_changed |= any(d is not x for d, x in zip(dims, a.shape))
            a = TensorMeta(tuple(dims), a.dtype, a.device)
        out.append(a)
    return out if any_changed else None


def changed(env: Any, before: list, after: list) -> list:
    """(whether the sizes are equal: True, False or an expression, why) for each carried
    tensor dim a body may change."""
    out = []
    for a, b in zip(before, after):
        if isinstance(a, TensorMeta) and isinstance(b, TensorMeta):
            for x, y in zip(a.shape, b.shape):
                answer = _same(env, x, y)
                if answer is not True:
                    out.append((answer if answer is False else (x == y).expr,
                                f"its body returns a carried tensor of size {y} for one "
                                f"of size {x}"))
    return out


__all__ = ["changed", "grown"]
