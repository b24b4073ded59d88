"""The case constructor shared by the architecture modules."""

from __future__ import annotations

from safetrace import Dim
from tests.conformance.checker import Case, Given

__all__ = ["B32", "B64", "C", "Given"]


def B64(lo=1, hi=64):
    return Dim("batch", min=lo, max=hi)


def B32(lo=1, hi=32):
    return Dim("batch", min=lo, max=hi)


def C(model, mk, spec, ex, others, outside, edges=(), **kw):
    """A case from ``mk(*sizes) -> (args, kwargs)``, the example's sizes, other sizes, one
    size outside the declared space (or None) and boundary sizes."""
    return Case(model, mk, ex, spec, list(others), [outside] if outside else [], list(edges), **kw)
