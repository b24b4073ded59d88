"""Special functions: the ``torch.special.*`` ops that reach their own ATen op (including
the orthogonal polynomials and the special_softmax/log_softmax/logsumexp spellings), and
the pointwise ops of the same kind outside that namespace (sinc, polygamma, mvlgamma, xlogy,
igamma, gcd, angle, heaviside, logaddexp, ...).

They reuse elementwise.py's machinery: most compute in floating point (integer and bool
inputs give the default float dtype) and reject complex inputs.  Dtype rejections are by
category only, as in elementwise.py (CPU's missing float16 kernels are not modelled).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import check, dtype_category, float_result, result_type, to_real
from safetrace.rules.elementwise import (
    BOOL,
    COMPLEX,
    FLOAT,
    FLOAT_ONLY,
    INT,
    NO_COMPLEX,
    REAL_ONLY,
    SAME,
    TO_FLOAT,
    castable,
    inplace_of,
    log_softmax,
    pointwise,
    promoting_binary,
    reject,
    register as _register_elementwise,
    same_shape,
    softmax,
    unary,
)
from safetrace.rules.reductions import logsumexp
from safetrace.rules.registry import RULES, rule

aten = torch.ops.aten


def _here(fn: Any) -> Any:
    fn.__module__ = __name__
    return fn


def register(name: str, overloads: tuple[str, ...], fn: Any) -> None:
    """elementwise.register, with the rules made (the in-place forms too) listed under
    this module, where they are registered (tools/gen_op_list.py groups by module)."""
    _register_elementwise(name, overloads, fn)
    for packet in (getattr(aten, name), getattr(aten, name + "_", None)):
        for overload in overloads:
            fn_ = RULES.get(getattr(packet, overload, None)) if packet is not None else None
            if fn_ is not None:
                _here(fn_)

NONE = frozenset()

# name: (dtype kind, rejected input categories), as elementwise.UNARY.
# special_bessel_j0 deliberately has no rule (the example of a rule-less op in the tests).
SPECIAL_UNARY: dict[str, tuple[str, frozenset]] = {
    **{name: (TO_FLOAT, NONE) for name in (
        "special_expit", "special_sinc", "special_log1p", "special_expm1", "special_exp2",
        "sinc")},
    **{name: (TO_FLOAT, NO_COMPLEX) for name in (
        "special_logit", "special_erfcx", "special_ndtr", "special_ndtri", "special_log_ndtr",
        "special_i0", "special_i0e", "special_i1", "special_i1e", "special_entr",
        "special_gammaln", "special_digamma", "special_psi", "special_erf", "special_erfc",
        "special_erfinv", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1",
        "special_modified_bessel_i0", "special_modified_bessel_i1",
        "special_modified_bessel_k0", "special_modified_bessel_k1",
        "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
        "special_spherical_bessel_j0", "special_airy_ai")},
    "special_round": (SAME, FLOAT_ONLY),  # always rounds through round.decimals
    "fix": (SAME, REAL_ONLY),  # trunc
}

for _name, (_kind, _rejected) in SPECIAL_UNARY.items():
    register(_name, ("default",), unary(_name, _kind, _rejected))


@rule(aten.angle.default)
def angle(self: TensorMeta) -> TensorMeta:
    """angle: complex inputs give their real dtype, others the floating dtype."""
    return self.like(dtype=to_real(float_result(self.dtype)))


def _polygamma(op: str) -> Any:
    def polygamma_rule(n: int, self: TensorMeta) -> TensorMeta:
        check(n >= 0, op, "polygamma(n, x) does not support negative n.")
        reject(op, self.dtype, NO_COMPLEX)
        return self.like(dtype=float_result(self.dtype))

    polygamma_rule.__doc__ = f"{op}(n, x): x's shape, floating dtype; n >= 0."
    return polygamma_rule


rule(aten.polygamma.default)(_polygamma("polygamma"))
rule(aten.special_polygamma.default)(_polygamma("special_polygamma"))


@rule(aten.polygamma_.default)
def polygamma_inplace(self: TensorMeta, n: int) -> TensorMeta:
    """polygamma_: x.polygamma_(n) writes into x, which must hold a floating result."""
    castable("polygamma_", _polygamma("polygamma_")(n, self).dtype, self.dtype)
    return self.like()


def _mvlgamma(op: str) -> Any:
    def mvlgamma_rule(self: TensorMeta, p: int) -> TensorMeta:
        check(self.dtype is not torch.bool, op, "The input tensor may not be a boolean tensor.")
        check(p >= 1, op, "p has to be greater than or equal to 1")
        reject(op, self.dtype, NO_COMPLEX)
        return self.like(dtype=float_result(self.dtype))

    mvlgamma_rule.__doc__ = f"{op}: same shape, floating dtype; p >= 1, no bool input."
    return mvlgamma_rule


register("mvlgamma", ("default",), _mvlgamma("mvlgamma"))
rule(aten.special_multigammaln.default)(_mvlgamma("special_multigammaln"))


# -- binary -------------------------------------------------------------------------------


def _float_binary(op: str, rejected: frozenset) -> Any:
    def binary_rule(self: Any, other: Any) -> TensorMeta:
        dtype = result_type(self, other)
        reject(op, dtype, rejected)
        return pointwise(op, float_result(dtype), self, other)

    binary_rule.__doc__ = f"{op}: broadcast, promote, computed in floating point."
    return binary_rule


_xlogy = _float_binary("xlogy", NO_COMPLEX)
register("xlogy", ("Tensor", "Scalar_Other", "Scalar_Self"), _xlogy)
for _name in ("special_xlogy", "special_xlog1py", "special_zeta"):
    register(_name, ("default", "other_scalar", "self_scalar"),
             _float_binary(_name.removeprefix("special_"), NO_COMPLEX))
register("logaddexp", ("default",), _float_binary("logaddexp", frozenset({BOOL, INT})))
register("logaddexp2", ("default",), _float_binary("logaddexp2", frozenset({BOOL, INT, COMPLEX})))
register("nextafter", ("default",), _float_binary("nextafter", frozenset({BOOL, INT, COMPLEX})))
register("ldexp", ("Tensor",), _float_binary("ldexp", NONE))
rule(aten.ldexp_.default)(_here(inplace_of(_float_binary("ldexp", NONE), "ldexp_")))
register("true_divide", ("Tensor", "Scalar"), _float_binary("true_divide", NONE))


@rule(aten.heaviside.default)
def heaviside(self: TensorMeta, values: TensorMeta) -> TensorMeta:
    """heaviside: broadcast; both tensors of one real dtype."""
    check(not (self.dtype.is_complex or values.dtype.is_complex), "heaviside",
          "heaviside is not yet implemented for complex tensors.")
    check(self.dtype == values.dtype, "heaviside",
          "heaviside is not yet implemented for tensors with different dtypes.")
    return pointwise("heaviside", self.dtype, self, values)


rule(aten.heaviside_.default)(_here(inplace_of(heaviside, "heaviside_")))


def float_power(self: Any, exponent: Any) -> TensorMeta:
    """float_power: computed in float64 (complex128 when either operand is complex)."""
    cat = max(dtype_category(x.dtype) if isinstance(x, TensorMeta) else
              (COMPLEX if isinstance(x, complex) else INT) for x in (self, exponent))
    return pointwise("float_power", torch.complex128 if cat == COMPLEX else torch.float64,
                     self, exponent)


register("float_power", ("Tensor_Tensor", "Tensor_Scalar", "Scalar"), float_power)


@rule(aten.float_power_.Tensor, aten.float_power_.Scalar)
def float_power_inplace(self: TensorMeta, exponent: Any) -> TensorMeta:
    """float_power_: self must already have the (double) dtype of the result."""
    out = float_power(self, exponent)
    check(out.dtype == self.dtype, "float_power_", f"the base given to float_power_ has dtype "
          f"{self.dtype} but the operation's result requires dtype {out.dtype}")
    same_shape("float_power_", self, out.shape)
    return self.like()


@rule(aten.frexp.Tensor)
def frexp(self: TensorMeta) -> tuple:
    """frexp: (mantissa like self, int32 exponent); floating inputs only."""
    check(self.dtype.is_floating_point, "frexp",
          "torch.frexp() only supports floating-point dtypes")
    return self.like(), self.like(dtype=torch.int32)


# -- comparisons ----------------------------------------------------------------------------


@rule(aten.isclose.default)
def isclose(self: TensorMeta, other: TensorMeta, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> TensorMeta:
    """isclose: broadcast, bool result; both tensors of one dtype, tolerances >= 0."""
    check(self.dtype == other.dtype, "isclose", f"{self.dtype} did not match {other.dtype}")
    check(not (equal_nan and self.dtype.is_complex), "isclose",
          "isclose with equal_nan=True is not supported for complex inputs.")
    check(rtol >= 0, "isclose", f"rtol must be greater than or equal to zero, but got {rtol}")
    check(atol >= 0, "isclose", f"atol must be greater than or equal to zero, but got {atol}")
    return pointwise("isclose", torch.bool, self, other)


def _isin_dtype(dtype: torch.dtype) -> None:
    check(dtype_category(dtype) not in (BOOL, COMPLEX), "isin",
          f"Unsupported input type encountered for isin(): {dtype}")


@rule(aten.isin.Tensor_Tensor)
def isin(elements: TensorMeta, test_elements: TensorMeta, *, assume_unique: bool = False,
         invert: bool = False) -> TensorMeta:
    """isin: a bool of elements' shape."""
    _isin_dtype(elements.dtype)
    _isin_dtype(test_elements.dtype)
    return elements.like(dtype=torch.bool)


@rule(aten.isin.Tensor_Scalar)
def isin_scalar(elements: TensorMeta, test_element: Any, *, assume_unique: bool = False,
                invert: bool = False) -> TensorMeta:
    """isin with one test value: a bool of elements' shape."""
    _isin_dtype(elements.dtype)
    return elements.like(dtype=torch.bool)


@rule(aten.isin.Scalar_Tensor)
def isin_scalar_tensor(element: Any, test_elements: TensorMeta, *, assume_unique: bool = False,
                       invert: bool = False) -> TensorMeta:
    """isin of one value: a 0-d bool."""
    _isin_dtype(test_elements.dtype)
    return test_elements.like(shape=(), dtype=torch.bool)


# igamma computes in the promoted dtype (int inputs are rejected, not made floating)
for _name, _op in (("igamma", "igamma"), ("igammac", "igammac"),
                   ("special_gammainc", "igamma"), ("special_gammaincc", "igammac")):
    register(_name, ("default",), promoting_binary(_op, FLOAT_ONLY))
for _name in ("gcd", "lcm"):
    register(_name, ("default",), promoting_binary(_name, frozenset({BOOL, FLOAT, COMPLEX})))

_POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")
for _name in _POLYNOMIALS:
    register("special_" + _name, ("default", "x_scalar", "n_scalar"),
             _float_binary(_name, NO_COMPLEX))


@rule(aten.isreal.default)
def isreal(self: TensorMeta) -> TensorMeta:
    """isreal: a bool of self's shape."""
    return self.like(dtype=torch.bool)


# -- torch.special spellings of softmax / log_softmax / logsumexp ---------------------------


@rule(aten.special_softmax.default)
def special_softmax(self: TensorMeta, dim: int, dtype: torch.dtype | None = None) -> TensorMeta:
    """softmax."""
    return softmax(self, dim, dtype)


@rule(aten.special_log_softmax.default)
def special_log_softmax(self: TensorMeta, dim: int, *,
                        dtype: torch.dtype | None = None) -> TensorMeta:
    """log_softmax."""
    return log_softmax(self, dim, dtype)


rule(aten.special_logsumexp.default)(logsumexp)
