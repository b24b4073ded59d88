"""Pointwise ops: unary, binary with broadcasting and promotion, selection and clamping,
writes into self, and their in-place forms.

Every rule here answers two questions: the broadcast shape of the operands, and the dtype
torch's type promotion gives.  The shared machinery (dtype categories, the in-place check,
the table factories) is in pointwise.py; softmax, dropout and glu are in activations.py.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from safetrace.meta import TensorMeta
from safetrace.meta.active import ACTIVE
from safetrace.meta.symtypes import SYM_CLASSES
from safetrace.rules.common import (
    TO_COMPLEX,
    broadcast_shapes,
    check,
    dtype_category,
    float_result,
    requiring,
    result_type,
    scalar_category,
)
from safetrace.rules.pointwise import (
    BOOL,
    COMPLEX,
    FLOAT,
    FLOAT_ONLY,
    INT,
    INTEGRAL_ONLY,
    NO_BOOL,
    NO_COMPLEX,
    NONE,
    REAL_ONLY,
    SAME,
    TO_BOOL,
    TO_FLOAT,
    TO_REAL,
    binary,
    pointwise,
    reject,
    same_shape,
    shape_of,
    unary,
)
from safetrace.rules.kernel_checks import kernel_check
from safetrace.rules.registry import inplace_form, op_name, rule

aten = torch.ops.aten


# -- unary --------------------------------------------------------------------------

# op: (dtype kind, rejected input categories).  Facts from the CPU/CUDA dispatch macros.
UNARY: dict[Any, tuple[str, frozenset]] = {
    # always computed in floating point: int/bool inputs give the default float dtype
    **dict.fromkeys((
        aten.sigmoid.default, aten.tanh.default, aten.exp.default, aten.exp2.default,
        aten.log.default, aten.log2.default, aten.log10.default, aten.log1p.default,
        aten.expm1.default, aten.sqrt.default, aten.rsqrt.default, aten.reciprocal.default,
        aten.sin.default, aten.cos.default, aten.tan.default, aten.asin.default,
        aten.acos.default, aten.atan.default, aten.sinh.default, aten.cosh.default,
        aten.asinh.default, aten.acosh.default, aten.atanh.default), (TO_FLOAT, NONE)),
    **dict.fromkeys((
        aten.erf.default, aten.erfc.default, aten.erfinv.default, aten.digamma.default,
        aten.lgamma.default, aten.i0.default, aten.logit.default, aten.deg2rad.default,
        aten.rad2deg.default), (TO_FLOAT, NO_COMPLEX)),
    # keep the input dtype
    aten.relu.default: (SAME, REAL_ONLY),
    aten.neg.default: (SAME, NO_BOOL),
    aten.positive.default: (SAME, NO_BOOL),
    aten.floor.default: (SAME, REAL_ONLY),
    aten.ceil.default: (SAME, REAL_ONLY),
    aten.trunc.default: (SAME, REAL_ONLY),
    aten.frac.default: (SAME, FLOAT_ONLY),
    aten.sign.default: (SAME, NO_COMPLEX),
    aten.sgn.default: (SAME, NONE),
    aten.silu.default: (SAME, frozenset({BOOL, INT})),
    aten.hardtanh.default: (SAME, REAL_ONLY),
    aten.relu6.default: (SAME, REAL_ONLY),
    aten.threshold.default: (SAME, REAL_ONLY),
    aten.nan_to_num.default: (SAME, NONE),
    aten.bitwise_not.default: (SAME, INTEGRAL_ONLY),
    **dict.fromkeys((
        aten.leaky_relu.default, aten.elu.default, aten.selu.default, aten.celu.default,
        aten.softplus.default, aten.mish.default, aten.hardswish.default,
        aten.hardsigmoid.default, aten.hardshrink.default), (SAME, FLOAT_ONLY)),
    # predicates
    aten.logical_not.default: (TO_BOOL, NONE),
    aten.isnan.default: (TO_BOOL, NONE),
    aten.isinf.default: (TO_BOOL, NONE),
    aten.isfinite.default: (TO_BOOL, NONE),
    aten.isposinf.default: (TO_BOOL, NO_COMPLEX),
    aten.isneginf.default: (TO_BOOL, NO_COMPLEX),
    aten.signbit.default: (TO_BOOL, NO_COMPLEX),
}


for _op, _entry in UNARY.items():
    rule(_op, inplace=inplace_form(_op) is not None)(unary(op_name(_op), *_entry))

# complex inputs give their real dtype; in place, a complex tensor cannot hold it (below)
rule(aten.abs.default)(unary("abs", TO_REAL, NO_BOOL))


@rule(aten.abs_.default)
def abs_(self: TensorMeta) -> TensorMeta:
    """abs_: complex tensors cannot hold their (real) absolute value in place."""
    check(not self.dtype.is_complex, "abs_", "In-place abs is not supported for complex tensors.")
    reject("abs_", self.dtype, NO_BOOL)
    return self.like()


@rule(aten.square.default, inplace=True)
def square(self: TensorMeta) -> TensorMeta:
    """square = pow(x, 2): same shape; bool gives int64."""
    return self.like(dtype=torch.int64 if self.dtype is torch.bool else self.dtype)


@rule(aten.gelu.default, inplace=True)
def gelu(self: TensorMeta, *, approximate: str = "none") -> TensorMeta:
    """gelu: same shape and dtype; floating inputs only."""
    check(approximate in ("none", "tanh"), "gelu",
          "approximate argument must be either none or tanh.")
    reject("gelu", self.dtype, FLOAT_ONLY)
    return self.like()


@rule(aten.round.default, aten.round.decimals, inplace=True)
def round_rule(self: TensorMeta, *, decimals: int = 0) -> TensorMeta:
    """round: same shape and dtype; rounding to decimals needs a floating input."""
    reject("round", self.dtype, REAL_ONLY if decimals == 0 else FLOAT_ONLY)
    return self.like()


# -- binary arithmetic --------------------------------------------------------------


def check_alpha(op: str, dtype: torch.dtype, alpha: Any) -> None:
    """add/sub's alpha must be representable in the result's dtype category (a value read
    from a 0-d tensor, ``alpha=t``, by its kind: SymBool, SymInt, SymFloat)."""
    kind = scalar_category(alpha) if type(alpha) in SYM_CLASSES else None
    if isinstance(alpha, bool) or kind == 0:
        check(dtype is torch.bool, op, "Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, float) or kind == 2:
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


def _additive(name: str, no_bool: bool) -> tuple[Callable[..., TensorMeta], ...]:
    """The rules of add/sub/rsub: the `.Scalar` overload takes alpha positionally, the
    `.Tensor` one as a keyword."""

    def scalar_rule(self: Any, other: Any, alpha: Any = 1) -> TensorMeta:
        if no_bool:
            _no_bool_sub(name, self, other)
        dtype = result_type(self, other)
        check_alpha(name, dtype, alpha)
        return pointwise(name, dtype, self, other)

    def tensor_rule(self: Any, other: Any, *, alpha: Any = 1) -> TensorMeta:
        return scalar_rule(self, other, alpha)

    for fn, overload in ((scalar_rule, "Scalar"), (tensor_rule, "Tensor")):
        fn.__name__ = fn.__qualname__ = f"{name}_{overload}"
        fn.__doc__ = f"{name}: broadcast, promote; alpha must fit the result's category" + \
            ("; bool operands are rejected." if no_bool else ".")
    return scalar_rule, tensor_rule


add_scalar, add_tensor = _additive("add", no_bool=False)
rule(aten.add.Scalar, inplace=True)(add_scalar)
rule(aten.add.Tensor, inplace=True)(add_tensor)
sub_scalar, sub_tensor = _additive("sub", no_bool=True)
rule(aten.sub.Scalar, inplace=True)(sub_scalar)
rule(aten.sub.Tensor, inplace=True)(sub_tensor)
rsub_scalar, rsub_tensor = _additive("rsub", no_bool=True)  # other - alpha * self
rule(aten.rsub.Scalar)(rsub_scalar)
rule(aten.rsub.Tensor)(rsub_tensor)


@rule(aten.mul.Tensor, aten.mul.Scalar, inplace=True)
def mul(self: Any, other: Any) -> TensorMeta:
    """mul: broadcast and promote."""
    return pointwise("mul", result_type(self, other), self, other)


@rule(aten.div.Tensor, aten.div.Scalar, aten.div.Tensor_mode, aten.div.Scalar_mode,
      inplace=True)
def div(self: Any, other: Any, *, rounding_mode: str | None = None) -> TensorMeta:
    """div: true division computes in floating point; trunc/floor keep the promoted dtype."""
    check(rounding_mode in (None, "trunc", "floor"), "div",
          "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
          f"'{rounding_mode}'")
    dtype = result_type(self, other)
    if rounding_mode is None:
        return pointwise("div", float_result(dtype), self, other)
    reject("div", dtype, REAL_ONLY)
    return _by_a_size("div", pointwise("div", dtype, self, other), other)


def _by_a_size(name: str, out: TensorMeta, other: Any) -> TensorMeta:
    """`out`, an integer division's result (`name`: floor_divide, remainder, fmod, div
    with a rounding mode) by `other`: where that is a size that can be 0 (``t // (n -
    m)``) or is 0, eager's kernel raises ZeroDivisionError unless `out` is empty or a float, which
    the meta function does not check: a run-time check of the program (kernel_checks)."""
    if type(other) not in (*SYM_CLASSES, int, bool) or dtype_category(out.dtype) != INT:
        return out
    probe = ACTIVE.env.subgraph_probe if ACTIVE.env is not None else None
    if probe is not None and probe():  # (a torch.cond branch or a loop body: it may run
        return out  # only where the divisor is not 0)
    nonzero = other != 0  # (a Python 0 too: `x.shape[0] - x.size(2)` of one Dim)
    if nonzero is not True:
        empty = out.numel() == 0
        cond = empty if nonzero is False else nonzero if empty is False else empty | nonzero
        if type(cond) in SYM_CLASSES and (
                cond.env.decide(cond.expr) is True):  # (`t % max(u, 1)` of a size read
            return out  # from data: proven, no hint asked of the unbacked `u`)
        if type(cond) in SYM_CLASSES and cond.expr.free_symbols <= cond.env.hints.keys() \
                and not cond.env.hint(cond.expr):
            check(cond, name, "ZeroDivisionError")  # (the example raises, as eager does)
        kernel_check(cond, name, "ZeroDivisionError")
    return out


def _division(name: str) -> Callable[..., TensorMeta]:
    """An integer division's rule: ``binary``'s, then ``_by_a_size``."""
    base = binary(name, REAL_ONLY)

    def division_rule(self: Any, other: Any) -> TensorMeta:
        return _by_a_size(name, base(self, other), other)

    division_rule.__name__ = division_rule.__qualname__ = name
    division_rule.__doc__ = base.__doc__
    return division_rule


# pow_.Tensor is pow.Tensor_Tensor in place, pow_.Scalar is pow.Tensor_Scalar
@rule(aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar, aten.pow.Scalar,
      inplace=(aten.pow_.Tensor, aten.pow_.Scalar))
def power(self: Any, exponent: Any) -> TensorMeta:
    """pow: broadcast and promote; integers to negative integer scalar powers are rejected."""
    dtype = result_type(self, exponent)
    # (a bool tensor to a bool power is its copy or ones: aten's exponent-1 / exponent-0
    # shortcuts run before the kernel that refuses bool)
    check(dtype is not torch.bool or (isinstance(self, TensorMeta) and type(exponent) is bool),
          "pow", "\"pow\" not implemented for 'Bool'")
    if isinstance(self, TensorMeta) and dtype_category(self.dtype) <= INT and \
            type(exponent) is int and dtype_category(dtype) <= INT:
        check(exponent >= 0, "pow", "Integers to negative integer powers are not allowed.")
    return pointwise("pow", dtype, self, exponent)


# the integer divisions refuse bool and complex
rule(aten.remainder.Tensor, aten.remainder.Scalar, aten.remainder.Scalar_Tensor,
     inplace=True)(_division("remainder"))
rule(aten.fmod.Tensor, aten.fmod.Scalar, inplace=True)(_division("fmod"))
# floor_divide_.Tensor is floor_divide.default in place
rule(aten.floor_divide.default, aten.floor_divide.Scalar,
     inplace=(aten.floor_divide_.Tensor, aten.floor_divide_.Scalar))(
    _division("floor_divide"))

BINARY: dict[Any, tuple] = {
    **{op: (NO_COMPLEX, SAME, f"{op_name(op)} not implemented for complex tensors.")
       for op in (aten.maximum.default, aten.minimum.default, aten.fmax.default,
                  aten.fmin.default)},
    # torch.max(a, b) is maximum, and says so
    aten.max.other: (NO_COMPLEX, SAME, "maximum not implemented for complex tensors."),
    aten.min.other: (NO_COMPLEX, SAME, "minimum not implemented for complex tensors."),
    aten.atan2.default: (NO_COMPLEX, TO_FLOAT),
    aten.hypot.default: (FLOAT_ONLY, SAME),
    **dict.fromkeys((
        aten.bitwise_and.Tensor, aten.bitwise_and.Scalar, aten.bitwise_and.Scalar_Tensor,
        aten.bitwise_or.Tensor, aten.bitwise_or.Scalar, aten.bitwise_or.Scalar_Tensor,
        aten.bitwise_xor.Tensor, aten.bitwise_xor.Scalar, aten.bitwise_xor.Scalar_Tensor),
        (INTEGRAL_ONLY, SAME)),
    # shifts refuse bool, unlike and/or/xor
    **dict.fromkeys((
        aten.bitwise_left_shift.Tensor, aten.bitwise_left_shift.Tensor_Scalar,
        aten.bitwise_left_shift.Scalar_Tensor, aten.bitwise_right_shift.Tensor,
        aten.bitwise_right_shift.Tensor_Scalar, aten.bitwise_right_shift.Scalar_Tensor),
        (frozenset({BOOL, FLOAT, COMPLEX}), SAME)),
    aten.copysign.Tensor: (NO_COMPLEX, TO_FLOAT),
    aten.copysign.Scalar: (NO_COMPLEX, TO_FLOAT),
    # comparisons: a bool result
    **dict.fromkeys((aten.eq.Tensor, aten.eq.Scalar, aten.ne.Tensor, aten.ne.Scalar,
                     aten.logical_and.default, aten.logical_or.default,
                     aten.logical_xor.default), (NONE, TO_BOOL)),
    **dict.fromkeys((aten.lt.Tensor, aten.lt.Scalar, aten.le.Tensor, aten.le.Scalar,
                     aten.gt.Tensor, aten.gt.Scalar, aten.ge.Tensor, aten.ge.Scalar),
                    (NO_COMPLEX, TO_BOOL)),
}
for _op, _entry in BINARY.items():
    rule(_op, inplace=inplace_form(_op) is not None)(binary(op_name(_op), *_entry))


@rule(aten.polar.default)
def polar(abs: TensorMeta, angle: TensorMeta) -> TensorMeta:
    """polar: broadcast; abs and angle share one floating dtype, the result is its complex."""
    check(abs.dtype == angle.dtype, "polar", f"Expected object of scalar type {abs.dtype} but "
                                             f"got scalar type {angle.dtype} for second argument")
    check(abs.dtype in TO_COMPLEX, "polar", f"Expected both inputs to be Half, Float or Double "
                                            f"tensors but got {abs.dtype} and {angle.dtype}")
    return pointwise("polar", TO_COMPLEX[abs.dtype], abs, angle)


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


# -- selection and clamping -----------------------------------------------------------


@rule(aten.where.self, aten.where.ScalarOther, aten.where.ScalarSelf, aten.where.Scalar)
def where(condition: TensorMeta, self: Any, other: Any) -> TensorMeta:
    """where: broadcast all three; promote self and other; condition is a bool tensor."""
    check(condition.dtype in (torch.bool, torch.uint8), "where",
          "where expected condition to be a boolean tensor, but got a tensor with dtype "
          f"{condition.dtype}")
    return pointwise("where", result_type(self, other), condition, self, other)


@rule(aten.clamp.default, aten.clamp.Tensor, inplace=True)
def clamp(self: TensorMeta, min: Any = None, max: Any = None) -> TensorMeta:
    """clamp: promote with the bounds; Tensor bounds broadcast."""
    check(min is not None or max is not None, "clamp",
          "torch.clamp: At least one of 'min' or 'max' must not be None")
    dtype = result_type(self, min, max)
    check(not dtype.is_complex, "clamp", "clamp is not supported for complex types")
    reject("clamp", dtype, NO_BOOL)
    return pointwise("clamp", dtype, self, min, max)


@rule(aten.clamp_min.default, aten.clamp_min.Tensor, inplace=True)
def clamp_min(self: TensorMeta, min: Any) -> TensorMeta:
    """clamp_min: clamp with only a lower bound."""
    return clamp(self, min, None)


@rule(aten.clamp_max.default, aten.clamp_max.Tensor, inplace=True)
def clamp_max(self: TensorMeta, max: Any) -> TensorMeta:
    """clamp_max: clamp with only an upper bound."""
    return clamp(self, None, max)




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


@rule(aten.lerp.Scalar, aten.lerp.Tensor, inplace=True)
def lerp(self: TensorMeta, end: TensorMeta, weight: Any) -> TensorMeta:
    """lerp: broadcast; end (and a dimensioned weight) must have self's floating dtype."""
    check(end.dtype == self.dtype, "lerp",
          f"expected dtype {self.dtype} for `end` but got dtype {end.dtype}")
    if isinstance(weight, TensorMeta) and weight.ndim > 0:
        check(weight.dtype == self.dtype, "lerp",
              f"expected dtype {self.dtype} for `weight` but got dtype {weight.dtype}")
    reject("lerp", self.dtype, frozenset({BOOL, INT}))
    return pointwise("lerp", self.dtype, self, end, weight)


@rule(aten.addcmul.default, inplace=True)
def addcmul(self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> TensorMeta:
    """addcmul: self + value * tensor1 * tensor2, all three broadcast and promote."""
    return pointwise("addcmul", result_type(self, tensor1, tensor2), self, tensor1, tensor2)


@rule(aten.addcdiv.default, inplace=True)
def addcdiv(self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> TensorMeta:
    """addcdiv: like addcmul; integer division of tensor1 by tensor2 is rejected."""
    integral = all(dtype_category(t.dtype) <= INT for t in (tensor1, tensor2)
                   if isinstance(t, TensorMeta))
    check(not integral, "addcdiv",
          "Integer division with addcdiv is no longer supported, and in a future release "
          "addcdiv will perform a true division of tensor1 and tensor2. Use "
          "torch.addcdiv(input, tensor1, torch.true_divide(tensor1, tensor2)) instead.")
    return pointwise("addcdiv", result_type(self, tensor1, tensor2), self, tensor1, tensor2)


# -- writing into self ------------------------------------------------------------------


@rule(aten.copy_.default, aten.copy_.Tensor, aten.copy_.int, aten.copy_.float)
def copy_(self: TensorMeta, src: Any, non_blocking: bool = False) -> TensorMeta:
    """copy_: src (a tensor or a number: ``t.copy_(2.0)``) broadcasts to self's shape; any
    dtype converts.  Sizes equal at the example are the op's requirement (eager raises
    where they differ, but for a src size of 1, which torch.export's guard refuses too)."""
    with requiring():
        shape = broadcast_shapes(self.shape, shape_of(src), op="copy_")
    same_shape("copy_", self, shape)
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
