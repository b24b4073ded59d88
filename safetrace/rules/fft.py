"""Shape rules of the discrete Fourier transforms (torch.fft.fft / ifft / rfft / irfft and the
_fft_r2c / _fft_c2r / _fft_c2c kernels they run on).

A transform changes at most the size of its dims: ``n`` (default: the input's size) for the
complex transforms, ``n // 2 + 1`` for a one-sided real-to-complex one, and ``n`` (default
``2 * (size - 1)``) for the complex-to-real inverse.  Real and integer inputs are promoted
to the default float dtype's complex form; the half-precision restrictions of some devices
are not modelled.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import TO_COMPLEX, check, float_result, normalize_dim, to_real
from safetrace.rules.registry import rule

aten = torch.ops.aten

_NORMS = (None, "backward", "forward", "ortho")


def complex_of(dtype: torch.dtype) -> torch.dtype:
    """The complex dtype a transform computes in (int/bool give the default float's)."""
    dtype = float_result(dtype)
    return dtype if dtype.is_complex else TO_COMPLEX.get(dtype, torch.complex64)


def _dim_and_n(op: str, self: TensorMeta, n: Any, dim: int, norm: str | None,
               default_n: Any = None) -> tuple:
    check(norm in _NORMS, op, f'Invalid normalization mode: "{norm}"')
    check(self.ndim > 0, op, f"Dimension specified as {dim} but tensor has no dimensions")
    d = normalize_dim(dim, self.ndim, op)
    if n is None:
        n = self.shape[d] if default_n is None else default_n(self.shape[d])
    check(n >= 1, op, f"Invalid number of data points ({n}) specified")
    return d, n


def _with(self: TensorMeta, d: int, size: Any, dtype: torch.dtype) -> TensorMeta:
    return self.like(shape=self.shape[:d] + (size,) + self.shape[d + 1:], dtype=dtype)


@rule(aten.fft_fft.default, aten.fft_ifft.default)
def fft_fft(self: TensorMeta, n: Any = None, dim: int = -1, norm: str | None = None) -> TensorMeta:
    """fft/ifft: `dim` becomes n (padded or trimmed); the result is complex."""
    d, n = _dim_and_n("fft_fft", self, n, dim, norm)
    return _with(self, d, n, complex_of(self.dtype))


@rule(aten.fft_rfft.default)
def fft_rfft(self: TensorMeta, n: Any = None, dim: int = -1,
             norm: str | None = None) -> TensorMeta:
    """rfft of a real input: `dim` becomes n // 2 + 1; the result is complex."""
    check(not self.dtype.is_complex, "fft_rfft", f"rfft expects a real input tensor, but got "
                                                 f"{self.dtype}")
    d, n = _dim_and_n("fft_rfft", self, n, dim, norm)
    return _with(self, d, n // 2 + 1, complex_of(self.dtype))


@rule(aten.fft_irfft.default)
def fft_irfft(self: TensorMeta, n: Any = None, dim: int = -1,
              norm: str | None = None) -> TensorMeta:
    """irfft: `dim` becomes n (default 2 * (size - 1)); the result is real."""
    d, n = _dim_and_n("fft_irfft", self, n, dim, norm, default_n=lambda s: 2 * (s - 1))
    return _with(self, d, n, to_real(complex_of(self.dtype)))


def _fft_dims(op: str, self: TensorMeta, dim: Sequence[int]) -> list:
    """The transformed dims, normalized; the kernels reshape to (-1, *their sizes), which
    an empty transformed dim makes ambiguous (eager raises)."""
    dims = [normalize_dim(x, self.ndim, op) for x in dim]
    for d in dims:
        check(self.shape[d] != 0, op, f"cannot reshape tensor of 0 elements into shape "
              f"{[-1] + [self.shape[x] for x in dims]}: dim {d} to transform is empty")
    return dims


@rule(aten._fft_r2c.default)
def _fft_r2c(self: TensorMeta, dim: Sequence[int], normalization: int,
             onesided: bool) -> TensorMeta:
    """Real-to-complex over `dim`; one-sided halves the last of them to n // 2 + 1."""
    op = "_fft_r2c"
    check(self.dtype.is_floating_point, op, f"Only supports floating-point dtypes, but found: "
                                            f"{self.dtype}")
    dims = _fft_dims(op, self, dim)
    out = self.like(dtype=TO_COMPLEX[self.dtype])
    if onesided and dims:
        last = dims[-1]
        out = _with(out, last, self.shape[last] // 2 + 1, out.dtype)
    return out


@rule(aten._fft_c2r.default)
def _fft_c2r(self: TensorMeta, dim: Sequence[int], normalization: int,
             last_dim_size: Any) -> TensorMeta:
    """Complex-to-real over `dim`; the last of them becomes last_dim_size."""
    op = "_fft_c2r"
    check(self.dtype.is_complex, op, f"Only supports complex dtypes, but found: {self.dtype}")
    check(last_dim_size >= 1, op, f"Invalid number of data points ({last_dim_size}) specified")
    dims = _fft_dims(op, self, dim)
    check(len(dims) > 0, op, "_fft_c2r expects at least one dim")
    return _with(self, dims[-1], last_dim_size, to_real(self.dtype))


@rule(aten._fft_c2c.default)
def _fft_c2c(self: TensorMeta, dim: Sequence[int], normalization: int,
             forward: bool) -> TensorMeta:
    """Complex-to-complex over `dim`: same shape and dtype."""
    op = "_fft_c2c"
    check(self.dtype.is_complex, op, f"Only supports complex dtypes, but found: {self.dtype}")
    _fft_dims(op, self, dim)
    return self.like()


# -- short-time Fourier transforms ----------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _stft_window(op: str, n_fft: int, hop_length: Any, win_length: Any,
                 window: TensorMeta | None) -> tuple:
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    check(hop > 0, op, f"{op}: expected hop_length > 0, but got hop_length={hop}")
    check(0 < win <= n_fft, op, f"{op}: expected 0 < win_length <= n_fft, but got "
                                f"win_length={win}")
    if window is not None:
        check(window.ndim == 1 and window.shape[0] == win, op,
              f"{op}: expected a 1D window tensor of size equal to win_length={win}, but got "
              f"window with size {list(window.shape)}")
    return hop, win


def _stft(self: TensorMeta, n_fft: int, hop_length: Any, win_length: Any,
          window: TensorMeta | None, center: bool, pad_mode: str, onesided: bool | None,
          return_complex: bool | None, align_to_window: bool | None) -> TensorMeta:
    op = "stft"
    complex_in = self.dtype.is_complex or (window is not None and window.dtype.is_complex)
    check(return_complex is not None or complex_in, op,
          "stft requires the return_complex parameter be given for real inputs, and will "
          "further require that return_complex=True in a future PyTorch release.")
    check(not (center and align_to_window is not None), op,
          "stft align_to_window should only be set when center = false")
    check(self.ndim in (1, 2), op, f"{op}: expected a 1D or 2D tensor")
    check(self.dtype.is_floating_point or self.dtype.is_complex, op,
          f"{op}: expected a tensor of floating point or complex values")
    length = self.shape[-1]
    if center:
        check(pad_mode in _PAD_MODES, op, f"Unrecognised padding mode {pad_mode}")
        pad = n_fft // 2
        # the pad sees the input as (1, batch, length): it needs a non-empty batch
        check(self.ndim == 1 or self.shape[0] != 0, op, f"Expected 2D or 3D (batch mode) "
              f"tensor with possibly 0 batch size and other non-zero dimensions for input, "
              f"but got: [1, {self.shape[0]}, {length}]")
        if pad_mode == "reflect":  # guards on symbolic lengths, as eager's pad checks
            check(pad < length, op, f"Argument #4: Padding size should be less than the "
                                    f"corresponding input dimension, but got: padding "
                                    f"({pad}, {pad}) of input length {length}")
        elif pad_mode == "circular":
            check(pad <= length, op, "Padding value causes wrapping around more than once.")
        elif pad_mode == "replicate":
            check(length > 0, op, "padding size should be less than the input size")
        length = length + 2 * pad
    check(0 < n_fft <= length, op, f"{op}: expected 0 < n_fft < {length}, but got "
                                   f"n_fft={n_fft}")
    hop, _ = _stft_window(op, n_fft, hop_length, win_length, window)
    frames = 1 + (length - n_fft) // hop
    onesided = not complex_in if onesided is None else onesided
    check(not (onesided and complex_in), op,
          "Cannot have onesided output if window or input is complex")
    freqs = n_fft // 2 + 1 if onesided else n_fft
    dtype = self.dtype if window is None else torch.promote_types(self.dtype, window.dtype)
    out = complex_of(dtype)
    shape = self.shape[:-1] + (freqs, frames)
    if return_complex is False and not complex_in:  # the deprecated real view
        return self.like(shape=shape + (2,), dtype=to_real(out))
    return self.like(shape=shape, dtype=out)


@rule(aten.stft.center)
def stft_center(self: TensorMeta, n_fft: int, hop_length: Any = None, win_length: Any = None,
                window: TensorMeta | None = None, center: bool = True,
                pad_mode: str = "reflect", normalized: bool = False,
                onesided: bool | None = None, return_complex: bool | None = None,
                align_to_window: bool | None = None) -> TensorMeta:
    """stft: (*, n_freq, n_frames); centering pads n_fft // 2 on each side first."""
    return _stft(self, n_fft, hop_length, win_length, window, center, pad_mode, onesided,
                 return_complex, align_to_window)


@rule(aten.stft.default)
def stft(self: TensorMeta, n_fft: int, hop_length: Any = None, win_length: Any = None,
         window: TensorMeta | None = None, normalized: bool = False,
         onesided: bool | None = None, return_complex: bool | None = None,
         align_to_window: bool | None = None) -> TensorMeta:
    """stft without centering."""
    return _stft(self, n_fft, hop_length, win_length, window, False, "constant", onesided,
                 return_complex, align_to_window)


@rule(aten.istft.default)
def istft(self: TensorMeta, n_fft: int, hop_length: Any = None, win_length: Any = None,
          window: TensorMeta | None = None, center: bool = True, normalized: bool = False,
          onesided: bool | None = None, length: Any = None,
          return_complex: bool = False) -> TensorMeta:
    """istft: (*, n_fft, n_frames) complex frames back into (*, signal length)."""
    op = "istft"
    check(self.dtype.is_complex, op, "istft requires a complex-valued input tensor matching "
                                     "the output from stft with return_complex=True.")
    check(self.ndim in (2, 3), op, f"{op}: expected a tensor with 2 or 3 dimensions of "
                                   f"complex dtype, but got {self.ndim}")
    hop, win = _stft_window(op, n_fft, hop_length, win_length, window)
    check(hop <= win, op, f"{op}: expected 0 < hop_length <= win_length")
    freqs, frames = self.shape[-2], self.shape[-1]
    onesided = bool(freqs != n_fft) if onesided is None else onesided  # a guard, as eager
    if onesided:
        check(freqs == n_fft // 2 + 1, op, f"{op}: expected the frequency dimension (3rd to "
                                           f"the last) of the input tensor to match n_fft / "
                                           f"2 + 1 when onesided=True, but got {freqs}")
    else:
        check(freqs == n_fft, op, f"{op}: expected the frequency dimension (3rd to the last) "
                                  f"of the input tensor to match n_fft when onesided=False, "
                                  f"but got {freqs}")
    check(not (return_complex and onesided), op,
          "Cannot have onesided output if window or input is complex")
    check(frames > 0, op, f"{op}: expected a non-empty input")
    check(self.numel() != 0, op, f"{op}: input tensor cannot be empty.")
    if length is None:
        length = n_fft + hop * (frames - 1) - (2 * (n_fft // 2) if center else 0)
    return self.like(shape=self.shape[:-2] + (length,),
                     dtype=self.dtype if return_complex else to_real(self.dtype))
