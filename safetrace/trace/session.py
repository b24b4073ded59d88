"""One export session: everything an export changes in the process, entered and restored as
one unit, and invisible to every other thread.

An export must make the user's program reach safetrace where it calls torch's Python-level
entry points that never reach a TorchFunctionMode (``torch.cond`` and the other control-flow
spellings, ``torch._check``, ``torch.broadcast_shapes``, the generator's state functions,
``torch.compiler.is_exporting``, library shims) and keep sizes symbolic in the user's own
calls of ``int``/``float``/``min``/``max``/``len``/``print``/``math`` (``trace/pycalls.py``).
All of it is one declarative table of ``(owner, attribute, replacement)``, collected from
the modules that own each concern (``patches()`` in each) and installed here:

- **Per thread.**  Every replacement consults this thread's export state
  (``trace/current.py``) and is the original function on any thread that is not exporting,
  so code on other threads, and torch's library code, behaves as if nothing were installed.
- **Counted.**  Two exports at once (two threads) share the installed table: the first to
  enter installs an entry, the last to leave restores it, under one lock.  An export
  running alone (the usual case) sets and restores its whole table in one pass each; a
  second one entering turns it into counted entries first.
- **Restored.**  torch's thread-local modes (grad mode, autocast, default dtype,
  deterministic algorithms) are snapshot on entry and put back on exit, also when the
  export fails, as torch.export does.  The cyclic garbage collector is paused while any
  export runs (graphs are cyclic and short-lived) and resumed by the last one to end.
"""

from __future__ import annotations

import gc
import operator
import sys
import threading
import types
from typing import Any, Callable

import torch
import torch.compiler
import torch.fx._symbolic_trace as fx_symbolic_trace

from safetrace.errors import seeded_generator
from safetrace.trace import (asserts, fast_overrides, hops, pycalls, pyhelpers, scripted,
                             shims, vmapping)
from safetrace.trace.current import enter_session, exporting, leave_session
from safetrace.trace.handlers.collectives import load_when_grouped
from safetrace.trace.rowcode import RowCode
from safetrace.trace.torch_own import Originals

Patch = tuple[Any, str, Any]  # (owner, attribute, replacement)

_LOCK = threading.RLock()
# (id(owner), attribute) -> [owner, original, replacement, sessions using it]
_INSTALLED: dict[tuple[int, str], list[Any]] = {}
_GC = {"sessions": 0, "was_enabled": False}


def _gated_flag(original: Callable[[], bool]) -> Callable[[], bool]:
    def flag() -> bool:
        return True if exporting() else original()

    flag.__name__ = flag.__qualname__ = original.__name__
    flag.__doc__ = original.__doc__
    return flag


_CALL_IMPL = torch.nn.Module._call_impl.__code__


def _compiling_flag(original: Callable[[], bool]) -> Callable[[], bool]:
    """``is_compiling()``, True under export except to ``nn.Module._call_impl``: there it
    only decides whether a call whose forward raised runs its ``always_call`` forward hooks
    (the compiled path skips them), and an export runs them as eager does: the module stack
    (``trace/modules.py``) pops a call that raised through its global one."""

    def flag() -> bool:
        if sys._getframe(1).f_code is _CALL_IMPL:  # (each module call asks: no other call)
            return original()
        return True if exporting() else original()

    flag.__name__ = flag.__qualname__ = original.__name__
    flag.__doc__ = original.__doc__
    return flag


_COMPILER_FLAGS = {"is_compiling": _compiling_flag(torch.compiler.is_compiling),
                   "is_exporting": _gated_flag(torch.compiler.is_exporting)}


# torch.export's tracing reports itself to ``torch.fx._symbolic_trace.is_fx_tracing()``
# (True under export and under fx.symbolic_trace; ``is_fx_symbolic_tracing()`` stays False
# under export since it also asks ``is_compiling()``)
_FX_TRACING = _gated_flag(fx_symbolic_trace.is_fx_tracing)


def _gated_compile(original: Callable[..., Any]) -> Callable[..., Any]:
    def compile(*args: Any, **kwargs: Any) -> Any:  # noqa: A001 - torch.compile's name
        if not exporting():
            return original(*args, **kwargs)
        model = args[0] if args else kwargs.get("model")
        return model if model is not None else _uncompiled

    compile.__name__ = compile.__qualname__ = original.__name__
    compile.__doc__ = original.__doc__
    return compile


def _uncompiled(fn: Any) -> Any:
    return fn


# ``torch.compile`` called by the code being exported (the user's, or torch's own entry
# points: torch 2.11's ``cond``/``while_loop`` compile a wrapper of their operator when
# reached under another name) runs the function as it is, as torch.export ignores it: the
# tracer records what it calls.  Other threads compile as usual.
_COMPILE = _gated_compile(torch.compile)


def _compiler_patches() -> list[Patch]:
    """``torch.compiler.is_compiling()`` / ``is_exporting()`` and fx's ``is_fx_tracing()``
    are True for the code being exported (libraries take their export-friendly paths) and
    nowhere else: torch's module flags, which every thread reads, are left alone; and
    ``torch.compile`` is a no-op there."""
    return [*((torch.compiler, name, fn) for name, fn in _COMPILER_FLAGS.items()),
            (fx_symbolic_trace, "is_fx_tracing", _FX_TRACING), (torch, "compile", _COMPILE)]


class _Held:
    """What one session installed: at first its rows at once (``bulk``, while no other
    session holds anything: the providers' rows by the kept table's generated code when
    there is one, ``trace/rowcode.py``, the user-code rows after them); once another
    session enters, its entries become counted slots (``keys``)."""

    __slots__ = ("rows", "code", "originals", "more", "more_originals", "keys")

    def __init__(self, rows: list[Patch], code: RowCode | None, originals: tuple | None,
                 more: list[Patch], more_originals: list | None) -> None:
        self.rows, self.code, self.originals = rows, code, originals
        self.more, self.more_originals = more, more_originals
        self.keys: list | None = None


_MODULE_TYPE_NAMES = frozenset(dir(types.ModuleType))


def _spaced(owner: Any, attr: str) -> bool:
    """Whether a row is set and read as its module namespace's item: a plain module's
    attribute that no descriptor of the module type intercepts."""
    return type(owner) is types.ModuleType and attr not in _MODULE_TYPE_NAMES


def _run(calls: Any) -> None:
    """Drain an iterator of calls that each return None (``map(setattr, ...)``)."""
    any(calls)


_BULK: list[_Held] = []  # the session holding its table in bulk (at most one)
_NONE: list = []  # (the originals of no user-code rows: never changed)


def _install(more: list[Patch]) -> _Held:
    """Install the providers' rows and then `more` (the user-code rows) for one session."""
    with _LOCK:
        if _INSTALLED or _BULK:
            if _BULK:  # another export holds its table in bulk: count its entries now
                bulk = _BULK.pop()
                bulk.keys = _count(bulk.rows + bulk.more,
                                   [*bulk.originals, *bulk.more_originals])
            rows = _provided() + more
            held = _Held(rows, None, None, [], None)
            held.keys = _count(rows, None)
            return held
        # the only export running: install in bulk
        code, rows, originals = _kept_entered()
        if originals is None:  # (no kept table, or a row it cannot read: the general way)
            originals = tuple(getattr(owner, attr) for owner, attr, _ in rows)
            try:
                for owner, attr, replacement in rows:
                    setattr(owner, attr, replacement)
            except BaseException:  # (an attribute that cannot be set: none stays set)
                _put_back(rows, originals)
                raise
        held = _Held(rows, code, originals, more, _NONE)
        if more:
            try:
                held.more_originals = [getattr(owner, attr) for owner, attr, _ in more]
                for owner, attr, replacement in more:
                    setattr(owner, attr, replacement)
            except BaseException:
                if held.more_originals is not _NONE:
                    _put_back(more, held.more_originals)
                _put_back_rows(held)
                raise
        _BULK.append(held)
        return held


def _kept_entered() -> tuple[RowCode | None, list[Patch], tuple | None]:
    """The providers' rows installed by the kept table's code: (the code, the rows, their
    originals); the originals None where none was installed (no kept table, or its code
    found a row it cannot read)."""
    hit = _PROVIDED[0]  # (one read: another thread may replace it meanwhile)
    if hit is not None:
        originals = hit[4].enter()
        if originals is not None:
            return hit[4], hit[3], originals
    rows = _provided()  # (what the kept table was made from changed: made again)
    hit = _PROVIDED[0]
    if hit is not None and hit[3] is rows:
        return hit[4], rows, hit[4].enter()
    return None, rows, None


def _put_back(rows: list[Patch], originals: Any) -> None:
    for (owner, attr, _), original in zip(reversed(rows), reversed(originals)):
        setattr(owner, attr, original)


def _put_back_rows(held: _Held) -> None:
    if held.code is not None:
        held.code.leave(held.originals)
    else:
        _put_back(held.rows, held.originals)


def _count(patches: list[Patch], originals: list | None) -> list[tuple[int, str]]:
    """Count `patches` as installed, one slot per (owner, attribute): a slot is set (and
    its original read, unless `originals` has them: a bulk table already set) by the first
    session to need it and restored by the last to leave."""
    keys = []
    for i, (owner, attr, replacement) in enumerate(patches):
        key = (id(owner), attr)
        slot = _INSTALLED.get(key)
        if slot is None:
            if originals is not None:
                slot = _INSTALLED[key] = [owner, originals[i], replacement, 0]
            else:
                slot = _INSTALLED[key] = [owner, getattr(owner, attr), replacement, 0]
                setattr(owner, attr, replacement)
        slot[3] += 1
        keys.append(key)
    return keys


def _uninstall(held: _Held) -> None:
    with _LOCK:
        if held.keys is None:  # installed in bulk and still alone: restore in bulk
            _BULK.remove(held)  # (in reverse: an attribute patched twice ends original)
            if held.more:
                _put_back(held.more, held.more_originals)
            _put_back_rows(held)
            return
        for key in reversed(held.keys):
            slot = _INSTALLED[key]
            slot[3] -= 1
            if slot[3] == 0:
                del _INSTALLED[key]
                setattr(slot[0], key[1], slot[1])


# The providers' tables read nothing that may change but the attributes each names in
# WATCHED (module name, attribute): the table is kept while every such module and value
# is the one it was made from, which the kept table's generated code checks as it
# installs it (trace/rowcode.py), not six providers.
# torch's setters of process-wide modes, counted while exporting (_counted_setter below)
_SETTERS = ("set_default_dtype", "set_default_tensor_type", "use_deterministic_algorithms")
_WATCHED = (*asserts.WATCHED, *fast_overrides.WATCHED, *hops.WATCHED, *pyhelpers.WATCHED,
            *shims.WATCHED, *vmapping.WATCHED, *(("torch", name) for name in _SETTERS))
_WATCHED_ATTRS = tuple(attr for _, attr in _WATCHED)
# each watched module once (the check reads 16 modules, not 40 rows), and the place of
# each row's module among them
_WATCHED_MODULES = tuple(dict.fromkeys(name for name, _ in _WATCHED))
_WATCHED_PLACES = tuple(_WATCHED_MODULES.index(name) for name, _ in _WATCHED)
_NO_NAMES: dict = {}  # (the namespace of a watched module not imported)
# [(the watched modules, each row's namespace, the watched values, the rows, their
# RowCode)]
_PROVIDED: list[Any] = [None]


def _provided() -> list[Patch]:
    """The providers' patches: the rows kept from an earlier export while what they read
    is the same objects, else made again (and kept, with their code).  (The values are
    read from the modules' namespaces: ``getattr`` with a default raises and drops an
    AttributeError for each module not imported and attribute not defined.)"""
    modules = list(map(sys.modules.get, _WATCHED_MODULES))
    hit = _PROVIDED[0]  # (one read: another thread may replace it meanwhile)
    if hit is not None and all(map(operator.is_, modules, hit[0])) and \
            all(map(operator.is_, map(dict.get, hit[1], _WATCHED_ATTRS), hit[2])):
        return hit[3]
    rows = [*asserts.patches(), *fast_overrides.patches(), *hops.patches(),
            *pyhelpers.patches(), *shims.patches(),
            *vmapping.patches(), *scripted.patches(), *_compiler_patches(),
            *_setter_patches()]
    spaces = [_NO_NAMES if m is None else getattr(m, "__dict__", None) for m in modules]
    spaces = [spaces[i] for i in _WATCHED_PLACES]  # (each row's module's namespace)
    if all(type(s) is dict for s in spaces):  # (else made again each time: never seen)
        values = list(map(dict.get, spaces, _WATCHED_ATTRS))
        code = RowCode(
            [(vars(owner) if _spaced(owner, attr) else None, owner, attr, replacement)
             for owner, attr, replacement in rows],
            list(zip(_WATCHED_MODULES, modules)),
            [(space, attr, value) for space, attr, value, place in
             zip(spaces, _WATCHED_ATTRS, values, _WATCHED_PLACES)
             if modules[place] is not None])
        _PROVIDED[0] = (modules, spaces, values, rows, code)
    return rows


class _GcPaused:
    def __enter__(self) -> None:
        with _LOCK:
            if _GC["sessions"] == 0:
                _GC["was_enabled"] = gc.isenabled()
                gc.disable()
            _GC["sessions"] += 1

    def __exit__(self, *exc: Any) -> None:
        with _LOCK:
            _GC["sessions"] -= 1
            if _GC["sessions"] == 0 and _GC["was_enabled"]:
                gc.enable()


_GC_PAUSED = _GcPaused()  # (its state is _GC's: one object serves every export)
_ENTERED = [0]  # sessions entered so far, on any thread


def sessions_entered() -> int:
    """How many export sessions were entered so far, on any thread: the same number at two
    points means no export ran forward in between."""
    return _ENTERED[0]


def gc_paused() -> _GcPaused:
    """The cyclic collector paused while any export runs: an export creates many
    short-lived objects with reference cycles (graph <-> nodes), which die young instead of
    being promoted and reclaimed by full collections (tens of ms in a process holding
    torch).  The last export to end resumes it if it was running."""
    return _GC_PAUSED


class _OwnSets(threading.local):
    count = 0  # calls of the process-wide setters below made by this thread while exporting


_OWN_SETS = _OwnSets()
_BYSTANDER_SETS = [0]  # the same calls made by threads that are not exporting


def _counted_setter(name: str) -> Callable[..., Any]:
    """torch's setter of a process-wide mode, noting who calls it while some thread
    exports: the export puts back on exit the modes its own code changed, never a
    bystander's (the default dtype and the deterministic flags are not per thread)."""

    def setter(*args: Any, **kwargs: Any) -> Any:
        if exporting():
            _OWN_SETS.count += 1
        else:
            _BYSTANDER_SETS[0] += 1
        return _REAL_SETTERS[name](*args, **kwargs)  # (installed only over torch's own)

    setter.__name__ = setter.__qualname__ = name
    setter.__doc__ = getattr(torch, name).__doc__
    return setter


_REAL_SETTERS = Originals()  # torch's own of each (known by its code: trace/torch_own.py)
for _name in _SETTERS:
    _REAL_SETTERS.learn(_name, getattr(torch, _name, None))
_COUNTED = {name: _counted_setter(name) for name in _SETTERS}


def _setter_patches() -> list[tuple[Any, str, Any]]:
    """The counted setters, each installed where torch's own is in place (a user's
    replacement is left alone: traced as Python while exporting)."""
    return [(torch, name, fn) for name, fn in _COUNTED.items()
            if getattr(torch, name, None) is fn or
            _REAL_SETTERS.learn(name, getattr(torch, name, None))]


_AUTOCAST_DEVICES = ("cpu", "cuda") if hasattr(torch, "get_autocast_dtype") else ()
# (what torch.are_deterministic_algorithms_enabled() and
# is_deterministic_algorithms_warn_only_enabled() return, without their Python frames)
_DETERMINISTIC = getattr(torch._C, "_get_deterministic_algorithms",
                         torch.are_deterministic_algorithms_enabled)
_WARN_ONLY = getattr(torch._C, "_get_deterministic_algorithms_warn_only",
                     torch.is_deterministic_algorithms_warn_only_enabled)


# (one call for every device's autocast flag: while it is False, each is; the per-device
# reads parse their device name each time)
_ANY_AUTOCAST = getattr(torch._C, "_is_any_autocast_enabled", None)


# (torch's readers of the modes, bound once: each export reads them twice)
_GRAD_ENABLED, _DEFAULT_DTYPE = torch.is_grad_enabled, torch.get_default_dtype
_CAST_ENABLED = getattr(torch, "is_autocast_enabled", None)
_CAST_DTYPE = getattr(torch, "get_autocast_dtype", None)


def _snapshot() -> tuple:
    off = _ANY_AUTOCAST is not None and not _ANY_AUTOCAST()
    autocast = []  # (a loop: a comprehension is a call of its own)
    for d in _AUTOCAST_DEVICES:
        autocast.append((d, False if off else _CAST_ENABLED(d), _CAST_DTYPE(d)))
    return (_GRAD_ENABLED(), _DEFAULT_DTYPE(), _DETERMINISTIC(), _WARN_ONLY(),
            tuple(autocast))


def _restore(snap: tuple, process_wide: bool) -> None:
    """Put back the modes of `snap`: the thread's own always, the process-wide ones (default
    dtype, deterministic algorithms) when `process_wide` (this export may have changed them
    and no other thread did meanwhile)."""
    grad, dtype, deterministic, warn_only, autocast = snap
    if _GRAD_ENABLED() != grad:
        torch.set_grad_enabled(grad)
    if process_wide and _DEFAULT_DTYPE() != dtype:
        torch._C._set_default_dtype(dtype)  # (torch's own setter's call, whatever is in place)
    if process_wide and (_DETERMINISTIC() != deterministic or _WARN_ONLY() != warn_only):
        torch._C._set_deterministic_algorithms(deterministic, warn_only=warn_only)
    off = _ANY_AUTOCAST is not None and not _ANY_AUTOCAST()
    for device, enabled, cast_dtype in autocast:
        if (enabled if off else _CAST_ENABLED(device) != enabled):
            torch.set_autocast_enabled(device, enabled)
        if _CAST_DTYPE(device) != cast_dtype:
            torch.set_autocast_dtype(device, cast_dtype)


class ExportSession:
    """``with ExportSession(model, fn):`` traces ``fn`` with everything an export needs
    installed for this thread only, and leaves the process as it found it."""

    # (what __enter__ sets, as class defaults: no store per export in __init__)
    _held: _Held | None = None
    _modes: tuple = ()
    _seed = 0
    _bystander_seeds = 0
    _sets = (0, 0)  # (this thread's, bystanders') setter calls on entry
    _owners: list | None = None  # the enclosing export's script modules

    def __init__(self, model: Any, fn: Any, walk: list | None = None) -> None:
        self.model, self.fn = model, fn
        self.walk = walk  # the model's pytree.module_walk, when the caller has it

    def patches(self) -> list[Patch]:
        """Everything this export installs, in one table."""
        return _provided() + pycalls.code_patches(self.model, self.fn, self.walk)

    def __enter__(self) -> ExportSession:
        _ENTERED[0] += 1  # (not atomic: two threads entering at once still change it)
        self._modes = _snapshot()
        # the generator's seed changes when the traced code seeds it (nothing is allocated)
        self._seed = torch.default_generator.initial_seed()
        self._bystander_seeds = pyhelpers.BYSTANDER_SEEDS[0]
        self._sets = (_OWN_SETS.count, _BYSTANDER_SETS[0])
        load_when_grouped()  # (before the table: funcol's shim is in it once imported)
        self._held = _install(pycalls.code_patches(self.model, self.fn, self.walk))
        self._owners = scripted.enter(self.walk)
        enter_session()
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        leave_session()
        scripted.leave(self._owners)
        _uninstall(self._held)
        # a process-wide mode that differs now was changed by this export's code unless
        # another thread called a setter meanwhile and this export's code did not
        own, bystanders = self._sets
        _restore(self._modes, _OWN_SETS.count != own or _BYSTANDER_SETS[0] == bystanders)
        if exc_type is None and torch.default_generator.initial_seed() != self._seed and \
                pyhelpers.BYSTANDER_SEEDS[0] == self._bystander_seeds:
            # seeded by this export's code, through a path no replacement saw; the generator
            # stays seeded as the model left it, as after an eager call
            raise seeded_generator()
