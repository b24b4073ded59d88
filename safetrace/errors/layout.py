"""Refusals of layout questions on tensors whose strides are traced only in part
(``safetrace/trace/strides.py`` derives a view's strides exactly on its dims of size >= 2;
``trace/small_strides.py`` replays eager's rules for dims of size 0 or 1 where it can)."""

from __future__ import annotations

from safetrace.errors.base import UnsupportedConstruct, Where

__all__ = ["strides_of_small_dim"]


def strides_of_small_dim(what: str, source: str, dims: str) -> UnsupportedConstruct:
    """``x.stride()`` of a view whose strides are traced, where ``dims`` (``dim 1 (size
    s1//8)``) may be 0 or 1 inside the declared space."""
    return UnsupportedConstruct(
        f"{what} at {source} reads the strides of a view whose strides safetrace traces on "
        f"dims of size 2 or more only, and {dims} may be 0 or 1 in the declared space "
        f"(there eager's stride of such a dim follows other rules, which safetrace could "
        f"not replay from a tensor of known strides: a view of an input or of a tensor "
        f"whose layout is not known, an empty view; a wrong stride is a wrong result).",
        fix="declare a range that keeps the dim at 2 or more (`Dim(\"n\", min=2)`, or a "
            "multiple, `8 * Dim(\"k\", min=2)`), or read the strides of a row-major copy, "
            "`t.contiguous().stride()`",
        where=Where(source=source or None))
