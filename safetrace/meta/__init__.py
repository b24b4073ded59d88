"""Metadata-only descriptions of tensors (shape, dtype, device), shared by rules and tracer."""

from safetrace.meta.tensor import TensorMeta, contiguous_strides

__all__ = ["TensorMeta", "contiguous_strides"]
