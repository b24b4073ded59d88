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
from typing import Any

import torch

from safetrace.trace.current import active_tracer

_PACKAGE = os.path.dirname(os.path.dirname(__file__)) + os.sep
_TORCH = os.path.dirname(torch.__file__) + os.sep
# what a block may do before its raise: load and build the exception and its message
# (in locals: pytest's rewritten asserts store their explanation first)
_QUIET = ("LOAD_", "BUILD_", "FORMAT_", "CALL", "PRECALL", "PUSH_NULL", "KW_NAMES", "NOP",
          "CACHE", "EXTENDED_ARG", "COPY", "SWAP", "BINARY_OP", "LIST_", "CONVERT_VALUE",
          "RESUME", "STORE_FAST", "DELETE_FAST", "POP_TOP")
_ENDINGS = ("StopIteration", "StopAsyncIteration", "GeneratorExit")
# id(code) -> (the code, what is read of it): keyed by id, the code kept alive in the
# value (Python 3.11 hashes a code object anew at each lookup: its constants, names and
# bytes, ~2.5k instructions for a small forward, twice per view check replayed)
_CODES: dict[int, tuple[CodeType, tuple[dict[int, dis.Instruction], list[int],
                                        list[range]]]] = {}


def is_requirement(answer: bool, required: bool = False, cond: Any = None) -> bool:
    """``Env.precondition_probe``: ``other_branch_raises``, except inside the subgraph of a
    torch.cond branch or a loop or map body (a requirement there holds only where that code
    runs: eager takes the other branch, or runs the body no time, and computes a result).
    An op's own check (`required`) on sizes made inside that subgraph only (`cond`: topk's
    ``k <= size`` on a count of boxes in a map body) is one: asserted inside the
    subgraph, it runs exactly where the op does, and no size outside depends on it."""
    tr = active_tracer()
    if tr is not None and len(tr.scopes) > 1:
        free = getattr(cond, "free_symbols", None)
        if not (required and free and tr.env is not None):
            return False
        inside = list(tr.env.symbols)[tr.scope.n_syms:]
        if not free <= set(inside) or any(tr.env.symbols[n].backed for n in free):
            return False
    return other_branch_raises(answer, required)


def in_subgraph() -> bool:
    """``Env.subgraph_probe``: the trace is inside a torch.cond branch or a loop or map
    body (a requirement there holds only where that code runs)."""
    tr = active_tracer()
    return tr is not None and len(tr.scopes) > 1


def other_branch_raises(answer: bool, required: bool = False) -> bool:
    """Whether a guard is a requirement of the code rather than a branch: the caller's
    jump on this question, had it got ``not answer``, would run straight into a ``raise``
    (an ``assert``, ``if ...: raise``); or, ``required``, an op's own check (its rule's,
    ``torch._check``) that no ``try``/``except`` of the program's code around the call
    may catch (eager computes the except side there: a branch)."""
    f: FrameType | None = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE):
        f = f.f_back
    if required:
        return not caught_by_except(f)
    if f is None:
        return False
    try:
        return _raises(f.f_code, f.f_lasti, answer) and not _caught_outside(f.f_back)
    except (ValueError, IndexError, KeyError):  # an instruction stream we do not read
        return False


def program_catches() -> bool:
    """Whether the innermost frame outside safetrace, or a calling frame of the program's
    code, runs inside a ``try`` block with an ``except`` clause: an op raising there may
    be caught (see ``caught_by_except``)."""
    f: FrameType | None = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE):
        f = f.f_back
    return caught_by_except(f)


def caught_by_except(f: FrameType | None) -> bool:
    """Whether frame `f` or a calling frame of the program's code (not torch's, up to
    safetrace's exporter) is inside a ``try`` block with an ``except`` clause (of any
    exception type: it may catch).  ``with`` and ``finally`` blocks do not count: an
    exception passes through them (a context manager that swallows it makes an input
    refused where eager computes, never a wrong result)."""
    while f is not None and not f.f_code.co_filename.startswith(_PACKAGE):
        if not f.f_code.co_filename.startswith(_TORCH):
            try:
                if _except_around(f.f_code, f.f_lasti):
                    return True
            except (ValueError, IndexError, KeyError):  # a stream we do not read: it may
                return True
        f = f.f_back
    return False


def _except_around(code: CodeType, at: int, depth: int = 0) -> bool:
    """An exception raised at offset `at` reaches an ``except`` clause of `code`: the
    innermost handler is one (its code matches the exception: ``CHECK_EXC_MATCH``, or a
    bare ``except:``), or a ``with`` / ``finally`` / cleanup handler re-raises from a place
    that an enclosing handler covers."""
    entries = _entries(code)
    if not entries:  # (no try, with or finally block in the code: the usual forward)
        return False
    entry = next((e for e in entries if e.start <= at < e.end), None)
    if entry is None or depth > 16:
        return False
    ins, offsets, _ = _instructions(code)
    k = offsets.index(entry.target)
    pushed = ins[entry.target].opname == "PUSH_EXC_INFO"
    window = offsets[k:k + 256]
    for j, off in enumerate(window):
        op = ins[off].opname
        if pushed and j == 1 and op == "POP_TOP":  # a bare ``except:``
            return not _reraises(ins, window[j + 1:])
        if op == "CHECK_EXC_MATCH":  # ``except E:``, its body after the jump and POP_TOP
            if not _reraises(ins, window[j + 3:]):
                return True
            continue  # this clause raises again: the next clause, if any
        if op == "RERAISE":
            return _except_around(code, off, depth + 1)
    return False


def _reraises(ins: dict, body: list[int]) -> bool:
    """An except clause whose body only raises (``except E: raise``, ``raise Other(...)
    from e``, after a log call): eager raises there too."""
    for off in body:
        op = ins[off].opname
        if op in ("RAISE_VARARGS", "RERAISE"):
            return True
        if not op.startswith(_QUIET):
            return False
    return False


_ENTRIES: dict[int, tuple[CodeType, list]] = {}  # id(code) -> (the code, its entries)


def _entries(code: CodeType) -> list:
    found = _ENTRIES.get(id(code))
    if found is None:  # (an id held in the table is its code's: the value keeps it alive)
        found = _ENTRIES[id(code)] = (
            code, list(getattr(dis.Bytecode(code), "exception_entries", ())))
    return found[1]


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
    found = _CODES.get(id(code))
    if found is None:
        ins = {i.offset: i for i in dis.get_instructions(code)}
        handled = [range(e.start, e.end) for e in _entries(code)]
        found = _CODES[id(code)] = (code, (ins, sorted(ins), handled))
    return found[1]


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


def catching_frame(exc: BaseException) -> str | None:
    """Where code outside safetrace (the program's, or a library's it calls) caught `exc`,
    an error safetrace raised while tracing: the outermost frame its traceback reached, as
    ``file:line``; None when safetrace's own code caught it, or it was never raised.  (A
    handler that re-raises sends it further out: only where it stopped counts.)"""
    tb = exc.__traceback__
    if tb is None:
        return None
    name = tb.tb_frame.f_code.co_filename
    if name.startswith(_PACKAGE):
        return None
    return f"{name}:{tb.tb_lineno}"
