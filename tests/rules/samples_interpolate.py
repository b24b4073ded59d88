"""Samples of upsampling (interpolate.py); empty inputs run on CPU (meta crashes there)."""

import torch

from tests.rules.harness import Sample, T

aten = torch.ops.aten
f64, f16, u8 = torch.float64, torch.float16, torch.uint8

OPS = [
    ("upsample_nearest1d", 1, False), ("upsample_nearest2d", 2, False),
    ("upsample_nearest3d", 3, False), ("_upsample_nearest_exact1d", 1, False),
    ("_upsample_nearest_exact2d", 2, False), ("_upsample_nearest_exact3d", 3, False),
    ("upsample_linear1d", 1, True), ("upsample_bilinear2d", 2, True),
    ("upsample_bicubic2d", 2, True), ("upsample_trilinear3d", 3, True),
    ("_upsample_bilinear2d_aa", 2, True), ("_upsample_bicubic2d_aa", 2, True),
]
SPATIAL = {1: (5,), 2: (4, 5), 3: (4, 5, 3)}
OUT = {1: [7], 2: [7, 3], 3: [7, 3, 2]}
SCALES = {1: [[2.0], [0.5], [1.3], [0.3]], 2: [[1.5, 0.7], [2.0, 3.0], [1.1, 3.3]],
          3: [[1.5, 0.5, 2.0], [1.0, 1.0, 1.0]]}


def call(name, n, align, overload, *rest):
    op = getattr(getattr(aten, name), overload)
    if align:
        rest = rest[:1] + (False,) + rest[1:]
    return op, rest


SAMPLES = []
ERROR_SAMPLES = []
for name, n, align in OPS:
    x = T(2, 3, *SPATIAL[n])
    op, rest = call(name, n, align, "default", OUT[n])
    SAMPLES.append(Sample(op, (x,) + rest))
    op, rest = call(name, n, align, "default", OUT[n], *([2.0] * n))
    SAMPLES.append(Sample(op, (T(1, 1, *SPATIAL[n], dtype=f64),) + rest))
    op, rest = call(name, n, align, "vec", OUT[n], None)
    SAMPLES.append(Sample(op, (x,) + rest))
    SAMPLES.append(Sample(op, (T(0, 3, *SPATIAL[n]),) + rest, device="cpu"))
    for sf in SCALES[n]:
        op, rest = call(name, n, align, "vec", None, sf)
        SAMPLES.append(Sample(op, (x,) + rest))
    # errors: both / neither size, wrong rank, empty channels or spatial, output 0
    op, rest = call(name, n, align, "vec", OUT[n], [2.0] * n)
    ERROR_SAMPLES.append(Sample(op, (x,) + rest))
    op, rest = call(name, n, align, "vec", None, None)
    ERROR_SAMPLES.append(Sample(op, (x,) + rest))
    op, rest = call(name, n, align, "vec", OUT[n] + [2], None)
    ERROR_SAMPLES.append(Sample(op, (x,) + rest))
    op, rest = call(name, n, align, "vec", OUT[n], None)
    ERROR_SAMPLES.append(Sample(op, (T(2, 0, *SPATIAL[n]),) + rest, device="cpu"))
    ERROR_SAMPLES.append(Sample(op, (T(2, 3, *((0,) + SPATIAL[n][1:])),) + rest,
                                device="cpu"))
    op, rest = call(name, n, align, "vec", None, [0.1] * n)
    ERROR_SAMPLES.append(Sample(op, (x,) + rest, device="cpu"))
    op, rest = call(name, n, align, "default", [0] * n)
    ERROR_SAMPLES.append(Sample(op, (x,) + rest, device="cpu"))

SAMPLES += [
    Sample(aten.upsample_nearest2d.vec, (T(2, 3, 4, 5, dtype=u8), [7, 3], None)),
    Sample(aten.upsample_bilinear2d.vec, (T(2, 3, 4, 5, dtype=f16), None, True, [2.5, 1.3])),
    Sample(aten.upsample_nearest1d.vec, (T(2, 1, 49), None, [3 / 49])),
    Sample(aten.upsample_nearest1d.vec, (T(1, 1, 10), None, [0.29999999999999999])),
]

# grid_sample, affine_grid
SAMPLES += [
    Sample(aten.grid_sampler.default, (T(2, 3, 5, 6), T(2, 4, 7, 2), 0, 0, False)),
    Sample(aten.grid_sampler.default, (T(2, 3, 5, 6, 7), T(2, 4, 7, 1, 3), 1, 1, True)),
    Sample(aten.grid_sampler.default, (T(2, 3, 5, 6, dtype=f64), T(2, 0, 7, 2, dtype=f64),
                                       2, 2, False)),
    Sample(aten.grid_sampler.default, (T(0, 3, 5, 6), T(0, 4, 7, 2), 0, 0, False)),
    Sample(aten.grid_sampler_2d.default, (T(2, 3, 5, 6), T(2, 4, 7, 2), 0, 0, False)),
    Sample(aten.grid_sampler_3d.default, (T(1, 2, 3, 4, 5), T(1, 2, 3, 4, 3), 0, 0, False)),
    Sample(aten.affine_grid_generator.default, (T(2, 2, 3), [2, 3, 5, 6], False)),
    Sample(aten.affine_grid_generator.default, (T(2, 3, 4, dtype=f64), [2, 3, 5, 6, 7], True)),
    Sample(aten.affine_grid_generator.default, (T(2, 2, 3, dtype=torch.int64), [2, 1, 5, 6],
                                                False), device="cpu"),
]
ERROR_SAMPLES += [
    Sample(aten.grid_sampler.default, (T(2, 3, 5, 6), T(2, 4, 7, 2, dtype=f64), 0, 0, False),
           device="cpu"),
    Sample(aten.grid_sampler.default, (T(2, 3, 5, 6), T(1, 4, 7, 2), 0, 0, False),
           device="cpu"),
    Sample(aten.grid_sampler.default, (T(2, 3, 0, 6), T(2, 4, 7, 2), 0, 0, False),
           device="cpu"),
    Sample(aten.grid_sampler.default, (T(2, 3, 5, 6, 7), T(2, 4, 7, 1, 3), 2, 0, False),
           device="cpu"),
    Sample(aten.grid_sampler.default, (T(2, 3, 5, 6), T(2, 4, 7, 3), 0, 0, False),
           device="cpu"),
    Sample(aten.grid_sampler.default, (T(2, 3, 5), T(2, 4, 1), 0, 0, False),
           device="cpu"),
    Sample(aten.grid_sampler.default, (T(2, 3, 5, 6, dtype=torch.int64), T(2, 4, 7, 2), 0, 0,
                                       False), device="cpu"),
    Sample(aten.grid_sampler_2d.default, (T(2, 3, 5, 6, 7), T(2, 4, 7, 1, 3), 0, 0, False),
           device="cpu"),
    Sample(aten.affine_grid_generator.default, (T(2, 2, 3), [3, 3, 5, 6], False), device="cpu"),
    Sample(aten.affine_grid_generator.default, (T(2, 1, 2), [2, 3, 5], False), device="cpu"),
    Sample(aten.affine_grid_generator.default, (T(2, 3, 3), [2, 3, 5, 6], False), device="cpu"),
]
