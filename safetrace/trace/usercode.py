"""Which of the user's functions an export may run (``functions``): the traced callable,
the methods of the model's classes and their bases outside torch, functions stored on its
modules, and what the modules defining those classes hold.  What a class, a function or a
module reaches is cached, and a module found holding no code is skipped while it is the
same (``_PLAIN``).  (Checking a whole model of such modules in one identity pass in C,
kept with ``pytree.walk_of``'s facts, was measured: no fewer instructions for a small
model, and the zoo's bert, whose root holds containers, would not use it.)"""

from __future__ import annotations

import collections
import functools
import operator
import sys
import types
import weakref
from typing import Any

import torch

from safetrace.pytree import ModuleWalk
from safetrace.trace.rewrite import code_names, original_code, reads_class, rewrite, \
    user_code, user_code_file

# classes of these packages are never the user's ("torchvision" is: only the root counts)
_LIBRARY_ROOTS = frozenset(("torch", "safetrace", "builtins"))


def functions(model: Any, fn: Any, walk: list | None = None) -> tuple[list, bool]:
    """The user's functions that the export may run, found from ``fn`` and the model: the
    methods of its classes (and their bases outside torch), functions stored on its
    modules, and what the modules defining those classes and ``fn`` hold (functions,
    classes, functions in module-level dicts/lists/tuples; closures and defaults).  What a
    class or a module holds is cached: an export walks only the model's instances.
    Gives the functions and whether that list is a cached answer (the same list object
    for as long as it holds)."""
    parts: list[tuple] = []
    fresh = False  # a part found on the instances (not cached): the union is not either
    take = parts.append

    take(_of_function(fn))
    facts = None
    if isinstance(model, torch.nn.Module):
        walk = walk if walk is not None else [("", m) for m in model.modules()]
        facts = getattr(walk, "facts", None)  # (pytree.walk_of's: the same modules)
        for _, attrs in held_in(walk):
            part = _collect([v for _, v in attrs])
            if part[0] or part[1]:
                take(part)
                fresh = True
        for cls in classes_of(walk):
            take(_of_class(cls))
    # what the parts found so far reach through the modules defining their classes: a
    # cached closure, while each of its modules' answers is the one it was made from (the
    # last one kept with the walk's facts too: no key made and looked up)
    hit = key = None
    if not fresh:
        hit = facts.get(_UNION) if facts is not None else None
        if hit is None or not all(map(operator.is_, hit[0], parts)):
            key = tuple(map(id, parts))
            hit = _UNIONS.get(key)
    if hit is not None and all(map(operator.is_, hit[0], parts)) and _current(hit[1]):
        if facts is not None:
            facts[_UNION] = hit
        return hit[2], True
    first = list(parts)
    closure: list[tuple[types.ModuleType, tuple]] = []
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
        # (parts held: their ids stay theirs)
        _UNIONS[key or tuple(map(id, first))] = hit = (first, closure, out)
        if facts is not None:
            facts[_UNION] = hit
    return out, not fresh


def _current(closure: list) -> bool:
    """Whether each module of a kept closure still gives the answer it gave then."""
    for m, part in closure:
        if _of_module(m) is not part:
            return False
    return True


_UNIONS: dict[tuple, tuple[list, list, list]] = {}
_UNION = "usercode.union"  # (the last of _UNIONS's answers for a walk, in its facts)
_CLASSES_KEY = "usercode.classes"  # (classes_of's answer, in a walk's facts)


def classes_of(walk: list) -> tuple[type, ...]:
    """The classes of `walk`'s modules, each once, in walk order: kept with the walk's
    facts (``pytree.walk_of``'s, the same while every path, module and class is)."""
    facts = getattr(walk, "facts", None)
    found = facts.get(_CLASSES_KEY) if facts is not None else None
    if found is None:
        found = tuple({id(type(m)): type(m) for _, m in walk}.values())
        if facts is not None:
            facts[_CLASSES_KEY] = found
    return found


def held_in(walk: list) -> list[tuple[Any, list[tuple[str, Any]]]]:
    """(module, ``held_code(module)``) for each module of `walk` (``pytree.module_walk``'s
    (path, module) pairs) that holds code; kept on a ``pytree.ModuleWalk`` (its ``held``),
    read once per walk: an export's namespace watch and its user-code scan share it (the
    model snapshot taken at an export's start sets it from its own reads:
    ``snapshot.ModuleGuard``)."""
    found = getattr(walk, "held", None)
    if found is not None:
        return found
    facts = getattr(walk, "facts", None)  # (pytree.walk_of's: the same modules at each path)
    kept = facts.get(_KEPT) if facts is not None else None
    if kept is not None and _still_plain(walk, kept):
        walk.held = []
        return walk.held
    found, seen = [], set()
    for _, m in walk:
        if id(m) not in seen:
            seen.add(id(m))
            attrs = held_code(m)
            if attrs:
                found.append((m, attrs))
    if isinstance(walk, ModuleWalk):
        walk.held = found
        if not found:
            facts[_KEPT] = _plain_rows(walk)
    return found


_KEPT = "usercode.plain"  # (the key of _plain_rows's answer in a walk's facts)


def _plain_rows(walk: list) -> list:
    """Per module of `walk`, all found holding no code just now, what ``held_code``'s
    first test reads from ``_PLAIN`` -- (its ``__dict__``'s size, an itemgetter of the
    keys scanned, their values, an itemgetter of its hook dicts) -- so that the next
    export of the same modules (`walk`'s facts: same paths, module objects and classes)
    makes that test for all of them in one loop, without a call per module; None for a
    module without such an entry (found plain but not kept: ``held_code`` each export)."""
    rows = []
    for _, m in walk:
        plain = _PLAIN.get(id(m))
        rows.append(None if plain is None or plain[0]() is not m or plain[5] is None or
                    plain[6] is None else (plain[1], plain[5], plain[4], plain[6]))
    return rows


def _still_plain(walk: list, kept: list) -> bool:
    """Whether no module of `walk` holds code (`kept`: ``_plain_rows``'s for the same
    modules): ``held_code``'s test of a module kept plain (as many attributes, each
    scanned key bound to the same object, no hook), else ``held_code`` itself."""
    same = operator.is_
    if len(kept) != len(walk):  # (never, while the facts are the walk's: kept as a guard)
        return False
    try:
        for (_, m), row in zip(walk, kept):
            if row is None:
                if held_code(m):
                    return False
                continue
            n, values, before, hooks = row
            d = m.__dict__
            if len(d) != n or any(hooks(d)) or not all(map(same, values(d), before)):
                return False
    except KeyError:  # (a key gone)
        return False
    return True


def held_code(m: Any) -> list[tuple[str, Any]]:
    """What module instance `m`'s own attributes hold that may be the user's code, as
    (attribute, value): functions, methods, classes, ``functools.partial``s, containers
    holding more than numbers and strings, and its hook dicts where one is set (read under
    nn.Module's attribute name).  Empty where it holds none; a module whose scanned values
    can never hold code is remembered (``_keep_plain``) and skipped while they stay."""
    d = vars(m)
    plain = _PLAIN.get(id(m))  # (scanned before and found holding no code)
    if plain is not None and plain[0]() is m and len(d) == plain[1]:
        # still no code: each scanned key bound to the same object, no hook (only
        # nn.Module's own tables, never scanned, could give way to a new key unseen here)
        # (the values read by one itemgetter call each, in C, where it gives a tuple)
        values, hooks = plain[5], plain[6]
        try:
            if all(map(operator.is_, map(d.__getitem__, plain[2]) if values is None
                       else values(d), plain[4])) and \
                    not any(map(d.__getitem__, plain[3]) if hooks is None else hooks(d)):
                return []
        except KeyError:  # (a key gone)
            pass
    layout = tuple(d)
    hit = _LAYOUTS.get(layout)
    keys, hooks = hit if hit is not None else _scanned_keys(layout)
    attrs = []
    if any(map(d.__getitem__, hooks)):  # (a hook is the user's function)
        attrs = [(k, d[k]) for k in hooks if d[k]]
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
                attrs.append((k, v))
            elif t is not tuple:  # (it may hold code later: scanned every export)
                frozen = False
        elif issubclass(t, _CODE_HOLDERS) or hasattr(t, "__func__") or \
                issubclass(t, (dict, list, tuple, set)) and v:
            # (by type: what _collect can find code in; an isinstance test asks the
            # object for __class__, slow on a transformers config)
            attrs.append((k, v))
    if not attrs and frozen:
        _keep_plain(m, d, keys, hooks)
    return attrs
# what may hold code that _collect finds (besides containers and types with __func__)
_CODE_HOLDERS = (types.FunctionType, types.MethodType, type, staticmethod, classmethod,
                 property, functools.partial)


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


def scanned_keys(layout: tuple) -> tuple:
    """The keys of a module's ``__dict__`` (its `layout`) whose values ``held_code`` scans
    one by one (besides the hook dicts): a module whose values there are all numbers,
    strings, bools or None, and whose hook dicts are all empty, holds no code
    (``snapshot.ModuleGuard`` finds the walk's code with its snapshot that way)."""
    hit = _LAYOUTS.get(layout)
    return (hit if hit is not None else _scanned_keys(layout))[0]


def _scanned_keys(layout: tuple) -> tuple[tuple, tuple]:
    """The keys of a module's ``__dict__`` (its `layout`) that may hold code: (the user's
    attributes and any of nn.Module's that is not one of its own dicts as they are made,
    its hook dicts).  nn.Module's state dicts (tensors and submodules, walked on their
    own) are skipped."""
    if len(_LAYOUTS) > 10_000:
        _LAYOUTS.clear()
    hit = _LAYOUTS[layout] = (
        tuple(k for k in layout if k not in _MODULE_STATE and k not in _HOOK_KEYS
              and k != "_compiled_call_impl"),  # (torch's, or an export's: not the user's)
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
    _PLAIN[key] = (ref, len(d), keys, hooks, tuple(map(d.__getitem__, keys)),
                   _items_of(keys), _items_of(hooks))


def _items_of(keys: tuple) -> Any:
    """``operator.itemgetter(*keys)``, which gives the tuple of a dict's values at `keys`
    in one C call; None for fewer than two keys (then it gives no tuple)."""
    return operator.itemgetter(*keys) if len(keys) > 1 else None


# id(module) -> (a weak reference to it, its __dict__'s size, the keys scanned, its hook
# dicts' keys, the values scanned, an itemgetter of each key list or None): modules found
# holding no code (_keep_plain)
_PLAIN: dict[int, tuple] = {}
# attribute types that never hold code, and containers (empty ones hold none)
_ATOMS = frozenset((bool, int, float, str, type(None), torch.Tensor, torch.nn.Parameter))
_CONTAINERS = frozenset((dict, list, tuple, set, collections.OrderedDict))
# id(class) -> (a weak reference to it, what it reaches); a plain dict read by id (a
# WeakKeyDictionary's get is a Python call making a reference each time)
_CLASSES: dict[int, tuple[weakref.ref, tuple[list, list, tuple, tuple]]] = {}
_MODULES: dict[str, tuple[int, tuple[list, list, tuple, tuple]]] = {}


def _of_function(fn: Any) -> tuple[list, list, tuple, tuple]:
    """What the traced callable reaches, cached per function while its module's namespace
    keeps its size (a bound method: its function; anything else is walked each time)."""
    f = getattr(fn, "__func__", fn)
    if not isinstance(f, types.FunctionType) or f is not fn and \
            getattr(fn, "__self__", None) is None:
        return _collect([fn])
    hit = _FUNCTIONS.get(id(f))
    if hit is None or hit[0]() is not f or hit[1] != len(f.__globals__) or \
            hit[2] is not f.__code__ and original_code(f) is not hit[2] or \
            not same_codes(hit[3]):
        if len(_FUNCTIONS) > 10_000:
            _FUNCTIONS.clear()
        hit = _FUNCTIONS[id(f)] = (weakref.ref(f), len(f.__globals__), original_code(f),
                                   _collect([f]))
    return hit[3]


# id(function) -> (a weak reference to it, its namespace's size, its code, what it reaches)
_FUNCTIONS: dict[int, tuple[weakref.ref, int, types.CodeType, Any]] = {}


def _of_class(cls: type) -> tuple[list, list, tuple, tuple]:
    """What a class reaches (``_collect``), cached while the class lives and every function
    met has the code it had then (``same_codes``: a method's ``__code__`` replaced in
    place is searched again)."""
    hit = _CLASSES.get(id(cls))
    if hit is None or hit[0]() is not cls or not same_codes(hit[1]):
        if len(_CLASSES) > 10_000:
            _CLASSES.clear()
        hit = _CLASSES[id(cls)] = (weakref.ref(cls), _collect([cls]))
    return hit[1]


def _of_module(m: types.ModuleType) -> tuple[list, list, tuple, tuple]:
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


def same_codes(part: tuple) -> bool:
    """Whether every function a ``_collect`` answer met still has the code it had then
    (``f.__code__ = ...`` after an export changes what the search finds).  The codes are
    read and compared in one pass (an equal code compares equal: its search is the same);
    where one differs, each function's own code is looked up (another export may hold it
    rewritten: ``original_code``)."""
    fns = part[2]
    if not fns or tuple(map(_CODE_OF, fns)) == part[3]:
        return True
    return all(map(operator.is_, map(original_code, fns), part[3]))


_CODE_OF = operator.attrgetter("__code__")


def _collect(roots: list, containers: int = 2) -> tuple[list, list, tuple, tuple]:
    """The user functions that call ``int``/``float``, reachable from ``roots`` (through
    methods, closures, defaults, ``__wrapped__`` and up to ``containers`` levels of
    dicts/lists/tuples), the user modules that define the classes met, and every function
    met with its code then (``same_codes``: the answer's cache entries of a function or
    a class are kept while those are the same; a module's, while its namespace keeps its
    size)."""
    funcs: list[types.FunctionType] = []
    mods: list[types.ModuleType] = []
    seen: set[int] = set()
    met: list[types.FunctionType] = []
    codes: list[types.CodeType] = []

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
        elif isinstance(v, functools.partial):  # (its function and what it is bound to)
            for w in (v.func, *v.args, *v.keywords.values()):
                visit(w, depth)
            return
        v = getattr(v, "__func__", v)  # bound methods
        if isinstance(v, types.FunctionType):
            code = original_code(v)
            met.append(v)
            codes.append(code)
            if not user_code(code):
                return
            if rewrite(code) is not code or reads_class(code):  # it calls int() ...
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
                if m is not None and path and user_code_file(path):
                    mods.append(m)
                for w in list(vars(c).values()):
                    visit(w, depth)
        elif isinstance(v, (dict, list, tuple)) and depth < containers:
            for w in list(v.values() if isinstance(v, dict) else v)[:256]:
                visit(w, depth + 1)

    for r in roots:
        visit(r, 0)
    return funcs, mods, tuple(met), tuple(codes)


# (the key, in a walk's facts, of ``kept_search``'s record: what the last export of the
# same modules read to find that none holds code and which functions the classes reach)
_LAST = "usercode.last"


def kept_search(fn: Any, walk: Any, fs: list) -> tuple | None:
    """A record of ``functions(model, fn, walk)``'s cached answer `fs` for a walk whose
    modules hold no code (``walk.held`` empty), for ``same_search`` to check at the next
    export: the cache entries it was made from (the traced function's, each class's, the
    union's, each module of the union's closure), each to be found again, unchanged.
    None where the answer is not one such a check can vouch for."""
    facts = getattr(walk, "facts", None)
    if facts is None or walk.held is None or walk.held:
        return None
    f = getattr(fn, "__func__", fn)
    if type(f) is not types.FunctionType or f is not fn and \
            getattr(fn, "__self__", None) is None:
        return None
    entry = _FUNCTIONS.get(id(f))
    union = facts.get(_UNION)
    if entry is None or entry[0]() is not f or entry[2] is not f.__code__ or \
            union is None or union[2] is not fs:
        return None
    ids = tuple(map(id, classes_of(walk)))
    classes = tuple(map(_CLASSES.get, ids))
    parts = [entry[3], *(c[1] if c is not None else None for c in classes)]
    if len(parts) != len(union[0]) or not all(map(operator.is_, parts, union[0])):
        return None
    closure = tuple((m, _MODULES.get(m.__name__)) for m, _ in union[1])
    if not all(hit is not None and hit[1] is part
               for (_, hit), (_, part) in zip(closure, union[1])):
        return None
    return type(fn), entry, ids, classes, union, closure  # (`f` by the entry's weak reference)


def same_search(fn: Any, walk: Any, kept: tuple) -> bool:
    """Whether ``functions(model, fn, walk)`` gives now the answer `kept` (``kept_search``'s
    record) was made from: the walk's modules still hold no code (the model snapshot's
    reads, ``walk.held``), `fn` is the same function with the same code and namespace
    size, and each cache entry the answer came from is still the one in place (and each
    module of its closure still of the size its entry was made at)."""
    kind, entry, ids, classes, union, closure = kept
    held = walk.held
    if held is None or held or type(fn) is not kind:
        return False
    f = getattr(fn, "__func__", fn)
    if _FUNCTIONS.get(id(f)) is not entry or entry[0]() is not f or \
            entry[2] is not f.__code__ or \
            entry[1] != len(f.__globals__) or walk.facts.get(_UNION) is not union or \
            not all(map(operator.is_, map(_CLASSES.get, ids), classes)) or \
            not all(map(same_codes, union[0])):  # (the function's and classes' answers)
        return False
    for m, hit in closure:
        if _MODULES.get(m.__name__) is not hit or hit[0] != len(m.__dict__):
            return False
    return True
