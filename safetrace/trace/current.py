"""What is being exported on this thread: the tracer in progress and the depth of export
sessions, for code that runs inside an export without a reference to it (``st.check``,
``torch._check`` and the routed Python builtins called by the user's program).

Everything here is thread-local: the replacements an export installs consult it, so code
on other threads (and after the export) runs the originals.
"""

from __future__ import annotations

import threading
from typing import Any
from safetrace.trace.recorder import Recorder


class _Local(threading.local):
    tracer: Recorder | None = None   # the tracer in progress (None outside export)
    sessions: int = 0    # export sessions entered on this thread and not yet left


_LOCAL = _Local()


def active_tracer() -> Recorder | None:
    """The tracer of the export in progress on this thread (None outside export)."""
    return _LOCAL.tracer


def set_active_tracer(tracer: Recorder | None) -> Recorder | None:
    """Make `tracer` this thread's active one; returns the one it replaces (to restore)."""
    previous, _LOCAL.tracer = _LOCAL.tracer, tracer
    return previous


def exporting() -> bool:
    """True on a thread that is inside an export session."""
    return _LOCAL.sessions > 0


def enter_session() -> None:
    _LOCAL.sessions += 1


def leave_session() -> None:
    _LOCAL.sessions -= 1
