"""The loader's evaluation of one value (``memory.py`` walks the graphs with these): an
operator's result by safetrace's own shape rule, Python size arithmetic of known numbers,
a graph value with its nodes replaced by what they are known to be, what identifies a
value's metadata.  Never the file's metadata."""

from __future__ import annotations

import math
import operator
from typing import Any

import torch

from safetrace.errors import OpShapeError
from safetrace.meta import TensorMeta
from safetrace.rules.registry import RULES
from safetrace.serialize.allowlist import CALLABLES, NUMERIC
from safetrace.serialize.constant_sizes import UNKNOWN as _UNKNOWN
from safetrace.serialize.work import leaves as _leaves

_MAX_RESULTS = 4096  # results of one op whose count a size picks (unbind, split, chunk)


def evaluate(op: Any, args: Any, kwargs: dict) -> Any:
    """The op's result metadata by safetrace's own shape rule (torch's meta kernels are
    slow and import its symbolic-shapes machinery): unknown without one."""
    rule = RULES.get(op)
    if rule is None:
        return _UNKNOWN
    if any(str(r.real_type) != "Tensor" for r in op._schema.returns) and any(
            isinstance(t, TensorMeta) and max((x for x in t.shape if isinstance(x, int)),
                                              default=0) > _MAX_RESULTS
            for t in _leaves((args, kwargs))):
        return _UNKNOWN
    try:
        return rule(*args, **kwargs)
    except OpShapeError as err:  # the call is invalid for these operands (eager raises)
        return err
    except Exception:  # noqa: BLE001 - the call needs a trace: not known
        return _UNKNOWN


def is_int(v: Any) -> bool:
    return isinstance(v, torch.SymInt) or (isinstance(v, int) and not isinstance(v, bool))


def sizes(value: Any) -> list:
    """The symbolic ints in a value (a number, a TensorMeta's shape, a list of them)."""
    out = []
    for t in _leaves(value):
        for x in (t.shape if isinstance(t, TensorMeta) else (t,)):
            if hasattr(x, "expr") and isinstance(x, torch.SymInt):
                out.append(x)
    return out


def key(value: Any) -> tuple:
    """What identifies a value's metadata (shapes, dtypes, numbers), hashable."""
    return tuple((tuple(str(x) for x in t.shape), t.dtype) if isinstance(t, TensorMeta)
                 else (type(t).__name__, str(t)) for t in _leaves(value))


def sym_query(op: Any, args: Any) -> Any:
    t = args[0] if args else None
    if not isinstance(t, TensorMeta):
        return _UNKNOWN
    if op._opname == "sym_size" and len(args) > 1 and isinstance(args[1], int) and \
            -len(t.shape) <= args[1] < len(t.shape):
        return t.shape[args[1]]
    if op._opname == "sym_numel":
        return math.prod(t.shape)
    return _UNKNOWN


def sub(value: Any, meta: dict) -> Any:
    """``value`` with graph nodes replaced by what they are known to be (KeyError: one
    is not known)."""
    if isinstance(value, torch.fx.Node):
        return meta[value]
    if isinstance(value, (list, tuple)):
        return type(value)(sub(v, meta) for v in value)
    if isinstance(value, dict):
        return {k: sub(v, meta) for k, v in value.items()}
    return value


def python(fn: Any, args: Any, env: Any = None) -> Any:
    """Arithmetic of known numbers (a size computed from a constant's value, or from the
    inputs' symbolic sizes), and an element of a known result."""
    if fn is operator.getitem and isinstance(args[0], (list, tuple)) and \
            isinstance(args[1], int) and -len(args[0]) <= args[1] < len(args[0]):
        return args[0][args[1]]
    name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__name__', '')}"
    rule = CALLABLES.get(name.replace("_operator.", "operator."))
    sym = env.int_cls if env is not None else ()
    if rule is None or rule[2] != NUMERIC or not all(
            isinstance(a, sym) or (isinstance(a, (int, float)) and not isinstance(a, bool)
                                   and abs(a) < 1 << 64) for a in args):
        return _UNKNOWN
    try:
        out = fn(*args)
    except Exception:  # noqa: BLE001 - invalid, or a question the sizes leave open
        return _UNKNOWN
    if isinstance(out, sym):
        return out
    return out if isinstance(out, (int, float)) and not isinstance(out, bool) else _UNKNOWN
