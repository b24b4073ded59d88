"""An op's requirement that torch's kernel checks and its meta function does not.

``torch.multinomial(x, n)`` without replacement needs ``n <= x.shape[-1]``: torch's meta
function leaves it to the kernel, so torch.export's program accepts every size and the
kernel raises eager's ``RuntimeError('cannot sample n_sample > ...')`` when it runs.  Ours
checks it before computing (``to_onnx`` / ``to_aoti`` kernels need not check), but where
it relates input sizes it is a run-time check of its own kind: nothing is assumed from it
(no range narrows: torch's program accepts those sizes too), and the kernel's words ride
in the check's origin, so a failing input raises a ``RuntimeError`` naming them, in
``ep.module()`` and in ``ep.to_torch().module()`` (an in-graph assert there, not torch's
``Guard failed`` AssertionError: ``interop/relation_guards``).  Where the sizes are static
and the example breaks it, torch.export still exports, its program raising the kernel's
error at every call: ours is a check that never holds, so its program does the same
(it refused the export before).

The mark rides on the raw stack trace of the requirement (a line after the two that
``trace.source.from_text`` reads), so it survives the contract, ``st.save`` and the
cross-export replay with the requirement itself.
"""

from __future__ import annotations

from typing import Any

from safetrace.meta.active import ACTIVE
from safetrace.rules.common import check
from safetrace.symbolic import SymBool
from safetrace.symbolic.expr import FALSE
from safetrace.symbolic.zerodiv import CAUGHT_MARK, CAUGHT_NOTE, caught

_MARK = "\n#kernel-checks: "
_NOTE = " (eager's kernel raises RuntimeError: "


def kernel_check(cond: Any, op: str, message: str) -> None:
    """``check(cond, op, message)`` for a requirement torch's kernel checks (see the
    module doc): an open relation of input sizes true at the example is a run-time check
    carrying `message`, and so is one false whatever the sizes (static) while exporting;
    anything else is ``check``'s (on data: asserted where it runs)."""
    words = f"{op}: {message}"
    if not _required(cond, words) and not _always_raises(cond, words):
        check(cond, op, message)


def checked_again(cond: Any, text: Any) -> bool:
    """An in-graph assert of a converted program whose message carries a kernel's note
    (the program exported again): the same run-time check again, its note kept; False
    for any other assert (the caller's to decide)."""
    if not isinstance(text, str) or _NOTE not in text or not text.endswith(")"):
        return False
    return _required(cond, text.rpartition(_NOTE)[2][:-1])


def _required(cond: Any, words: str) -> bool:
    """An open condition on input sizes: required at run time, assuming nothing."""
    if not isinstance(cond, SymBool):
        return False
    env = cond.env
    free = cond.expr.free_symbols
    if not free or not all(env.symbols[n].backed for n in free) or \
            env.decide(cond.expr) is not None:
        return False
    if caught(env, cond.expr):
        return False  # (inside a `try` of the program's code: where it fails eager computes
    # the `except` side, a branch: ``check``'s guard, whose refusal says so)
    where = env.origin_provider() if env.origin_provider is not None else None
    trace = where if isinstance(where, str) else ""
    if env.precondition_probe is not None and not env.precondition_probe(True, True,
                                                                         cond.expr):
        trace += CAUGHT_MARK  # (exporting again with such as run-time checks)
    env.require(cond.expr, f"{trace}{_MARK}{words}", precondition=True)
    return True


def _always_raises(cond: Any, words: str) -> bool:
    """A requirement false whatever the input (static sizes) while exporting, on the
    program's every path: torch's program raises the kernel's error at every call, so ours
    does (a run-time check that never holds, assuming nothing)."""
    if cond is not False:
        return False
    env = ACTIVE.env
    if env is None or env.origin_provider is None:  # (not an export: the rule raises)
        return False
    # (inside a cond branch or a loop body, or a `try` of the program's code, eager may
    # compute elsewhere: refused while exporting, as before)
    if env.precondition_probe is None or not env.precondition_probe(True, True, FALSE):
        return False
    where = env.origin_provider()
    env.require(FALSE, f"{where if isinstance(where, str) else ''}{_MARK}{words}",
                precondition=True)
    return True


def kernel_note(origin: Any) -> str:
    """The text a contract condition adds for a requirement `kernel_check` made ('' for
    any other origin)."""
    if not isinstance(origin, str) or (_MARK not in origin and CAUGHT_MARK not in origin):
        return ""
    note = CAUGHT_NOTE if CAUGHT_MARK in origin else ""
    if _MARK not in origin:
        return note
    return f"{_NOTE}{origin.rpartition(_MARK)[2].partition(CAUGHT_MARK)[0]}){note}"


def kernel_checked(condition_origin: str) -> bool:
    """Whether a contract condition's origin text is a kernel's check (``kernel_note``):
    torch raises the kernel's RuntimeError there, no guard's AssertionError."""
    return _NOTE in condition_origin
