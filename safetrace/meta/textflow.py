"""Is the text that the user's code is making from a size only a message?

CPython builds text from a size in C (``"%d" % n``, ``f"a{n}b"``, ``",".join(map(str,
shape))``, ``repr((n, 3))``): the size is asked for its digits (``__int__``,
``__format__``, ``__str__``, ``__repr__``) from the user's frame, and the text that comes
out is a plain str that nothing can follow.  Such text may be read later (``len``, a dict
key, ``getattr(self, f"layer{n}")``), so the digits must specialize the size (a guard),
unless the text can only be a message: this module reads the bytecode of the frame that
asks, from the instruction in progress, and follows the value it is making along the
straight-line code after it.  It is a message when it reaches, only through text-building
steps (formatting, ``+``, ``%``, ``str()``, ``"".join``, a tuple of format arguments), either
a ``raise`` (``raise ValueError(f"...")``, ``assert c, f"..."``) or a call of a message
function (``_assert``, ``print``, ``warnings.warn``, ``logger.info`` ...).  Anything
else (stored in a variable, returned, compared, a branch, an instruction this module does
not know) is not: the caller specializes.  Text made inside a comprehension's own frame
(``", ".join(str(s) for s in x.shape)``, a list comprehension before Python 3.12) is
followed to the item it becomes, then from the caller's call that makes the list or
joins the generator.
"""

from __future__ import annotations

import contextlib
import dis
import sys
import threading
import types
from typing import Any

# calls whose text argument is displayed or raised, never read back by the program
_SINKS = frozenset(("_assert", "assert_", "print", "warn", "warning", "warning_once",
                    "warn_once", "info", "info_once", "debug", "error", "critical",
                    "exception", "log", "fatal"))
# calls whose result is text made of their arguments (the value is followed further)
_TEXT_CALLS = frozenset(("str", "repr", "ascii", "format", "join"))
# instructions that take the value and give text (or format arguments) made of it
_TEXT_STEPS = frozenset(("FORMAT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "CONVERT_VALUE",
                         "BUILD_STRING", "BUILD_TUPLE", "BINARY_OP"))
_NAMED = frozenset(("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF", "LOAD_METHOD",
                    "LOAD_ATTR", "LOAD_FAST_CHECK"))
_OLD_CALL = sys.version_info < (3, 13)  # the callable (or self) sits right under the args
# a comprehension's own frame (before Python 3.12 inlined list comprehensions): the
# instruction that hands an item on
_COMPREHENSIONS = {"<genexpr>": "YIELD_VALUE", "<listcomp>": "LIST_APPEND"}


def _effect(ins: dis.Instruction) -> tuple[int, int] | None:
    """(items popped, items pushed) for the straight-line instructions that message
    expressions are made of; None for any other."""
    op, arg = ins.opname, ins.arg or 0
    if op in ("LOAD_CONST", "LOAD_FAST", "LOAD_DEREF", "LOAD_NAME", "LOAD_CLOSURE",
              "LOAD_ASSERTION_ERROR", "LOAD_FAST_CHECK", "PUSH_NULL"):
        return 0, 1
    if op == "LOAD_GLOBAL":
        return 0, 1 + (arg & 1)
    if op == "LOAD_ATTR":
        return 1, 1 + (arg & 1 if sys.version_info >= (3, 12) else 0)
    if op == "LOAD_METHOD":
        return 1, 2
    if op in ("PRECALL", "KW_NAMES", "NOP", "RESUME", "CACHE"):
        return 0, 0
    if op in ("BINARY_OP", "COMPARE_OP", "IS_OP", "CONTAINS_OP", "BINARY_SUBSCR"):
        return 2, 1
    if op in ("UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT", "CONVERT_VALUE",
              "FORMAT_SIMPLE", "TO_BOOL"):
        return 1, 1
    if op == "FORMAT_WITH_SPEC":
        return 2, 1
    if op == "GET_ITER":
        return 1, 1
    if op == "MAKE_FUNCTION" and sys.version_info < (3, 13):  # (code, then one per flag)
        return 1 + bin(arg & 0xF).count("1"), 1
    if op == "FORMAT_VALUE":
        return 1 + bool(arg & 4), 1
    if op in ("BUILD_STRING", "BUILD_TUPLE", "BUILD_LIST", "BUILD_SET", "BUILD_SLICE"):
        return arg, 1
    if op == "BUILD_MAP":
        return 2 * arg, 1
    if op == "BUILD_CONST_KEY_MAP":
        return arg + 1, 1
    if op == "CALL":
        return arg + 2, 1
    if op == "CALL_KW":
        return arg + 3, 1
    return None


def _callee(ins: list[dis.Instruction], at: int) -> str | None:
    """The name of what the call at ``ins[at]`` calls (a function's or a method's name)."""
    call = ins[at]
    need = (call.arg or 0) + (0 if _OLD_CALL else 1) + (call.opname == "CALL_KW")
    for p in range(at - 1, -1, -1):
        effect = _effect(ins[p])
        if effect is None:
            return None
        pops, pushes = effect
        if need < pushes:
            if ins[p].opname not in _NAMED:
                return None
            name = str(ins[p].argval)
            if name.startswith("__safetrace_") and name.endswith("__"):  # (pycalls' routing)
                name = name[len("__safetrace_"):-2]
            return name
        need += pops - pushes
        if ins[p].is_jump_target:  # another path reaches here: its stack is not followed
            return None
    return None


def _follow(ins: list[dis.Instruction], start: int, guarded: Any) -> bool | None:
    """Does the value that ``ins[start]`` pushes reach a raise outside the ``guarded``
    offsets (a ``try`` or ``with`` block of this frame) or a message call, only through
    text-building steps?  None: it becomes an item of the comprehension this frame runs
    (``str(s)`` in ``(str(s) for s in x.shape)``), which its caller decides."""
    depth = 0  # the value's place from the top of the stack
    for q in range(start + 1, min(len(ins), start + 400)):
        step = ins[q]
        if depth == 0 and step.opname == _COMPREHENSIONS.get(guarded.code.co_name):
            return None  # (an item of a comprehension: what its caller makes of it decides)
        effect = _effect(step)
        if effect is None:
            return False
        pops, pushes = effect
        if depth >= pops:
            depth += pushes - pops
            continue
        if step.opname in _TEXT_STEPS:
            depth = 0
            continue
        if step.opname not in ("CALL", "CALL_KW"):
            return False
        after = ins[q + 1] if q + 1 < len(ins) else None
        if after is not None and after.opname == "RAISE_VARARGS":
            return after.offset not in guarded  # (caught here, its text may be read)
        name = _callee(ins, q)
        if name in _SINKS:  # (what it returns is its own: None, not the text)
            return not _to_file(ins, q, guarded.code.co_consts)
        if name not in _TEXT_CALLS:
            return False
        depth = 0
    return False


class _Guarded:
    """The byte offsets of ``code`` that an exception handler of the same frame covers."""

    def __init__(self, code: types.CodeType) -> None:
        self.code = code

    def __contains__(self, offset: int) -> bool:
        parse = getattr(dis, "_parse_exception_table", None)
        if parse is None:
            return True  # (unknown: as if caught)
        return any(e.start <= offset < e.end for e in parse(self.code))


def _to_file(ins: list[dis.Instruction], at: int, consts: tuple) -> bool:
    """Does the call at ``ins[at]`` name a ``file=`` (``print(text, file=buf)``: the text
    may be read back from the buffer)?"""
    for p in range(max(0, at - 3), at):
        names = ins[p].argval if ins[p].opname == "LOAD_CONST" else None
        if ins[p].opname == "KW_NAMES" and ins[p].arg is not None:  # (an index of consts)
            names = consts[ins[p].arg]
        if isinstance(names, tuple) and "file" in names:
            value = ins[p - 1] if p and names[-1] == "file" else None  # (file=sys.stderr)
            if value is not None and value.opname == "CALL" and not value.arg and \
                    _callee(ins, p - 1) in _FRESH_BUFFERS:
                return False  # (file=io.StringIO(): a buffer no name keeps, never read)
            return value is None or value.opname not in ("LOAD_ATTR", "LOAD_METHOD") or \
                value.argval not in ("stderr", "stdout")
    return False


_FRESH_BUFFERS = frozenset({"StringIO", "BytesIO"})


_CACHE: dict[tuple[int, int], tuple[types.CodeType, bool]] = {}
_INSTRUCTIONS: dict[int, tuple[types.CodeType, list, dict]] = {}


def _instructions(code: types.CodeType) -> tuple[types.CodeType, list, dict]:
    known = _INSTRUCTIONS.get(id(code))
    if known is None or known[0] is not code:
        listed = list(dis.get_instructions(code))
        known = (code, listed, {x.offset: i for i, x in enumerate(listed)})
        if len(_INSTRUCTIONS) > 2000:
            _INSTRUCTIONS.clear()
        _INSTRUCTIONS[id(code)] = known
    return known


def _call_writes_a_file(code: types.CodeType, lasti: int) -> bool:
    """Does the call at byte offset ``lasti`` (the user's ``print``) write to a buffer
    that may be read back (not ``file=io.StringIO()`` made for this call alone)?"""
    known = _instructions(code)
    at = next((known[2][o] for o in range(lasti, lasti - 16, -2) if o in known[2]), None)
    # (a frame in a call shows the offset of the CALL's last inline cache entry)
    return at is None or known[1][at].opname not in ("CALL", "CALL_KW") or \
        _to_file(known[1], at, code.co_consts)


def message_only(code: types.CodeType, lasti: int) -> bool | None:
    """Is the value the instruction at byte offset ``lasti`` of ``code`` is making (text,
    or a number being formatted into text) only ever a message?  False where unsure; None
    where it is an item of the comprehension ``code`` runs (``_comprehension_of_message``
    asks its caller)."""
    key = (id(code), lasti)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is code:
        return hit[1]
    known = _instructions(code)
    at = known[2].get(lasti)
    answer = False if at is None else _follow(known[1], at, _Guarded(code))
    if len(_CACHE) > 20000:
        _CACHE.clear()
    _CACHE[key] = (code, answer)
    return answer


def _comprehension_of_message(frame: Any) -> bool:
    """Is every item of the comprehension ``frame`` runs only part of a message?  A list
    comprehension's list, as its caller's call of it pushes it, must be only a message;
    a generator must be consumed by ``sep.join(<the generator>)`` called from the frame
    that made it (``frame.f_back``, which resumed it from inside the join: no other code
    sees the items), whose text must be only a message."""
    caller = frame.f_back
    if caller is None or frame.f_code.co_name not in _COMPREHENSIONS:
        return False
    code = caller.f_code
    known = _instructions(code)
    at = next((known[2][o] for o in range(caller.f_lasti, caller.f_lasti - 16, -2)
               if o in known[2]), None)
    ins = known[1]
    if at is None or ins[at].opname != "CALL":
        return False
    made = at  # the call making the list (or the generator)
    if frame.f_code.co_name == "<genexpr>":
        if ins[at].arg != 1 or _callee(ins, at) != "join":
            return False
        made = _before(ins, at)
    if made is None or ins[made].opname != "CALL" or ins[made].arg or \
            not _calls_comprehension(ins, made, frame.f_code):
        return False
    return _follow(ins, at, _Guarded(code)) is True


def _before(ins: list[dis.Instruction], at: int) -> int | None:
    """The instruction before ``ins[at]`` (``PRECALL`` skipped), if no jump lands between."""
    p = at - 1
    while p >= 0 and ins[p].opname == "PRECALL" and not ins[p].is_jump_target:
        p -= 1
    return None if p < 0 or ins[p + 1].is_jump_target else p


def _calls_comprehension(ins: list[dis.Instruction], at: int, comp: types.CodeType) -> bool:
    """Does the argument-less call at ``ins[at]`` call the function made from ``comp`` on
    the iterator right before it (``LOAD_CONST comp; MAKE_FUNCTION; <iterable>; GET_ITER;
    CALL 0``, each comprehension's code object used at one place)?"""
    p = _before(ins, at)
    if p is None or ins[p].opname != "GET_ITER":
        return False
    return any(ins[k].opname == "LOAD_CONST" and ins[k].argval is comp and
               ins[k + 1].opname == "MAKE_FUNCTION" for k in range(p - 1))


def frame_is_message(frame: Any) -> bool:
    """``message_only`` for the instruction a frame is running (the print routed by
    ``trace/pybuiltins.py`` and the logging module display their text: always a
    message)."""
    if getattr(_MESSAGE, "on", False):
        return True
    code = frame.f_code
    name = code.co_filename
    if name == "<frozen safetrace.print>":  # (the routed print: to the console only)
        kwargs = frame.f_locals.get("kwargs") or {}
        caller = frame.f_back
        return kwargs.get("file") in (None, sys.stdout, sys.stderr) or (
            caller is not None and not _call_writes_a_file(caller.f_code, caller.f_lasti))
    if "logging" in name.rsplit("/", 2)[-2:-1]:
        return True
    answer = message_only(code, frame.f_lasti)
    return _comprehension_of_message(frame) if answer is None else answer


_MESSAGE = threading.local()


@contextlib.contextmanager
def making_message() -> Any:
    """While a check's message callable runs (``torch._check(c, lambda: f"...")``): the
    text it makes is a message."""
    before = getattr(_MESSAGE, "on", False)
    _MESSAGE.on = True
    try:
        yield
    finally:
        _MESSAGE.on = before
