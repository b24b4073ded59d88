"""One attribute of torch's (a module function, a class method) replaced while any of this
process's calls that need it run: installed by the first, put back by the last, under a
lock.  The replacement itself tells this thread's calls from others' (a thread-local of
its own module), so another thread meanwhile gets torch's behaviour through it."""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator


class SharedPatch:
    """``owner.name`` replaced while at least one ``applied`` block is active."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self.original: Any = None  # (the attribute as ``owner.__dict__`` held it)

    @contextlib.contextmanager
    def applied(self, owner: Any, name: str, replacement: Any) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                self.original = owner.__dict__[name]
                setattr(owner, name, replacement)
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    setattr(owner, name, self.original)
