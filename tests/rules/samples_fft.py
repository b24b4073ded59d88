"""Samples for the Fourier transforms (torch.fft.*) and their _fft_* kernels."""

import torch

from tests.rules.harness import Sample, T

aten = torch.ops.aten
f64, f16, i64, b, c64, c128 = (torch.float64, torch.float16, torch.int64, torch.bool,
                               torch.complex64, torch.complex128)

SAMPLES = [
    Sample(aten.fft_fft.default, (T(3, 8),)),
    Sample(aten.fft_fft.default, (T(3, 8, dtype=i64),)),
    Sample(aten.fft_fft.default, (T(3, 8, dtype=b),)),
    Sample(aten.fft_fft.default, (T(3, 8, dtype=c128), 12, 0)),
    Sample(aten.fft_fft.default, (T(5, dtype=f64), 3, -1, "ortho")),
    Sample(aten.fft_ifft.default, (T(3, 8, dtype=f64),)),
    Sample(aten.fft_ifft.default, (T(3, 8, dtype=c64), None, 0, "forward")),
    Sample(aten.fft_rfft.default, (T(3, 8),)),
    Sample(aten.fft_rfft.default, (T(3, 7, dtype=f64),)),
    Sample(aten.fft_rfft.default, (T(3, 8), 5, 0)),
    Sample(aten.fft_rfft.default, (T(3, 8, dtype=i64), None, -2)),
    Sample(aten.fft_irfft.default, (T(3, 8),)),
    Sample(aten.fft_irfft.default, (T(3, 8), 5)),
    Sample(aten.fft_irfft.default, (T(3, 8, dtype=c128), None, 0)),
    Sample(aten.fft_irfft.default, (T(3, 8, dtype=i64),)),
    Sample(aten._fft_r2c.default, (T(3, 8), [1], 0, True)),
    Sample(aten._fft_r2c.default, (T(3, 8, dtype=f64), [0, 1], 0, False)),
    Sample(aten._fft_r2c.default, (T(3, 7), [1, 0], 2, True)),
    Sample(aten._fft_c2r.default, (T(3, 8, dtype=c64), [1], 0, 14)),
    Sample(aten._fft_c2r.default, (T(3, 8, dtype=c128), [1, 0], 1, 5)),
    Sample(aten._fft_c2c.default, (T(3, 8, dtype=c64), [1], 0, True)),
    Sample(aten._fft_c2c.default, (T(3, 8, dtype=c128), [0, 1], 2, False)),
]
ERROR_SAMPLES = [
    Sample(aten.fft_rfft.default, (T(3, 8, dtype=c64),), device="cpu"),
    Sample(aten.fft_rfft.default, (T(3, 8), 0), device="cpu"),
    Sample(aten.fft_rfft.default, (T(3, 0),), device="cpu"),
    Sample(aten.fft_rfft.default, (T(),), device="cpu"),
    Sample(aten.fft_fft.default, (T(3, 8), None, -1, "bad"), device="cpu"),
    Sample(aten.fft_fft.default, (T(3, 8), None, 2), device="cpu"),
    Sample(aten.fft_irfft.default, (T(3, 1),), device="cpu"),
    Sample(aten._fft_r2c.default, (T(3, 8, dtype=c64), [1], 0, True), device="cpu"),
    Sample(aten._fft_c2r.default, (T(3, 8), [1], 0, 14), device="cpu"),
    Sample(aten._fft_c2c.default, (T(3, 8), [1], 0, True), device="cpu"),
]
