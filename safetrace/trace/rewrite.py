"""The rewrite of the user's code for an export: each direct call of ``int``, ``float``,
``min``, ``max``, ``len``, ``print``, ``isinstance``, ``type`` and each load of the global
``math`` redirected to ``__safetrace_int__`` ... (``trace/pycalls.py`` says why and what
those do), and each absolute ``import math`` in a function to ``import __safetrace_math__``
(the routed module, in ``sys.modules``).  Only the operand of a ``LOAD_GLOBAL`` or
``IMPORT_NAME`` changes (same length, same line table).
Also: which code is the user's (not torch's, safetrace's or the standard library's), the
names a code object may load, and a rewritten code's original."""

from __future__ import annotations

import dis
import functools
import os
import sys
import sysconfig
import types

import torch

NAMES = {"int": "__safetrace_int__", "float": "__safetrace_float__",
          "min": "__safetrace_min__", "max": "__safetrace_max__", "len": "__safetrace_len__",
          "print": "__safetrace_print__", "math": "__safetrace_math__",
          "isinstance": "__safetrace_isinstance__", "type": "__safetrace_type__"}
MODULE_NAMES = {"math"}  # a module name: ``math.sqrt(n)`` loads it without a call
# CPython versions whose LOAD_GLOBAL oparg is (name index << 1) | push-null
SUPPORTED = sys.implementation.name == "cpython" and (3, 11) <= sys.version_info[:2] <= (3, 13)
_LOAD_GLOBAL = dis.opmap.get("LOAD_GLOBAL")
_EXTENDED_ARG = dis.opmap.get("EXTENDED_ARG")
_IMPORT_NAME = dis.opmap.get("IMPORT_NAME")
_LOAD_CONST = dis.opmap.get("LOAD_CONST")
_SKIP_DIRS = tuple(os.path.realpath(p) + os.sep for p in {
    os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(__file__)),
    sysconfig.get_paths()["stdlib"]})
# id(original) -> (original, rewritten or original): keyed by identity, since a code
# object hashes its whole content; the original is held so that its id stays its own
_REWRITTEN: dict[int, tuple[types.CodeType, types.CodeType]] = {}


def user_code(code: types.CodeType) -> bool:
    return user_code_file(code.co_filename)


@functools.lru_cache(maxsize=4096)
def user_code_file(f: str) -> bool:
    if f.startswith("<"):  # exec'd source (generated programs, notebooks) is the user's
        return not f.startswith("<frozen")
    return not os.path.realpath(f).startswith(_SKIP_DIRS)


def rewrite(code: types.CodeType) -> types.CodeType:
    """``code`` with its direct calls of int/float redirected (itself when it has none)."""
    done = _REWRITTEN.get(id(code))
    if done is not None and done[0] is code:
        return done[1]
    out = code
    consts = tuple(rewrite(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    names = list(code.co_names)
    raw = bytearray(code.co_code)
    changed = False
    wanted = {i: n for i, n in enumerate(names) if n in NAMES}
    if wanted:
        new_index: dict[int, int] = {}
        before: list = []  # the instructions so far (an import's level is two back)
        for ins in dis.get_instructions(code):
            if ins.opcode != _EXTENDED_ARG:
                before.append(ins)
            if ins.arg is None or ins.opcode != _LOAD_GLOBAL and ins.opcode != _IMPORT_NAME:
                continue
            if ins.opcode == _IMPORT_NAME:
                # ``import math`` in a function (a local name, not the global): an
                # absolute import (level 0) imports the routed module instead
                old = ins.arg
                if old not in wanted or wanted[old] not in MODULE_NAMES or \
                        not _absolute_import(before):
                    continue
            else:
                old = ins.arg >> 1
                # a called builtin pushes NULL first (the low bit); a module is loaded plainly
                if old not in wanted or not ins.arg & 1 and wanted[old] not in MODULE_NAMES:
                    continue
            if old not in new_index:
                new_index[old] = len(names)
                names.append(NAMES[wanted[old]])
            arg = new_index[old] if ins.opcode == _IMPORT_NAME else \
                (new_index[old] << 1) | (ins.arg & 1)
            at = ins.offset
            extended = at >= 2 and raw[at - 2] == _EXTENDED_ARG
            if arg > 0xFF and not (extended and arg <= 0xFFFF) or (at >= 4 and extended and
                                                                    raw[at - 4] == _EXTENDED_ARG):
                continue  # the operand does not fit in place: this call stays the builtin
            raw[at + 1] = arg & 0xFF
            if extended:
                raw[at - 1] = arg >> 8
            changed = True
    if changed or consts != code.co_consts:
        out = code.replace(co_code=bytes(raw) if changed else code.co_code,
                           co_names=tuple(names) if changed else code.co_names,
                           co_consts=consts)
    if len(_REWRITTEN) > 20000:  # generated programs come and go: keep the table bounded
        _REWRITTEN.clear()
    _REWRITTEN[id(code)] = (code, out)
    return out


def _absolute_import(before: list) -> bool:
    """Is the ``IMPORT_NAME`` last in `before` an absolute import (its level, pushed two
    instructions back, the constant 0)?  ``from .math import x`` is the user's own module."""
    return len(before) >= 3 and before[-3].opcode == _LOAD_CONST and \
        type(before[-3].argval) is int and before[-3].argval == 0


def code_names(code: types.CodeType) -> tuple[str, ...]:
    """The names ``code`` and its nested functions may load as globals or read as
    attributes (cached; in no fixed order)."""
    hit = _GLOBAL_NAMES.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names.update(code_names(c))
    out = tuple(names)
    if len(_GLOBAL_NAMES) > 20000:
        _GLOBAL_NAMES.clear()
    _GLOBAL_NAMES[id(code)] = (code, out)
    return out


_GLOBAL_NAMES: dict[int, tuple[types.CodeType, tuple[str, ...]]] = {}
_MATCH_CLASS = dis.opmap.get("MATCH_CLASS")


def reads_class(code: types.CodeType) -> bool:
    """Does ``code`` (or a function nested in it) read ``.__class__`` or match a class
    pattern (``case int():``), which ask a value its class without a call to route?"""
    hit = _CLASS_READS.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    found = "__class__" in code.co_names or _MATCH_CLASS is not None and any(
        ins.opcode == _MATCH_CLASS for ins in dis.get_instructions(code)) or any(
        reads_class(c) for c in code.co_consts if isinstance(c, types.CodeType))
    if len(_CLASS_READS) > 20000:
        _CLASS_READS.clear()
    _CLASS_READS[id(code)] = (code, found)
    return found


_CLASS_READS: dict[int, tuple[types.CodeType, bool]] = {}


def original_code(f: types.FunctionType) -> types.CodeType:
    """``f``'s own code, also while another export has it rewritten."""
    code = f.__code__
    source = SOURCE.get(id(code))
    return source[1] if source is not None and source[0] is code else code


# id(rewritten) -> (rewritten, original)
SOURCE: dict[int, tuple[types.CodeType, types.CodeType]] = {}
SOURCE_CLEARS = [0]  # how many times SOURCE was cleared (code_patches' answers re-add)
