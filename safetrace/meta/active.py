"""The symbolic environment of the export in progress *on this thread* (set and reset by
the tracer).

Shape rules create data-dependent sizes in it; symbolic values ask it whether the user's
code is being traced right now.  It is thread-local: an export on one thread is invisible
to code running on another (two exports at once each see their own).
"""

from __future__ import annotations

import threading
from typing import Any


class _Active(threading.local):
    # class attributes are each thread's defaults; assignments are per thread
    env: Any = None
    # bumped by the tracer on every in-place write: facts about tensor *values* recorded
    # before (TensorMeta.bounds, .mask_count) no longer hold after one
    data_epoch: int = 0


ACTIVE = _Active()
