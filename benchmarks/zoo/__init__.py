"""The model zoo: real architectures, tiny sizes, random weights, built offline.

Every entry's factory returns a :class:`Case`: the model in eval mode, example args and
kwargs, a ``dynamic_shapes`` spec (the same object is given to ``safetrace.export()`` and
``torch.export.export``), inputs of two other sizes inside the declared space (to check
that the export generalizes), and one input outside it (to check it is rejected).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


@dataclass
class Case:
    model: Any
    args: tuple
    kwargs: dict
    dynamic_shapes: Any
    others: list            # [(args, kwargs), (args, kwargs)]: two other sizes
    outside: tuple | None = None   # (args, kwargs) violating the declared space
    static_shapes: Any = None      # spec with every dim static (None: no spec)


@dataclass
class Entry:
    name: str
    factory: Callable[[], Case]
    fast: bool = False
    family: str = "hand"           # "hand", "transformers", "timm" or "torchvision"
    note: str = ""


def registry() -> list[Entry]:
    from benchmarks.zoo import hand, hf, vision
    return hand.ENTRIES + hf.ENTRIES + vision.ENTRIES


def fast_entries() -> list[Entry]:
    return [e for e in registry() if e.fast]


def by_name(name: str) -> Entry:
    for e in registry():
        if e.name == name:
            return e
    raise KeyError(name)
