"""Samples for special functions (torch.special.* and their pointwise relatives)."""

from __future__ import annotations

import torch

from safetrace.rules.registry import inplace_form
from safetrace.rules.special import SPECIAL_UNARY
from tests.rules.harness import Sample, T
from tests.rules.samples_elementwise import PAIRS, SCALARS, UNARY_INPUTS, dtype_category_of

aten = torch.ops.aten
f16, f64, i32, i64, u8, b, c64 = (torch.float16, torch.float64, torch.int32, torch.int64,
                                  torch.uint8, torch.bool, torch.complex64)
_BY_CATEGORY = {0: b, 1: i64, 2: torch.float32, 3: c64}

SAMPLES: list[Sample] = []
ERROR_SAMPLES: list[Sample] = []

# float16 has no CPU kernel for some of these; meta answers for every dtype
for op, (kind, rejected) in SPECIAL_UNARY.items():
    for t in UNARY_INPUTS:
        if dtype_category_of(t) not in rejected:
            SAMPLES.append(Sample(op, (t,)))
    for cat in rejected:
        ERROR_SAMPLES.append(Sample(op, (T(3, dtype=_BY_CATEGORY[cat]),), device="cpu"))
    inplace = inplace_form(op)
    if inplace is not None:
        SAMPLES.append(Sample(inplace, (T(2, 3),)))
        if kind == "float":
            ERROR_SAMPLES.append(Sample(inplace, (T(3, dtype=i64),), device="cpu"))

SAMPLES += [
    Sample(aten.special_logit.default, (T(2, 3),), {"eps": 0.1}),
    Sample(aten.special_round.default, (T(2, 3),), {"decimals": 2}),
    *[Sample(aten.angle.default, (t,)) for t in UNARY_INPUTS],
    Sample(aten.polygamma.default, (1, T(2, 3))),
    Sample(aten.polygamma.default, (0, T(4, dtype=i64))),
    Sample(aten.polygamma.default, (2, T(3, dtype=b))),
    Sample(aten.special_polygamma.default, (1, T(0, 3, dtype=f64))),
    Sample(aten.polygamma_.default, (T(2, 3), 1)),
    Sample(aten.mvlgamma.default, (T(2, 3), 1)),
    Sample(aten.mvlgamma.default, (T(4, dtype=i64), 3)),
    Sample(aten.mvlgamma_.default, (T(4, dtype=f64), 2)),
    Sample(aten.special_multigammaln.default, (T(2, 0, dtype=f16), 2)),
    Sample(aten.special_multigammaln.default, (T(3, dtype=i32), 1)),
]
ERROR_SAMPLES += [
    Sample(aten.polygamma.default, (-1, T(3)), device="cpu"),
    Sample(aten.polygamma.default, (1, T(3, dtype=c64)), device="cpu"),
    Sample(aten.polygamma_.default, (T(3, dtype=i64), 1), device="cpu"),
    Sample(aten.mvlgamma.default, (T(3, dtype=b), 1), device="cpu"),
    Sample(aten.mvlgamma.default, (T(3), 0), device="cpu"),
    Sample(aten.special_multigammaln.default, (T(3, dtype=c64), 1), device="cpu"),
]


# -- binary --------------------------------------------------------------------------------


def _binary(name, tensor_ovl, scalar_ovls=(), rejected=(), inplace=()):
    packet = getattr(aten, name)
    for a, c in PAIRS:
        if isinstance(c, T) and max(dtype_category_of(a), dtype_category_of(c)) not in rejected:
            SAMPLES.append(Sample(getattr(packet, tensor_ovl), (a, c)))
    for ovl in scalar_ovls:
        for a, c in SCALARS:
            if max(dtype_category_of(a), dtype_category_of(c)) not in rejected:
                args = (c, a) if ovl in ("Scalar_Self", "self_scalar") or \
                    (name, ovl) == ("float_power", "Scalar") else (a, c)
                SAMPLES.append(Sample(getattr(packet, ovl), args))
    for ovl in inplace:
        fn = getattr(getattr(aten, name + "_"), ovl)
        other = 2 if "Scalar" in ovl else T(3)
        SAMPLES.append(Sample(fn, (T(2, 3), other)))
        ERROR_SAMPLES.append(Sample(fn, (T(3, dtype=i64), other if "Scalar" in ovl
                                         else T(3, dtype=i64)), device="cpu"))
    ERROR_SAMPLES.append(Sample(getattr(packet, tensor_ovl), (T(2, 3), T(4))))
    for cat in rejected:
        t = T(3, dtype=_BY_CATEGORY[cat])
        ERROR_SAMPLES.append(Sample(getattr(packet, tensor_ovl), (t, t), device="cpu"))


_binary("xlogy", "Tensor", ("Scalar_Other", "Scalar_Self"), rejected=(3,),
        inplace=("Tensor", "Scalar_Other"))
for _name in ("special_xlogy", "special_xlog1py", "special_zeta"):
    _binary(_name, "default", ("other_scalar", "self_scalar"), rejected=(3,))
_binary("logaddexp", "default", rejected=(0, 1))
_binary("logaddexp2", "default", rejected=(0, 1, 3))
_binary("nextafter", "default", rejected=(0, 1, 3), inplace=("default",))
_binary("ldexp", "Tensor", inplace=("default",))
_binary("true_divide", "Tensor", ("Scalar",), inplace=("Tensor", "Scalar"))
_binary("float_power", "Tensor_Tensor", ("Tensor_Scalar", "Scalar"))

SAMPLES += [
    Sample(aten.heaviside.default, (T(2, 3), T(3))),
    Sample(aten.heaviside.default, (T(0, 1, dtype=i64), T(4, dtype=i64))),
    Sample(aten.heaviside.default, (T(3, dtype=b), T(dtype=b))),
    Sample(aten.heaviside_.default, (T(2, 3, dtype=f64), T(1, 3, dtype=f64))),
    Sample(aten.float_power_.Tensor, (T(2, 3, dtype=f64), T(3))),
    Sample(aten.float_power_.Scalar, (T(2, dtype=torch.complex128), 2)),
    Sample(aten.frexp.Tensor, (T(2, 3),)),
    Sample(aten.frexp.Tensor, (T(0, dtype=f16),)),
    Sample(aten.frexp.Tensor, (T(dtype=f64),)),
    Sample(aten.isclose.default, (T(2, 3), T(3))),
    Sample(aten.isclose.default, (T(4, 1, dtype=i64), T(3, dtype=i64), 0.1, 0.2, True)),
    Sample(aten.isclose.default, (T(2, dtype=c64), T(2, dtype=c64))),
    Sample(aten.isin.Tensor_Tensor, (T(2, 3), T(5))),
    Sample(aten.isin.Tensor_Tensor, (T(4, dtype=i32), T(2, 2, dtype=f64)), {"invert": True}),
    Sample(aten.isin.Tensor_Scalar, (T(2, 3, dtype=i64), 2.5)),
    Sample(aten.isin.Scalar_Tensor, (2, T(3))),
]
ERROR_SAMPLES += [
    Sample(aten.heaviside.default, (T(3), T(3, dtype=f64)), device="cpu"),
    Sample(aten.heaviside.default, (T(3, dtype=c64), T(3, dtype=c64)), device="cpu"),
    Sample(aten.heaviside.default, (T(2, 3), T(4))),
    Sample(aten.heaviside_.default, (T(3), T(2, 3)), device="cpu"),
    Sample(aten.float_power_.Tensor, (T(3), T(3)), device="cpu"),
    Sample(aten.frexp.Tensor, (T(3, dtype=i32),), device="cpu"),
    Sample(aten.isclose.default, (T(3), T(3, dtype=f64)), device="cpu"),
    Sample(aten.isclose.default, (T(3), T(3), -1.0), device="cpu"),
    Sample(aten.isclose.default, (T(2, 3), T(4)), device="cpu"),
    Sample(aten.isin.Tensor_Tensor, (T(3, dtype=b), T(2, dtype=b)), device="cpu"),
    Sample(aten.isin.Tensor_Tensor, (T(3, dtype=c64), T(2)), device="cpu"),
]

# igamma / gcd / orthogonal polynomials / isreal / special softmax spellings
for _name in ("igamma", "igammac", "special_gammainc", "special_gammaincc"):
    _binary(_name, "default", rejected=(0, 1, 3),
            inplace=("default",) if _name in ("igamma", "igammac") else ())
for _name in ("gcd", "lcm"):
    SAMPLES += [Sample(getattr(aten, _name).default, (T(2, 3, dtype=i32), T(3, dtype=i64))),
                Sample(getattr(aten, _name).default, (T(4, 1, dtype=u8), T(3, dtype=u8))),
                Sample(getattr(aten, _name + "_").default, (T(2, 3, dtype=i64), T(3, dtype=i32)))]
    ERROR_SAMPLES += [Sample(getattr(aten, _name).default, (T(3), T(3)), device="cpu"),
                      Sample(getattr(aten, _name).default, (T(3, dtype=b), T(3, dtype=b)),
                             device="cpu"),
                      Sample(getattr(aten, _name).default, (T(2, 3, dtype=i64), T(4, dtype=i64))),
                      Sample(getattr(aten, _name + "_").default,
                             (T(3, dtype=i32), T(2, 3, dtype=i32)), device="cpu")]
for _name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
              "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
              "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
              "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
              "laguerre_polynomial_l", "legendre_polynomial_p"):
    _p = getattr(aten, "special_" + _name)
    SAMPLES += [Sample(_p.default, (T(2, 3), T(3, dtype=i64))),
                Sample(_p.default, (T(4, 1, dtype=i32), T(3, dtype=i32))),
                Sample(_p.default, (T(3, dtype=f64), T(dtype=torch.float32))),
                Sample(_p.x_scalar, (2.5, T(2, 3, dtype=i64))),
                Sample(_p.n_scalar, (T(2, 3, dtype=b), 3))]
    ERROR_SAMPLES += [Sample(_p.default, (T(3, dtype=c64), T(3, dtype=c64)), device="cpu"),
                      Sample(_p.default, (T(2, 3), T(4)))]
SAMPLES += [
    Sample(aten.isreal.default, (T(2, 3),)),
    Sample(aten.isreal.default, (T(3, dtype=c64),)),
    Sample(aten.isreal.default, (T(dtype=b),)),
    Sample(aten.special_softmax.default, (T(2, 3), 1)),
    Sample(aten.special_softmax.default, (T(2, 3), 0, f64)),
    Sample(aten.special_log_softmax.default, (T(2, 3, dtype=f16), -1)),
    Sample(aten.special_log_softmax.default, (T(2, 3), 0), {"dtype": f64}),
    Sample(aten.special_logsumexp.default, (T(2, 3, dtype=i32), [0])),
    Sample(aten.special_logsumexp.default, (T(2, 3, 4), [0, 2], True)),
]
ERROR_SAMPLES += [
    Sample(aten.special_softmax.default, (T(2, 3, dtype=i32), 0), device="cpu"),
    Sample(aten.special_softmax.default, (T(2, 3), 2), device="cpu"),
    Sample(aten.special_logsumexp.default, (T(2, 3), [3]), device="cpu"),
]
