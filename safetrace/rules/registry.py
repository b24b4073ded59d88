"""The registry of shape rules: one small function per ATen overload (or family).

A rule is called with the operator's arguments bound to its ATen schema: positional
arguments in schema order, keyword-only ones as keywords, tensors replaced by
:class:`~safetrace.meta.TensorMeta` (lists of tensors by lists of metas, absent optional
tensors by None), sizes as ints or symbolic ints.  It returns the output description:
a TensorMeta, a tuple/list of them, or a plain value (int, float, bool, symbolic int).
A rule raises :class:`~safetrace.errors.OpShapeError` (via ``shape_error``) where eager
PyTorch would raise.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

Rule = Callable[..., Any]

RULES: dict[Any, Rule] = {}
VERSION = [0]  # bumped on every registration (the tracer caches rules per op)


def _overloads(op: Any) -> list:
    if isinstance(op, torch._ops.OpOverloadPacket):
        return [getattr(op, name) for name in op.overloads()]
    return [op]


def rule(*ops: Any) -> Callable[[Rule], Rule]:
    """Register the decorated function as the shape rule of every given overload.

    An OpOverloadPacket (``aten.relu``) registers all its overloads.
    """

    def register(fn: Rule) -> Rule:
        for op in ops:
            for overload in _overloads(op):
                RULES[overload] = fn
        VERSION[0] += 1
        return fn

    return register


def register_shape_rule(op: Any) -> Callable[[Rule], Rule]:
    """Public: add (or replace) the symbolic shape rule of `op` (an ATen/custom overload)."""
    return rule(op)


def get_rule(op: Any) -> Rule | None:
    """The rule of an overload, or None when safetrace has none."""
    return RULES.get(op)
