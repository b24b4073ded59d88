"""The symbolic environment of the export in progress (set and reset by the tracer).

Shape rules create data-dependent sizes in it; symbolic values ask it whether the user's
code is being traced right now.
"""

from __future__ import annotations

from typing import Any


class _Active:
    env: Any = None


ACTIVE = _Active()
