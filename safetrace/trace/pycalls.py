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
import collections
import dis
import functools
import math
import operator
import os
import sys
import sysconfig
import types
import weakref
from typing import Any, Callable

import torch

from safetrace.meta.active import ACTIVE
from safetrace.meta.symtypes import TorchSymBool, TorchSymFloat, TorchSymInt
from safetrace.trace.pybuiltins import ROUTED
import safetrace.symbolic.floats as F
from safetrace.symbolic import SymBool, SymFloat, SymInt, make_float, make_int
from safetrace.symbolic.canon import indicator

_NAMES = {"int": "__safetrace_int__", "float": "__safetrace_float__",
          "min": "__safetrace_min__", "max": "__safetrace_max__", "len": "__safetrace_len__",
          "print": "__safetrace_print__", "math": "__safetrace_math__",
          "isinstance": "__safetrace_isinstance__", "type": "__safetrace_type__"}
_MODULE_NAMES = {"math"}  # a module name: ``math.sqrt(n)`` loads it without a call
# CPython versions whose LOAD_GLOBAL oparg is (name index << 1) | push-null
_SUPPORTED = sys.implementation.name == "cpython" and (3, 11) <= sys.version_info[:2] <= (3, 13)
_LOAD_GLOBAL = dis.opmap.get("LOAD_GLOBAL")
_EXTENDED_ARG = dis.opmap.get("EXTENDED_ARG")
_SKIP_DIRS = tuple(os.path.realpath(p) + os.sep for p in {
    os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(__file__)),
    sysconfig.get_paths()["stdlib"]})
# classes of these packages are never the user's ("torchvision" is: only the root counts)
_LIBRARY_ROOTS = frozenset(("torch", "safetrace", "builtins"))
# id(original) -> (original, rewritten or original): keyed by identity, since a code
# object hashes its whole content; the original is held so that its id stays its own
_REWRITTEN: dict[int, tuple[types.CodeType, types.CodeType]] = {}


def _ours(x: Any) -> bool:
    return isinstance(x, (SymInt, SymFloat)) and x.env is ACTIVE.env and ACTIVE.env is not None


def sym_int(*args: Any, **kwargs: Any) -> Any:
    """``int(x)``: symbolic for a size or a float of sizes of the export in progress, and
    for a condition on sizes (``int(a == b)``: 1 or 0 as an exact integer expression, no
    guard)."""
    if len(args) == 1 and not kwargs:
        x = args[0]
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


def _user_code(code: types.CodeType) -> bool:
    return _user_code_file(code.co_filename)


@functools.lru_cache(maxsize=4096)
def _user_code_file(f: str) -> bool:
    if f.startswith("<"):  # exec'd source (generated programs, notebooks) is the user's
        return not f.startswith("<frozen")
    return not os.path.realpath(f).startswith(_SKIP_DIRS)


def _rewrite(code: types.CodeType) -> types.CodeType:
    """``code`` with its direct calls of int/float redirected (itself when it has none)."""
    done = _REWRITTEN.get(id(code))
    if done is not None and done[0] is code:
        return done[1]
    out = code
    consts = tuple(_rewrite(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    names = list(code.co_names)
    raw = bytearray(code.co_code)
    changed = False
    wanted = {i: n for i, n in enumerate(names) if n in _NAMES}
    if wanted:
        new_index: dict[int, int] = {}
        for ins in dis.get_instructions(code):
            if ins.opcode != _LOAD_GLOBAL or ins.arg is None:
                continue
            old = ins.arg >> 1
            # a called builtin pushes NULL first (the low bit); a module is loaded plainly
            if old not in wanted or not ins.arg & 1 and wanted[old] not in _MODULE_NAMES:
                continue
            if old not in new_index:
                new_index[old] = len(names)
                names.append(_NAMES[wanted[old]])
            arg = (new_index[old] << 1) | (ins.arg & 1)
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


def _functions(model: Any, fn: Any, walk: list | None = None) -> tuple[list, bool]:
    """The user's functions that the export may run, found from ``fn`` and the model: the
    methods of its classes (and their bases outside torch), functions stored on its
    modules, and what the modules defining those classes and ``fn`` hold (functions,
    classes, functions in module-level dicts/lists/tuples; closures and defaults).  What a
    class or a module holds is cached: an export walks only the model's instances.
    Gives the functions and whether that list is a cached answer (the same list object
    for as long as it holds)."""
    parts: list[tuple[list, list]] = []
    fresh = False  # a part found on the instances (not cached): the union is not either
    take = parts.append

    take(_of_function(fn))
    if isinstance(model, torch.nn.Module):
        classes: dict[int, type] = {}
        seen: set[int] = set()
        for _, m in walk if walk is not None else [("", m) for m in model.modules()]:
            if id(m) in seen:
                continue
            seen.add(id(m))
            classes.setdefault(id(type(m)), type(m))
            d = vars(m)
            plain = _PLAIN.get(id(m))  # (scanned before and found holding no code)
            if plain is not None and plain[0]() is m and len(d) == plain[1] and \
                    _unchanged(d, plain):
                continue
            layout = tuple(d)
            hit = _LAYOUTS.get(layout)
            keys, hooks = hit if hit is not None else _scanned_keys(layout)
            attrs = []
            if any(map(d.__getitem__, hooks)):  # (a hook is the user's function)
                attrs = [v for v in map(d.__getitem__, hooks) if v]
            frozen = True  # every value scanned can never hold code (kept in _PLAIN)
            for k in keys:
                v = d[k]
                t = type(v)
                if t in _ATOMS:  # (the common attributes, by exact type)
                    continue
                if t in _CONTAINERS:
                    # (a container of atoms holds no code: a conv's kernel_size, padding)
                    if v and not _ATOMS.issuperset(map(type, v.values() if t is dict or
                                                       t is collections.OrderedDict else v)):
                        attrs.append(v)
                    elif t is not tuple:  # (it may hold code later: scanned every export)
                        frozen = False
                elif issubclass(t, _CODE_HOLDERS) or hasattr(t, "__func__") or \
                        issubclass(t, (dict, list, tuple, set)) and v:
                    # (by type: what _collect can find code in; an isinstance test asks
                    # the object for __class__, slow on a transformers config)
                    attrs.append(v)
            if attrs:
                part = _collect(attrs)
                if part[0] or part[1]:
                    take(part)
                    fresh = True
            elif frozen:
                _keep_plain(m, d, keys, hooks)
        for cls in classes.values():
            take(_of_class(cls))
    # what the parts found so far reach through the modules defining their classes: a
    # cached closure, while each of its modules' answers is the one it was made from
    key = tuple(map(id, parts))
    hit = None if fresh else _UNIONS.get(key)
    if hit is not None and all(map(operator.is_, hit[0], parts)) and \
            all(_of_module(m) is part for m, part in hit[1]):
        return hit[2], True
    first = list(parts)
    closure: list[tuple[types.ModuleType, tuple[list, list]]] = []
    modules: dict[str, types.ModuleType] = {}
    for part in parts:
        for m in part[1]:
            modules.setdefault(m.__name__, m)
    done: set[str] = set()
    while len(done) < len(modules):  # (classes defined in a module add their modules)
        for name in [n for n in modules if n not in done]:
            done.add(name)
            part = _of_module(modules[name])
            closure.append((modules[name], part))
            parts.append(part)
            for m in part[1]:
                modules.setdefault(m.__name__, m)
    found: dict[int, types.FunctionType] = {}
    for part in parts:
        for f in part[0]:
            found[id(f)] = f
    out = list(found.values())
    if not fresh:
        if len(_UNIONS) > 1000:
            _UNIONS.clear()
        _UNIONS[key] = (first, closure, out)  # (parts held: their ids stay theirs)
    return out, not fresh


_UNIONS: dict[tuple, tuple[list, list, list]] = {}
# what may hold code that _collect finds (besides containers and types with __func__)
_CODE_HOLDERS = (types.FunctionType, types.MethodType, type, staticmethod, classmethod,
                 property)


# nn.Module's own bookkeeping: tensors and submodules (walked on their own), never code
_MODULE_STATE = frozenset(("_parameters", "_buffers", "_modules", "_non_persistent_buffers_set",
                           "_state_dict_hooks", "_state_dict_pre_hooks",
                           "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"))
_MODULE_DICT = torch.nn.Module().__dict__
# nn.Module's own attributes that may hold the user's code: its hook dicts
_HOOK_KEYS = frozenset(k for k, v in _MODULE_DICT.items()
                       if k not in _MODULE_STATE and isinstance(v, dict))
# tuple(a module's __dict__ keys) -> (the keys a scan reads one by one, the hook dicts'):
# modules of one class share one layout, filtered once
_LAYOUTS: dict[tuple, tuple[tuple, tuple]] = {}


def _scanned_keys(layout: tuple) -> tuple[tuple, tuple]:
    """The keys of a module's ``__dict__`` (its `layout`) that may hold code: (the user's
    attributes and any of nn.Module's that is not one of its own dicts as they are made,
    its hook dicts).  nn.Module's state dicts (tensors and submodules, walked on their
    own) are skipped."""
    if len(_LAYOUTS) > 10_000:
        _LAYOUTS.clear()
    hit = _LAYOUTS[layout] = (
        tuple(k for k in layout if k not in _MODULE_STATE and k not in _HOOK_KEYS),
        tuple(k for k in layout if k in _HOOK_KEYS))
    return hit


def _keep_plain(m: Any, d: dict, keys: tuple, hooks: tuple) -> None:
    """Remember that module `m` holds no code of its own: its ``__dict__`` has `keys` (of
    its layout) bound to atoms or tuples of atoms, which cannot change in place.  The next
    export skips its scan while it has as many attributes, each of those the same object,
    and no hook (a weak reference: the entry goes when the module does)."""
    if len(_PLAIN) > 10_000:
        _PLAIN.clear()
    key = id(m)
    try:
        ref = weakref.ref(m, lambda _, key=key: _PLAIN.pop(key, None))
    except TypeError:  # (a class without weak references: scanned every export)
        return
    _PLAIN[key] = (ref, len(d), keys, hooks, tuple(map(d.__getitem__, keys)))


def _unchanged(d: dict, plain: tuple) -> bool:
    """Whether a module kept by ``_keep_plain`` (its ``__dict__`` `d`, as many keys as
    then) still holds no code: each scanned key bound to the same object, no hook.  (Only
    nn.Module's own tables, never scanned, could give way to a new key unseen here.)"""
    try:  # (a key gone: KeyError)
        return all(map(operator.is_, map(d.__getitem__, plain[2]), plain[4])) and \
            not any(map(d.__getitem__, plain[3]))
    except KeyError:
        return False


# id(module) -> (a weak reference to it, its __dict__'s size, the keys scanned, its hook
# dicts' keys, the values scanned): modules found holding no code (_keep_plain)
_PLAIN: dict[int, tuple] = {}
# attribute types that never hold code, and containers (empty ones hold none)
_ATOMS = frozenset((bool, int, float, str, type(None), torch.Tensor, torch.nn.Parameter))
_CONTAINERS = frozenset((dict, list, tuple, set, collections.OrderedDict))
# id(class) -> (a weak reference to it, what it reaches); a plain dict read by id (a
# WeakKeyDictionary's get is a Python call making a reference each time)
_CLASSES: dict[int, tuple[weakref.ref, tuple[list, list]]] = {}
_MODULES: dict[str, tuple[int, tuple[list, list]]] = {}


def _of_function(fn: Any) -> tuple[list, list]:
    """What the traced callable reaches, cached per function while its module's namespace
    keeps its size (a bound method: its function; anything else is walked each time)."""
    f = getattr(fn, "__func__", fn)
    if not isinstance(f, types.FunctionType) or f is not fn and \
            getattr(fn, "__self__", None) is None:
        return _collect([fn])
    hit = _FUNCTIONS.get(id(f))
    if hit is None or hit[0]() is not f or hit[1] != len(f.__globals__) or \
            hit[2] is not f.__code__ and original_code(f) is not hit[2]:
        if len(_FUNCTIONS) > 10_000:
            _FUNCTIONS.clear()
        hit = _FUNCTIONS[id(f)] = (weakref.ref(f), len(f.__globals__), original_code(f),
                                   _collect([f]))
    return hit[3]


# id(function) -> (a weak reference to it, its namespace's size, its code, what it reaches)
_FUNCTIONS: dict[int, tuple[weakref.ref, int, types.CodeType, Any]] = {}


def _of_class(cls: type) -> tuple[list, list]:
    hit = _CLASSES.get(id(cls))
    if hit is None or hit[0]() is not cls:
        if len(_CLASSES) > 10_000:
            _CLASSES.clear()
        hit = _CLASSES[id(cls)] = (weakref.ref(cls), _collect([cls]))
    return hit[1]


def _of_module(m: types.ModuleType) -> tuple[list, list]:
    """What module ``m`` defines that may hold user code (its functions and classes, and
    its dicts, lists and tuples: registries of functions); cached while the module's
    namespace keeps its size."""
    names = vars(m)
    hit = _MODULES.get(m.__name__)
    if hit is None or hit[0] != len(names):
        roots = [v for k, v in list(names.items())
                 if (isinstance(v, (types.FunctionType, type)) and
                     getattr(v, "__module__", None) == m.__name__) or
                 isinstance(v, (dict, list, tuple)) and not k.startswith("__")]
        hit = _MODULES[m.__name__] = (len(names), _collect(roots, containers=1))
    return hit[1]


def _collect(roots: list, containers: int = 2) -> tuple[list, list]:
    """The user functions that call ``int``/``float``, reachable from ``roots`` (through methods, closures, defaults,
    ``__wrapped__`` and up to ``containers`` levels of dicts/lists/tuples), and the user
    modules that define the classes met."""
    funcs: list[types.FunctionType] = []
    mods: list[types.ModuleType] = []
    seen: set[int] = set()

    def visit(v: Any, depth: int) -> None:
        if id(v) in seen:
            return
        seen.add(id(v))
        if isinstance(v, (staticmethod, classmethod)):
            v = v.__func__
        elif isinstance(v, property):
            visit(v.fget, depth)
            visit(v.fset, depth)
            return
        v = getattr(v, "__func__", v)  # bound methods
        if isinstance(v, types.FunctionType):
            code = original_code(v)
            if not _user_code(code):
                return
            if _rewrite(code) is not code or _reads_class(code):  # it calls int() ...
                funcs.append(v)
            # the user functions it calls by global name (helpers imported from another
            # of the user's modules: ``from .masks import make_mask``)
            g = v.__globals__
            for name in code_names(code):
                w = g.get(name)
                if isinstance(w, types.FunctionType):
                    visit(w, depth)
            for c in v.__closure__ or ():
                try:
                    visit(c.cell_contents, depth + 1)
                except ValueError:  # an empty cell
                    pass
            for d in v.__defaults__ or ():
                visit(d, depth + 1)
            visit(getattr(v, "__wrapped__", None), depth)
        elif isinstance(v, type):
            for c in v.__mro__:
                if c is object or c.__module__.partition(".")[0] in _LIBRARY_ROOTS:
                    continue
                m = sys.modules.get(c.__module__)
                path = getattr(m, "__file__", None)
                if m is not None and path and _user_code_file(path):
                    mods.append(m)
                for w in list(vars(c).values()):
                    visit(w, depth)
        elif isinstance(v, (dict, list, tuple)) and depth < containers:
            for w in list(v.values() if isinstance(v, dict) else v)[:256]:
                visit(w, depth + 1)

    for r in roots:
        visit(r, 0)
    return funcs, mods


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


def _reads_class(code: types.CodeType) -> bool:
    """Does ``code`` (or a function nested in it) read ``.__class__`` or match a class
    pattern (``case int():``), which ask a value its class without a call to route?"""
    hit = _CLASS_READS.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    found = "__class__" in code.co_names or _MATCH_CLASS is not None and any(
        ins.opcode == _MATCH_CLASS for ins in dis.get_instructions(code)) or any(
        _reads_class(c) for c in code.co_consts if isinstance(c, types.CodeType))
    if len(_CLASS_READS) > 20000:
        _CLASS_READS.clear()
    _CLASS_READS[id(code)] = (code, found)
    return found


_CLASS_READS: dict[int, tuple[types.CodeType, bool]] = {}


def _eager_class(sample: Any) -> property:
    """``_st_class`` of a symbolic value while the user's code reads classes: eager's
    class (``int``) to the user's code for a value of the export in progress, the real
    class to torch's and safetrace's."""
    eager = type(sample)

    def get(self: Any) -> type:
        if self.env is ACTIVE.env and ACTIVE.env is not None and \
                _user_code(sys._getframe(1).f_code):
            return eager
        return type(self)

    return property(get)


_CLASS_PATCHES = [(cls, "_st_class", _eager_class(sample)) for cls, sample in
                  ((TorchSymInt, 0), (TorchSymFloat, 0.0), (TorchSymBool, False))]


def original_code(f: types.FunctionType) -> types.CodeType:
    """``f``'s own code, also while another export has it rewritten."""
    code = f.__code__
    source = _SOURCE.get(id(code))
    return source[1] if source is not None and source[0] is code else code


# id(rewritten) -> (rewritten, original)
_SOURCE: dict[int, tuple[types.CodeType, types.CodeType]] = {}
_SOURCE_CLEARS = [0]  # how many times _SOURCE was cleared (code_patches' answers re-add)


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
_SHADOWABLE = frozenset(name for name in _NAMES if name not in _MODULE_NAMES)


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


def code_patches(model: Any, fn: Any, walk: list | None = None) -> list[tuple[Any, str, Any]]:
    """``(function, "__code__", rewritten code)`` for each of the user's functions an export
    of ``fn`` may run that calls a redirected name: installed and restored by the export
    session (counted, so two exports of one model at once share them).

    The answer for one list of functions is kept while every function has the code it
    had then and every module namespace of theirs still leaves the builtins alone."""
    if not _SUPPORTED:
        return []
    fs, cached = _functions(model, fn, walk)
    hit = _PATCHES.get(id(fs)) if cached else None
    if hit is not None and hit[0] is fs and \
            all(map(operator.is_, map(_CODE_OF, fs), hit[1])) and \
            tuple(map(_plain_builtins, hit[2])) == hit[3]:
        if hit[6] != _SOURCE_CLEARS[0]:  # (the table of originals was cleared since)
            _SOURCE.update((id(new), (new, hit[5][id(new)])) for _, attr, new in hit[4]
                           if attr == "__code__")
        return hit[4]
    out = []
    plain: dict[int, bool] = {}  # id(globals) -> _plain_builtins (a module's functions share one)
    spaces: list[dict] = []  # the module namespaces of the functions to rewrite
    source: dict[int, types.CodeType] = {}
    for f in fs:
        code = original_code(f)
        if not out or out[0][1] != "_st_class":
            if _reads_class(code):
                out[:0] = _CLASS_PATCHES
        new = _rewrite(code)
        if new is code:
            continue
        g = f.__globals__
        ok = plain.get(id(g))
        if ok is None:
            ok = plain[id(g)] = _plain_builtins(g)
            spaces.append(g)
        if ok:
            if len(_SOURCE) > 20000:
                _SOURCE.clear()
                _SOURCE_CLEARS[0] += 1
            _SOURCE[id(new)] = (new, code)
            source[id(new)] = code
            out.append((f, "__code__", new))
    if cached and all(map(operator.is_, map(_CODE_OF, fs), map(original_code, fs))):
        # (kept only when read with no export holding them rewritten: the codes are the
        # functions' own, which the next export compares against)
        if len(_PATCHES) > 1000:
            _PATCHES.clear()
        _PATCHES[id(fs)] = (fs, [f.__code__ for f in fs], spaces,
                            tuple(plain[id(g)] for g in spaces), out, source,
                            _SOURCE_CLEARS[0])
    return out


_CODE_OF = operator.attrgetter("__code__")
# id(list of functions from _functions) -> (that list, their codes then, their module
# namespaces, whether each left the builtins alone, the patches, id(rewritten) ->
# original, _SOURCE_CLEARS then)
_PATCHES: dict[int, tuple] = {}
