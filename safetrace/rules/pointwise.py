"""What every pointwise rule shares: dtype categories, broadcasting with devices, the
in-place check, and the factories that build table-driven unary and binary rules.

In-place forms (``relu_``, ``add_``, ...) keep ``self``'s shape and dtype, and reject a
broadcast result that differs from ``self``'s shape or a result dtype that cannot be cast
back to ``self``'s (as eager torch does).

Dtype rejections are by category (bool, integer, floating, complex) and only where
torch's kernels reject that category on every device (``"gelu" not implemented for
'Long'``); device-specific gaps are not modelled.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from safetrace.errors import shape_error
from safetrace.meta import TensorMeta
from safetrace.rules.common import (
    broadcast_shapes,
    check,
    dtype_category,
    every,
    float_result,
    result_type,
    to_real,
)

BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3
NONE: frozenset = frozenset()
NO_BOOL = frozenset({BOOL})
NO_COMPLEX = frozenset({COMPLEX})
REAL_ONLY = frozenset({BOOL, COMPLEX})
FLOAT_ONLY = frozenset({BOOL, INT, COMPLEX})
INTEGRAL_ONLY = frozenset({FLOAT, COMPLEX})

_CPU = torch.device("cpu")


def shape_of(x: Any) -> tuple:
    """The shape of a tensor operand; a Python number is 0-d."""
    return x.shape if isinstance(x, TensorMeta) else ()


def common_device(op: str, *operands: Any) -> torch.device:
    """The device of the result; zero-dim CPU tensors may join tensors of any device."""
    metas = [x for x in operands if isinstance(x, TensorMeta)]
    strict = [x.device for x in metas if not (x.ndim == 0 and x.device.type == "cpu")]
    if not strict:
        return metas[0].device if metas else _CPU
    first = strict[0]
    for d in strict[1:]:
        if d is not first and d != first:  # the message is only formatted when raised
            raise shape_error(op, "Expected all tensors to be on the same device, but found "
                                  f"at least two devices, {first} and {d}!")
    return first


def reject(op: str, dtype: torch.dtype, categories: frozenset | set) -> None:
    """Raise the way torch's dispatch does for a dtype category the kernel lacks."""
    check(dtype_category(dtype) not in categories, op,
          f'"{op}" not implemented for \'{dtype}\'')


def same_shape(op: str, self: TensorMeta, shape: tuple) -> None:
    """In-place ops write into `self`: the broadcast result must have exactly its shape."""
    ok = len(shape) == self.ndim and every(a == b for a, b in zip(shape, self.shape))
    check(ok, op, f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                  f"{list(shape)}")


def castable(op: str, result: torch.dtype, out: torch.dtype) -> None:
    """An in-place result must be castable back to the dtype of the tensor written into."""
    check(torch.can_cast(result, out), op,
          f"result type {result} can't be cast to the desired output type {out}")


def pointwise(op: str, dtype: torch.dtype, *operands: Any) -> TensorMeta:
    """Broadcast the operands; the result has `dtype`."""
    shape = broadcast_shapes(*(shape_of(x) for x in operands), op=op)
    return TensorMeta(shape, dtype, common_device(op, *operands))


def inplace_of(fn: Callable[..., TensorMeta], op: str) -> Callable[..., TensorMeta]:
    """The rule of the in-place form `op` (``add_``) of an out-of-place rule `fn`."""

    def inplace(self: TensorMeta, *args: Any, **kwargs: Any) -> TensorMeta:
        out = fn(self, *args, **kwargs)
        same_shape(op, self, out.shape)
        castable(op, out.dtype, self.dtype)
        return self.like()

    inplace.__name__ = inplace.__qualname__ = op
    inplace.__doc__ = f"In-place {op}: self's shape and dtype; the result must fit back."
    return inplace


# -- table-driven rules -------------------------------------------------------------

# how the result dtype follows from the input (unary) or promoted (binary) dtype
SAME, TO_FLOAT, TO_BOOL, TO_REAL = "same", "float", "bool", "real"

_KIND: dict[str, Callable[[torch.dtype], torch.dtype]] = {
    SAME: lambda d: d,
    TO_FLOAT: float_result,
    TO_BOOL: lambda d: torch.bool,
    TO_REAL: to_real,
}

# unary ops whose bool inputs torch rejects with a message of their own
_BOOL_MESSAGES = {
    "neg": "Negation, the `-` operator, on a bool tensor is not supported. If you are "
           "trying to invert a mask, use the `~` or `logical_not()` operator instead.",
    "positive": "The `+` operator, on a bool tensor is not supported.",
    "hardtanh": "Bool inputs not supported for hardtanh",
}


def unary(name: str, kind: str, rejected: frozenset) -> Callable[..., TensorMeta]:
    """The rule of a one-tensor pointwise op; extra arguments are scalars and never matter."""
    to_dtype = _KIND[kind]
    bool_message = _BOOL_MESSAGES.get(name)

    def unary_rule(self: TensorMeta, *args: Any, **kwargs: Any) -> TensorMeta:
        if bool_message is not None:
            check(self.dtype is not torch.bool, name, bool_message)
        reject(name, self.dtype, rejected)
        return self.like(dtype=to_dtype(self.dtype))

    unary_rule.__name__ = unary_rule.__qualname__ = name
    unary_rule.__doc__ = f"{name}: same shape, {kind} dtype."
    return unary_rule


def binary(name: str, rejected: frozenset, kind: str = SAME,
           message: str | None = None) -> Callable[..., TensorMeta]:
    """The rule of a two-operand pointwise op: broadcast, promote, refuse the `rejected`
    categories of the promoted dtype (with torch's own `message` where it has one); the
    result dtype follows from the promoted one by `kind`."""
    to_dtype = _KIND[kind]

    def binary_rule(self: Any, other: Any) -> TensorMeta:
        dtype = result_type(self, other)
        if message is not None:
            check(dtype_category(dtype) not in rejected, name, message)
        else:
            reject(name, dtype, rejected)
        return pointwise(name, to_dtype(dtype), self, other)

    binary_rule.__name__ = binary_rule.__qualname__ = name
    binary_rule.__doc__ = f"{name}: broadcast and promote; {kind} dtype."
    return binary_rule
