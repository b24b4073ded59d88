"""Special functions: the ``torch.special.*`` ops that reach their own ATen op (including
the orthogonal polynomials and the special_softmax/log_softmax/logsumexp spellings), and
the pointwise ops of the same kind outside that namespace (sinc, polygamma, mvlgamma, xlogy,
igamma, gcd, angle, heaviside, logaddexp, ...).

They are built by pointwise.py's factories: most compute in floating point (integer and bool
inputs give the default float dtype) and reject complex inputs.  Dtype rejections are by
category only, as in elementwise.py (CPU's missing float16 kernels are not modelled).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.activations import log_softmax, softmax
from safetrace.rules.common import check, dtype_category, float_result, to_real
from safetrace.rules.pointwise import (
    BOOL,
    COMPLEX,
    FLOAT,
    FLOAT_ONLY,
    INT,
    NO_COMPLEX,
    NONE,
    REAL_ONLY,
    SAME,
    TO_FLOAT,
    binary,
    castable,
    pointwise,
    reject,
    same_shape,
    unary,
)
from safetrace.rules.reductions import logsumexp
from safetrace.rules.registry import inplace_form, op_name, rule

aten = torch.ops.aten

# op: (dtype kind, rejected input categories), as elementwise.UNARY.
# special_bessel_j0 deliberately has no rule (the example of a rule-less op in the tests).
SPECIAL_UNARY: dict[Any, tuple[str, frozenset]] = {
    **dict.fromkeys((
        aten.special_expit.default, aten.special_sinc.default, aten.special_log1p.default,
        aten.special_expm1.default, aten.special_exp2.default, aten.sinc.default),
        (TO_FLOAT, NONE)),
    **dict.fromkeys((
        aten.special_logit.default, aten.special_erfcx.default, aten.special_ndtr.default,
        aten.special_ndtri.default, aten.special_log_ndtr.default, aten.special_i0.default,
        aten.special_i0e.default, aten.special_i1.default, aten.special_i1e.default,
        aten.special_entr.default, aten.special_gammaln.default,
        aten.special_digamma.default, aten.special_psi.default, aten.special_erf.default,
        aten.special_erfc.default, aten.special_erfinv.default,
        aten.special_bessel_j1.default, aten.special_bessel_y0.default,
        aten.special_bessel_y1.default, aten.special_modified_bessel_i0.default,
        aten.special_modified_bessel_i1.default, aten.special_modified_bessel_k0.default,
        aten.special_modified_bessel_k1.default,
        aten.special_scaled_modified_bessel_k0.default,
        aten.special_scaled_modified_bessel_k1.default,
        aten.special_spherical_bessel_j0.default, aten.special_airy_ai.default),
        (TO_FLOAT, NO_COMPLEX)),
    aten.special_round.default: (SAME, FLOAT_ONLY),  # always rounds through round.decimals
    aten.fix.default: (SAME, REAL_ONLY),  # trunc
}
for _op, _entry in SPECIAL_UNARY.items():
    rule(_op, inplace=inplace_form(_op) is not None)(unary(op_name(_op), *_entry))


@rule(aten.angle.default)
def angle(self: TensorMeta) -> TensorMeta:
    """angle: complex inputs give their real dtype, others the floating dtype."""
    return self.like(dtype=to_real(float_result(self.dtype)))


def _polygamma(op: str) -> Any:
    def polygamma(n: int, self: TensorMeta) -> TensorMeta:
        check(n >= 0, op, "polygamma(n, x) does not support negative n.")
        reject(op, self.dtype, NO_COMPLEX)
        return self.like(dtype=float_result(self.dtype))

    polygamma.__name__ = polygamma.__qualname__ = op
    polygamma.__doc__ = f"{op}(n, x): x's shape, floating dtype; n >= 0."
    return polygamma


rule(aten.polygamma.default)(_polygamma("polygamma"))
rule(aten.special_polygamma.default)(_polygamma("special_polygamma"))


@rule(aten.polygamma_.default)
def polygamma_inplace(self: TensorMeta, n: int) -> TensorMeta:
    """polygamma_: x.polygamma_(n) writes into x, which must hold a floating result."""
    castable("polygamma_", _polygamma("polygamma_")(n, self).dtype, self.dtype)
    return self.like()


def _mvlgamma(op: str) -> Any:
    def mvlgamma(self: TensorMeta, p: int) -> TensorMeta:
        check(self.dtype is not torch.bool, op, "The input tensor may not be a boolean tensor.")
        check(p >= 1, op, "p has to be greater than or equal to 1")
        reject(op, self.dtype, NO_COMPLEX)
        return self.like(dtype=float_result(self.dtype))

    mvlgamma.__name__ = mvlgamma.__qualname__ = op
    mvlgamma.__doc__ = f"{op}: same shape, floating dtype; p >= 1, no bool input."
    return mvlgamma


rule(aten.mvlgamma.default, inplace=True)(_mvlgamma("mvlgamma"))
rule(aten.special_multigammaln.default)(_mvlgamma("special_multigammaln"))


# -- binary -------------------------------------------------------------------------------


# computed in floating point: int and bool operands give the default float dtype
rule(aten.xlogy.Tensor, aten.xlogy.Scalar_Other, aten.xlogy.Scalar_Self, inplace=True)(
    binary("xlogy", NO_COMPLEX, TO_FLOAT))
for _op in (aten.special_xlogy, aten.special_xlog1py, aten.special_zeta):
    rule(_op.default, _op.other_scalar, _op.self_scalar)(
        binary(op_name(_op.default).removeprefix("special_"), NO_COMPLEX, TO_FLOAT))
rule(aten.logaddexp.default)(binary("logaddexp", frozenset({BOOL, INT}), TO_FLOAT))
rule(aten.logaddexp2.default)(binary("logaddexp2", frozenset({BOOL, INT, COMPLEX}), TO_FLOAT))
rule(aten.nextafter.default, inplace=True)(
    binary("nextafter", frozenset({BOOL, INT, COMPLEX}), TO_FLOAT))
# ldexp_.default is ldexp.Tensor in place
rule(aten.ldexp.Tensor, inplace=(aten.ldexp_.default,))(binary("ldexp", NONE, TO_FLOAT))
rule(aten.true_divide.Tensor, aten.true_divide.Scalar, inplace=True)(
    binary("true_divide", NONE, TO_FLOAT))


@rule(aten.heaviside.default, inplace=True)
def heaviside(self: TensorMeta, values: TensorMeta) -> TensorMeta:
    """heaviside: broadcast; both tensors of one real dtype."""
    check(not (self.dtype.is_complex or values.dtype.is_complex), "heaviside",
          "heaviside is not yet implemented for complex tensors.")
    check(self.dtype == values.dtype, "heaviside",
          "heaviside is not yet implemented for tensors with different dtypes.")
    return pointwise("heaviside", self.dtype, self, values)


# float_power_ checks more than a derived in-place rule would (below)
@rule(aten.float_power.Tensor_Tensor, aten.float_power.Tensor_Scalar, aten.float_power.Scalar)
def float_power(self: Any, exponent: Any) -> TensorMeta:
    """float_power: computed in float64 (complex128 when either operand is complex)."""
    cat = max(dtype_category(x.dtype) if isinstance(x, TensorMeta) else
              (COMPLEX if isinstance(x, complex) else INT) for x in (self, exponent))
    return pointwise("float_power", torch.complex128 if cat == COMPLEX else torch.float64,
                     self, exponent)



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
for _op, _name in ((aten.igamma.default, "igamma"), (aten.igammac.default, "igammac"),
                   (aten.special_gammainc.default, "igamma"),
                   (aten.special_gammaincc.default, "igammac")):
    _fn = binary(_name, FLOAT_ONLY)
    _fn.__name__ = _fn.__qualname__ = op_name(_op)  # torch's messages say igamma
    rule(_op, inplace=inplace_form(_op) is not None)(_fn)
for _op in (aten.gcd.default, aten.lcm.default):
    rule(_op, inplace=True)(binary(op_name(_op), frozenset({BOOL, FLOAT, COMPLEX})))

POLYNOMIALS = (aten.special_chebyshev_polynomial_t, aten.special_chebyshev_polynomial_u,
               aten.special_chebyshev_polynomial_v, aten.special_chebyshev_polynomial_w,
               aten.special_shifted_chebyshev_polynomial_t,
               aten.special_shifted_chebyshev_polynomial_u,
               aten.special_shifted_chebyshev_polynomial_v,
               aten.special_shifted_chebyshev_polynomial_w, aten.special_hermite_polynomial_h,
               aten.special_hermite_polynomial_he, aten.special_laguerre_polynomial_l,
               aten.special_legendre_polynomial_p)
for _op in POLYNOMIALS:
    rule(_op.default, _op.x_scalar, _op.n_scalar)(
        binary(op_name(_op.default).removeprefix("special_"), NO_COMPLEX, TO_FLOAT))


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
