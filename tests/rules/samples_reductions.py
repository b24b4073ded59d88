"""Samples for reductions, scans and sorting."""

from __future__ import annotations

import math

import torch

from tests.rules.harness import Sample, T

aten = torch.ops.aten
f16, f64, i32, i64, u8, b, c64 = (torch.float16, torch.float64, torch.int32, torch.int64,
                                  torch.uint8, torch.bool, torch.complex64)

SAMPLES: list[Sample] = []
ERROR_SAMPLES: list[Sample] = []

# -- sum, prod, mean -----------------------------------------------------------------------

SAMPLES += [
    Sample(aten.sum.default, (T(2, 3),)),
    Sample(aten.sum.default, (T(2, 3, dtype=i32),)),
    Sample(aten.sum.default, (T(4, dtype=b),)),
    Sample(aten.sum.default, (T(2, dtype=u8),)),
    Sample(aten.sum.default, (T(2, dtype=f16),), {"dtype": f64}),
    Sample(aten.sum.default, (T(3),), {"dtype": i64}),
    Sample(aten.sum.default, (T(0, 3, dtype=c64),)),
    Sample(aten.sum.dim_IntList, (T(2, 3, 4), [1])),
    Sample(aten.sum.dim_IntList, (T(2, 3, 4), [-1, 0], True)),
    Sample(aten.sum.dim_IntList, (T(2, 3, dtype=b), None, True)),
    Sample(aten.sum.dim_IntList, (T(2, 3, dtype=i32), [], True)),
    Sample(aten.sum.dim_IntList, (T(2, 3), [])),
    Sample(aten.sum.dim_IntList, (T(dtype=i32), [0], True)),
    Sample(aten.sum.dim_IntList, (T(0, 3), 0)),
    Sample(aten.sum.dim_IntList, (T(2, 3, dtype=f16), [1]), {"dtype": torch.float32}),
    Sample(aten.nansum.default, (T(2, 3, dtype=i32),)),
    Sample(aten.nansum.default, (T(2, 3), [1], True)),
    Sample(aten.nansum.default, (T(2, 3), [], True), device="cpu"),
    Sample(aten.prod.default, (T(2, dtype=b),)),
    Sample(aten.prod.default, (T(2, 3, dtype=c64),)),
    Sample(aten.prod.default, (T(2, 3),), {"dtype": f64}),
    Sample(aten.prod.dim_int, (T(2, 3, dtype=u8), 1, True)),
    Sample(aten.prod.dim_int, (T(2, 3), -2)),
    Sample(aten.prod.dim_int, (T(), 0)),
    Sample(aten.mean.default, (T(2, 3),)),
    Sample(aten.mean.default, (T(2, 3, dtype=i64),), {"dtype": torch.float32}),
    Sample(aten.mean.default, (T(0, dtype=c64),)),
    Sample(aten.mean.dim, (T(2, 3, 4), [1, 2])),
    Sample(aten.mean.dim, (T(2, 3, 4, dtype=f16), [-1], True)),
    Sample(aten.mean.dim, (T(2, 3), None, True)),
    Sample(aten.mean.dim, (T(2, 3), [])),
    Sample(aten.mean.dim, (T(2, 3, dtype=i32), 0), {"dtype": f64}),
]
ERROR_SAMPLES += [
    Sample(aten.sum.dim_IntList, (T(2, 3), [1, -1])),
    Sample(aten.sum.dim_IntList, (T(), [-1, 0])),
    Sample(aten.sum.dim_IntList, (T(2, 3), [2])),
    Sample(aten.prod.dim_int, (T(2, 3), 3)),
    Sample(aten.mean.default, (T(2, dtype=i64),)),
    Sample(aten.mean.default, (T(2, dtype=b),)),
    Sample(aten.mean.dim, (T(2), [0]), {"dtype": i64}),
]

# -- max, min, argmax, any, all, count_nonzero -------------------------------------------------

SAMPLES += [
    Sample(aten.amax.default, (T(2, 3),)),
    Sample(aten.amax.default, (T(2, 3, 4), [0, 2], True)),
    Sample(aten.amax.default, (T(0, 3), [1])),
    Sample(aten.amax.default, (T(), [0])),
    Sample(aten.amax.default, (T(3, dtype=b),)),
    Sample(aten.amin.default, (T(2, 3, dtype=i32), [], True)),
    Sample(aten.amin.default, (T(2, 3, dtype=f16), -1)),
    Sample(aten.max.default, (T(2, 3, dtype=i64),)),
    Sample(aten.min.default, (T(),)),
    Sample(aten.max.dim, (T(2, 3), 1)),
    Sample(aten.max.dim, (T(2, 3, dtype=f16), 0, True)),
    Sample(aten.max.dim, (T(0, 3), 1)),
    Sample(aten.max.dim, (T(), 0, True)),
    Sample(aten.min.dim, (T(4, 5, dtype=i32), -1)),
    Sample(aten.min.dim, (T(4, 5, dtype=b), -2, True)),
    Sample(aten.argmax.default, (T(2, 3),)),
    Sample(aten.argmax.default, (T(2, 3), None, True)),
    Sample(aten.argmax.default, (T(2, 3, dtype=i32), 1, True)),
    Sample(aten.argmax.default, (T(0, 3), 1)),
    Sample(aten.argmax.default, (T(), 0, True)),
    Sample(aten.argmin.default, (T(4, 2, dtype=f16), -2)),
    Sample(aten.argmin.default, (T(4, 2), None)),
    Sample(aten.aminmax.default, (T(3, 4),), {"dim": 1}),
    Sample(aten.aminmax.default, (T(3, 4, dtype=b),)),
    Sample(aten.aminmax.default, (T(),), {"dim": 0, "keepdim": True}),
    Sample(aten.aminmax.default, (T(0, 4),), {"dim": 1, "keepdim": True}),
    Sample(aten.any.default, (T(3, dtype=u8),)),
    Sample(aten.any.default, (T(2, 3),)),
    Sample(aten.all.default, (T(0, dtype=c64),)),
    Sample(aten.any.dim, (T(2, 3, dtype=i64), 1)),
    Sample(aten.all.dim, (T(3, 2, dtype=u8), 1, True)),
    Sample(aten.any.dims, (T(2, 3, dtype=i64), None, True)),
    Sample(aten.any.dims, (T(2, 3, dtype=i64), [], True)),
    Sample(aten.any.dims, (T(2, 3, 4, dtype=b), [0, -1])),
    Sample(aten.all.dims, (T(), [], True)),
    Sample(aten.all.dims, (T(2, 3), [1], True)),
    Sample(aten.count_nonzero.default, (T(3, 4),)),
    Sample(aten.count_nonzero.default, (T(3, 4, dtype=b), 1)),
    Sample(aten.count_nonzero.default, (T(), -1)),
    Sample(aten.count_nonzero.dim_IntList, (T(3, 4, 5), [0, 2])),
    Sample(aten.count_nonzero.dim_IntList, (T(3, 4), [])),
]
ERROR_SAMPLES += [
    Sample(aten.amax.default, (T(0, 3), [0]), device="cpu"),
    Sample(aten.amax.default, (T(0, 3),)),
    Sample(aten.amax.default, (T(3, dtype=c64),), device="cpu"),
    Sample(aten.amin.default, (T(2, 3), [1, 1])),
    Sample(aten.max.default, (T(0, 3),), device="cpu"),
    Sample(aten.max.default, (T(3, dtype=c64),), device="cpu"),
    Sample(aten.max.dim, (T(0, 3), 0), device="cpu"),
    Sample(aten.max.dim, (T(2, 3), 2)),
    Sample(aten.min.dim, (T(3, dtype=c64), 0), device="cpu"),
    Sample(aten.argmax.default, (T(0, 3),)),
    Sample(aten.argmin.default, (T(0, 3), 0)),
    Sample(aten.argmax.default, (T(3, dtype=c64),), device="cpu"),
    Sample(aten.aminmax.default, (T(0, 4),)),
    Sample(aten.aminmax.default, (T(3, dtype=c64),), device="cpu"),
    Sample(aten.any.dim, (T(2, 3), 2)),
    Sample(aten.count_nonzero.dim_IntList, (T(3, 4), [0, 0])),
]

# -- var, std, norm, logsumexp ----------------------------------------------------------------

SAMPLES += [
    Sample(aten.var.default, (T(3, 4),)),
    Sample(aten.var.default, (T(3, dtype=c64), False)),
    Sample(aten.std.default, (T(3, 4, dtype=f16),)),
    Sample(aten.var.dim, (T(3, 4), [1], True, True)),
    Sample(aten.var.dim, (T(3, 4), None, True, True)),
    Sample(aten.std.dim, (T(3, 4, 5), [0, -1])),
    Sample(aten.std.dim, (T(3, 4), [], False, True)),
    Sample(aten.var.correction, (T(3, 4), [1]), {"correction": 0, "keepdim": True}),
    Sample(aten.var.correction, (T(3, 4, dtype=c64),)),
    Sample(aten.std.correction, (T(3, 4), []), {"keepdim": True}),
    Sample(aten.std.correction, (T(0, 4), 0)),
    Sample(aten.var_mean.default, (T(3, 4, dtype=c64),)),
    Sample(aten.var_mean.dim, (T(3, 4), [1], True, True)),
    Sample(aten.var_mean.correction, (T(3, 4, dtype=c64), [1])),
    Sample(aten.var_mean.correction, (T(2, 3), []), {"keepdim": True}),
    Sample(aten.std_mean.default, (T(3, 4, dtype=f64), False)),
    Sample(aten.std_mean.dim, (T(3, 4, dtype=f16), [0])),
    Sample(aten.std_mean.correction, (T(3, 4), None), {"correction": 2}),
    Sample(aten.norm.Scalar, (T(3, 4),)),
    Sample(aten.norm.Scalar, (T(3, dtype=f16), 1)),
    Sample(aten.norm.Scalar, (T(3, dtype=c64), 3.5)),
    Sample(aten.norm.ScalarOpt_dim, (T(3, 4), 2, [1], True)),
    Sample(aten.norm.ScalarOpt_dim, (T(3, 4), None, [1], True)),
    Sample(aten.norm.ScalarOpt_dim, (T(3, 4), 2, [])),
    Sample(aten.norm.ScalarOpt_dim, (T(3, 4, dtype=c64), 2, 0)),
    Sample(aten.norm.ScalarOpt_dim_dtype, (T(3, 4), 2, [1], False), {"dtype": f64}),
    Sample(aten.norm.ScalarOpt_dtype, (T(3, 4, dtype=f16), 1), {"dtype": torch.float32}),
    Sample(aten.linalg_vector_norm.default, (T(3, 4),)),
    Sample(aten.linalg_vector_norm.default, (T(3, 4), 2, [], True)),
    Sample(aten.linalg_vector_norm.default, (T(3, 4), 1, [-1])),
    Sample(aten.linalg_vector_norm.default, (T(3, dtype=c64),)),
    Sample(aten.linalg_vector_norm.default, (T(3, dtype=c64),), {"dtype": torch.complex128}),
    Sample(aten.linalg_vector_norm.default, (T(3, dtype=f16),), {"dtype": f64}),
    Sample(aten.linalg_vector_norm.default, (T(0, 3), math.inf, [1])),
    Sample(aten.linalg_vector_norm.default, (T(0, 3), 2)),
    Sample(aten.linalg_vector_norm.default, (T(0, 3), 0, [0])),
    Sample(aten.logsumexp.default, (T(3, 4), [1])),
    Sample(aten.logsumexp.default, (T(3, 4, dtype=i64), [1], True)),
    Sample(aten.logsumexp.default, (T(3, 4, dtype=b), 0)),
    Sample(aten.logsumexp.default, (T(), [0])),
    Sample(aten.logsumexp.default, (T(3, 4, 5, dtype=f16), [0, 2])),
]
ERROR_SAMPLES += [
    Sample(aten.var.default, (T(3, dtype=i64),), device="cpu"),
    Sample(aten.std.correction, (T(3, dtype=i64),), device="cpu"),
    Sample(aten.var.dim, (T(3, 4), [2])),
    Sample(aten.var_mean.default, (T(3, dtype=i64),)),
    Sample(aten.norm.Scalar, (T(3, dtype=i64),)),
    Sample(aten.norm.ScalarOpt_dtype, (T(3, 4), 2), {"dtype": i64}),
    Sample(aten.linalg_vector_norm.default, (T(3, dtype=i64),)),
    Sample(aten.linalg_vector_norm.default, (T(3),), {"dtype": f16}),
    Sample(aten.linalg_vector_norm.default, (T(3, dtype=c64),), {"dtype": torch.float32}),
    Sample(aten.linalg_vector_norm.default, (T(3),), {"dtype": c64}),
    Sample(aten.linalg_vector_norm.default, (T(0, 3), math.inf)),
    Sample(aten.linalg_vector_norm.default, (T(0, 3), -1, [0])),
    Sample(aten.logsumexp.default, (T(3, 4), []), device="cpu"),
    Sample(aten.logsumexp.default, (T(3, 4), [2])),
]

# -- scans and sorting -----------------------------------------------------------------------

SAMPLES += [
    Sample(aten.cumsum.default, (T(3, 4), 1)),
    Sample(aten.cumsum.default, (T(3, 4, dtype=b), -1)),
    Sample(aten.cumsum.default, (T(), 0)),
    Sample(aten.cumsum.default, (T(3, dtype=i32), 0), {"dtype": f16}),
    Sample(aten.cumsum.default, (T(3), 0), {"dtype": i64}),
    Sample(aten.cumsum.default, (T(0, 3, dtype=c64), 0)),
    Sample(aten.cumprod.default, (T(3, dtype=i32), 0)),
    Sample(aten.cumprod.default, (T(3, 2, dtype=f16), -2)),
    Sample(aten.cummax.default, (T(3, dtype=i32), 0)),
    Sample(aten.cummax.default, (T(3, 4, dtype=b), 1)),
    Sample(aten.cummin.default, (T(), 0)),
    Sample(aten.cummin.default, (T(0, 4), -1)),
    Sample(aten.sort.default, (T(3, 4),)),
    Sample(aten.sort.default, (T(3, dtype=b),)),
    Sample(aten.sort.default, (T(), 0)),
    Sample(aten.sort.default, (T(3, 4, dtype=i64), 0, True)),
    Sample(aten.sort.stable, (T(3, 4, dtype=f16),), {"stable": True, "dim": 0}),
    Sample(aten.sort.stable, (T(0, 4),), {"stable": None}),
    Sample(aten.argsort.default, (T(3, 4), 0)),
    Sample(aten.argsort.default, (T(5, dtype=i32), -1, True)),
    Sample(aten.argsort.stable, (T(3),), {"stable": True}),
    Sample(aten.topk.default, (T(3, 5), 2)),
    Sample(aten.topk.default, (T(3, 5), 2, 0)),
    Sample(aten.topk.default, (T(3, 5, dtype=i64), 0, -1, False)),
    Sample(aten.topk.default, (T(3, 5), 5)),
    Sample(aten.topk.default, (T(), 1)),
    Sample(aten.topk.default, (T(), 0)),
    Sample(aten.kthvalue.default, (T(3, 5), 2)),
    Sample(aten.kthvalue.default, (T(3, 5, dtype=i64), 3, 0, True)),
    Sample(aten.kthvalue.default, (T(), 1)),
    Sample(aten.median.default, (T(3, 4),)),
    Sample(aten.median.default, (T(0, dtype=i32),)),
    Sample(aten.median.dim, (T(3, 4), 1)),
    Sample(aten.median.dim, (T(0, 3), 1, True)),
    Sample(aten.median.dim, (T(), 0, True)),
    Sample(aten.nanmedian.default, (T(3, dtype=f16),)),
    Sample(aten.nanmedian.dim, (T(3, 4), -2, True)),
    Sample(aten.mode.default, (T(3, 4),)),
    Sample(aten.mode.default, (T(3, dtype=b),)),
    Sample(aten.mode.default, (T(3, 4, dtype=i64), 0, True)),
    Sample(aten.mode.default, (T(), 0)),
]
ERROR_SAMPLES += [
    Sample(aten.cumsum.default, (T(3, 4), 2)),
    Sample(aten.cummax.default, (T(3), 1)),
    Sample(aten.sort.default, (T(3, 4), -3), device="cpu"),
    Sample(aten.argsort.default, (T(3), 1), device="cpu"),
    Sample(aten.topk.default, (T(3), 4)),
    Sample(aten.topk.default, (T(3), -1)),
    Sample(aten.topk.default, (T(), 2)),
    Sample(aten.kthvalue.default, (T(3), 0)),
    Sample(aten.kthvalue.default, (T(3), 4)),
    Sample(aten.kthvalue.default, (T(3, dtype=c64), 1), device="cpu"),
    Sample(aten.median.dim, (T(0, 3), 0), device="cpu"),
    Sample(aten.median.default, (T(3, dtype=c64),), device="cpu"),
    Sample(aten.mode.default, (T(0, 3), 0), device="cpu"),
]

SAMPLES += [
    Sample(aten.histc.default, (T(24),), device="cpu"),
    Sample(aten.histc.default, (T(6, 4),), {"bins": 4, "min": 0, "max": 3}, device="cpu"),
    Sample(aten.histc.default, (T(0, dtype=f64), 7), device="cpu"),
]
ERROR_SAMPLES += [Sample(aten.histc.default, (T(4, dtype=i64),), device="cpu")]

# -- diff -----------------------------------------------------------------------------------
SAMPLES += [
    Sample(aten.diff.default, (T(3, 5),)),
    Sample(aten.diff.default, (T(3, 5), 2, 0)),
    Sample(aten.diff.default, (T(3, 5), 1, -1, T(3, 1), T(3, 2))),
    Sample(aten.diff.default, (T(4, dtype=torch.bool),)),
    Sample(aten.diff.default, (T(3, 5), 7)),
]
ERROR_SAMPLES += [
    Sample(aten.diff.default, (T(),)),
    Sample(aten.diff.default, (T(3, 5), 1, -1, T(3))),
]
