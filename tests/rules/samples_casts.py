"""Samples for casts and copies: to, _to_copy, type_as, contiguous, clone, detach, view_as_real."""

from __future__ import annotations

import torch

from tests.rules.harness import Sample, T

aten = torch.ops.aten
f16, f64, i32, i64, b, c64 = (torch.float16, torch.float64, torch.int32, torch.int64,
                              torch.bool, torch.complex64)
CL = torch.channels_last

SAMPLES: list[Sample] = [
    Sample(aten.to.dtype, (T(2, 3), f16)),
    Sample(aten.to.dtype, (T(2, 3, dtype=i64), torch.float32)),
    Sample(aten.to.dtype, (T(), b, False, True)),
    Sample(aten.to.dtype, (T(0, 3, dtype=c64), f64)),
    Sample(aten.to.dtype, (T(1, 2, 3, 4), f16, False, False, CL)),
    Sample(aten.to.device, (T(2, 3), "meta", i32), device="cpu"),
    Sample(aten.to.device, (T(2, 3), torch.device("cpu"), f64), device="cpu"),
    Sample(aten.to.other, (T(2, 3), T(1, dtype=i32))),
    Sample(aten.to.other, (T(2, 3, dtype=b), T(dtype=f16), False, True)),
    Sample(aten.to.dtype_layout, (T(2, 3),), {"dtype": i32, "device": "meta"}),
    Sample(aten.to.dtype_layout, (T(2, 3, dtype=i64),)),
    Sample(aten.to.prim_Device, (T(2, 3), "cpu"), device="cpu"),
    Sample(aten.to.prim_Device, (T(2, 3), None, f16)),
    Sample(aten.to.prim_dtype, (T(2, 3), i32)),
    Sample(aten.to.prim_dtype, (T(2, 3),)),
    Sample(aten.to.prim_other, (T(2, 3, dtype=f16),)),
    Sample(aten._to_copy.default, (T(2, 3),), {"dtype": b}),
    Sample(aten._to_copy.default, (T(2, 3, dtype=f16),), {"device": "meta"}),
    Sample(aten._to_copy.default, (T(2, 3, 4, 5),), {"memory_format": CL, "dtype": f64}),
    Sample(aten.type_as.default, (T(2, 3), T(4, dtype=i64))),
    Sample(aten.type_as.default, (T(), T(0, dtype=c64))),
    Sample(aten.contiguous.default, (T(2, 3),)),
    Sample(aten.contiguous.default, (T(2, 3, 4, 5, dtype=f16),), {"memory_format": CL}),
    Sample(aten.contiguous.default, (T(2, 3, 4, 5, 6),),
           {"memory_format": torch.channels_last_3d}),
    Sample(aten.clone.default, (T(2, 0, dtype=i32),)),
    Sample(aten.clone.default, (T(2, 3, 4, 5),), {"memory_format": CL}),
    Sample(aten.clone.default, (T(),), {"memory_format": torch.preserve_format}),
    Sample(aten.detach.default, (T(2, 3, dtype=b),)),
    Sample(aten.detach_.default, (T(2, 3),)),
    Sample(aten.detach_copy.default, (T(3, dtype=f16),)),
    Sample(aten.alias.default, (T(2, 3),)),
    Sample(aten.lift_fresh.default, (T(4, dtype=i64),)),
    Sample(aten.lift_fresh_copy.default, (T(4, dtype=i64),)),
    Sample(aten.resolve_conj.default, (T(2, dtype=c64),)),
    Sample(aten.resolve_neg.default, (T(2, 3),)),
    Sample(aten.conj.default, (T(2, dtype=c64),)),
    Sample(aten.conj_physical.default, (T(2, 3),)),
    Sample(aten.view_as_real.default, (T(2, 3, dtype=c64),)),
    Sample(aten.view_as_real.default, (T(dtype=torch.complex128),)),
    Sample(aten.view_as_real.default, (T(0, dtype=c64),)),
    Sample(aten.real.default, (T(2, 3, dtype=c64),)),
    Sample(aten.real.default, (T(4, dtype=torch.complex128),)),
    Sample(aten.real.default, (T(2, 3),)),
    Sample(aten.imag.default, (T(2, 3, dtype=c64),)),
    Sample(aten.imag.default, (T(0, 5, dtype=torch.complex128),)),
    Sample(aten.view_as_complex.default, (T(3, 2),)),
    Sample(aten.view_as_complex.default, (T(4, 3, 2, dtype=f64),)),
    Sample(aten.view_as_complex.default, (T(2),)),
    Sample(aten._assert_tensor_metadata.default, (T(2, 3), None, None, torch.float32)),
    Sample(aten._assert_tensor_metadata.default, (T(0, dtype=i64), [0], None, i64)),
    Sample(aten._assert_tensor_metadata.default, (T(2, 3),)),
]

ERROR_SAMPLES: list[Sample] = [
    Sample(aten._assert_tensor_metadata.default, (T(2, 3), None, None, f64)),
    Sample(aten._assert_tensor_metadata.default, (T(2, 3), [2, 4])),
    Sample(aten._assert_tensor_metadata.default, (T(2, 3), [2])),
    Sample(aten.contiguous.default, (T(2, 3, 4),), {"memory_format": CL}),
    Sample(aten.clone.default, (T(2, 3, 4, 5),), {"memory_format": torch.channels_last_3d}),
    Sample(aten.to.dtype, (T(3), f16, False, False, CL)),
    Sample(aten._to_copy.default, (T(3),), {"memory_format": CL}),
    Sample(aten.view_as_real.default, (T(2, 3),)),
    Sample(aten.imag.default, (T(2, 3),)),
    Sample(aten.view_as_complex.default, (T(3, 3),)),
    Sample(aten.view_as_complex.default, (T(),)),
    Sample(aten.view_as_complex.default, (T(3, 2, dtype=i64),)),
    Sample(aten.view_as_complex.default, (T(3, 2, dtype=torch.bfloat16),)),
]
