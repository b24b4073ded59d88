"""Pointwise ops: unary, binary with broadcasting and promotion, their in-place forms.

Every rule here answers two questions: the broadcast shape of the operands, and the
dtype torch's type promotion gives.  In-place forms (``relu_``, ``add_``, ...) keep
``self``'s shape and dtype, and reject a broadcast result that differs from ``self``'s
shape or a result dtype that cannot be cast back to ``self``'s (as eager torch does).

Dtype rejections are by category (bool, integer, floating, complex) and only where
torch's kernels reject that category on every device (``"gelu" not implemented for
'Long'``); device-specific gaps are not modelled.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from safetrace.meta import TensorMeta
from safetrace.errors import shape_error
from safetrace.rules.common import (
    broadcast_shapes,
    check,
    dtype_category,
    float_result,
    normalize_dim,
    result_type,
    to_real,
)
from safetrace.rules.common import _TO_COMPLEX
from safetrace.rules.registry import rule

aten = torch.ops.aten

BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3
_CPU = torch.device("cpu")


# -- helpers ------------------------------------------------------------------------


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
    ok = len(shape) == self.ndim and all(a == b for a, b in zip(shape, self.shape))
    check(ok, op, f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                  f"{list(shape)}")


def castable(op: str, result: torch.dtype, out: torch.dtype) -> None:
    check(torch.can_cast(result, out), op,
          f"result type {result} can't be cast to the desired output type {out}")


def pointwise(op: str, dtype: torch.dtype, *operands: Any) -> TensorMeta:
    """Broadcast the operands; the result has `dtype`."""
    shape = broadcast_shapes(*(shape_of(x) for x in operands), op=op)
    return TensorMeta(shape, dtype, common_device(op, *operands))


def inplace_of(fn: Callable[..., TensorMeta], op: str) -> Callable[..., TensorMeta]:
    """The rule of the in-place form of an out-of-place rule `fn`."""

    def inplace(self: TensorMeta, *args: Any, **kwargs: Any) -> TensorMeta:
        out = fn(self, *args, **kwargs)
        same_shape(op, self, out.shape)
        castable(op, out.dtype, self.dtype)
        return self.like()

    inplace.__doc__ = f"In-place {op}: self's shape and dtype; the result must fit back."
    return inplace


def register(name: str, overloads: tuple[str, ...], fn: Callable[..., TensorMeta]) -> None:
    """Register `fn` for aten.<name>.<overload> and its in-place form where torch has one."""
    packet = getattr(aten, name)
    inplace = getattr(aten, name + "_", None)
    for overload in overloads:
        rule(getattr(packet, overload))(fn)
        if inplace is not None and overload in inplace.overloads():
            rule(getattr(inplace, overload))(inplace_of(fn, name + "_"))


# -- unary --------------------------------------------------------------------------

SAME, TO_FLOAT, TO_BOOL, TO_REAL = "same", "float", "bool", "real"
NO_BOOL = frozenset({BOOL})
NO_COMPLEX = frozenset({COMPLEX})
REAL_ONLY = frozenset({BOOL, COMPLEX})
FLOAT_ONLY = frozenset({BOOL, INT, COMPLEX})
INTEGRAL_ONLY = frozenset({FLOAT, COMPLEX})

# name: (dtype kind, rejected input categories).  Facts from the CPU/CUDA dispatch macros.
UNARY: dict[str, tuple[str, frozenset]] = {
    # always computed in floating point: int/bool inputs give the default float dtype
    **{name: (TO_FLOAT, frozenset()) for name in (
        "sigmoid", "tanh", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt",
        "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
        "asinh", "acosh", "atanh")},
    **{name: (TO_FLOAT, NO_COMPLEX) for name in (
        "erf", "erfc", "erfinv", "digamma", "lgamma", "i0", "logit", "deg2rad", "rad2deg")},
    # keep the input dtype
    "relu": (SAME, REAL_ONLY),
    "neg": (SAME, NO_BOOL),
    "positive": (SAME, NO_BOOL),
    "floor": (SAME, REAL_ONLY),
    "ceil": (SAME, REAL_ONLY),
    "trunc": (SAME, REAL_ONLY),
    "frac": (SAME, FLOAT_ONLY),
    "sign": (SAME, NO_COMPLEX),
    "sgn": (SAME, frozenset()),
    "silu": (SAME, frozenset({BOOL, INT})),
    "hardtanh": (SAME, REAL_ONLY),
    "relu6": (SAME, REAL_ONLY),
    "threshold": (SAME, REAL_ONLY),
    "nan_to_num": (SAME, frozenset()),
    "bitwise_not": (SAME, INTEGRAL_ONLY),
    **{name: (SAME, FLOAT_ONLY) for name in (
        "leaky_relu", "elu", "selu", "celu", "softplus", "mish", "hardswish", "hardsigmoid",
        "hardshrink")},
    # complex inputs give their real dtype
    "abs": (TO_REAL, NO_BOOL),
    # predicates
    "logical_not": (TO_BOOL, frozenset()),
    "isnan": (TO_BOOL, frozenset()),
    "isinf": (TO_BOOL, frozenset()),
    "isfinite": (TO_BOOL, frozenset()),
    "isposinf": (TO_BOOL, NO_COMPLEX),
    "isneginf": (TO_BOOL, NO_COMPLEX),
    "signbit": (TO_BOOL, NO_COMPLEX),
}

_KIND: dict[str, Callable[[torch.dtype], torch.dtype]] = {
    SAME: lambda d: d,
    TO_FLOAT: float_result,
    TO_BOOL: lambda d: torch.bool,
    TO_REAL: to_real,
}


def unary(name: str, kind: str, rejected: frozenset) -> Callable[..., TensorMeta]:
    """The rule of a one-tensor pointwise op; extra arguments are scalars and never matter."""
    to_dtype = _KIND[kind]

    def unary_rule(self: TensorMeta, *args: Any, **kwargs: Any) -> TensorMeta:
        if name == "neg":
            check(self.dtype is not torch.bool, name,
                  "Negation, the `-` operator, on a bool tensor is not supported. If you are "
                  "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
        if name == "positive":
            check(self.dtype is not torch.bool, name,
                  "The `+` operator, on a bool tensor is not supported.")
        if name == "hardtanh":
            check(self.dtype is not torch.bool, name, "Bool inputs not supported for hardtanh")
        reject(name, self.dtype, rejected)
        return self.like(dtype=to_dtype(self.dtype))

    unary_rule.__name__ = f"{name}_rule"
    unary_rule.__doc__ = f"{name}: same shape, {kind} dtype."
    return unary_rule


for _name, (_kind, _rejected) in UNARY.items():
    register(_name, ("default",), unary(_name, _kind, _rejected))


@rule(aten.square.default)
def square(self: TensorMeta) -> TensorMeta:
    """square = pow(x, 2): same shape; bool gives int64."""
    return self.like(dtype=torch.int64 if self.dtype is torch.bool else self.dtype)


rule(aten.square_.default)(inplace_of(square, "square_"))


@rule(aten.gelu.default)
def gelu(self: TensorMeta, *, approximate: str = "none") -> TensorMeta:
    """gelu: same shape and dtype; floating inputs only."""
    check(approximate in ("none", "tanh"), "gelu",
          "approximate argument must be either none or tanh.")
    reject("gelu", self.dtype, FLOAT_ONLY)
    return self.like()


rule(aten.gelu_.default)(inplace_of(gelu, "gelu_"))


@rule(aten.round.default, aten.round.decimals)
def round_(self: TensorMeta, *, decimals: int = 0) -> TensorMeta:
    """round: same shape and dtype; rounding to decimals needs a floating input."""
    reject("round", self.dtype, REAL_ONLY if decimals == 0 else FLOAT_ONLY)
    return self.like()


rule(aten.round_.default, aten.round_.decimals)(inplace_of(round_, "round_"))


@rule(aten.abs_.default)
def abs_inplace(self: TensorMeta) -> TensorMeta:
    """abs_: complex tensors cannot hold their (real) absolute value in place."""
    check(not self.dtype.is_complex, "abs_", "In-place abs is not supported for complex tensors.")
    reject("abs_", self.dtype, NO_BOOL)
    return self.like()


# -- binary arithmetic --------------------------------------------------------------


def _alpha(op: str, dtype: torch.dtype, alpha: Any) -> None:
    if isinstance(alpha, bool):
        check(dtype is torch.bool, op, "Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, float):
        check(dtype.is_floating_point or dtype.is_complex, op,
              "For integral input tensors, argument alpha must not be a floating point number.")
    elif isinstance(alpha, complex):
        check(dtype.is_complex, op, "For non-complex input tensors, argument alpha must not "
                                    "be a complex number.")


def _is_bool(x: Any) -> bool:
    return x.dtype is torch.bool if isinstance(x, TensorMeta) else isinstance(x, bool)


def _no_bool_sub(op: str, a: Any, b: Any) -> None:
    check(not (_is_bool(a) and _is_bool(b)), op,
          "Subtraction, the `-` operator, with two bool tensors is not supported. "
          "Use the `^` or `logical_xor()` operator instead.")
    check(not (_is_bool(a) or _is_bool(b)), op,
          "Subtraction, the `-` operator, with a bool tensor is not supported. "
          "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def add(self: Any, other: Any, alpha: Any = 1) -> TensorMeta:
    """add: broadcast, promote; alpha must fit the result's category."""
    dtype = result_type(self, other)
    _alpha("add", dtype, alpha)
    return pointwise("add", dtype, self, other)


def sub(self: Any, other: Any, alpha: Any = 1) -> TensorMeta:
    """sub: like add, but bool operands are rejected."""
    _no_bool_sub("sub", self, other)
    dtype = result_type(self, other)
    _alpha("sub", dtype, alpha)
    return pointwise("sub", dtype, self, other)


def rsub(self: Any, other: Any, alpha: Any = 1) -> TensorMeta:
    """rsub: other - alpha * self."""
    _no_bool_sub("rsub", self, other)
    dtype = result_type(self, other)
    _alpha("rsub", dtype, alpha)
    return pointwise("rsub", dtype, self, other)


def mul(self: Any, other: Any) -> TensorMeta:
    """mul: broadcast and promote."""
    return pointwise("mul", result_type(self, other), self, other)


def div(self: Any, other: Any, *, rounding_mode: str | None = None) -> TensorMeta:
    """div: true division computes in floating point; trunc/floor keep the promoted dtype."""
    check(rounding_mode in (None, "trunc", "floor"), "div",
          "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
          f"'{rounding_mode}'")
    dtype = result_type(self, other)
    if rounding_mode is None:
        return pointwise("div", float_result(dtype), self, other)
    reject("div", dtype, REAL_ONLY)
    return pointwise("div", dtype, self, other)


def _for_tensor_arg(fn: Callable[..., TensorMeta]) -> Callable[..., TensorMeta]:
    """The `.Tensor` overloads take alpha as a keyword."""

    def tensor_overload(self: Any, other: Any, *, alpha: Any = 1) -> TensorMeta:
        return fn(self, other, alpha)

    tensor_overload.__doc__ = fn.__doc__
    return tensor_overload


register("add", ("Tensor",), _for_tensor_arg(add))
register("add", ("Scalar",), add)
register("sub", ("Tensor",), _for_tensor_arg(sub))
register("sub", ("Scalar",), sub)
register("rsub", ("Tensor",), _for_tensor_arg(rsub))
register("rsub", ("Scalar",), rsub)
register("mul", ("Tensor", "Scalar"), mul)
register("div", ("Tensor", "Scalar", "Tensor_mode", "Scalar_mode"), div)


def pow_(self: Any, exponent: Any) -> TensorMeta:
    """pow: broadcast and promote; integers to negative integer scalar powers are rejected."""
    dtype = result_type(self, exponent)
    check(dtype is not torch.bool, "pow", "\"pow\" not implemented for 'Bool'")
    if isinstance(self, TensorMeta) and dtype_category(self.dtype) <= INT and \
            type(exponent) is int and dtype_category(dtype) <= INT:
        check(exponent >= 0, "pow", "Integers to negative integer powers are not allowed.")
    return pointwise("pow", dtype, self, exponent)


register("pow", ("Tensor_Tensor", "Tensor_Scalar", "Scalar"), pow_)
rule(aten.pow_.Tensor, aten.pow_.Scalar)(inplace_of(pow_, "pow_"))


def promoting_binary(name: str, rejected: frozenset = REAL_ONLY) -> Callable[..., TensorMeta]:
    """A binary pointwise rule: broadcast and promote, `rejected` dtype categories refused
    (by default bool and complex, as for the integer divisions)."""
    def binary_rule(self: Any, other: Any) -> TensorMeta:
        dtype = result_type(self, other)
        reject(name, dtype, rejected)
        return pointwise(name, dtype, self, other)

    binary_rule.__doc__ = f"{name}: broadcast and promote."
    return binary_rule



register("remainder", ("Tensor", "Scalar", "Scalar_Tensor"), promoting_binary("remainder"))
register("fmod", ("Tensor", "Scalar"), promoting_binary("fmod"))
register("floor_divide", ("default", "Scalar"), promoting_binary("floor_divide"))
rule(aten.floor_divide_.Tensor, aten.floor_divide_.Scalar)(
    inplace_of(promoting_binary("floor_divide"), "floor_divide_"))


def _promoting(name: str, rejected: frozenset, to_float: bool = False,
               message: str | None = None) -> Callable[..., TensorMeta]:
    def binary_rule(self: Any, other: Any) -> TensorMeta:
        dtype = result_type(self, other)
        if message is not None:
            check(dtype_category(dtype) not in rejected, name, message)
        reject(name, dtype, rejected)
        return pointwise(name, float_result(dtype) if to_float else dtype, self, other)

    binary_rule.__doc__ = f"{name}: broadcast and promote."
    return binary_rule


for _name in ("maximum", "minimum", "fmax", "fmin"):
    register(_name, ("default",), _promoting(
        _name, NO_COMPLEX, message=f"{_name} not implemented for complex tensors."))
for _name in ("max", "min"):
    register(_name, ("other",), _promoting(
        _name, NO_COMPLEX, message=f"{_name}imum not implemented for complex tensors."))
register("atan2", ("default",), _promoting("atan2", NO_COMPLEX, to_float=True))
register("hypot", ("default",), _promoting("hypot", FLOAT_ONLY))
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    register(_name, ("Tensor", "Scalar", "Scalar_Tensor"), _promoting(_name, INTEGRAL_ONLY))
for _name in ("bitwise_left_shift", "bitwise_right_shift"):  # no bool, unlike and/or/xor
    register(_name, ("Tensor", "Tensor_Scalar", "Scalar_Tensor"),
             _promoting(_name, frozenset({BOOL, FLOAT, COMPLEX})))
register("copysign", ("Tensor", "Scalar"), _promoting("copysign", NO_COMPLEX, to_float=True))


@rule(aten.polar.default)
def polar(abs: TensorMeta, angle: TensorMeta) -> TensorMeta:
    """polar: broadcast; abs and angle share one floating dtype, the result is its complex."""
    check(abs.dtype == angle.dtype, "polar", f"Expected object of scalar type {abs.dtype} but "
                                             f"got scalar type {angle.dtype} for second argument")
    check(abs.dtype in _TO_COMPLEX, "polar", f"Expected both inputs to be Half, Float or Double "
                                             f"tensors but got {abs.dtype} and {angle.dtype}")
    return pointwise("polar", _TO_COMPLEX[abs.dtype], abs, angle)


@rule(aten.softshrink.default)
def softshrink(self: TensorMeta, lambd: Any = 0.5) -> TensorMeta:
    """softshrink: same shape and dtype; floating inputs only, lambd non-negative."""
    reject("softshrink", self.dtype, FLOAT_ONLY)
    check(lambd >= 0, "softshrink", f"lambda must be greater or equal to 0, but found to be "
                                    f"{lambd}.")
    return self.like()


@rule(aten.prelu.default)
def prelu(self: TensorMeta, weight: TensorMeta) -> TensorMeta:
    """prelu: same shape and dtype; weight is 0-d or 1-d, one slope or one per channel (dim 1)."""
    op = "prelu"
    check(self.dtype == weight.dtype, op, f"prelu: Type promoting not supported. Got "
                                          f"{self.dtype} and {weight.dtype}")
    n = weight.numel()
    if not (isinstance(n, int) and n == 1):
        channels = self.shape[1] if self.ndim > 1 else 1
        # eager branches on weight.numel() != 1 (a guard when symbolic)
        check(n == 1 or (self.ndim > 0 and channels == n), op,
              "Not allow zero-dim input tensor." if self.ndim == 0 else
              f"Mismatch of parameter numbers and input channel size. Found parameter numbers "
              f"= {n} and channel size = {channels}.")
    check(weight.ndim <= 1, op, f"prelu: Expected `weight` to be a scalar or 1D tensor, but "
                                f"got: ndim = {weight.ndim}")
    reject(op, self.dtype, FLOAT_ONLY)
    return self.like()


@rule(aten._prelu_kernel.default)
def prelu_kernel(self: TensorMeta, weight: TensorMeta) -> TensorMeta:
    """_prelu_kernel: self and weight broadcast; they share one floating dtype."""
    check(self.dtype == weight.dtype, "_prelu_kernel",
          f"Found dtype {weight.dtype} but expected {self.dtype}")
    reject("_prelu_kernel", self.dtype, FLOAT_ONLY)
    return pointwise("_prelu_kernel", self.dtype, self, weight)


def _predicate(name: str, rejected: frozenset) -> Callable[..., TensorMeta]:
    def predicate_rule(self: Any, other: Any) -> TensorMeta:
        reject(name, result_type(self, other), rejected)
        return pointwise(name, torch.bool, self, other)

    predicate_rule.__doc__ = f"{name}: broadcast; bool result."
    return predicate_rule


for _name in ("eq", "ne"):
    register(_name, ("Tensor", "Scalar"), _predicate(_name, frozenset()))
for _name in ("lt", "le", "gt", "ge"):
    register(_name, ("Tensor", "Scalar"), _predicate(_name, NO_COMPLEX))
for _name in ("logical_and", "logical_or", "logical_xor"):
    register(_name, ("default",), _predicate(_name, frozenset()))


# -- selection and clamping -----------------------------------------------------------


@rule(aten.where.self, aten.where.ScalarOther, aten.where.ScalarSelf, aten.where.Scalar)
def where(condition: TensorMeta, self: Any, other: Any) -> TensorMeta:
    """where: broadcast all three; promote self and other; condition is a bool tensor."""
    check(condition.dtype in (torch.bool, torch.uint8), "where",
          "where expected condition to be a boolean tensor, but got a tensor with dtype "
          f"{condition.dtype}")
    return pointwise("where", result_type(self, other), condition, self, other)


def clamp(self: TensorMeta, min: Any = None, max: Any = None) -> TensorMeta:
    """clamp: promote with the bounds; Tensor bounds broadcast."""
    check(min is not None or max is not None, "clamp",
          "torch.clamp: At least one of 'min' or 'max' must not be None")
    dtype = result_type(self, min, max)
    check(not dtype.is_complex, "clamp", "clamp is not supported for complex types")
    reject("clamp", dtype, NO_BOOL)
    return pointwise("clamp", dtype, self, min, max)


def clamp_min(self: TensorMeta, min: Any) -> TensorMeta:
    """clamp_min: clamp with only a lower bound."""
    return clamp(self, min, None)


def clamp_max(self: TensorMeta, max: Any) -> TensorMeta:
    """clamp_max: clamp with only an upper bound."""
    return clamp(self, None, max)


register("clamp", ("default", "Tensor"), clamp)
register("clamp_min", ("default", "Tensor"), clamp_min)
register("clamp_max", ("default", "Tensor"), clamp_max)


def _mask(op: str, mask: TensorMeta) -> None:
    check(mask.dtype is torch.bool, op, "masked_fill_ only supports boolean masks, but got "
                                        f"mask with dtype {mask.dtype}")


@rule(aten.masked_fill.Scalar, aten.masked_fill.Tensor)
def masked_fill(self: TensorMeta, mask: TensorMeta, value: Any) -> TensorMeta:
    """masked_fill: self and mask broadcast; the value is a scalar or a 0-d tensor."""
    _mask("masked_fill", mask)
    if isinstance(value, TensorMeta):
        check(value.ndim == 0, "masked_fill", "masked_fill_ only supports a 0-dimensional "
                               f"value tensor, but got tensor with {value.ndim} dimension(s).")
    elif isinstance(value, complex):
        check(self.dtype.is_complex, "masked_fill",
              f"value cannot be converted to type {self.dtype} without overflow")
    return pointwise("masked_fill", self.dtype, self, mask)


@rule(aten.masked_fill_.Scalar, aten.masked_fill_.Tensor)
def masked_fill_inplace(self: TensorMeta, mask: TensorMeta, value: Any) -> TensorMeta:
    """masked_fill_: the mask must broadcast to self's shape."""
    same_shape("masked_fill_", self, masked_fill(self, mask, value).shape)
    return self.like()


def lerp(self: TensorMeta, end: TensorMeta, weight: Any) -> TensorMeta:
    """lerp: broadcast; end (and a dimensioned weight) must have self's floating dtype."""
    check(end.dtype == self.dtype, "lerp",
          f"expected dtype {self.dtype} for `end` but got dtype {end.dtype}")
    if isinstance(weight, TensorMeta) and weight.ndim > 0:
        check(weight.dtype == self.dtype, "lerp",
              f"expected dtype {self.dtype} for `weight` but got dtype {weight.dtype}")
    reject("lerp", self.dtype, frozenset({BOOL, INT}))
    return pointwise("lerp", self.dtype, self, end, weight)


register("lerp", ("Scalar", "Tensor"), lerp)


def addcmul(self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> TensorMeta:
    """addcmul: self + value * tensor1 * tensor2, all three broadcast and promote."""
    return pointwise("addcmul", result_type(self, tensor1, tensor2), self, tensor1, tensor2)


def addcdiv(self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> TensorMeta:
    """addcdiv: like addcmul; integer division of tensor1 by tensor2 is rejected."""
    integral = all(dtype_category(t.dtype) <= INT for t in (tensor1, tensor2)
                   if isinstance(t, TensorMeta))
    check(not integral, "addcdiv",
          "Integer division with addcdiv is no longer supported, and in a future release "
          "addcdiv will perform a true division of tensor1 and tensor2. Use "
          "torch.addcdiv(input, tensor1, torch.true_divide(tensor1, tensor2)) instead.")
    return pointwise("addcdiv", result_type(self, tensor1, tensor2), self, tensor1, tensor2)


register("addcmul", ("default",), addcmul)
register("addcdiv", ("default",), addcdiv)


# -- softmax, dropout, gating ---------------------------------------------------------


def _softmax_dtype(op: str, self: TensorMeta, dim: int, dtype: torch.dtype | None) -> TensorMeta:
    normalize_dim(dim, self.ndim, op)
    out = self.dtype if dtype is None else dtype
    reject(op, out, FLOAT_ONLY)
    return self.like(dtype=out)


@rule(aten.softmax.int)
def softmax(self: TensorMeta, dim: int, dtype: torch.dtype | None = None) -> TensorMeta:
    """softmax: same shape; computed in `dtype` (default: the input's), floating only."""
    return _softmax_dtype("softmax", self, dim, dtype)


@rule(aten.log_softmax.int)
def log_softmax(self: TensorMeta, dim: int, dtype: torch.dtype | None = None) -> TensorMeta:
    """log_softmax: as softmax."""
    return _softmax_dtype("log_softmax", self, dim, dtype)


@rule(aten._softmax.default, aten._log_softmax.default)
def softmax_internal(self: TensorMeta, dim: int, half_to_float: bool) -> TensorMeta:
    """_softmax: half_to_float turns a half/bfloat16 input into a float32 result (not on CPU)."""
    out = _softmax_dtype("_softmax", self, dim, None)
    if not half_to_float:
        return out
    check(self.device.type != "cpu", "_softmax",
          "softmax with half to float conversion is not supported on CPU")
    check(self.dtype in (torch.float16, torch.bfloat16), "_softmax",
          f"half_to_float is True but the input dtype is {self.dtype}, expected half or bfloat16")
    return self.like(dtype=torch.float32)


def _dropout_check(op: str, input: TensorMeta, p: float, train: bool | None) -> None:
    check(0 <= p <= 1, op, f"dropout probability has to be between 0 and 1, but got {p}")
    if train is not False and 0 < p < 1:
        castable(op, float_result(input.dtype), input.dtype)


def dropout(input: TensorMeta, p: float, train: bool) -> TensorMeta:
    """dropout: same shape and dtype, in training and in eval mode."""
    _dropout_check("dropout", input, p, train)
    return input.like()


def feature_dropout(input: TensorMeta, p: float, train: bool) -> TensorMeta:
    """feature_dropout: drops whole channels, so training needs at least 2 dims."""
    _dropout_check("feature_dropout", input, p, train)
    if train:
        check(input.ndim >= 2, "feature_dropout",
              "Feature dropout requires at least 2 dimensions in the input")
    return input.like()


register("dropout", ("default",), dropout)
register("alpha_dropout", ("default",), dropout)
register("feature_dropout", ("default",), feature_dropout)
register("feature_alpha_dropout", ("default",), feature_dropout)


@rule(aten.native_dropout.default)
def native_dropout(input: TensorMeta, p: float, train: bool | None) -> tuple:
    """native_dropout: (output like input, bool mask like input)."""
    _dropout_check("native_dropout", input, p, train)
    return input.like(), input.like(dtype=torch.bool)


@rule(aten.glu.default)
def glu(self: TensorMeta, dim: int = -1) -> TensorMeta:
    """glu: halves `dim`, which must have an even size."""
    check(self.ndim > 0, "glu", "glu does not support 0-dimensional tensors")
    d = normalize_dim(dim, self.ndim, "glu")
    size = self.shape[d]
    check(size % 2 == 0, "glu", f"Halving dimension must be even, but dimension {d} is size "
                                f"{size}")
    reject("glu", self.dtype, FLOAT_ONLY)
    return self.like(shape=self.shape[:d] + (size // 2,) + self.shape[d + 1:])


# -- writing into self ------------------------------------------------------------------


@rule(aten.copy_.default)
def copy_(self: TensorMeta, src: TensorMeta, non_blocking: bool = False) -> TensorMeta:
    """copy_: src broadcasts to self's shape; any dtype converts."""
    same_shape("copy_", self, broadcast_shapes(self.shape, shape_of(src), op="copy_"))
    return self.like()


@rule(aten.fill_.Scalar, aten.fill_.Tensor)
def fill_(self: TensorMeta, value: Any) -> TensorMeta:
    """fill_: self unchanged; a tensor value must be 0-d."""
    if isinstance(value, TensorMeta):
        check(value.ndim == 0, "fill_", "fill_ only supports 0-dimension value tensor but got "
                                        f"tensor with {value.ndim} dimensions.")
    elif isinstance(value, complex):
        check(self.dtype.is_complex, "fill_",
              f"value cannot be converted to type {self.dtype} without overflow")
    return self.like()


@rule(aten.zero_.default)
def zero_(self: TensorMeta) -> TensorMeta:
    """zero_: self unchanged."""
    return self.like()
