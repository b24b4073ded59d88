"""The values an integer index tensor spans (``torch.arange(n) + offset``), and the bounds
check eager's ``index_copy_`` makes on them, asserted in the graph where it involves data.

A static cache writes ``keys.index_copy_(2, torch.arange(n) + self.cumulative_length,
new)``: eager raises IndexError once the cache is full (offset + n > max_cache_len).  When
the offset's value is known as a data-dependent size (``u0``, read by ``.item()`` or
``__index__`` before), the index spans exactly [u0, u0 + n - 1], so the program asserts
``u0 >= 0`` and ``u0 + n - 1 < size`` where eager raises: the runtime assertion, and the
fact it gives the sizes that depend on ``u0`` (their upper bound, which a runtime that
plans memory needs).

A span is noted when the index is made (the offset's value then), and holds while no
write may reach the index (versions.py).  Checks on input sizes alone are left to the
kernel (asserting them would narrow the input contract).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.trace.asserts import emit_assert
from safetrace.trace.proxy import Proxy
from safetrace.trace.recorder import Recorder
from safetrace.trace.source import stack_trace
from safetrace.trace.values import integral, program_data, unit_alpha
from safetrace.trace.versions import stamp

_A = torch.ops.aten


def _surely(tr: Recorder, cond: Any) -> bool:
    """`cond` (a bool or a symbolic bool) holds for every input, without a guard."""
    if isinstance(cond, bool):
        return cond
    expr = getattr(cond, "expr", None)
    return expr is not None and tr.env is not None and tr.env.decide(expr) is True


def _is_size(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (
        hasattr(v, "expr") and not isinstance(v, torch.Tensor) and not hasattr(v, "opaque"))


def _arange(tr: Recorder, args: tuple, kwargs: dict, result: Proxy, start_at: int) -> None:
    """``arange(end)`` / ``arange(start, end)``: [start, end - 1] when not empty."""
    if start_at:
        if len(args) < 2:
            return
        start, end = args[0], args[1]
    else:
        if not args:
            return
        start, end = 0, args[0]
    if not (_is_size(start) and _is_size(end)) or not integral(result.st_meta.dtype):
        return
    if _surely(tr, end - start >= 1):
        result.st_span = (stamp(result, tr), start, end - 1)


def _arange_step(tr: Recorder, args: tuple, kwargs: dict, result: Proxy) -> None:
    step = args[2] if len(args) > 2 else kwargs.get("step", 1)
    if isinstance(step, int) and step == 1:
        _arange(tr, args[:2], kwargs, result, 1)


def span(tr: Recorder, x: Any) -> tuple | None:
    """(lo, hi): the least and greatest value of index tensor `x`, both attained."""
    noted = getattr(x, "st_span", None)
    if noted is None or noted[0] != stamp(x, tr):
        return None
    return noted[1], noted[2]


def _value(tr: Recorder, t: Any) -> Any:
    """The value of a 0-d integer tensor as a (symbolic) int, where already known."""
    if isinstance(t, bool) or not isinstance(t, (int, torch.Tensor)):
        return t if _is_size(t) else None
    if isinstance(t, int):
        return t
    if not isinstance(t, Proxy):
        t = program_data(tr, t)  # a buffer: its graph value (a constant: not handled)
        if t is None:
            return None
    if t.st_meta.shape != () or not integral(t.st_meta.dtype):
        return None
    if (value := t.st_value) is not None:
        return value
    for name in ("_st_item", "st_index_value"):
        seen = getattr(t, name, None)
        if seen is not None and seen[0] == stamp(t, tr) and \
                (name != "_st_item" or seen[1] is tr.scope):
            return seen[-1]
    return None


def _add(tr: Recorder, args: tuple, kwargs: dict, result: Proxy, sign: int) -> None:
    """``index + offset`` (or ``offset + index`` for add): the span moved by the offset's
    known value."""
    if len(args) < 2 or not unit_alpha(kwargs) or len(args) > 2:
        return
    a, b = args[0], args[1]
    if sign < 0 or span(tr, a) is not None:
        ranged, offset = a, b
    else:
        ranged, offset = b, a
    found = span(tr, ranged)
    if found is None or not integral(result.st_meta.dtype):
        return
    v = _value(tr, offset)
    if v is None:
        return
    lo, hi = found
    result.st_span = (stamp(result, tr), lo + sign * v, hi + sign * v)


def _index_copy(tr: Recorder, args: tuple, kwargs: dict) -> None:
    """``x.index_copy_(dim, index, source)``: eager raises IndexError unless every index
    lies in [0, x.shape[dim]); asserted where the span involves data."""
    if len(args) < 3 or not isinstance(args[1], int):
        return
    x, dim, index = args[0], args[1], args[2]
    found = span(tr, index)
    if found is None:
        return
    shape = x.st_meta.shape if isinstance(x, Proxy) else tuple(x.shape)
    if not -len(shape) <= dim < len(shape):
        return
    size = shape[dim]
    lo, hi = found
    msg = f"index_copy_(): an index is out of bounds for dimension {dim} with size {size}"
    for cond in (lo >= 0, hi < size):
        expr = getattr(cond, "expr", None)
        if expr is None or tr.env is None:
            continue  # static: the kernel raises as eager's does
        if any(not tr.env.symbols[n].backed for n in expr.free_symbols) and \
                tr.env.decide(expr) is not True:
            emit_assert(tr, expr, msg, stack_trace(4))


# op -> what to note of its result (a Proxy) from its arguments
SPANS = {
    _A.arange.default: lambda tr, a, k, r: _arange(tr, a, k, r, 0),
    _A.arange.start: lambda tr, a, k, r: _arange(tr, a, k, r, 1),
    _A.arange.start_step: _arange_step,
    _A.add.Tensor: lambda tr, a, k, r: _add(tr, a, k, r, 1),
    _A.sub.Tensor: lambda tr, a, k, r: _add(tr, a, k, r, -1),
}
# the ops whose span follows from their arguments alone (and the environment's state, when
# sizes are symbolic): a call remembered by memo.py keeps it in its entry
FROM_ARGUMENTS = frozenset((_A.arange.default, _A.arange.start, _A.arange.start_step))
# op -> the check eager's kernel makes, asserted before the op's node
CHECKS = {
    _A.index_copy_.default: _index_copy,
    _A.index_copy.default: _index_copy,
}
