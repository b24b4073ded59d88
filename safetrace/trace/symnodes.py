"""Graph nodes for symbolic sizes used as operator arguments."""

from __future__ import annotations

from typing import Any


def sym_to_node(tr: Any, v: Any) -> Any:
    """The node computing symbolic value `v` (static values are returned as they are)."""
    if isinstance(v, (int, float, bool)):
        return v
    raise NotImplementedError("symbolic sizes as arguments arrive with dynamic shapes")
