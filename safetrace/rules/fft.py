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
from safetrace.rules.common import _TO_COMPLEX, check, float_result, normalize_dim, to_real
from safetrace.rules.registry import rule

aten = torch.ops.aten

_NORMS = (None, "backward", "forward", "ortho")


def complex_of(dtype: torch.dtype) -> torch.dtype:
    """The complex dtype a transform computes in (int/bool give the default float's)."""
    dtype = float_result(dtype)
    return dtype if dtype.is_complex else _TO_COMPLEX.get(dtype, torch.complex64)


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
    return [normalize_dim(x, self.ndim, op) for x in dim]


@rule(aten._fft_r2c.default)
def _fft_r2c(self: TensorMeta, dim: Sequence[int], normalization: int,
             onesided: bool) -> TensorMeta:
    """Real-to-complex over `dim`; one-sided halves the last of them to n // 2 + 1."""
    op = "_fft_r2c"
    check(self.dtype.is_floating_point, op, f"Only supports floating-point dtypes, but found: "
                                            f"{self.dtype}")
    dims = _fft_dims(op, self, dim)
    out = self.like(dtype=_TO_COMPLEX[self.dtype])
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
