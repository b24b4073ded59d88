"""Checks: ``st.check(cond)`` and ``torch._check`` inside traced code.

A check on a symbolic condition becomes a fact the engine may use.  When it involves a
data-dependent value it also becomes a run-time assertion node in the graph; a check on
input sizes only becomes part of the input contract instead (checked before running).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.errors import check_false, check_never_holds, runtime_check_failed
from safetrace.meta.textflow import making_message
from safetrace.rules.oblivious import is_size_test
from safetrace.symbolic import SymBool, SymInt
from safetrace.trace.current import active_tracer, exporting
from safetrace.trace.graph import run_time_check
from safetrace.trace.raising import program_catches
from safetrace.trace.source import from_text, short, stack_trace
from safetrace.trace.symnodes import expr_node
from safetrace.trace.torch_own import Originals
from safetrace.trace.recorder import Recorder


@run_time_check
def assert_sym(cond: Any, message: str) -> None:
    """Run time: raise RuntimeAssertionError(message) unless cond holds.

    Traced by torch (eager ``torch.cond`` builds its branches' schema with make_fx,
    dynamo, torch.export of ``ep.module()``), `cond` is torch's SymBool, whose truth value
    on a data-dependent size cannot be read there: the check becomes torch's own run-time
    assertion (``torch._check``, a deferred assert when undecided), never a guard on data."""
    if isinstance(cond, torch.SymBool):
        _REAL["_check"](cond, lambda: message)
        return
    if not cond:
        raise runtime_check_failed(message)


def check(cond: Any, msg: Any = None) -> None:
    """Assume `cond` while exporting (asserted at run time); a plain assertion otherwise."""
    if callable(msg):
        with making_message():  # (its digits of a size: text only, no guard)
            msg = msg()
    if isinstance(cond, SymBool):
        _symbolic_check(cond, msg)
        return
    if isinstance(cond, torch.Tensor):
        cond = bool(cond)  # a real tensor; a proxy raises a data-dependent error here
    if not cond:
        if active_tracer() is not None:  # false at export: say so there, naming the check
            raise check_false(short(stack_trace(2)), None if msg is None else str(msg))
        raise runtime_check_failed(msg)


def check_is_size(i: Any, msg: Any = None, *, max: Any = None) -> None:
    """``torch._check_is_size``: i >= 0 (and <= max)."""
    check(i >= 0, msg)
    if max is not None:
        check(i <= max, msg)


def _symbolic_check(cond: SymBool, msg: str | None) -> None:
    env = cond.env
    origin = stack_trace(3)
    if program_catches() and _branch(env, cond):
        # inside the program's try/except: where it fails eager raises and the except side
        # runs, so it is a branch on the input sizes (a guard), not a fact for every input;
        # on a size read from data, a size test whose other side is traced too
        if not bool(cond):
            raise RuntimeError(msg if msg is not None else f"Expected {cond} to be True")
        return
    try:
        if env.decide(cond.expr) is not True:
            env.add_fact(cond.expr, origin)
    except ValueError as exc:
        raise check_never_holds(str(cond), str(exc), from_text(origin)) from None
    unbacked = [n for n in cond.expr.free_symbols if not env.symbols[n].backed]
    tr = active_tracer()
    if not unbacked or tr is None:
        return  # on input sizes only: part of the input contract (if not already implied)
    # On data-dependent values the user's check stays in the graph as an assertion, even
    # when safetrace could prove it (it never fails then, and documents the intent).
    if tr.recording:
        emit_assert(tr, cond.expr, msg, origin)
    else:
        tr.pending_checks.append((cond.expr, msg, origin))


def _branch(env: Any, cond: SymBool) -> bool:
    """Whether a check the program catches can be answered as a branch: on input sizes,
    or a size test (``rules/oblivious.py``) on sizes read from data; any other data
    question stays a fact of the trace, asserted (its except side refused at run time)."""
    if all(env.symbols[n].backed for n in cond.expr.free_symbols):
        return True
    return env.decide(cond.expr) is None and is_size_test(env, cond.expr)


def describe_symbols(env: Any, expr: Any) -> str:
    parts = []
    for name in sorted(expr.free_symbols):
        info = env.symbols.get(name)
        if info is not None and not info.backed:
            parts.append(f"{name} = {info.origin}")
    return f" where {', '.join(parts)}" if parts else ""


# torch's words first: code matching torch's run-time assertion text keeps working
ASSERT_HEAD = "Runtime assertion failed for expression "


def asserts_condition(text: str, condition: str) -> bool:
    """Whether an assertion node's message (``emit_assert``) is the check of `condition`
    (as text): the condition is followed by the message's next part or its end."""
    head = ASSERT_HEAD + condition
    if not text.startswith(head):
        return False
    rest = text[len(head):]
    return not rest or rest.startswith((" where ", " (from ", ": "))


def emit_assert(tr: Recorder, expr: Any, msg: str | None, origin: str) -> None:
    """An assertion node: ``assert_sym(<cond node>, message)``."""
    env = tr.env
    asserted = tr.scope.asserted
    if expr in asserted:
        return  # the same condition is already asserted at this point of the graph
    asserted.add(expr)
    text = f"{ASSERT_HEAD}{expr}{describe_symbols(env, expr)}{from_text(origin)}"
    if msg:
        text += f": {msg}"
    cond_node = expr_node(tr, expr, env)
    node = tr.scope.graph.call_function(assert_sym, (cond_node, text))
    node.meta["stack_trace"] = origin
    node.meta["val"] = None


_NAMES = ("_check", "_check_is_size", "_check_with", "_assert")
_REAL = Originals()  # torch's own of each (known by its code: trace/torch_own.py)
for _name in _NAMES:
    _REAL.learn(_name, getattr(torch, _name, None))
# what `patches` reads that may change: (module name, attribute) (trace/session.py)
WATCHED = tuple(("torch", name) for name in _NAMES)


def _check(cond: Any, message: Any = None) -> None:
    """``torch._check``: st.check on an exporting thread (a False bool: the export error
    naming it), torch's own elsewhere."""
    if isinstance(cond, (SymBool, bool)) and exporting():
        if cond is False and program_catches():  # eager's error, for the program's except
            raise RuntimeError((message() if callable(message) else message) or
                               "Expected cond to be True, but got False")
        check(cond, message)
    else:
        _REAL["_check"](cond, message)


def _check_is_size(i: Any, message: Any = None, *, max: Any = None) -> None:
    if (isinstance(i, SymInt) or isinstance(max, SymInt)) and exporting():
        check_is_size(i, message, max=max)
    else:
        _REAL["_check_is_size"](i, message, max=max)


def _check_with(error_type: Any, cond: Any, message: Any = None) -> None:
    # torch._check_index/_value/_type and nn code (MultiheadAttention's mask checks)
    if isinstance(cond, SymBool) and exporting():
        check(cond, message)
    else:
        _REAL["_check_with"](error_type, cond, message)


def _assert(condition: Any, message: Any) -> None:
    """``torch._assert`` on a symbolic condition while exporting: what the program requires
    (eager raises AssertionError where it fails; a torch program's module asserts its
    input guards so), a condition of the input contract, not a branch on the sizes."""
    if not (isinstance(condition, SymBool) and exporting()):
        return _REAL["_assert"](condition, message)
    return required(condition, message, AssertionError)


def required(condition: SymBool, message: Any, error: type) -> None:
    """An assertion the program makes (eager raises `error` where it fails): on data, a
    fact asserted at run time (``check``); a relation between input sizes, true at the
    example and open for others, checked at run time with nothing assumed (two named Dims
    it relates stay independent, the inputs checked against it); else decided as Python's
    ``assert`` decides it (``torch._assert``), or as an op's requirement."""
    env = condition.env
    free = condition.expr.free_symbols
    if any(not env.symbols[n].backed for n in free):
        return check(condition, message)
    if len(free) > 1 and env.decide(condition.expr) is None and env.hint(condition.expr):
        env.require(condition.expr, from_text(stack_trace(3)), precondition=True)
        return None
    if error is AssertionError:
        holds = bool(condition)
    else:
        with env.precondition():
            holds = bool(condition)
    if not holds:
        raise error(message)
    return None


def patches() -> list[tuple[Any, str, Any]]:
    """While exporting, ``torch._check`` / ``_check_with`` / ``_check_is_size`` (and
    ``torch._assert``, as a requirement) go through
    st.check (installed by the export session) where torch's own are in place (a user's
    replacement is left to be traced as Python)."""
    ours = {"_check": _check, "_check_is_size": _check_is_size, "_check_with": _check_with,
            "_assert": _assert}
    return [(torch, name, fn) for name, fn in ours.items()
            if getattr(torch, name, None) is fn or _REAL.learn(name, getattr(torch, name, None))]
