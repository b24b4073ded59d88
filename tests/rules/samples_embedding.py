"""Samples of embedding lookups (embedding.py); embedding_bag runs on CPU (meta differs)."""

import torch

from tests.rules.harness import Sample, T

aten = torch.ops.aten
f64, f16, bf16, i64, i32 = torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32

W = T(10, 3)
IDX = T(8, dtype=i64, high=10)
OFF = T(3, dtype=i64, high=1)  # all zeros: valid (non-decreasing, within the input)

SAMPLES = [
    Sample(aten.embedding.default, (W, T(2, 3, dtype=i64))),
    Sample(aten.embedding.default, (T(10, 3, dtype=f16), T(dtype=i32))),
    Sample(aten.embedding.default, (W, T(0, 4, dtype=i64), 2)),
    Sample(aten.embedding.default, (T(5, 0, dtype=f64), T(7, dtype=i64), -1, True, True)),
]
for mode in (0, 1, 2):
    for last in (False, True):
        SAMPLES.append(Sample(aten.embedding_bag.default,
                              (W, IDX, OFF, False, mode, False, None, last), device="cpu"))
        SAMPLES.append(Sample(aten.embedding_bag.padding_idx,
                              (W, IDX, OFF, False, mode, False, None, last, 2), device="cpu"))
        SAMPLES.append(Sample(aten._embedding_bag.default,
                              (W, IDX, OFF, False, mode, False, None, last), device="cpu"))
SAMPLES += [
    Sample(aten.embedding_bag.default, (W, IDX, OFF, False, 0, False, T(8), True),
           device="cpu"),
    Sample(aten.embedding_bag.default, (T(10, 3, dtype=f64), IDX, OFF), device="cpu"),
    Sample(aten.embedding_bag.default, (T(10, 3, dtype=bf16), IDX, OFF), device="cpu"),
    Sample(aten.embedding_bag.default, (W, T(8, dtype=i32, high=10), T(2, dtype=i32, high=1)),
           device="cpu"),
    Sample(aten.embedding_bag.default, (W, T(8, dtype=i32, high=10), OFF, True, 2),
           device="cpu"),
    Sample(aten.embedding_bag.default, (W, T(0, dtype=i64), T(1, dtype=i64, high=1)),
           device="cpu"),
    Sample(aten.embedding_bag.padding_idx, (W, IDX, OFF, False, 0, False, None, False, None),
           device="cpu"),
    Sample(aten.embedding_bag.padding_idx, (W, IDX, OFF, False, 0, False, None, False, -1),
           device="cpu"),
    Sample(aten._embedding_bag.default, (W, IDX, OFF, False, 0, False, None, False, -1),
           device="cpu"),
    Sample(aten.one_hot.default, (T(2, 3, dtype=i64, high=5), 5), device="cpu"),
    Sample(aten.one_hot.default, (T(0, dtype=i64), 3), device="cpu"),
    Sample(aten.one_hot.default, (T(dtype=i64, high=2), 2), device="cpu"),
]

ERROR_SAMPLES = [
    Sample(aten.embedding.default, (T(10), T(2, dtype=i64)), device="cpu"),
    Sample(aten.embedding.default, (W, T(2))),
    Sample(aten.embedding_bag.default, (W, IDX, T(3, 1, dtype=i64, high=1)), device="cpu"),
    Sample(aten.embedding_bag.default, (W, IDX, OFF, False, 0, False, T(7)), device="cpu"),
    Sample(aten.embedding_bag.default, (W, IDX, OFF, False, 1, False, T(8)), device="cpu"),
    Sample(aten.embedding_bag.default, (W, IDX, OFF, False, 3), device="cpu"),
    Sample(aten.embedding_bag.default, (W, T(8), OFF), device="cpu"),
    Sample(aten.one_hot.default, (T(2, dtype=i32, high=2), 4), device="cpu"),
]

SAMPLES += [
    Sample(aten.embedding_renorm_.default, (W, T(4, 2, dtype=i64, high=10), 1.0, 2.0),
           device="cpu"),
    Sample(aten.embedding_renorm_.default, (T(10, 3, dtype=f16), T(4, dtype=i32, high=10),
                                            1.0, 1.0), device="cpu"),
]
ERROR_SAMPLES += [
    Sample(aten.embedding_renorm_.default, (W, T(4), 1.0, 2.0), device="cpu"),
    Sample(aten.embedding_renorm_.default, (T(10), T(4, dtype=i64, high=10), 1.0, 2.0),
           device="cpu"),
    Sample(aten.embedding_renorm_.default, (T(10, 3, dtype=i64), T(4, dtype=i64, high=10),
                                            1.0, 2.0), device="cpu"),
]
