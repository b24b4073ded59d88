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

# stft / istft (istft has no meta kernel: aten::equal)
_W16 = T(16)
SAMPLES += [
    Sample(aten.stft.center, (T(2, 64), 16, 4), {"window": _W16, "return_complex": True}),
    Sample(aten.stft.center, (T(2, 64), 16, 4), {"return_complex": False}),
    Sample(aten.stft.center, (T(64, dtype=f64), 16), {"window": _W16, "return_complex": True}),
    Sample(aten.stft.center, (T(2, 64), 16, 4), {"window": T(16, dtype=f64),
                                                 "return_complex": True}),
    Sample(aten.stft.center, (T(2, 64, dtype=c64), 16, 4), {"return_complex": True}),
    Sample(aten.stft.center, (T(2, 64), 16, 4), {"return_complex": True, "center": False}),
    Sample(aten.stft.center, (T(6), 16, 4), {"return_complex": True, "pad_mode": "constant"}),
    Sample(aten.stft.center, (T(9), 16, 4), {"return_complex": True}),
    Sample(aten.stft.center, (T(8), 16, 4), {"return_complex": True, "pad_mode": "circular"}),
    Sample(aten.stft.center, (T(9), 16, 4, 8, T(8)), {"return_complex": True}),
    Sample(aten.stft.center, (T(30), 16, 4), {"return_complex": True, "onesided": False}),
    Sample(aten.stft.center, (T(30), 16, 4), {"return_complex": True, "center": False,
                                              "align_to_window": True}),
    Sample(aten.stft.default, (T(3, 40), 16, 5), {"return_complex": True}),
    Sample(aten.stft.default, (T(40, dtype=c64), 8)),
    Sample(aten.istft.default, (T(2, 9, 17, dtype=c64), 16, 4), {"window": _W16},
           device="cpu"),
    Sample(aten.istft.default, (T(2, 9, 17, dtype=c64), 16, 4), {"window": _W16, "length": 70},
           device="cpu"),
    Sample(aten.istft.default, (T(9, 5, dtype=c128), 16), {"center": False}, device="cpu"),
    Sample(aten.istft.default, (T(16, 5, dtype=c64), 16), {"return_complex": True}, device="cpu"),
    Sample(aten.istft.default, (T(2, 9, 5, dtype=c64), 16), {"win_length": 8}, device="cpu"),
]
ERROR_SAMPLES += [
    Sample(aten.stft.center, (T(2, 64), 16, 4)),
    Sample(aten.stft.center, (T(8), 16, 4), {"return_complex": True}, device="cpu"),
    Sample(aten.stft.center, (T(2, 3, 40), 16, 4), {"return_complex": True}, device="cpu"),
    Sample(aten.stft.center, (T(40, dtype=i64), 16, 4), {"return_complex": True}, device="cpu"),
    Sample(aten.stft.center, (T(9), 16, 4, 8, T(9)), {"return_complex": True}, device="cpu"),
    Sample(aten.stft.center, (T(30), 16, 4), {"return_complex": True, "align_to_window": True},
           device="cpu"),
    Sample(aten.stft.center, (T(30, dtype=c64), 16, 4), {"onesided": True}, device="cpu"),
    Sample(aten.stft.default, (T(10), 16, 4), {"return_complex": True}, device="cpu"),
    Sample(aten.istft.default, (T(2, 9, 5), 16), device="cpu"),
    Sample(aten.istft.default, (T(2, 9, 5, dtype=c64), 16), {"onesided": False}, device="cpu"),
    Sample(aten.istft.default, (T(2, 9, 5, dtype=c64), 16), {"hop_length": 20}, device="cpu"),
    Sample(aten.istft.default, (T(2, 7, 5, dtype=c64), 16), device="cpu"),
    Sample(aten.istft.default, (T(2, 9, 5, dtype=c64), 16), {"return_complex": True},
           device="cpu"),
]
