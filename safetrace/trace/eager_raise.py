"""Which exception eager's kernel raises where a shape rule refuses a call.

A rule that refuses an op at the traced sizes (``OpShapeError``) stands for eager's own
error at those sizes, whose class the program's code may catch (``except IndexError``
around ``x.amax(0)`` on an empty dim).  The kernel runs once on zero-filled tensors of the
traced sizes (small ones, on the CPU or the meta device): what it raises gives the export
error eager's class too, so that a program's ``except`` catches it exactly where it
catches eager's (the guard that selected these sizes is recorded by the rule's check); an
error whose class is unknown carries none, and a program that catches it is refused
(``exporter/caught.py``).  A size read from data has no example value: where the facts
bound it to a few values (``min(u0, 2) <= 1`` on the other side of a size test: 0 or 1),
the kernel runs at each (each such size on its own: every combination, the impossible
ones too), and the class is eager's only where every run raises that one class.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import torch

from safetrace.errors import OpShapeError
from safetrace.errors.base import with_eager_class
from safetrace.meta import TensorMeta
from safetrace.symbolic import SymInt
from safetrace.symbolic.canon import eq
from safetrace.trace.proxy import Proxy

_MAX_ELEMENTS = 1 << 20  # of all the tensors of one call: the run must stay cheap
_DEVICES = ("cpu", "meta")
_SEEDED = torch.Tag.nondeterministic_seeded


class _Unknown(Exception):
    """A size without an example value, a tensor too big, or on another device."""


def eager_class(err: Any, op: Any, margs: list, mkwargs: dict) -> Any:
    """`err` (a rule's refusal of ``op`` on these arguments), with eager's exception class
    too when its kernel raises one at the traced sizes."""
    if not isinstance(err, OpShapeError) or err.eager is not None or \
            _SEEDED in getattr(op, "tags", ()):  # (a run would draw from the user's generator)
        return err
    try:
        choices = _unknown_sizes((margs, mkwargs))
    except _Unknown:
        return err
    raised = set()
    for values in itertools.product(*choices.values()):
        budget, known = [_MAX_ELEMENTS], dict(zip(choices, values))
        try:
            args = [_real(a, budget, known) for a in margs]
            kwargs = {k: _real(v, budget, known) for k, v in mkwargs.items()}
        except _Unknown:
            return err
        try:
            with torch._C.DisableTorchFunction():
                op(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - eager's error, whatever its class
            raised.add(type(exc))
            continue
        return err  # the kernel computes here: the refusal is safetrace's alone
    return with_eager_class(err, raised.pop()) if len(raised) == 1 else err


def _unknown_sizes(v: Any, out: dict | None = None) -> dict:
    """Each size in `v` without an example value -> the values its bounds allow, where
    they are few (at most 4; at most 16 combinations in all); else `_Unknown`."""
    out = {} if out is None else out
    if isinstance(v, dict):
        v = list(v.values())
    if isinstance(v, TensorMeta):
        v = list(v.shape)
    if isinstance(v, (list, tuple)):
        for x in v:
            _unknown_sizes(x, out)
        return out
    if hasattr(v, "expr") and not isinstance(v, torch.Tensor) and v.expr not in out:
        try:
            _hint(v)
        except _Unknown:
            if not isinstance(v, SymInt):
                raise  # (a float or a flag read from data: not enumerated)
            try:
                r = v.env.bounds(v.expr)
                if r.lo == -math.inf or r.hi == math.inf or r.hi - r.lo >= 4:
                    raise _Unknown
                out[v.expr] = [k for k in range(int(r.lo), int(r.hi) + 1)  # (what the
                               if v.env.decide(eq(v.expr, k)) is not False]  # facts leave)
            except Exception:  # noqa: BLE001 - a question the engine cannot take
                raise _Unknown from None
            if math.prod(len(c) for c in out.values()) > 16:
                raise
    return out


def traced_arguments(args: tuple, kwargs: dict) -> bool:
    """Whether a call's arguments hold a traced tensor or a symbolic number (else it ran
    on real values only: what it raised is eager's own error)."""
    for v in (*args, *kwargs.values()):
        if isinstance(v, (list, tuple)):
            if traced_arguments(tuple(v), {}):
                return True
        elif isinstance(v, Proxy) or (hasattr(v, "expr") and not isinstance(v, torch.Tensor)):
            return True
    return False


def _real(v: Any, budget: list[int], known: dict) -> Any:
    if isinstance(v, TensorMeta):
        if v.device.type not in _DEVICES:
            raise _Unknown
        shape = [_hint(s, known) for s in v.shape]
        n = 1
        for s in shape:
            n *= max(s, 0)
        budget[0] -= n
        if budget[0] < 0:
            raise _Unknown
        return torch.zeros(shape, dtype=v.dtype, device=v.device)
    if isinstance(v, (list, tuple)):
        return type(v)(_real(x, budget, known) for x in v)
    if hasattr(v, "expr") and not isinstance(v, torch.Tensor):  # a symbolic int, float, bool
        return _hint(v, known)
    return v


def _hint(size: Any, known: dict | None = None) -> Any:
    if isinstance(size, (int, float, bool)):
        return size
    if known and size.expr in known:
        return known[size.expr]
    try:
        return size.hint
    except Exception:  # noqa: BLE001 - unbacked: no example value
        raise _Unknown from None
