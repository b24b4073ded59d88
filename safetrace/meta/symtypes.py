"""Symbolic values that torch's own argument parser accepts.

PyTorch's C++ argument parser accepts ``torch.SymInt`` / ``SymFloat`` / ``SymBool`` where
an int, float or bool is expected; any other object is converted with ``__index__``, which
would specialize a dynamic size.  These subclasses are the engine's values (all behaviour
comes from ``safetrace.symbolic``) that also pass those checks, so ``x.view(n, -1)`` and
``torch.zeros(n)`` reach the tracer with the symbolic ``n`` intact.

Nothing of torch's own SymInt machinery may run on them (it expects a SymNode): every
operator torch's classes define and the engine does not is answered here, either
symbolically (``torch.sym_max``, ``torch.sym_float``, ``torch.sym_not``) or by
specializing the value (a recorded guard): ``n & 1``, ``round(x)``, ``math.sqrt(n)``.
Text: ``str(n)`` / ``f"{n}"`` in the user's code specialize too (a string built from a
size would otherwise silently hold "s0"); inside safetrace and torch they print the
expression.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any, Callable

import torch

from safetrace.meta.active import ACTIVE
from safetrace.symbolic import (Env, SymBool, SymFloat, SymInt, sym_max, sym_min, sym_not)

_LIBRARY_DIRS = (os.path.dirname(torch.__file__) + os.sep,
                 os.path.dirname(os.path.dirname(__file__)) + os.sep)


def _from_library(depth: int = 2) -> bool:
    return sys._getframe(depth).f_code.co_filename.startswith(_LIBRARY_DIRS)


def _concrete(v: Any) -> Any:
    if isinstance(v, SymBool):
        return bool(v)
    if isinstance(v, SymInt):
        return int(v)
    if isinstance(v, SymFloat):
        return float(v)
    return v


def _specializing(name: str, convert: Callable[[Any], Any]) -> Callable[..., Any]:
    """``value.<name>(*args)`` computed on the specialized (guarded) concrete value."""

    def method(self: Any, *args: Any) -> Any:
        return getattr(convert(self), name)(*[_concrete(a) for a in args])

    method.__name__ = name
    return method


def _tracing(value: Any) -> bool:
    """Is the export that owns `value` in progress (and the caller user code)?"""
    return ACTIVE.env is value.env and not _from_library(3)


def _text(convert: Callable[[Any], Any]) -> tuple[Callable[..., str], Callable[..., str]]:
    # Outside an export (meta["val"] shapes, messages) sizes print as expressions.
    def to_str(self: Any) -> str:
        return str(convert(self)) if _tracing(self) else self._symbolic_str()

    def to_format(self: Any, spec: str) -> str:
        return format(convert(self) if _tracing(self) else self._symbolic_str(), spec)

    return to_str, to_format


def _complete(cls: type, ours: type, theirs: type, convert: Callable[[Any], Any]) -> None:
    """Answer every dunder torch's class has and the engine's does not."""
    concrete_type = {SymInt: int, SymFloat: float, SymBool: bool}[ours]
    for name in vars(theirs):
        if not (name.startswith("__") and name.endswith("__")) or hasattr(ours, name) or \
                name in ("__weakref__", "__dict__", "__module__", "__doc__", "__init__"):
            continue
        if name in vars(cls):
            continue
        if hasattr(concrete_type, name):
            setattr(cls, name, _specializing(name, convert))
        elif name.startswith("__sym_") and hasattr(math, name[6:-2]):
            fn = getattr(math, name[6:-2])
            setattr(cls, name, lambda self, _fn=fn: _fn(float(self)))
        else:  # torch-internal spellings (__float_pow__, ...): specialize the operands
            op = {"float_pow": "__pow__", "rfloat_pow": "__rpow__",
                  "float_truediv": "__truediv__", "rfloat_truediv": "__rtruediv__",
                  "int_truediv": "__truediv__", "rint_truediv": "__rtruediv__",
                  "int_floordiv": "__floordiv__", "rint_floordiv": "__rfloordiv__",
                  "pow_by_natural": "__pow__", "rpow_by_natural": "__rpow__"}.get(name[2:-2])
            if op is not None:
                setattr(cls, name, _specializing(op, convert))
    cls._symbolic_str = ours.__str__
    cls.__str__, cls.__format__ = _text(convert)


class _Node:
    """What torch's own Python helpers ask of a symbolic value's ``.node``
    (``torch.broadcast_shapes`` -> ``guard_or_false`` -> ``node.guard_bool``): answered
    by the engine (a guard, as ``bool()`` is); there is no torch ShapeEnv behind it."""

    __slots__ = ("owner",)

    def __init__(self, owner: Any) -> None:
        self.owner = owner

    def is_nested_int(self) -> bool:
        return False

    def is_symbolic(self) -> bool:
        return True

    def has_hint(self) -> bool:
        return True

    def maybe_as_int(self) -> None:
        return None

    def guard_bool(self, file: Any = None, line: Any = None) -> bool:
        return bool(self.owner)

    def guard_int(self, file: Any = None, line: Any = None) -> int:
        return int(self.owner)

    def guard_float(self, file: Any = None, line: Any = None) -> float:
        return float(self.owner)

    def expect_true(self, file: Any = None, line: Any = None) -> bool:
        return bool(self.owner)


def _node(self: Any) -> _Node:
    return _Node(self)


class TorchSymInt(SymInt, torch.SymInt):
    __slots__ = ()
    node = property(_node)

    def __sym_max__(self, other: Any) -> Any:
        return sym_max(self, other)

    def __sym_min__(self, other: Any) -> Any:
        return sym_min(self, other)

    def __sym_float__(self) -> Any:
        return SymFloat._of(self, self.env)


class TorchSymBool(SymBool, torch.SymBool):
    __slots__ = ()
    node = property(_node)

    def __sym_not__(self) -> Any:
        return sym_not(self)

    def __sym_ite__(self, then: Any, otherwise: Any) -> Any:
        return then if self else otherwise  # a guard on the condition

    def __sym_float__(self) -> float:
        return float(bool(self))


class TorchSymFloat(SymFloat, torch.SymFloat):
    __slots__ = ()
    node = property(_node)

    def __sym_max__(self, other: Any) -> Any:
        return max(float(self), _concrete(other))

    def __sym_min__(self, other: Any) -> Any:
        return min(float(self), _concrete(other))

    def __sym_float__(self) -> Any:
        return self

    def __sym_int__(self) -> Any:
        return self.__trunc__()


_complete(TorchSymInt, SymInt, torch.SymInt, int)
_complete(TorchSymBool, SymBool, torch.SymBool, bool)
_complete(TorchSymFloat, SymFloat, torch.SymFloat, float)


def torch_env() -> Env:
    """An Env whose symbolic values are accepted by torch functions."""
    env = Env()
    env.int_cls, env.bool_cls, env.float_cls = TorchSymInt, TorchSymBool, TorchSymFloat
    return env
