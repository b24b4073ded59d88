"""Progress for long steps (ONNX export, conversion to torch.export, saving, loading).

``with task("converting to ONNX", verbose): ...`` writes to standard error:

- on a terminal (``verbose=None``, the default): after one second, a line that counts the
  seconds in place (``safetrace: converting to ONNX ... 12 s``), then ``done in 52.3 s``;
  steps shorter than a second print nothing;
- ``verbose=True``: the same on a terminal; elsewhere (a log file, CI) a line when the
  step starts and one when it ends;
- ``verbose=False``, or the environment variable ``SAFETRACE_PROGRESS=0``: nothing.

A step inside another step (``st.to_onnx`` calls ``ep.to_torch()``) reports as part of
the outer one. Standard library only, so every layer may use it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO

_ACTIVE = threading.local()  # steps running in this thread (inner ones stay quiet)
DELAY_S = 1.0  # quieter than this, a step says nothing on a terminal
TICK_S = 1.0


def enabled(verbose: bool | None, stream: TextIO | None = None) -> bool:
    """Whether a step reports: ``verbose`` if given, else whether `stream` is a terminal."""
    if verbose is not None:
        return bool(verbose)
    if stream is None:
        stream = sys.stderr
        seen = _STDERR[0]  # (sys.stderr's answer, kept while it is the same object)
        if seen is not None and seen[0] is stream:
            terminal = seen[1]
        else:
            terminal = _terminal(stream)
            _STDERR[0] = (stream, terminal)
    else:
        terminal = _terminal(stream)
    if not terminal:  # (first: most runs are not on a terminal)
        return False
    return os.environ.get("SAFETRACE_PROGRESS", "") not in ("0", "false", "no")


# (sys.stderr, whether it is a terminal): every export asks, and isatty() is a system call
_STDERR: list[tuple[Any, bool] | None] = [None]


def _terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


class _Ticker:
    def __init__(self, label: str, stream: TextIO, live: bool) -> None:
        self.label, self.stream, self.live = label, stream, live
        self.start = time.perf_counter()
        self.shown = False
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def _write(self, text: str) -> None:
        with self.lock:
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):  # a closed pipe must not break the real work
                self.stop.set()

    def _run(self) -> None:
        if self.stop.wait(DELAY_S):
            return
        while not self.stop.is_set():
            elapsed = time.perf_counter() - self.start
            self._write(f"\rsafetrace: {self.label} ... {elapsed:.0f} s")
            self.shown = True
            self.stop.wait(TICK_S)

    def begin(self) -> None:
        if self.live:
            self.thread = threading.Thread(target=self._run, name="safetrace-progress",
                                           daemon=True)
            self.thread.start()
        else:
            self._write(f"safetrace: {self.label} ...\n")
            self.shown = True

    def end(self, ok: bool) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
        if not self.shown:
            return
        elapsed = time.perf_counter() - self.start
        what = "done" if ok else "failed"
        lead = "\r" if self.live else ""
        self._write(f"{lead}safetrace: {self.label}: {what} in {elapsed:.1f} s\n")


def task(label: str, verbose: bool | None = None,
         stream: TextIO | None = None) -> _Task:
    """Report the step `label` while the block runs (see the module's docstring)."""
    return _Task(label, verbose, stream)


class _Task:
    """The context manager of ``task`` (a class: every export enters one)."""

    __slots__ = ("label", "verbose", "stream", "depth", "ticker")

    def __init__(self, label: str, verbose: bool | None, stream: TextIO | None) -> None:
        self.label, self.verbose, self.stream = label, verbose, stream
        self.depth = 0
        self.ticker: _Ticker | None = None

    def __enter__(self) -> None:
        self.depth = depth = getattr(_ACTIVE, "depth", 0)
        if depth or not enabled(self.verbose, self.stream):
            _ACTIVE.depth = depth + 1
            return
        out = self.stream or sys.stderr
        self.ticker = _Ticker(self.label, out, live=_isatty(out))
        self.ticker.begin()
        _ACTIVE.depth = 1

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if self.ticker is None:
            _ACTIVE.depth = self.depth
            return
        _ACTIVE.depth = 0
        self.ticker.end(exc_type is None)


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
