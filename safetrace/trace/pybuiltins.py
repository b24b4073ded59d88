"""Python's ``min``, ``max``, ``len`` and ``print`` as the user's code calls them while it
is exported.

``max(0, a.size(1) - b.size(0))`` in user code would otherwise compare the two sizes (a
guard on the example's branch) and pin the result to one of them.  The builtins cannot be
overloaded by a class, and swapping them in ``builtins`` would change them for every thread
(and for torch's own caches, which record what ``builtins.len`` is when they are built).
Instead ``trace/pycalls.py`` redirects the user's own direct calls of these names to the
functions here for the export's duration.  They build a Min/Max expression (as
``torch.sym_min`` does; one of the arguments where the known facts decide, still without a
guard) when every argument is an int or a symbolic int and one of them is symbolic, and a
float Min/Max of two floats one of which is symbolic (``min(800 / h, 1333 / w)``);
``len(x)`` of a traced tensor is its symbolic first size and ``len(x.chunk(2))`` the
symbolic number of pieces (no guard); ``print`` inside a torch.cond branch or loop body is
refused (it would run once, at export).  Every other call (floats, keys, defaults, strings,
and every call on a thread that is not exporting) is the builtin's, unchanged.
"""

from __future__ import annotations

import builtins
import struct
from typing import Any, Callable

import torch

from safetrace import errors
from safetrace.rules.common import decided_max, decided_min
import safetrace.symbolic.floats as F
from safetrace.symbolic import SymFloat, SymInt
from safetrace.symbolic.canon import compare
from safetrace.trace.current import active_tracer
from safetrace.trace.mutation import storage_root
from safetrace.trace.pieces import Pieces
from safetrace.trace.proxy import Proxy
from safetrace.trace.source import short, stack_trace

_ORIGINAL: dict[str, Callable[..., Any]] = {"min": builtins.min, "max": builtins.max,
                                            "len": builtins.len, "print": builtins.print}
_real_len = builtins.len


def _sizes(items: Any) -> tuple[list, bool] | None:
    """The items as a list when they are ints, floats and symbolic ints and floats with at
    least one symbolic (bools excluded: ``min(True, n)`` keeps Python's bool result), and
    whether a float is among them."""
    symbolic = floats = False
    for v in items:
        c = v.__class__
        if c is int:
            continue
        if c is float:
            floats = True
        elif isinstance(v, SymInt):
            symbolic = True
        elif isinstance(v, SymFloat):
            symbolic = floats = True
        elif not isinstance(v, int) or isinstance(v, bool):
            return None
    return (list(items), floats) if symbolic else None


def _float_step(op: str) -> Callable[[Any, Any], Any]:
    """Python's ``min(a, b)`` / ``max(a, b)`` where a float is involved: ``a`` unless ``b`` is
    strictly smaller (larger), decided from the facts without a guard; undecided, two floats
    give a float Min/Max expression, and an int against a float (the result's type depends
    on the values) is the builtin's, which decides at the example with a guard."""
    original = _ORIGINAL[op]

    def step(a: Any, b: Any) -> Any:
        s = a if isinstance(a, (SymInt, SymFloat)) else b
        x, y = SymFloat._operand(a), SymFloat._operand(b)
        if not isinstance(s, (SymInt, SymFloat)) or x is None or y is None:
            return original(a, b)
        b_wins = s.env.decide(compare("lt" if op == "min" else "gt", y, x))
        if b_wins is None and F.is_float(x) and F.is_float(y):
            return SymFloat._make(F.fbin(f"f{op}", x, y), s.env)
        return original(a, b) if b_wins is None else (b if b_wins else a)

    return step


def _routed(name: str, combine: Callable[[Any, Any], Any],
            fcombine: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    original = _ORIGINAL[name]

    def routed(*args: Any, **kwargs: Any) -> Any:
        if _real_len(args) == 1 and not isinstance(args[0], (list, tuple)):
            args = (list(args[0]),)  # a generator is consumed once: keep its items
        items = args[0] if _real_len(args) == 1 else args
        if "key" in kwargs or _real_len(kwargs) > ("default" in kwargs):
            return original(*args, **kwargs)
        found = _sizes(items) if items else None
        if found is None:
            if items and _real_len(kwargs) == 0:
                if _one_valued(items):
                    return _tensor_fold(name, list(items))
                if _with_numbers(items):
                    return _tensor_fold(name, _checked_numbers(name, list(items)))
            return original(*args, **kwargs)
        sizes, floats = found
        step = fcombine if floats else combine
        acc = sizes[0]
        for v in sizes[1:]:
            acc = step(acc, v)
        return acc

    routed.__name__ = routed.__qualname__ = name
    routed.__doc__ = original.__doc__
    return routed


def _one_valued(items: Any) -> bool:
    """Traced tensors of one dtype and one static shape holding one element each: Python's
    ``max(a, b)`` of them compares their values (more elements: eager raises)."""
    first = items[0]
    if not isinstance(first, Proxy):
        return False
    meta = first.st_meta
    return all(isinstance(v, Proxy) and v.st_meta.dtype == meta.dtype and
               v.st_meta.ndim == meta.ndim and
               all(s.__class__ is int and s == 1 for s in v.st_meta.shape) for v in items)


def _tensor_fold(name: str, items: list) -> Any:
    """``max(a, b, ...)`` of one-element tensors (and numbers, ``_checked_numbers``) as
    Python computes it, without reading data: each next item replaces the result where it
    is strictly larger (smaller), so ties and NaN keep the earlier one, as the builtin does
    (torch.maximum would not); two numbers in a row compare as Python numbers."""
    acc = items[0]
    for v in items[1:]:
        if not isinstance(acc, Proxy) and not isinstance(v, Proxy):
            acc = _ORIGINAL[name](acc, v)
            continue
        wins = v > acc if name == "max" else v < acc
        acc = torch.where(wins, v, acc)
    for t in (acc, *items):  # eager returns one of them: a later write would alias (mutation.py)
        if isinstance(t, Proxy):
            storage_root(t.st_node).meta["st_picked"] = ("a tensor that Python's max()/min() "
                                                         "picked, or one of the tensors it picked among")
    return acc


def _with_numbers(items: Any) -> bool:
    """Traced tensors and Python numbers, at least one of each: ``max(x, 5)``."""
    tensors = numbers = 0
    for v in items:
        if isinstance(v, Proxy):
            tensors += 1
        elif v.__class__ in (int, float, bool):
            numbers += 1
        else:
            return False
    return tensors > 0 and numbers > 0


def _checked_numbers(name: str, items: list) -> list:
    """The items of ``max(x, 5)`` when one tensor can stand for Python's answer, which is
    the number or the tensor depending on the data: every tensor 0-d, all of one dtype, and
    each number of that dtype's kind (an int for integers, a float for floating point) and
    exactly held by it.  Else refused, with the tensor spelling of the call as the fix."""
    tensors = [v for v in items if isinstance(v, Proxy)]
    numbers = [v for v in items if not isinstance(v, Proxy)]
    meta = tensors[0].st_meta
    dtype, source = meta.dtype, short(stack_trace(3))
    why: str | None
    if any(t.st_meta.ndim or t.st_meta.dtype != dtype for t in tensors):
        why = ("its tensors are not all 0-d of one dtype, so the number and a tensor "
               "differ in shape or dtype")
    elif dtype.is_floating_point and all(n.__class__ in (int, float) for n in numbers):
        exact = _FLOAT_EXACT.get(dtype)
        why = None if exact is not None and all(exact(float(n)) for n in numbers) else (
            f"a number it may return is not held exactly by {dtype}")
        if why is None and any(n.__class__ is int for n in numbers):
            why = "an int it may return is not a floating-point value like the tensor"
    elif dtype in _INT_RANGES and all(n.__class__ is int for n in numbers):
        lo, hi = _INT_RANGES[dtype]
        why = None if all(lo <= n <= hi for n in numbers) else (
            f"a number it may return does not fit {dtype}")
    else:
        why = f"a number it may return is not of the kind of {dtype}"
    if why is not None:
        raise errors.builtin_minmax_number(name, why, source)
    return items


def _float_exact(code: str) -> Callable[[float], bool]:
    def exact(v: float) -> bool:
        if v != v or v in (_INF, -_INF):
            return True
        try:
            return struct.unpack(code, struct.pack(code, v))[0] == v
        except OverflowError:
            return False

    return exact


def _bfloat16_exact(v: float) -> bool:
    """bfloat16 is float32 with the low 16 bits of the fraction cut off."""
    if not _float_exact("<f")(v):
        return False
    return v != v or struct.unpack("<I", struct.pack("<f", v))[0] & 0xFFFF == 0


_INF = float("inf")
_FLOAT_EXACT: dict[torch.dtype, Callable[[float], bool]] = {
    torch.float64: lambda v: True, torch.float32: _float_exact("<f"),
    torch.float16: _float_exact("<e"), torch.bfloat16: _bfloat16_exact}
_INT_RANGES = {d: (-(1 << (b - 1)), (1 << (b - 1)) - 1) for d, b in
               ((torch.int8, 8), (torch.int16, 16), (torch.int32, 32), (torch.int64, 64))}
_INT_RANGES[torch.uint8] = (0, 255)


def _len(obj: Any) -> Any:
    if isinstance(obj, (Proxy, Pieces)):
        if isinstance(obj, Pieces):
            return obj.symbolic_len()
        if obj.st_meta.ndim:
            return obj.st_meta.shape[0]
    return _ORIGINAL["len"](obj)


_len.__name__ = _len.__qualname__ = "len"
_len.__doc__ = _ORIGINAL["len"].__doc__


# print() runs the real builtin from a frame that counts as the caller's (a "<frozen ...>"
# file name: neither library code for symtypes, which then shows a size as the example's
# digits, as print in user code does, nor a user frame for error locations)
_PRINT_SOURCE = """
def _print(*args, **kwargs):
    tr = active_tracer()
    refusal = tr.scope.print_refusal if tr is not None else None
    if refusal is not None:
        raise refusal()
    real_print(*args, **kwargs)
"""
_print_ns: dict[str, Any] = {"active_tracer": active_tracer, "real_print": builtins.print}
exec(compile(_PRINT_SOURCE, "<frozen safetrace.print>", "exec"), _print_ns)
_print = _print_ns["_print"]
_print.__name__ = _print.__qualname__ = "print"
_print.__doc__ = _ORIGINAL["print"].__doc__

# the name each builtin is redirected to in the user's code -> its exporting version
ROUTED = {"__safetrace_min__": _routed("min", decided_min, _float_step("min")),
          "__safetrace_max__": _routed("max", decided_max, _float_step("max")),
          "__safetrace_len__": _len, "__safetrace_print__": _print}
