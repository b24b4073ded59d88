"""Whether the code asking a size question raises on the other answer.

``assert x.shape[0] > 1`` or ``if n == 1: raise ValueError(...)`` (torch's batch_norm) make
a guard like any ``if``, but the branch the example does not take only raises: the guard is
a requirement of the code (eager raises where it fails), not a choice between two results.
The engine asks this when it records a guard (``Env.precondition_probe``); the frame that
asked is the innermost one outside safetrace, and it asked through a conditional jump.
"""

from __future__ import annotations

import dis
import os
import sys
from types import CodeType, FrameType

import torch

_PACKAGE = os.path.dirname(os.path.dirname(__file__)) + os.sep
_TORCH = os.path.dirname(torch.__file__) + os.sep
# what a block may do before its raise: load and build the exception and its message
# (in locals: pytest's rewritten asserts store their explanation first)
_QUIET = ("LOAD_", "BUILD_", "FORMAT_", "CALL", "PRECALL", "PUSH_NULL", "KW_NAMES", "NOP",
          "CACHE", "EXTENDED_ARG", "COPY", "SWAP", "BINARY_OP", "LIST_", "CONVERT_VALUE",
          "RESUME", "STORE_FAST", "DELETE_FAST", "POP_TOP")
_ENDINGS = ("StopIteration", "StopAsyncIteration", "GeneratorExit")
_CODES: dict[CodeType, tuple[dict[int, dis.Instruction], list[int], list[range]]] = {}


def other_branch_raises(answer: bool) -> bool:
    """True when the caller's jump on this question, had it got ``not answer``, would run
    straight into a ``raise`` (an ``assert``, ``if ...: raise``)."""
    f: FrameType | None = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE):
        f = f.f_back
    if f is None:
        return False
    try:
        return _raises(f.f_code, f.f_lasti, answer) and not _caught_outside(f.f_back)
    except (ValueError, IndexError, KeyError):  # an instruction stream we do not read
        return False


def _caught_outside(f: FrameType | None) -> bool:
    """Whether a calling frame of the program's own code (not torch's, up to safetrace's
    exporter) is inside a try or with block that may catch the raise: eager then computes
    something at those sizes, so the guard is a branch."""
    while f is not None and not f.f_code.co_filename.startswith(_PACKAGE):
        if not f.f_code.co_filename.startswith(_TORCH):
            if any(f.f_lasti in r for r in _instructions(f.f_code)[2]):
                return True
        f = f.f_back
    return False


def _instructions(code: CodeType) -> tuple[dict[int, dis.Instruction], list[int], list[range]]:
    found = _CODES.get(code)
    if found is None:
        ins = {i.offset: i for i in dis.get_instructions(code)}
        handled = [range(e.start, e.end) for e in
                   getattr(dis.Bytecode(code), "exception_entries", ())]
        found = _CODES[code] = (ins, sorted(ins), handled)
    return found


def _raises(code: CodeType, at: int, answer: bool) -> bool:
    ins, offsets, handled = _instructions(code)
    k = offsets.index(at)
    jump = ins[at]
    if jump.opname == "TO_BOOL":  # (3.13: the truth test comes one instruction earlier)
        k += 1
        jump = ins[offsets[k]]
    name = jump.opname
    if not name.startswith("POP_JUMP") or "NONE" in name:
        return False
    jumps_on = "IF_TRUE" in name
    other = jump.argval if answer != jumps_on else offsets[k + 1]  # the path not taken
    j = offsets.index(other)
    for off in offsets[j:j + 256]:
        op = ins[off].opname
        if ins[off].argval in _ENDINGS:  # (an iterator's end: its caller's loop catches it)
            return False
        if op == "RAISE_VARARGS":  # (unless a try or with block of the frame may catch it)
            return not any(off in r for r in handled)
        if not op.startswith(_QUIET):
            return False
    return False
