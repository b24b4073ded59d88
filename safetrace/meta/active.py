"""The symbolic environment of the export in progress (set and reset by the tracer).

Shape rules create data-dependent sizes in it; symbolic values ask it whether the user's
code is being traced right now.
"""

from __future__ import annotations

from typing import Any


class _Active:
    env: Any = None
    # bumped by the tracer on every in-place write: facts about tensor *values* recorded
    # before (TensorMeta.bounds, .mask_count) no longer hold after one
    data_epoch: int = 0


ACTIVE = _Active()
