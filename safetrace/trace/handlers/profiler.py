"""Profiler ranges: ``torch.profiler.record_function("name")`` (and the autograd
profiler's spelling) call ``profiler::_record_function_enter_new`` and
``profiler::_record_function_exit``.  They mark a range for the profiler and change no
value, so an exported graph leaves them out, as torch.export does; the range still
shows when the program's module runs under ``torch.profiler`` if the caller wraps it."""

from __future__ import annotations

from typing import Any

import torch

from safetrace.trace.registry import handles
from safetrace.trace.recorder import Recorder

_profiler = torch.ops.profiler


class _Range:
    """What the enter op returns while tracing: a handle the exit op accepts."""

    def __repr__(self) -> str:
        return "<profiler range left out of the exported graph>"


def _ops(packet: Any) -> list:
    return [packet] + [getattr(packet, name) for name in packet.overloads()]


@handles(*_ops(_profiler._record_function_enter_new), *_ops(_profiler._record_function_enter))
def _enter(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    return _Range()


@handles(*_ops(_profiler._record_function_exit))
def _exit(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    return None
