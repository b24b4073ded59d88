"""Samples for pointwise ops: unary, binary broadcasting and promotion, in-place forms."""

from __future__ import annotations

import torch

from safetrace.rules.elementwise import UNARY
from safetrace.rules.registry import inplace_form, op_name
from tests.rules.harness import Sample, T

aten = torch.ops.aten
f16, f64, i32, i64, u8, b, c64 = (torch.float16, torch.float64, torch.int32, torch.int64,
                                  torch.uint8, torch.bool, torch.complex64)
_BY_CATEGORY = {0: b, 1: i64, 2: torch.float32, 3: c64}

SAMPLES: list[Sample] = []
ERROR_SAMPLES: list[Sample] = []

# -- unary: every op of the table on several shapes and dtypes; rejected dtypes on CPU --

_EXTRA = {"threshold": (0.5, -1.0)}
UNARY_INPUTS = [T(2, 3), T(), T(0, 4, dtype=f16), T(5, dtype=i64), T(1, 3, dtype=u8),
                 T(3, dtype=b), T(2, dtype=c64), T(4, 1, dtype=f64)]

for op, (kind, rejected) in UNARY.items():
    name = op_name(op)
    extra = _EXTRA.get(name, ())
    for t in UNARY_INPUTS:
        cat = {b: 0, c64: 3}.get(t.dtype, 2 if t.dtype.is_floating_point else 1)
        if cat in rejected or (t.dtype is b and name in ("neg", "positive", "hardtanh")):
            continue
        if t.dtype is u8 and name in ("hardtanh", "relu6"):  # negative limits on unsigned
            continue
        SAMPLES.append(Sample(op, (t, *extra)))
    for cat in rejected:
        ERROR_SAMPLES.append(Sample(op, (T(3, dtype=_BY_CATEGORY[cat]), *extra), device="cpu"))
    inplace = inplace_form(op)
    if inplace is not None:
        ok = torch.float32 if 2 not in rejected else i64
        SAMPLES.append(Sample(inplace, (T(2, 3, dtype=ok), *extra)))
        SAMPLES.append(Sample(inplace, (T(0, dtype=ok), *extra)))
        if kind == "float":  # an int tensor cannot hold a float result
            ERROR_SAMPLES.append(Sample(inplace, (T(3, dtype=i64), *extra), device="cpu"))

# abs is outside the table: its in-place form has a rule of its own
SAMPLES += [Sample(aten.abs.default, (t,)) for t in UNARY_INPUTS if t.dtype is not b]
ERROR_SAMPLES.append(Sample(aten.abs.default, (T(3, dtype=b),), device="cpu"))

SAMPLES += [
    Sample(aten.gelu.default, (T(2, 3),), {"approximate": "tanh"}),
    Sample(aten.gelu.default, (T(0, 3, dtype=f16),)),
    Sample(aten.gelu_.default, (T(4),)),
    Sample(aten.round.default, (T(2, 3, dtype=f16),)),
    Sample(aten.round.default, (T(3, dtype=i64),)),
    Sample(aten.round.decimals, (T(2, 3),), {"decimals": 2}),
    Sample(aten.round_.default, (T(3),)),
    Sample(aten.round_.decimals, (T(3, dtype=f64),), {"decimals": -1}),
    Sample(aten.abs_.default, (T(2, 3),)),
    Sample(aten.abs_.default, (T(2, dtype=i32),)),
    Sample(aten.hardtanh.default, (T(3, 4), -2.0, 2.0)),
    Sample(aten.leaky_relu.default, (T(3, 4, dtype=f16), 0.2)),
    Sample(aten.elu.default, (T(3), 1.0, 1.0, 1.0)),
    Sample(aten.softplus.default, (T(3), 2, 10)),
    Sample(aten.nan_to_num.default, (T(3, dtype=f16), 0.0, 1.0, -1.0)),
    Sample(aten.logit.default, (T(3), 1e-6)),
    Sample(aten.threshold_.default, (T(3, dtype=i64), 1, 0)),
    Sample(aten.relu_.default, (T(3, dtype=i64),)),
]
ERROR_SAMPLES += [
    Sample(aten.gelu.default, (T(3),), {"approximate": "x"}),
    Sample(aten.round.decimals, (T(3, dtype=i64),), {"decimals": 1}, device="cpu"),
    Sample(aten.abs_.default, (T(3, dtype=c64),), device="cpu"),
    Sample(aten.neg.default, (T(3, dtype=b),)),
    Sample(aten.hardtanh.default, (T(3, dtype=b),)),
    Sample(aten.sigmoid_.default, (T(3, dtype=b),)),
]

# -- binary arithmetic --------------------------------------------------------------------

PAIRS = [
    (T(2, 3), T(2, 3)),
    (T(2, 1, 4), T(3, 1)),          # both sides broadcast
    (T(5, 0), T(1)),                # size-0 dim
    (T(), T(4, 1)),                 # 0-d with dims
    (T(3, dtype=i64), T(3)),        # int + float
    (T(3, dtype=f16), T(dtype=f64)),    # 0-d of the same category does not promote
    (T(3, dtype=i32), T(dtype=f64)),    # 0-d of a higher category does
    (T(2, 3, dtype=u8), T(3, dtype=i32)),
    (T(3, dtype=i64), 2),           # Python scalars passed as Tensor arguments
    (T(3, dtype=f16), 2.5),
    (T(3, dtype=i32), 1.5),
    (T(2, dtype=b), T(2, dtype=b)),
    (T(2, dtype=c64), T(2, dtype=f64)),
]
SCALARS = [(T(2, 3, dtype=i64), 2), (T(2, 3, dtype=i32), 2.5), (T(3, dtype=f16), 3),
            (T(), 1.5), (T(2, dtype=b), True), (T(2, dtype=f64), 1j)]


def dtype_category_of(x):
    if isinstance(x, T):
        return {b: 0, c64: 3}.get(x.dtype, 2 if x.dtype.is_floating_point else 1)
    return {bool: 0, int: 1, float: 2, complex: 3}[type(x)]


def _binary(name, tensor_ovl, scalar_ovl, rejected=(), skip_bool=False, inplace=True,
            numbers=False, to_float=False):
    """Samples for a binary op over the pairs whose promoted category it accepts.

    `numbers`: torch also takes Python numbers for its Tensor arguments (add, mul, ...).
    """
    packet, inplace_packet = getattr(aten, name), getattr(aten, name + "_", None)
    for a, c in PAIRS:
        if not numbers and not isinstance(c, T):
            continue
        cat = max(dtype_category_of(a), dtype_category_of(c))
        if cat in rejected or (skip_bool and 0 in (dtype_category_of(a), dtype_category_of(c))):
            continue
        SAMPLES.append(Sample(getattr(packet, tensor_ovl), (a, c)))
    if scalar_ovl:
        for a, c in SCALARS:
            cat = max(dtype_category_of(a), dtype_category_of(c))
            if cat in rejected or (skip_bool and 0 in (dtype_category_of(a), dtype_category_of(c))):
                continue
            SAMPLES.append(Sample(getattr(packet, scalar_ovl), (a, c)))
    if inplace and inplace_packet is not None:
        ok = T(2, 3, dtype=i64) if 1 not in rejected and not to_float else T(2, 3)
        for ovl in inplace_packet.overloads():
            if ovl not in ("default", "Tensor", "Scalar"):
                continue
            fn = getattr(inplace_packet, ovl)
            if "Scalar" in ovl:
                SAMPLES.append(Sample(fn, (ok, 2)))
            else:
                SAMPLES.append(Sample(fn, (ok, T(3, dtype=ok.dtype))))
                ERROR_SAMPLES.append(Sample(fn, (T(3, dtype=ok.dtype), T(2, 3, dtype=ok.dtype)),
                                            device="cpu"))
    ERROR_SAMPLES.append(Sample(getattr(packet, tensor_ovl), (T(2, 3), T(4))))


_binary("add", "Tensor", "Scalar", numbers=True)
_binary("sub", "Tensor", "Scalar", skip_bool=True, numbers=True)
_binary("rsub", "Tensor", "Scalar", skip_bool=True)
_binary("mul", "Tensor", "Scalar", numbers=True)
_binary("div", "Tensor", "Scalar", numbers=True, to_float=True)
_binary("remainder", "Tensor", "Scalar", rejected=(0, 3))
_binary("fmod", "Tensor", "Scalar", rejected=(0, 3))
_binary("floor_divide", "default", "Scalar", rejected=(0, 3))
_binary("maximum", "default", None, rejected=(3,))
_binary("minimum", "default", None, rejected=(3,))
_binary("fmax", "default", None, rejected=(3,))
_binary("fmin", "default", None, rejected=(3,))
_binary("max", "other", None, rejected=(3,))
_binary("min", "other", None, rejected=(3,))
_binary("atan2", "default", None, rejected=(3,), to_float=True)
_binary("hypot", "default", None, rejected=(0, 1, 3))
_binary("pow", "Tensor_Tensor", "Tensor_Scalar", rejected=(0,))
_binary("eq", "Tensor", "Scalar")
_binary("ne", "Tensor", "Scalar")
for _name in ("lt", "le", "gt", "ge"):
    _binary(_name, "Tensor", "Scalar", rejected=(3,))
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _binary(_name, "Tensor", "Scalar", rejected=(2, 3))
    SAMPLES.append(Sample(getattr(aten, _name).Scalar_Tensor, (3, T(2, 3, dtype=b))))
    SAMPLES.append(Sample(getattr(aten, _name).Scalar_Tensor, (True, T(2, dtype=b))))
    ERROR_SAMPLES.append(Sample(getattr(aten, _name).Tensor, (T(3), T(3, dtype=i64)),
                                device="cpu"))
for _name in ("logical_and", "logical_or", "logical_xor"):
    _binary(_name, "default", None)

SAMPLES += [
    Sample(aten.add.Tensor, (T(3), T(3)), {"alpha": 2}),
    Sample(aten.add.Tensor, (T(3, dtype=i64), T(3)), {"alpha": 0.5}),
    Sample(aten.add.Tensor, (T(3, dtype=b), T(3, dtype=b)), {"alpha": True}),
    Sample(aten.add.Scalar, (T(3, dtype=f16), 2, 3)),
    Sample(aten.sub.Tensor, (T(3, dtype=i32), T(3, dtype=i64)), {"alpha": 2}),
    Sample(aten.rsub.Tensor, (T(3, dtype=i64), T(2, 1, dtype=f16)), {"alpha": 2}),
    Sample(aten.rsub.Scalar, (T(3, dtype=i64), 1.5)),
    Sample(aten.div.Tensor_mode, (T(3, dtype=i64), T(3, dtype=i64)), {"rounding_mode": None}),
    Sample(aten.div.Tensor_mode, (T(2, 3, dtype=i64), T(3, dtype=i32)),
           {"rounding_mode": "floor"}),
    Sample(aten.div.Tensor_mode, (T(2, 1), T(3, dtype=i32)), {"rounding_mode": "trunc"}),
    Sample(aten.div.Scalar_mode, (T(3, dtype=i64), 2), {"rounding_mode": "floor"}),
    Sample(aten.div.Scalar_mode, (T(3, dtype=i64), 2.5), {"rounding_mode": "trunc"}),
    Sample(aten.div_.Tensor_mode, (T(3, 2), T(2, dtype=i64)), {"rounding_mode": "trunc"}),
    Sample(aten.div_.Scalar_mode, (T(3, dtype=f16), 2), {"rounding_mode": None}),
    Sample(aten.pow.Tensor_Scalar, (T(3, dtype=i64), 2)),
    Sample(aten.pow.Tensor_Scalar, (T(3, dtype=i64), 0.5)),
    Sample(aten.pow.Tensor_Scalar, (T(3), -2)),
    Sample(aten.pow.Scalar, (2, T(3, dtype=i64))),
    Sample(aten.pow.Scalar, (2.0, T(2, 3, dtype=i64))),
    Sample(aten.pow.Scalar, (2, T(3, dtype=b))),
    Sample(aten.pow.Scalar, (1j, T(3))),
    Sample(aten.pow_.Tensor, (T(3, 2), T(2, dtype=f64))),
    Sample(aten.pow_.Scalar, (T(3, 2, dtype=i32), 2)),
    Sample(aten.remainder.Scalar_Tensor, (2.5, T(3, dtype=i64)), device="cpu"),
    Sample(aten.remainder.Scalar_Tensor, (2, T(2, 3))),
    Sample(aten.eq.Scalar, (T(3, dtype=b), 2.5)),
    Sample(aten.eq_.Scalar, (T(3, dtype=i64), 2.5)),
    Sample(aten.mul_.Tensor, (T(3, dtype=f16), T(3, dtype=f64))),
    Sample(aten.logical_and_.default, (T(3), T(3, dtype=i64))),
]
ERROR_SAMPLES += [
    Sample(aten.add.Tensor, (T(3, dtype=i64), T(3, dtype=i64)), {"alpha": 1.5}),
    Sample(aten.add.Tensor, (T(3, dtype=i64), T(3, dtype=i64)), {"alpha": True}, device="cpu"),
    Sample(aten.add_.Tensor, (T(3, dtype=i64), T(3))),
    Sample(aten.add_.Scalar, (T(3, dtype=i64), 1.5)),
    Sample(aten.add_.Tensor, (T(3), T(1, 3))),
    Sample(aten.mul_.Tensor, (T(3, dtype=b), T(3, dtype=i64)), device="cpu"),
    Sample(aten.sub.Tensor, (T(3, dtype=b), T(3, dtype=b))),
    Sample(aten.sub.Tensor, (T(3, dtype=b), T(3, dtype=i64)), device="cpu"),
    Sample(aten.sub.Scalar, (T(3, dtype=b), 1), device="cpu"),
    Sample(aten.rsub.Scalar, (T(3, dtype=b), 1), device="cpu"),
    Sample(aten.div.Tensor_mode, (T(3), T(3)), {"rounding_mode": "x"}),
    Sample(aten.div.Tensor_mode, (T(3, dtype=b), T(3, dtype=b)), {"rounding_mode": "floor"}),
    Sample(aten.div_.Tensor, (T(3, dtype=i64), T(3, dtype=i64))),
    Sample(aten.pow.Tensor_Scalar, (T(3, dtype=i64), -1), device="cpu"),
    Sample(aten.pow.Tensor_Tensor, (T(3, dtype=b), T(3, dtype=b)), device="cpu"),
    Sample(aten.remainder.Tensor, (T(3, dtype=c64), T(3)), device="cpu"),
    Sample(aten.floor_divide.default, (T(3, dtype=b), T(3, dtype=b))),
    Sample(aten.maximum.default, (T(3, dtype=c64), T(3)), device="cpu"),
    Sample(aten.lt.Tensor, (T(3, dtype=c64), T(3)), device="cpu"),
    Sample(aten.eq_.Tensor, (T(3), T(2, 1)), device="cpu"),
]

# -- where, clamp, masked_fill, lerp, addcmul/addcdiv ----------------------------------------

SAMPLES += [
    Sample(aten.where.self, (T(2, 1, dtype=b), T(3, dtype=i64), T(1, dtype=f64))),
    Sample(aten.where.self, (T(2, 1, dtype=b), T(3, dtype=f16), T(dtype=f64))),
    Sample(aten.where.self, (T(0, 1, dtype=b), T(1, 4), T(4))),
    Sample(aten.where.self, (T(dtype=b), T(dtype=i32), T(dtype=i64))),
    Sample(aten.where.ScalarOther, (T(3, dtype=b), T(3, dtype=f16), 2.0)),
    Sample(aten.where.ScalarOther, (T(2, 3, dtype=b), T(3, dtype=i32), 2.0)),
    Sample(aten.where.ScalarSelf, (T(2, 3, dtype=b), 1, T(2, 1, dtype=u8))),
    Sample(aten.where.Scalar, (T(3, dtype=b), 1, 2.0)),
    Sample(aten.where.Scalar, (T(3, dtype=b), 1, 2)),
    Sample(aten.where.Scalar, (T(4, 1, dtype=b), True, False)),
    Sample(aten.clamp.default, (T(3, dtype=i64), 0.5)),
    Sample(aten.clamp.default, (T(3, dtype=i64), 1, 2.5)),
    Sample(aten.clamp.default, (T(2, 3, dtype=f16), None, 1)),
    Sample(aten.clamp.default, (T(3, dtype=b), 0)),
    Sample(aten.clamp.Tensor, (T(3, dtype=i64), T(2, 1))),
    Sample(aten.clamp.Tensor, (T(3), None, T(4, 1, 1, dtype=f64))),
    Sample(aten.clamp.Tensor, (T(1, 3), T(2, 1, dtype=f16), T(dtype=f64))),
    Sample(aten.clamp_.default, (T(3, dtype=i64), 0, 1)),
    Sample(aten.clamp_.Tensor, (T(2, 3), T(3), None)),
    Sample(aten.clamp_min.default, (T(3, dtype=i64), 0.5)),
    Sample(aten.clamp_min.Tensor, (T(3, dtype=i64), T(4, 1, dtype=f16))),
    Sample(aten.clamp_max.default, (T(0, 2), 1)),
    Sample(aten.clamp_max.Tensor, (T(2, 3, dtype=i32), T(3, dtype=i64))),
    Sample(aten.clamp_min_.default, (T(3, dtype=i64), 1)),
    Sample(aten.clamp_min_.Tensor, (T(2, 3), T(3, dtype=f64))),
    Sample(aten.clamp_max_.default, (T(3, dtype=f16), 1.5)),
    Sample(aten.clamp_max_.Tensor, (T(2, 3), T(1))),
    Sample(aten.masked_fill.Scalar, (T(3), T(2, 3, dtype=b), 1.0)),
    Sample(aten.masked_fill.Scalar, (T(3, dtype=i64), T(3, dtype=b), 1.5)),
    Sample(aten.masked_fill.Scalar, (T(3, dtype=b), T(3, dtype=b), 2)),
    Sample(aten.masked_fill.Scalar, (T(0, 3, dtype=f16), T(1, dtype=b), 0)),
    Sample(aten.masked_fill.Tensor, (T(3, dtype=i64), T(3, dtype=b), T())),
    Sample(aten.masked_fill.Tensor, (T(2, 1), T(4, dtype=b), T(dtype=f64))),
    Sample(aten.masked_fill_.Scalar, (T(2, 3), T(3, dtype=b), -1e9)),
    Sample(aten.masked_fill_.Tensor, (T(2, 3, dtype=i32), T(2, 1, dtype=b), T(dtype=i64))),
    Sample(aten.lerp.Scalar, (T(3), T(2, 3), 0.5)),
    Sample(aten.lerp.Scalar, (T(3, dtype=f16), T(3, dtype=f16), 1)),
    Sample(aten.lerp.Tensor, (T(3), T(2, 1), T(4, 1, 1))),
    Sample(aten.lerp.Tensor, (T(3), T(2, 1), T(dtype=f64))),
    Sample(aten.lerp_.Scalar, (T(2, 3), T(3), 0.1)),
    Sample(aten.lerp_.Tensor, (T(2, 3), T(3), T(2, 1))),
    Sample(aten.addcmul.default, (T(3, dtype=i64), T(3, dtype=i64), T(3, dtype=i64))),
    Sample(aten.addcmul.default, (T(3, dtype=i64), T(2, 1, dtype=f16), T(3)), {"value": 2}),
    Sample(aten.addcmul_.default, (T(2, 3), T(3), T(2, 1)), {"value": 0.5}),
    Sample(aten.addcdiv.default, (T(3, dtype=i64), T(3, dtype=f16), T(4, 1))),
    Sample(aten.addcdiv.default, (T(3), T(3, dtype=i64), T(3, dtype=f64))),
    Sample(aten.addcdiv_.default, (T(2, 3), T(3), T(2, 1))),
]
ERROR_SAMPLES += [
    Sample(aten.where.self, (T(3), T(3), T(3))),
    Sample(aten.where.self, (T(2, dtype=b), T(3), T(3))),
    Sample(aten.clamp.default, (T(3, dtype=i64),)),
    Sample(aten.clamp.Tensor, (T(3),)),
    Sample(aten.clamp.Tensor, (T(3), T(2))),
    Sample(aten.clamp.default, (T(3, dtype=c64), 0), device="cpu"),
    Sample(aten.clamp_min.default, (T(3, dtype=b), False), device="cpu"),
    Sample(aten.clamp_.default, (T(3, dtype=i64), 0.5)),
    Sample(aten.clamp_.Tensor, (T(3), T(2, 3)), device="cpu"),
    Sample(aten.masked_fill.Scalar, (T(3), T(3, dtype=u8), 1.5)),
    Sample(aten.masked_fill.Scalar, (T(3), T(2, dtype=b), 1.5)),
    Sample(aten.masked_fill.Scalar, (T(3), T(3, dtype=b), 1j), device="cpu"),
    Sample(aten.masked_fill.Tensor, (T(3), T(3, dtype=b), T(1))),
    Sample(aten.masked_fill_.Scalar, (T(3), T(2, 3, dtype=b), 1.0)),
    Sample(aten.lerp.Scalar, (T(3), T(3, dtype=f64), 0.5)),
    Sample(aten.lerp.Scalar, (T(dtype=f64), T(3), 0.5)),
    Sample(aten.lerp.Tensor, (T(3), T(3), T(1, dtype=f64))),
    Sample(aten.lerp.Scalar, (T(3, dtype=i64), T(3, dtype=i64), 0.5), device="cpu"),
    Sample(aten.lerp.Tensor, (T(3), T(2), T(3))),
    Sample(aten.addcdiv.default, (T(3), T(3, dtype=i64), T(3, dtype=i64))),
    Sample(aten.addcmul.default, (T(3), T(2), T(3))),
    Sample(aten.addcmul_.default, (T(3), T(3), T(2, 3))),
]

# -- softmax, dropout, glu, copy_/fill_/zero_ ------------------------------------------------

SAMPLES += [
    Sample(aten.softmax.int, (T(2, 3), -1)),
    Sample(aten.softmax.int, (T(2, 3), 0, f64)),
    Sample(aten.softmax.int, (T(3, dtype=i64), 0, torch.float32)),
    Sample(aten.softmax.int, (T(3, dtype=f16), 0, torch.float32)),
    Sample(aten.softmax.int, (T(), -1)),
    Sample(aten.softmax.int, (T(0, 5), 1)),
    Sample(aten.log_softmax.int, (T(2, 3, dtype=f16), 1)),
    Sample(aten.log_softmax.int, (T(3, dtype=b), 0, f64)),
    Sample(aten._softmax.default, (T(4, 5), -1, False)),
    Sample(aten._softmax.default, (T(4, 5, dtype=f16), 0, False)),
    Sample(aten._log_softmax.default, (T(), 0, False)),
    Sample(aten.dropout.default, (T(2, 3), 0.5, True)),
    Sample(aten.dropout.default, (T(2, 3, dtype=i64), 0.5, False)),
    Sample(aten.dropout.default, (T(0), 0.0, True)),
    Sample(aten.dropout_.default, (T(3), 0.5, True)),
    Sample(aten.alpha_dropout.default, (T(3), 0.5, True)),
    Sample(aten.alpha_dropout_.default, (T(3, 4), 0.2, False)),
    Sample(aten.feature_dropout.default, (T(3, 4, 5), 0.5, True)),
    Sample(aten.feature_dropout.default, (T(3), 0.5, False)),
    Sample(aten.feature_dropout_.default, (T(2, 2), 0.5, True)),
    Sample(aten.feature_alpha_dropout.default, (T(3, 4), 0.5, True)),
    Sample(aten.feature_alpha_dropout_.default, (T(3, 4), 0.5, False)),
    Sample(aten.native_dropout.default, (T(3, 4), 0.5, True)),
    Sample(aten.native_dropout.default, (T(3, 4, dtype=f16), 0.5, None)),
    Sample(aten.native_dropout.default, (T(3, dtype=i64), 0.5, False)),
    Sample(aten.glu.default, (T(3, 4),)),
    Sample(aten.glu.default, (T(6, 3), 0)),
    Sample(aten.glu.default, (T(2, 0, 5), 1)),
    Sample(aten.copy_.default, (T(2, 3), T(3, dtype=i64))),
    Sample(aten.copy_.default, (T(2, 3, dtype=i64), T(2, 1, dtype=c64))),
    Sample(aten.copy_.default, (T(2, 3), T())),
    Sample(aten.copy_.Tensor, (T(2, 3), T(1, 3, dtype=i64))),
    Sample(aten.copy_.Tensor, (T(0, 3), T(3))),
    Sample(aten.copy_.int, (T(2, 3), 4)),
    Sample(aten.copy_.int, (T(0,), 1)),
    Sample(aten.copy_.float, (T(2, 3, dtype=i64), 2.5)),
    Sample(aten.copy_.float, (T(3, 0), -1.0)),
    Sample(aten.fill_.Scalar, (T(3, dtype=i64), 1.5)),
    Sample(aten.fill_.Scalar, (T(0, 2), 1)),
    Sample(aten.fill_.Tensor, (T(3, dtype=i64), T(dtype=f64))),
    Sample(aten.zero_.default, (T(2, 3, dtype=b),)),
    Sample(aten.zero_.default, (T(),)),
]
ERROR_SAMPLES += [
    Sample(aten.softmax.int, (T(3), 1), device="cpu"),
    Sample(aten.softmax.int, (T(3, dtype=i64), 0), device="cpu"),
    Sample(aten._softmax.default, (T(3, dtype=f16), 0, True), device="cpu"),
    Sample(aten._softmax.default, (T(3), 0, True), device="cpu"),
    Sample(aten.dropout.default, (T(3), 1.5, False)),
    Sample(aten.dropout.default, (T(3, dtype=i64), 0.5, True)),
    Sample(aten.alpha_dropout.default, (T(3), -0.5, True)),
    Sample(aten.native_dropout.default, (T(3, dtype=i64), 0.5, True)),
    Sample(aten.feature_dropout.default, (T(3), 0.5, True)),
    Sample(aten.feature_alpha_dropout.default, (T(), 0.5, True)),
    Sample(aten.glu.default, (T(3, 5),)),
    Sample(aten.glu.default, (T(),), device="cpu"),
    Sample(aten.glu.default, (T(4), 1), device="cpu"),
    Sample(aten.glu.default, (T(4, dtype=i64),), device="cpu"),
    Sample(aten.copy_.default, (T(3), T(2, 3))),
    Sample(aten.copy_.default, (T(3), T(2))),
    Sample(aten.copy_.default, (T(3), T(1, 3))),
    Sample(aten.fill_.Tensor, (T(3), T(1))),
    Sample(aten.fill_.Scalar, (T(3), 1j), device="cpu"),
]

SAMPLES += [
    Sample(aten.square.default, (T(2, 3),)),
    Sample(aten.square.default, (T(4, dtype=b),)),
    Sample(aten.square.default, (T(4, dtype=i32),)),
    Sample(aten.square.default, (T(0, dtype=c64),)),
]

# -- shifts, copysign, polar, shrink, prelu ---------------------------------------------------

for _name in ("bitwise_left_shift", "bitwise_right_shift"):
    _p = getattr(aten, _name)
    _ip = getattr(aten, _name + "_")
    SAMPLES += [
        Sample(_p.Tensor, (T(2, 3, dtype=i64), T(3, dtype=i32))),
        Sample(_p.Tensor, (T(2, 1, dtype=i32), T(4, dtype=i32))),
        Sample(_p.Tensor, (T(3, dtype=u8), T(dtype=i64))),
        Sample(_p.Tensor_Scalar, (T(2, 3, dtype=i32), 2)),
        Sample(_p.Scalar_Tensor, (2, T(3, dtype=i32))),
        Sample(_ip.Tensor, (T(2, 3, dtype=i64), T(3, dtype=i32))),
        Sample(_ip.Tensor_Scalar, (T(2, 3, dtype=u8), 1)),
    ]
    ERROR_SAMPLES += [
        Sample(_p.Tensor, (T(3), T(3, dtype=i64)), device="cpu"),
        Sample(_p.Tensor, (T(3, dtype=b), T(3, dtype=b)), device="cpu"),
        Sample(_p.Tensor_Scalar, (T(3, dtype=i64), 1.5), device="cpu"),
        Sample(_p.Tensor, (T(2, 3, dtype=i64), T(4, dtype=i64))),
        Sample(_ip.Tensor, (T(3, dtype=i64), T(2, 3, dtype=i64)), device="cpu"),
    ]

SAMPLES += [
    Sample(aten.copysign.Tensor, (T(2, 3), T(3, dtype=f64))),
    Sample(aten.copysign.Tensor, (T(2, 3, dtype=i64), T(3, dtype=i64))),
    Sample(aten.copysign.Tensor, (T(3, dtype=b), T(1, dtype=b))),
    Sample(aten.copysign.Scalar, (T(2, 3, dtype=f16), -1.0)),
    Sample(aten.copysign.Scalar, (T(2, 3, dtype=i32), -1)),
    Sample(aten.copysign_.Tensor, (T(2, 3), T(3))),
    Sample(aten.copysign_.Scalar, (T(2, 3, dtype=f64), -1)),
    Sample(aten.polar.default, (T(2, 3), T(3)), device="cpu"),
    Sample(aten.polar.default, (T(4, 1, dtype=f64), T(1, 5, dtype=f64)), device="cpu"),
    Sample(aten.softshrink.default, (T(2, 3),)),
    Sample(aten.softshrink.default, (T(0, 3, dtype=f64), 1.0)),
    Sample(aten.hardshrink.default, (T(4, 2, dtype=f16), -1.0)),
    Sample(aten.prelu.default, (T(2, 3, 4), T(3))),
    Sample(aten.prelu.default, (T(2, 3, 4), T(1))),
    Sample(aten.prelu.default, (T(2, 3), T())),
    Sample(aten.prelu.default, (T(5), T(1))),
    Sample(aten.prelu.default, (T(), T(1, dtype=torch.float32))),
    Sample(aten._prelu_kernel.default, (T(2, 3, 4), T(3, 1))),
    Sample(aten._prelu_kernel.default, (T(3), T(2, 3))),
]
ERROR_SAMPLES += [
    Sample(aten.copysign.Tensor, (T(3, dtype=c64), T(3)), device="cpu"),
    Sample(aten.copysign_.Tensor, (T(3, dtype=i64), T(3)), device="cpu"),
    Sample(aten.copysign.Tensor, (T(2), T(3))),
    Sample(aten.polar.default, (T(3), T(3, dtype=f64)), device="cpu"),
    Sample(aten.polar.default, (T(3, dtype=i64), T(3, dtype=i64)), device="cpu"),
    Sample(aten.polar.default, (T(2), T(3)), device="cpu"),
    Sample(aten.softshrink.default, (T(3), -1.0), device="cpu"),
    Sample(aten.softshrink.default, (T(3, dtype=i64),), device="cpu"),
    Sample(aten.prelu.default, (T(2, 3, 4), T(4)), device="cpu"),
    Sample(aten.prelu.default, (T(3), T(3)), device="cpu"),
    Sample(aten.prelu.default, (T(2, 3), T(3, 1)), device="cpu"),
    Sample(aten.prelu.default, (T(2, 3), T(3, dtype=f64)), device="cpu"),
    Sample(aten.prelu.default, (T(2, 3, dtype=i64), T(3, dtype=i64)), device="cpu"),
    Sample(aten._prelu_kernel.default, (T(2, 3, 4), T(2, 1)), device="cpu"),
    Sample(aten._prelu_kernel.default, (T(2, 3), T(3, dtype=f64)), device="cpu"),
]

SAMPLES += [Sample(aten.square_.default, (T(2, 3),)),
            Sample(aten.square_.default, (T(3, dtype=i64),))]
ERROR_SAMPLES += [Sample(aten.square_.default, (T(3, dtype=b),), device="cpu")]
