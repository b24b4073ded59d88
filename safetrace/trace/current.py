"""The tracer of the export in progress, for code that runs inside it without a reference
to it (``st.check`` and ``torch._check`` called by the user's program)."""

from __future__ import annotations

from typing import Any

_ACTIVE: list = [None]


def active_tracer() -> Any:
    """The tracer of the export in progress (None outside export)."""
    return _ACTIVE[0]


def set_active_tracer(tracer: Any) -> Any:
    """Make `tracer` the active one; returns the one it replaces (to restore later)."""
    previous, _ACTIVE[0] = _ACTIVE[0], tracer
    return previous
