"""The user's own calls of ``int``, ``float``, ``min``, ``max``, ``len``, ``print`` and
``math.sqrt/exp/log/log2/log10`` keep sizes symbolic while they are exported.

CPython requires ``__int__`` / ``__float__`` to return a real ``int`` / ``float`` (an int
subclass is copied) and ``__len__`` an int, and ``min``/``max`` compare, so ``int(n * 0.7)``
or ``max(0, n - 2)`` of a symbolic size could only specialize the size to the values that
give the example's result.  torch.export's strict mode keeps such values symbolic by
rewriting bytecode; we do the smallest such rewrite: for the export's duration, each direct
call ``int(...)``, ``len(...)`` ... and each load of the global ``math`` in the user's
functions (the traced callable, the methods of the model's classes, the functions of their
modules and the user functions those call by global name; never torch's, safetrace's or
the standard library's) is redirected to ``__safetrace_int__``, ``__safetrace_len__`` ...
(``trace/pybuiltins.py``) or ``__safetrace_math__``.  Those give ``trunc(e)`` of a
symbolic float, the size itself for a symbolic int, ``float(e)`` as a symbolic float, a
Min/Max expression, a float expression for ``math.sqrt(n)``, eager's answer for
``isinstance(n, int)`` and ``type(n)``, and are exactly the builtins for everything else.
Only the operand of a ``LOAD_GLOBAL`` changes (same length, same line table), so
``dtype=int`` and ``n.__class__`` are untouched.
Nothing in ``builtins`` or ``math`` is replaced: other threads, torch's library code and
torch's caches see the real functions.  The export session (``trace/session.py``)
installs the rewritten code objects and puts the originals back when the export ends.
"""

from __future__ import annotations

import builtins
import math
import operator
import sys
import types
from typing import Any, Callable

from safetrace.meta.active import ACTIVE
from safetrace.meta.symtypes import TorchSymBool, TorchSymFloat, TorchSymInt
from safetrace.trace.proxy import Proxy
from safetrace.trace.pybuiltins import ROUTED
from safetrace.trace.rewrite import MODULE_NAMES, NAMES, SOURCE, SOURCE_CLEARS, SUPPORTED, \
    original_code, reads_class, rewrite, user_code
from safetrace.trace.usercode import functions, kept_search, same_search
import safetrace.symbolic.floats as F
from safetrace.symbolic import SymBool, SymFloat, SymInt, make_float, make_int
from safetrace.symbolic.canon import indicator


def _ours(x: Any) -> bool:
    return isinstance(x, (SymInt, SymFloat)) and x.env is ACTIVE.env and ACTIVE.env is not None


def sym_int(*args: Any, **kwargs: Any) -> Any:
    """``int(x)``: symbolic for a size or a float of sizes of the export in progress, for
    a condition on sizes (``int(a == b)``: 1 or 0 as an exact integer expression, no
    guard), and for a 0-d integer tensor of known size value (``int(torch.tensor(n // 2
    + 1))``: that value, as its ``.item()`` gives; ``Tensor.__int__`` must return a real
    int, which would specialize it)."""
    if len(args) == 1 and not kwargs:
        x = args[0]
        if type(x) is Proxy and (value := x.st_value) is not None:
            x = value
        if _ours(x):
            return x if isinstance(x, SymInt) else x.__trunc__()
        if isinstance(x, SymBool) and x.env is ACTIVE.env and x.env is not None:
            e = indicator(x.expr)
            if e is not None:
                return make_int(e, x.env)
    return int(*args, **kwargs)


def sym_float(*args: Any, **kwargs: Any) -> Any:
    """``float(x)``: a symbolic float for a size (or float of sizes) being exported."""
    if len(args) == 1 and not kwargs and _ours(args[0]):
        return SymFloat._of(args[0], args[0].env)
    return float(*args, **kwargs)


def _as_eager(obj: Any) -> Any:
    """What eager Python holds where the export holds size value `obj` (a sample of its
    type: int, float or bool), or None when `obj` is no size of the export in progress."""
    if isinstance(obj, (SymInt, SymFloat, SymBool)) and obj.env is ACTIVE.env and \
            ACTIVE.env is not None:
        return 0 if isinstance(obj, SymInt) else 0.0 if isinstance(obj, SymFloat) else False
    return None


def sym_isinstance(obj: Any, classinfo: Any) -> bool:
    """``isinstance(n, int)``: True for a size of the export in progress, as in eager (False
    took the other branch of ``if isinstance(size, int):``, a silently different program);
    ``numbers.Integral`` too, ``float`` for a float of sizes, ``bool`` for a condition on
    sizes, and False for ``torch.SymInt`` (an int in eager)."""
    sample = _as_eager(obj)
    return isinstance(obj if sample is None else sample, classinfo)


def sym_type(*args: Any, **kwargs: Any) -> Any:
    """``type(n)``: ``int`` for a size of the export in progress (``float``, ``bool`` for a
    float of sizes and a condition on them), as in eager (``type(n) is int`` was False);
    every other call is ``type``'s own."""
    if len(args) == 1 and not kwargs:
        sample = _as_eager(args[0])
        if sample is not None:
            return type(sample)
    return type(*args, **kwargs)


def _math_fn(op: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def fn(x: Any, *rest: Any) -> Any:
        if _ours(x) and not rest:
            f = x.expr if isinstance(x, SymFloat) else F.fun("float", x.expr)
            return make_float(F.fun(op, f), x.env)
        if _ours(x) and op == "flog" and len(rest) == 1:  # math.log(x, base)
            return fn(x) / (fn(rest[0]) if _ours(rest[0]) else original(rest[0]))
        return original(x, *rest)

    fn.__name__ = fn.__qualname__ = original.__name__
    fn.__doc__ = original.__doc__
    return fn


def _math_pow(x: Any, y: Any) -> Any:
    """``math.pow(n, k)`` of a size and a whole exponent: ``float(n) ** k`` as a float
    expression (a fractional exponent of a negative base raises in math.pow but not in
    ``**``: that stays math's own, deciding at the example)."""
    if _ours(x) and not _ours(y) and isinstance(y, (int, float)) and float(y).is_integer():
        return sym_float(x) ** float(y)
    return math.pow(x, y)


_math_pow.__name__ = _math_pow.__qualname__ = "pow"
_math_pow.__doc__ = math.pow.__doc__
_MATH = {f"f{name}": getattr(math, name) for name in ("sqrt", "exp", "log", "log2", "log10")}
_MATH_ROUTED = {**{op: _math_fn(op, fn) for op, fn in _MATH.items()}, "fpow": _math_pow}


def _eager_class(sample: Any) -> property:
    """``_st_class`` of a symbolic value while the user's code reads classes: eager's
    class (``int``) to the user's code for a value of the export in progress, the real
    class to torch's and safetrace's."""
    eager = type(sample)

    def get(self: Any) -> type:
        if self.env is ACTIVE.env and ACTIVE.env is not None and \
                user_code(sys._getframe(1).f_code):
            return eager
        return type(self)

    return property(get)


_CLASS_PATCHES = [(cls, "_st_class", _eager_class(sample)) for cls, sample in
                  ((TorchSymInt, 0), (TorchSymFloat, 0.0), (TorchSymBool, False))]


def _plain_builtins(g: dict) -> bool:
    """The function's redirected names are the builtins (no module-level name of its own
    shadows one; ``math`` is the math module) and its builtins are the interpreter's
    (where ours are added)."""
    b = g.get("__builtins__", builtins)
    if b is not builtins and b is not _BUILTINS_DICT:
        return False
    if g.get("math", math) is not math:
        return False
    shadowing = g.keys() & _SHADOWABLE  # (usually none: one pass in C)
    return not shadowing or all(g[name] is _BUILTINS_DICT[name] for name in shadowing)


_BUILTINS_DICT = vars(builtins)
_SHADOWABLE = frozenset(name for name in NAMES if name not in MODULE_NAMES)


class _RoutedMath(types.ModuleType):
    """``math`` as the user's rewritten code sees it: sqrt/exp/log/log2/log10 of a size and
    pow of a size to a whole power are float expressions; every other name is math's own."""

    def __getattr__(self, name: str) -> Any:
        return getattr(math, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # never called (``math(...)`` raises as the module does); being callable makes
        # torch.compile on another thread, reaching a function whose code an export has
        # rewritten at that moment, trace ``math.sqrt`` through it instead of failing on
        # a builtin it takes for a constant
        raise TypeError("'module' object is not callable")


_ROUTED_MATH = _RoutedMath("math")
for _fn in _MATH_ROUTED.values():
    setattr(_ROUTED_MATH, _fn.__name__, _fn)

# The names stay in builtins for good: code rewritten during an export may still run
# later (a generator made during the trace), and outside an export each one is exactly the
# builtin it stands for.  Nothing that exists in builtins is replaced.
for _name, _value in {"__safetrace_int__": sym_int, "__safetrace_float__": sym_float,
                      "__safetrace_isinstance__": sym_isinstance,
                      "__safetrace_type__": sym_type,
                      "__safetrace_math__": _ROUTED_MATH, **ROUTED}.items():
    setattr(builtins, _name, _value)
# ``import math`` inside a user's function imports this name (``rewrite``): the routed module
sys.modules.setdefault("__safetrace_math__", _ROUTED_MATH)


def code_patches(model: Any, fn: Any, walk: list | None = None) -> list[tuple[Any, str, Any]]:
    """``(function, "__code__", rewritten code)`` for each of the user's functions an export
    of ``fn`` may run that calls a redirected name: installed and restored by the export
    session (counted, so two exports of one model at once share them).

    The answer for one list of functions is kept while every function has the code it
    had then and every module namespace of theirs still leaves the builtins alone."""
    if not SUPPORTED:
        return []
    # the last export of the same modules' answer, while what it was made from is the same
    # (usercode.same_search) and so is this table's own entry: no search at all
    facts = getattr(walk, "facts", None)
    last = facts.get(_LAST) if facts is not None else None
    if last is not None and same_search(fn, walk, last[0]):
        fs = last[0][4][2]
        hit = last[1]
        if _PATCHES.get(id(fs)) is hit and \
                all(map(operator.is_, map(_CODE_OF, fs), hit[1])) and \
                tuple(map(_plain_builtins, hit[2])) == hit[3] and hit[6] == SOURCE_CLEARS[0]:
            return hit[4]
    fs, cached = functions(model, fn, walk)
    hit = _PATCHES.get(id(fs)) if cached else None
    if hit is not None and hit[0] is fs and \
            all(map(operator.is_, map(_CODE_OF, fs), hit[1])) and \
            tuple(map(_plain_builtins, hit[2])) == hit[3]:
        if hit[6] != SOURCE_CLEARS[0]:  # (the table of originals was cleared since)
            SOURCE.update((id(new), (new, hit[5][id(new)])) for _, attr, new in hit[4]
                           if attr == "__code__")
        _keep_last(fn, walk, fs, hit)
        return hit[4]
    out = []
    plain: dict[int, bool] = {}  # id(globals) -> _plain_builtins (a module's functions share one)
    spaces: list[dict] = []  # the module namespaces of the functions to rewrite
    source: dict[int, types.CodeType] = {}
    for f in fs:
        code = original_code(f)
        if not out or out[0][1] != "_st_class":
            if reads_class(code):
                out[:0] = _CLASS_PATCHES
        new = rewrite(code)
        if new is code:
            continue
        g = f.__globals__
        ok = plain.get(id(g))
        if ok is None:
            ok = plain[id(g)] = _plain_builtins(g)
            spaces.append(g)
        if ok:
            if len(SOURCE) > 20000:
                SOURCE.clear()
                SOURCE_CLEARS[0] += 1
            SOURCE[id(new)] = (new, code)
            source[id(new)] = code
            out.append((f, "__code__", new))
    if cached and all(map(operator.is_, map(_CODE_OF, fs), map(original_code, fs))):
        # (kept only when read with no export holding them rewritten: the codes are the
        # functions' own, which the next export compares against)
        if len(_PATCHES) > 1000:
            _PATCHES.clear()
        _PATCHES[id(fs)] = hit = (fs, [f.__code__ for f in fs], spaces,
                                  tuple(plain[id(g)] for g in spaces), out, source,
                                  SOURCE_CLEARS[0])
        _keep_last(fn, walk, fs, hit)
    return out


def _keep_last(fn: Any, walk: Any, fs: list, hit: tuple) -> None:
    """Keep with the walk's facts what ``code_patches`` checks to give `hit`'s patches
    again at the next export of the same modules without a search (where the search's
    answer is one ``usercode.same_search`` can vouch for)."""
    facts = getattr(walk, "facts", None)
    if facts is not None:
        kept = kept_search(fn, walk, fs)
        if kept is not None:
            facts[_LAST] = (kept, hit)
        else:
            facts.pop(_LAST, None)


_LAST = "pycalls.last"  # (code_patches' record, in a walk's facts)


_CODE_OF = operator.attrgetter("__code__")
# id(list of functions from functions) -> (that list, their codes then, their module
# namespaces, whether each left the builtins alone, the patches, id(rewritten) ->
# original, SOURCE_CLEARS then)
_PATCHES: dict[int, tuple] = {}
