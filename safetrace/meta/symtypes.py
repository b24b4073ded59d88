"""Symbolic values that torch's own argument parser accepts.

PyTorch's C++ argument parser accepts ``torch.SymInt`` / ``SymFloat`` / ``SymBool`` where
an int, float or bool is expected; any other object is converted with ``__index__``, which
would specialize a dynamic size.  These subclasses are the engine's values (all behaviour
comes from ``safetrace.symbolic``) that also pass those checks, so ``x.view(n, -1)`` and
``torch.zeros(n)`` reach the tracer with the symbolic ``n`` intact.
"""

from __future__ import annotations

import torch

from safetrace.symbolic import Env, SymBool, SymFloat, SymInt


class TorchSymInt(SymInt, torch.SymInt):
    __slots__ = ()


class TorchSymBool(SymBool, torch.SymBool):
    __slots__ = ()


class TorchSymFloat(SymFloat, torch.SymFloat):
    __slots__ = ()


def torch_env() -> Env:
    """An Env whose symbolic values are accepted by torch functions."""
    env = Env()
    env.int_cls, env.bool_cls, env.float_cls = TorchSymInt, TorchSymBool, TorchSymFloat
    return env
