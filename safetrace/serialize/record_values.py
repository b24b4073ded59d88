"""How the loader's comparison of a file's records with its own evaluation
(``recorded.py``) shows and groups recorded values: what two branches share (``kind``),
an int or SymInt (``is_int``), three-valued conjunction (``all_of``), a short text of a
value for a refusal (``show``)."""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta import TensorMeta
from safetrace.trace.proxy import Proxy


def kind(v: Any) -> Any:
    """What of ``v`` the two branches of a cond share: tensors' dtype and rank, and
    containers' length (a number: None)."""
    if isinstance(v, Proxy):
        v = v.st_meta
    if isinstance(v, TensorMeta):
        return str(v.dtype), len(v.shape)
    if isinstance(v, (list, tuple)):
        return tuple(kind(x) for x in v)
    return None


def is_int(v: Any) -> bool:
    return isinstance(v, torch.SymInt) or (isinstance(v, int) and not isinstance(v, bool))


def all_of(answers: Any) -> bool | None:
    out: bool | None = True
    for a in answers:
        if a is False:
            return False
        if a is None:
            out = None
    return out


def show(v: Any) -> str:
    if isinstance(v, Proxy):
        v = v.st_meta
    if isinstance(v, TensorMeta):
        return f"{str(v.dtype).removeprefix('torch.')}{[str(x) for x in v.shape]}".replace(
            "'", "")
    if isinstance(v, (list, tuple)):
        return "(" + ", ".join(show(x) for x in v[:8]) + (", ..." if len(v) > 8 else "") + ")"
    return str(v)[:80]
