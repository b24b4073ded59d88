"""Saving and loading exported programs: one safetensors file (format 2), no pickle.

``save(ep, path)`` writes the weights in the safetensors layout and the program as a JSON
document in its header (atomically: see docs/saving.md); ``load(path)`` maps the weights
under a read lease (``lease.py``: a writer of the file waits until they are a private
copy) or, where none is granted, reads them into memory of the program's own
(``mmap=True``: maps them, unguarded) and validates every field,
raising ``LoadError`` on anything truncated, corrupted, from another format version, over
a budget (``Budgets``) or hostile.  A loaded graph may call
only allowlisted operators (``allowlist.py``); other namespaces need ``allow_ops=``.
Graphs that call Python functions other than ``operator``/``min``/``max``-style
arithmetic need ``register_callable(name, fn)`` before both saving and loading.
"""

from __future__ import annotations

from safetrace.errors import LoadError
from safetrace.serialize.budgets import Budgets
from safetrace.serialize.reader import load
from safetrace.serialize.saving import VERSION, save
from safetrace.serialize.targets import register_callable

__all__ = ["Budgets", "LoadError", "VERSION", "load", "register_callable", "save"]
