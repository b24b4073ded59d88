"""Samples for joins: cat, stack, hstack/vstack/dstack, meshgrid."""

import torch

from tests.rules.harness import Sample, T

aten = torch.ops.aten
S = Sample
i64, i32, f16, f64 = torch.int64, torch.int32, torch.float16, torch.float64

SAMPLES = [
    S(aten.cat.default, ([T(3), T(4), T(5)],)),
    S(aten.cat.default, ([T(2, 3), T(2, 4)], 1)),
    S(aten.cat.default, ([T(2, 3), T(2, 4)], -1)),
    S(aten.cat.default, ([T(2, 3), T(5, 3), T(0, 3)],)),
    S(aten.cat.default, ([T(2, 3)],)),
    S(aten.cat.default, ([T(0), T(2, 3)], 1)),
    S(aten.cat.default, ([T(2, 3), T(0)], -1)),
    S(aten.cat.default, ([T(0), T(0)],)),
    S(aten.cat.default, ([T(0), T(3), T(0)], -1)),
    S(aten.cat.default, ([T(0), T(0)], 5)),
    S(aten.cat.default, ([T(0, dtype=f64), T(2, 3, dtype=i32)], 1)),
    S(aten.cat.default, ([T(2, dtype=i64), T(3, dtype=torch.bool)],)),
    S(aten.cat.default, ([T(2, dtype=f16), T(3, dtype=i64)],)),
    S(aten.cat.default, ([T(1, 2, 3), T(1, 2, 1)], 2)),
    S(aten.concat.default, ([T(2, 3), T(2, 3)], 0)),
    S(aten.concatenate.default, ([T(2, 3), T(2, 1)], 1)),
    S(aten.stack.default, ([T(2, 3), T(2, 3)],)),
    S(aten.stack.default, ([T(2, 3), T(2, 3), T(2, 3)], -1)),
    S(aten.stack.default, ([T(2, 3), T(2, 3)], 1)),
    S(aten.stack.default, ([T(), T()],)),
    S(aten.stack.default, ([T(0)],)),
    S(aten.stack.default, ([T(2, dtype=i64), T(2, dtype=f16)],)),
    S(aten.hstack.default, ([T(), T(2)],)),
    S(aten.hstack.default, ([T(2, 3), T(2, 1)],)),
    S(aten.hstack.default, ([T(3, dtype=i32), T(2, dtype=f64)],)),
    S(aten.vstack.default, ([T(3), T(2, 3)],)),
    S(aten.vstack.default, ([T(), T()],)),
    S(aten.vstack.default, ([T(2, 3, 4), T(1, 3, 4)],)),
    S(aten.dstack.default, ([T(3), T(1, 3, 2)],)),
    S(aten.dstack.default, ([T(), T()],)),
    S(aten.dstack.default, ([T(2, 3), T(2, 3, 4)],)),
    S(aten.meshgrid.default, ([T(2), T(), T(3)],)),
    S(aten.meshgrid.default, ([T(4)],)),
    S(aten.meshgrid.indexing, ([T(2), T(3), T(4)],), {"indexing": "xy"}),
    S(aten.meshgrid.indexing, ([T(2, dtype=i64), T(0, dtype=i64)],), {"indexing": "ij"}),
    S(aten.meshgrid.indexing, ([T(5)],), {"indexing": "xy"}),
]

ERROR_SAMPLES = [
    S(aten.cat.default, ([],)),
    S(aten.cat.default, ([T(), T()],), device="cpu"),
    S(aten.cat.default, ([T(2, 3), T(3, 3)], 1)),
    S(aten.cat.default, ([T(0, 3), T(2, 3)], 1)),
    S(aten.cat.default, ([T(2, 3), T(2, 3, 1)],)),
    S(aten.cat.default, ([T(2, 3), T(2, 3)], 2)),
    S(aten.cat.default, ([T(2, 3), T(2, 3)], -3)),
    S(aten.stack.default, ([],)),
    S(aten.stack.default, ([T(2), T(3)],)),
    S(aten.stack.default, ([T(2), T(2, 1)],)),
    S(aten.stack.default, ([T(2, 3), T(2, 3)], 3)),
    S(aten.hstack.default, ([],)),
    S(aten.hstack.default, ([T(2, 3), T(3, 3)],)),
    S(aten.vstack.default, ([T(2), T(3)],)),
    S(aten.dstack.default, ([T(2, 3), T(3, 3)],)),
    S(aten.meshgrid.default, ([],)),
    S(aten.meshgrid.default, ([T(2), T(3, 2)],), device="cpu"),
    S(aten.meshgrid.default, ([T(2), T(3, dtype=i64)],)),
    S(aten.meshgrid.indexing, ([T(2), T(3)],), {"indexing": "ab"}),
]

SAMPLES += [
    S(aten.cartesian_prod.default, ([T(3), T(4)],)),
    S(aten.cartesian_prod.default, ([T(3, dtype=i64)],)),
    S(aten.cartesian_prod.default, ([T(3), T(4), T(2)],)),
    S(aten.cartesian_prod.default, ([T(3), T(0)],)),
]
ERROR_SAMPLES += [
    S(aten.cartesian_prod.default, ([T(3), T(4, dtype=i64)],)),
    S(aten.cartesian_prod.default, ([T(3, 1), T(4)],)),
    S(aten.cartesian_prod.default, ([T(), T(4)],)),
    S(aten.cartesian_prod.default, ([],)),
]

SAMPLES += [
    S(aten.block_diag.default, ([T(2, 3), T(4, 1)],)),
    S(aten.block_diag.default, ([T(), T(3, dtype=f64), T(2, 2, dtype=torch.int32)],)),
    S(aten.block_diag.default, ([T(dtype=f64), T(3, 2)],), device="cpu"),  # meta: float64
    S(aten.block_diag.default, ([T(0, 3), T(2, 0)],)),
    S(aten.block_diag.default, ([T(5, dtype=i64)],)),
    S(aten.block_diag.default, ([],)),
]
ERROR_SAMPLES += [
    S(aten.block_diag.default, ([T(2, 2), T(2, 2, 2)],)),
]
