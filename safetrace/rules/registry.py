"""The registry of shape rules: one small function per ATen overload (or family).

A rule is called with the operator's arguments bound to its ATen schema: positional
arguments in schema order, keyword-only ones as keywords, tensors replaced by
:class:`~safetrace.meta.TensorMeta` (lists of tensors by lists of metas, absent optional
tensors by None), sizes as ints or symbolic ints.  It returns the output description:
a TensorMeta, a tuple/list of them, or a plain value (int, float, bool, symbolic int).
A rule raises :class:`~safetrace.errors.OpShapeError` (via ``shape_error``) where eager
PyTorch would raise.

Rules are keyed by operator objects (``aten.add.Tensor``), never by strings, so that
searching the source for an overload finds its rule.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Iterable

import torch

from safetrace.rules.pointwise import inplace_of

Rule = Callable[..., Any]

RULES: dict[Any, Rule] = {}
# op -> the module whose code registered its rule; a rule made by a shared factory
# (pointwise.unary) belongs to the family that registers it (tools/gen_op_list.py)
FAMILY: dict[Any, str] = {}
VERSION = [0]  # bumped on every registration (the tracer caches rules per op)


def overloads(op: Any) -> list:
    """The overloads an op object stands for: a packet (``aten.relu``) stands for all."""
    if isinstance(op, torch._ops.OpOverloadPacket):
        return [getattr(op, name) for name in op.overloads()]
    if isinstance(op, torch._ops.OpOverload):
        return [op]
    raise TypeError(f"shape rules are keyed by operator objects (torch.ops.aten.add.Tensor), "
                    f"not {op!r}")


def op_name(op: Any) -> str:
    """The op's short name, as torch's messages spell it: ``aten.add.Tensor`` -> ``add``."""
    return op.overloadpacket.__name__


def inplace_form(op: Any) -> Any | None:
    """The in-place overload torch pairs with `op` by name (``add.Tensor`` -> ``add_.Tensor``),
    or None where torch has none."""
    packet = getattr(getattr(torch.ops, op.namespace), op_name(op) + "_", None)
    return getattr(packet, op._overloadname, None) if packet is not None else None


def _add(entries: list[tuple[Any, Rule]], family: str) -> None:
    """Add all entries or, if any op already has a rule, none."""
    for op, fn in entries:
        old = RULES.get(op)
        if old is not None:
            raise ValueError(f"{op} already has a shape rule ({FAMILY[op]}.{old.__name__}); "
                             f"{family}.{fn.__name__} would silently replace it")
    for op, fn in entries:
        RULES[op] = fn
        FAMILY[op] = family
    VERSION[0] += 1


def rule(*ops: Any, inplace: bool | Iterable[Any] = False) -> Callable[[Rule], Rule]:
    """Register the decorated function as the shape rule of every given op.

    ``inplace=True`` also registers the in-place form of each op that torch pairs with it by
    name (at least one must exist); an explicit list of in-place overloads pairs them where
    the names differ (``pow.Tensor_Scalar`` with ``pow_.Scalar``).  A derived in-place rule
    keeps ``self``'s shape and dtype and rejects a result that does not fit back into it.
    Registering a second rule for an op raises.
    """
    family = sys._getframe(1).f_globals.get("__name__", "?")
    targets = [o for op in ops for o in overloads(op)]
    if inplace is True:
        forms = [f for f in map(inplace_form, targets) if f is not None]
        if not forms:
            raise ValueError(f"inplace=True, but torch has no in-place form of {ops}")
    else:
        forms = [o for op in (inplace or ()) for o in overloads(op)]

    def register(fn: Rule) -> Rule:
        _add([(op, fn) for op in targets] +
             [(form, inplace_of(fn, op_name(form))) for form in forms], family)
        return fn

    return register


def register_shape_rule(op: Any) -> Callable[[Rule], Rule]:
    """Public: add (or replace) the symbolic shape rule of `op` (an ATen/custom overload)."""
    family = sys._getframe(1).f_globals.get("__name__", "?")

    targets = overloads(op)

    def register(fn: Rule) -> Rule:
        for overload in targets:
            RULES[overload] = fn
            FAMILY[overload] = family
        VERSION[0] += 1
        return fn

    return register


def get_rule(op: Any) -> Rule | None:
    """The rule of an overload, or None when safetrace has none."""
    return RULES.get(op)
