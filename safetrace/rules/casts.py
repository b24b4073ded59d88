"""Casts and copies: to, _to_copy, type_as, contiguous, clone, detach, alias, view_as_real,
real/imag.

``x.float()``, ``x.half()``, ``x.cuda()`` reach these rules as ``aten.to.dtype`` /
``aten.to.device``.  Shapes never change (except view_as_real/view_as_complex, which move
a trailing size-2 dim in or out of the dtype); dtype and device follow the arguments.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import check, every
from safetrace.rules.registry import rule

aten = torch.ops.aten

# memory formats that only exist for tensors of one rank
_RANK = {torch.channels_last: 4, torch.channels_last_3d: 5}


def memory_format_ok(op: str, self: TensorMeta, memory_format: Any) -> None:
    """channels_last needs a 4-d tensor and channels_last_3d a 5-d one."""
    rank = _RANK.get(memory_format)
    if rank is not None:
        check(self.ndim == rank, op, f"required rank {rank} tensor to use "
                                     f"{str(memory_format).split('.')[-1]} format")


def converted(op: str, self: TensorMeta, dtype: Any = None, device: Any = None,
              memory_format: Any = None) -> TensorMeta:
    """self's shape with the given dtype and device (None keeps self's)."""
    memory_format_ok(op, self, memory_format)
    if device is not None and not isinstance(device, torch.device):
        device = torch.device(device)
    return TensorMeta(self.shape, self.dtype if dtype is None else dtype,
                      self.device if device is None else device)


@rule(aten.to.dtype)
def to_dtype(self: TensorMeta, dtype: torch.dtype, non_blocking: bool = False,
             copy: bool = False, memory_format: Any = None) -> TensorMeta:
    """x.to(dtype), x.float(), x.half(), ..."""
    return converted("to", self, dtype, None, memory_format)


@rule(aten.to.device)
def to_device(self: TensorMeta, device: Any, dtype: torch.dtype, non_blocking: bool = False,
              copy: bool = False, memory_format: Any = None) -> TensorMeta:
    """x.to(device, dtype)."""
    return converted("to", self, dtype, device, memory_format)


@rule(aten.to.other)
def to_other(self: TensorMeta, other: TensorMeta, non_blocking: bool = False,
             copy: bool = False, memory_format: Any = None) -> TensorMeta:
    """x.to(other): other's dtype and device."""
    return converted("to", self, other.dtype, other.device, memory_format)


@rule(aten.to.dtype_layout)
def to_dtype_layout(self: TensorMeta, *, dtype: torch.dtype | None = None, layout: Any = None,
                    device: Any = None, pin_memory: bool | None = None,
                    non_blocking: bool = False, copy: bool = False,
                    memory_format: Any = None) -> TensorMeta:
    """x.to(dtype=..., device=...) with keywords."""
    return converted("to", self, dtype, device, memory_format)


@rule(aten.to.prim_Device)
def to_prim_device(self: TensorMeta, device: Any, dtype: Any = None, non_blocking: bool = False,
                   copy: bool = False) -> TensorMeta:
    """The TorchScript spelling x.to(device, dtype) with both optional."""
    return converted("to", self, dtype, device)


@rule(aten.to.prim_dtype)
def to_prim_dtype(self: TensorMeta, dtype: Any = None, non_blocking: bool = False,
                  copy: bool = False) -> TensorMeta:
    """The TorchScript spelling x.to(dtype) with an optional dtype."""
    return converted("to", self, dtype)


@rule(aten.to.prim_other)
def to_prim_other(self: TensorMeta, non_blocking: bool = False, copy: bool = False) -> TensorMeta:
    """x.to(non_blocking=...): unchanged."""
    return self.like()


@rule(aten._to_copy.default)
def to_copy(self: TensorMeta, *, dtype: torch.dtype | None = None, layout: Any = None,
            device: Any = None, pin_memory: bool | None = None, non_blocking: bool = False,
            memory_format: Any = None) -> TensorMeta:
    """_to_copy: what every `to` decomposes into."""
    return converted("_to_copy", self, dtype, device, memory_format)


@rule(aten.type_as.default)
def type_as(self: TensorMeta, other: TensorMeta) -> TensorMeta:
    """type_as: other's dtype, self's device."""
    return self.like(dtype=other.dtype)


@rule(aten.contiguous.default)
def contiguous(self: TensorMeta, *, memory_format: Any = torch.contiguous_format) -> TensorMeta:
    """contiguous: unchanged (strides are not modelled)."""
    return converted("contiguous", self, memory_format=memory_format)


@rule(aten.clone.default)
def clone(self: TensorMeta, *, memory_format: Any = None) -> TensorMeta:
    """clone: unchanged."""
    return converted("clone", self, memory_format=memory_format)


@rule(aten.detach.default, aten.detach_.default, aten.alias.default, aten.lift_fresh.default,
      aten.lift_fresh_copy.default, aten.resolve_conj.default, aten.resolve_neg.default,
      aten.conj.default, aten.conj_physical.default, aten.detach_copy.default)
def detach(self: TensorMeta) -> TensorMeta:
    """detach, alias, conj and their kin: identity on metadata."""
    return self.like()


_COMPLEX_OF = {torch.float16: torch.complex32, torch.float32: torch.complex64,
               torch.float64: torch.complex128}
_REAL_OF = {v: k for k, v in _COMPLEX_OF.items()}


@rule(aten.view_as_real.default)
def view_as_real(self: TensorMeta) -> TensorMeta:
    """view_as_real: a complex tensor as its real dtype with a trailing dim of 2."""
    check(self.dtype in _REAL_OF, "view_as_real",
          "view_as_real is only supported for complex tensors")
    return self.like(shape=self.shape + (2,), dtype=_REAL_OF[self.dtype])


@rule(aten.real.default)
def real(self: TensorMeta) -> TensorMeta:
    """The real part: a view in the real dtype (a real tensor is returned as it is)."""
    return self.like(dtype=_REAL_OF.get(self.dtype, self.dtype))


@rule(aten.imag.default)
def imag(self: TensorMeta) -> TensorMeta:
    """The imaginary part of a complex tensor, in the real dtype."""
    check(self.dtype in _REAL_OF, "imag",
          "imag is not implemented for tensors with non-complex dtypes.")
    return self.like(dtype=_REAL_OF[self.dtype])


@rule(aten.view_as_complex.default)
def view_as_complex(self: TensorMeta) -> TensorMeta:
    """view_as_complex: a trailing dim of 2 folds into a complex dtype."""
    check(self.dtype in _COMPLEX_OF, "view_as_complex",
          "view_as_complex is only supported for half, float and double tensors, but got a "
          f"tensor of scalar type: {self.dtype}")
    check(self.ndim > 0, "view_as_complex", "Input tensor must have one or more dimensions")
    check(self.shape[-1] == 2, "view_as_complex", "Tensor must have a last dimension of size 2")
    return self.like(shape=self.shape[:-1], dtype=_COMPLEX_OF[self.dtype])


@rule(aten._assert_tensor_metadata)
def assert_tensor_metadata(a: TensorMeta, size: Any = None, stride: Any = None,
                           dtype: Any = None, *, device: Any = None,
                           layout: Any = None) -> None:
    """The input check torch's (and our converted) programs start with: re-exporting
    such a program traces it, and a dim declared dynamic stays so (each given size a
    guard, as the kernel compares them)."""
    del stride, layout
    if dtype is not None:
        check(a.dtype == dtype, "_assert_tensor_metadata",
              f"Tensor dtype mismatch! Expected {dtype}, got {a.dtype}")
    if device is not None:
        check(a.device == torch.device(device), "_assert_tensor_metadata",
              f"Tensor device mismatch! Expected {device}, got {a.device}")
    if size is not None:
        check(len(size) == a.ndim and every(x == y for x, y in zip(a.shape, size)),
              "_assert_tensor_metadata", f"Tensor sizes mismatch! Expected {list(size)}")
    return None  # (strides: the node itself checks them when the program runs)
