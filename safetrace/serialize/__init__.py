"""Saving and loading exported programs: one zip archive, JSON plus safetensors, no pickle.

``save(ep, path)`` writes; ``load(path)`` reads and validates every field, raising
``LoadError`` on anything truncated, corrupted, from a newer format or hostile.  Graphs
that call Python functions other than ``operator``/``min``/``max``-style arithmetic need
``register_callable(name, fn)`` before both saving and loading.
"""

from __future__ import annotations

from safetrace.errors import LoadError
from safetrace.serialize.load import load
from safetrace.serialize.save import VERSION, save
from safetrace.serialize.targets import register_callable

__all__ = ["LoadError", "VERSION", "load", "register_callable", "save"]
