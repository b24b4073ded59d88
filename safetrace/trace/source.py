"""Finding the user's source line for a traced call (cached per code location)."""

from __future__ import annotations

import linecache
import os
import sys
import sysconfig
from types import FrameType, TracebackType
from typing import Any

import torch

from safetrace.trace.current import active_tracer

_PACKAGE_DIR = os.path.dirname(os.path.dirname(__file__))  # safetrace/ (as code objects name it)
_SKIP_DIRS = (
    os.path.dirname(torch.__file__) + os.sep,
    _PACKAGE_DIR + os.sep,
)
_INSTALLED = tuple(sorted({os.path.join(p, "") for k, p in sysconfig.get_paths().items()
                           if k in ("stdlib", "platstdlib", "purelib", "platlib")}))
_USER_FILES = (os.path.join(_PACKAGE_DIR, "demo.py"),)  # the tour
# (file, function name, first line, line table of the code, instruction offset, innermost
# module call (fqn, type name) or None) -> the stack_trace text of that place (read inline
# by memo.py's replays as well).  The code's parts the text is made of, not the code
# object: Python 3.11 hashes a code object anew at every lookup (its name, constants,
# nested code: ~1,500 instructions for nn.Module._call_impl's); these are hashed once.
TRACES: dict[tuple, str] = {}
# a code object's file name -> True when it belongs to torch or safetrace (memo.py reads
# it too; a function of the name alone, and a str keeps its hash)
LIBRARY_FILES: dict[str, bool] = {}


# callable -> (its name, "<its class name>.<its name>"): torch.export's torch_fn parts
FN_NAMES: dict[Any, tuple[str, str]] = {}


def fn_name(func: Any) -> tuple[str, str]:
    """The parts of node.meta["torch_fn"] for `func` (("linear", "builtin_function_or_method
    .linear"), ("add", "method_descriptor.add")), as torch.export's tracer writes them."""
    name = getattr(func, "__name__", None) or type(func).__name__
    return name, f"{type(func).__name__}.{name}"


# (callable, n) -> node.meta["torch_fn"] of its n-th call in an export (the tracer's
# mode reads it for every op)
FN_TEXTS: dict[tuple[Any, int], tuple[str, str]] = {}


def fn_text(func: Any, n: int) -> tuple[str, str]:
    """node.meta["torch_fn"] of the `n`-th call of `func` in an export, kept in FN_TEXTS."""
    name = FN_NAMES.get(func)
    if name is None:
        name = FN_NAMES[func] = fn_name(func)
    if len(FN_TEXTS) > 100_000:
        FN_TEXTS.clear()
    text = FN_TEXTS[func, n] = (f"{name[0]}_{n}", name[1])
    return text


def torch_fn(calls: dict, func: Any) -> tuple[str, str]:
    """node.meta["torch_fn"] of one more call of `func`; `calls` counts an export's calls."""
    n = calls[func] = calls.get(func, 0) + 1
    return FN_TEXTS.get((func, n)) or fn_text(func, n)


def user_frame(depth: int = 2) -> FrameType | None:
    """The innermost frame that belongs to neither torch nor safetrace."""
    f: FrameType | None = sys._getframe(depth)
    library = LIBRARY_FILES
    while f is not None:
        name = f.f_code.co_filename
        skip = library.get(name)
        if skip is None:
            skip = library[name] = _is_library(name)
        if not skip:
            return f
        f = f.f_back
    return None


def _is_library(fn: str) -> bool:
    """Whether code in file `fn` belongs to torch or safetrace (not the user's)."""
    return (fn.startswith(_SKIP_DIRS) and fn not in _USER_FILES) or fn.startswith("<frozen")


_PLUMBING = tuple(os.path.join("torch", n) for n in ("overrides.py", "_tensor.py"))


def library_frame(depth: int = 2) -> str:
    """``torch/nn/modules/transformer.py:1245 `...``` when the innermost caller outside
    safetrace is torch's own code (a data read inside a torch helper), else ''."""
    f: FrameType | None = sys._getframe(depth)
    safetrace_dir = _SKIP_DIRS[1]
    while f is not None and ((f.f_code.co_filename.startswith(safetrace_dir) and
                              f.f_code.co_filename not in _USER_FILES) or
                             f.f_code.co_filename.endswith(_PLUMBING)):
        f = f.f_back
    if f is None or not f.f_code.co_filename.startswith(_SKIP_DIRS[0]):
        return ""
    name = f.f_code.co_filename[len(os.path.dirname(_SKIP_DIRS[0].rstrip(os.sep))) + 1:]
    code = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f"{name}:{f.f_lineno}{quoted(code)} (in {f.f_code.co_name})"


def stack_trace(depth: int = 2, stack: Any = ...) -> str:
    """``File "model.py", line 12, in forward\n    return x + y`` for the user's frame; when
    the call came from a torch layer (a BatchNorm inside an ``nn.Sequential``), a third
    line names it: ``    (in layer `1`, BatchNorm1d)``.  `stack`: the module calls in
    progress (the active tracer's ``nn_stack`` when not given)."""
    # (user_frame's walk, inline: this runs once per recorded op)
    f: FrameType | None = sys._getframe(depth)
    library = LIBRARY_FILES
    while f is not None:
        name = f.f_code.co_filename
        skip = library.get(name)
        if skip is None:
            skip = library[name] = _is_library(name)
        if not skip:
            break
        f = f.f_back
    if f is None:
        return ""
    if stack is ...:
        stack = getattr(active_tracer(), "nn_stack", None)
    innermost = next(reversed(stack.values())) if stack else None
    # (keyed by the instruction: a frame's f_lineno walks its code's line table)
    fc = f.f_code
    key = (fc.co_filename, fc.co_name, fc.co_firstlineno, fc.co_linetable, f.f_lasti,
           innermost)
    text = TRACES.get(key)
    if text is None:
        line = f.f_lineno
        code = linecache.getline(f.f_code.co_filename, line).strip()
        name = f.f_code.co_filename
        text = f'File "{name}", line {line}, in {f.f_code.co_name}\n    {code}'
        layer = _layer_text(innermost) if innermost else ""
        if layer:
            text += f"\n    {_LAYER_PREFIX}{layer})"
        if len(TRACES) > 100_000:
            TRACES.clear()
        TRACES[key] = text
    return text


_LAYER_PREFIX = "(in layer "


def _layer_text(innermost: tuple[str, str]) -> str:
    """`` `1`, BatchNorm1d`` for the innermost module call (fqn, type name) when it is one
    of torch's layers, else '' (cached)."""
    text = _LAYERS.get(innermost)
    if text is None:
        fqn, type_name = innermost
        text = f"`{fqn}`, {type_name.rpartition('.')[2]}" if type_name.startswith(
            "torch.") else ""
        if len(_LAYERS) > 100_000:
            _LAYERS.clear()
        _LAYERS[innermost] = text
    return text


_LAYERS: dict[tuple[str, str], str] = {}


def layer_of(trace: object) -> str:
    """The layer line of a stack_trace string (`` `1`, BatchNorm1d``), or ''."""
    if not isinstance(trace, str):
        return ""
    _, _, last = trace.rpartition("\n")
    last = last.strip()
    return last[len(_LAYER_PREFIX):-1] if last.startswith(_LAYER_PREFIX) else ""


def parse(trace: object) -> tuple[str, str, str, str] | None:
    """(path, line, function, code) of a stack_trace string, or None."""
    if not isinstance(trace, str) or not trace:
        return None
    head, _, code = trace.partition("\n")
    try:
        path = head.split('"')[1]
        line = head.split("line ")[1].split(",")[0]
    except IndexError:
        return None
    return path, line, head.split(" in ")[-1], code.partition("\n")[0].strip()


def quoted(code: str) -> str:
    """`` `code` `` after a location; '' when the line is unknown (code run by exec() or
    typed at a prompt has no source line in linecache)."""
    return f" `{code}`" if code else ""


def raised_at(tb: TracebackType | None, libraries: bool = False) -> str:
    """``model.py:12 `for i in range(n):``` for the innermost user frame of a traceback
    (neither torch's nor safetrace's; with `libraries`, neither Python's standard library
    nor an installed package: ``json.dumps`` raised in the user's call), '' when there is
    none."""
    found = ""
    skip = _SKIP_DIRS + _INSTALLED if libraries else _SKIP_DIRS
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        if not fn.startswith(skip) and not fn.startswith("<frozen"):
            code = linecache.getline(fn, tb.tb_lineno).strip()
            found = f"{os.path.basename(fn)}:{tb.tb_lineno}{quoted(code)}"
        tb = tb.tb_next
    return found


def short(trace: str) -> str:
    """``model.py:12 `return x + y``` from a stack_trace string."""
    p = parse(trace)
    if p is None:
        return trace or "<unknown location>"
    layer = layer_of(trace)
    return f"{os.path.basename(p[0])}:{p[1]}{quoted(p[3])}" + (
        f" (in layer {layer})" if layer else "")


def from_text(trace: object) -> str:
    """`` (from `y @ z` at model.py:12)`` for a stack_trace string ('' when unknown); without
    a source line: `` (from model.py:12)``."""
    p = parse(trace)
    if p is None:
        return ""
    where = f"{os.path.basename(p[0])}:{p[1]}"
    layer = layer_of(trace)
    where += f", in layer {layer}" if layer else ""
    return f" (from `{p[3]}` at {where})" if p[3] else f" (from {where})"


def location(trace: str) -> str:
    """``File: path:line in fn, code: text`` (the grouping comment of printed graphs)."""
    p = parse(trace)
    if p is None:
        return trace.partition("\n")[0] if trace else ""
    return f"File: {p[0]}:{p[1]} in {p[2]}, code: {p[3]}"
