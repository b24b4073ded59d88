"""The conversion's ``FakeTensorMode``, made without its constructor's stack capture.

``FakeTensorMode.__init__`` records where the mode was made (``traceback.extract_stack()``,
shown only in torch's error for two fake modes mixed): ``extract_stack`` reads every
frame's source line and stats every file on the stack (``linecache.checkcache``), ~0.1 ms
at a shallow stack and more at a deep one, 4-8% of a small model's conversion.  Here
torch's own constructor code runs with one difference: the stack it records is the same
list of frames (file, line number, function) with each source line read when first shown
rather than at once (``FrameSummary(..., lookup_line=False)``: the same object to ``==``
and to ``traceback.format_list``).  The constructor's code runs as a copy of the function
(same code object, defaults and ``__class__`` cell) whose global namespace reads through to
its module's but for the name ``traceback``, which is a stand-in whose ``extract_stack``
does the above and whose other attributes are the real module's (``interop/rebind.py``):
nothing of torch's is modified, so other threads see torch unchanged.  torch's constructor serves where it is
not the one copied (a patched class), and where the check below (made once per process)
finds the two modes different.
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import logging
import sys
import threading
import traceback
from typing import Any

import torch

from safetrace.interop.lazy import config_value
from safetrace.interop.rebind import rebound
from safetrace.interop.symbols import conversion_env


def conversion_mode(shape_env: Any) -> Any:
    """``FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=True)``."""
    if not _same_as_torch():
        return _torch(shape_env)
    parts = _parts()
    if _fields_ok(parts[0].__init__) and not parts[4].isEnabledFor(logging.DEBUG):
        return _made(shape_env)
    return _copied(shape_env)


def outside_modes() -> Any:
    """``_disable_current_modes()`` (the conversion runs outside the caller's dispatch
    modes) where one is set; with none set it would pop and push nothing, after ~20 µs
    of imports and a generator: a no-op context serves."""
    if torch._C._len_torch_dispatch_stack() or torch._ops._len_torch_dispatch_stack_pre_dispatch():
        from torch.utils._python_dispatch import _disable_current_modes

        return _disable_current_modes()
    return _NO_MODES


_NO_MODES = contextlib.nullcontext()


class entered:  # noqa: N801 - used as ``with entered(mode):``, a function to the reader
    """``with mode:`` for the conversion's fake mode, its ``avoid_device_init`` read once
    per process: torch's property asks ``torch.cuda.is_available()``, ``hasattr(torch,
    "hpu")`` and the private backend on every read (on a CPU build two formatted
    AttributeErrors: ~50k instructions of each small conversion), for an answer fixed by
    the build and the devices present.  torch's own ``__enter__`` and ``__exit__`` run; the
    mode is an instance of a subclass holding the answer during the ``__enter__`` call
    only (the mode is this conversion's: no other thread holds it)."""

    __slots__ = ("mode",)

    def __init__(self, mode: Any) -> None:
        self.mode = mode

    def __enter__(self) -> Any:
        mode = self.mode
        cls = type(mode)
        steady = _steady(cls) if cls is _parts()[0] else None
        if steady is None:
            return cls.__enter__(mode)
        mode.__class__ = steady
        try:
            return cls.__enter__(mode)
        finally:
            mode.__class__ = cls

    def __exit__(self, *exc: Any) -> Any:
        return type(self.mode).__exit__(self.mode, *exc)


@functools.cache
def _steady(cls: type) -> type | None:
    """`cls` with ``avoid_device_init`` a plain class attribute of the value torch's
    property gives now (None where it is no property of `cls`)."""
    prop = getattr(cls, "avoid_device_init", None)
    if not isinstance(prop, property) or prop.fget is None:
        return None
    try:
        value = bool(prop.fget(None))
    except Exception:  # noqa: BLE001 - the property reads the mode: torch's serves
        return None
    return type(cls.__name__, (cls,), {"avoid_device_init": value,
                                       "__module__": cls.__module__,
                                       "__qualname__": cls.__qualname__})


def _torch(shape_env: Any) -> Any:
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=True)


def _made(shape_env: Any) -> Any:
    """The mode's attributes written as torch's constructor writes them (its code run as
    a copy, `_copied`, costs ~3x: each global it reads goes through the stand-in
    namespace), the recorded stack ending in the constructor's frame as there; used
    where the check below finds the two modes the same, and torch's debug log (the
    constructor's one line) is off."""
    FakeTensorMode, functorch, dynamo, nested, _log, base = _parts()
    read = config_value  # (torch's config reads: ~17k instructions each through getattr)
    mode = FakeTensorMode.__new__(FakeTensorMode)
    base(mode)  # (TorchDispatchMode's own fields)
    d = mode.__dict__
    d["allow_fallback_kernels"] = True
    d["propagate_real_tensors"] = real = read(functorch, "fake_tensor_propagate_real_tensors")
    d["fake_tensor_converter"] = _lazy_converter()(real)
    d["static_shapes"] = shape_env is None
    d["allow_scalar_outputs"] = False
    d["_allow_unsafe_data_ptr_access"] = read(functorch,
                                              "fake_tensor_allow_unsafe_data_ptr_access")
    d["allow_meta"] = read(functorch, "fake_tensor_allow_meta")
    d["cache_enabled"] = read(dynamo, "fake_tensor_cache_enabled") and not real
    d["cache_crosscheck_enabled"] = read(dynamo, "fake_tensor_cache_crosscheck_enabled")
    d["allow_non_fake_inputs"] = True
    d["in_kernel_invocation"] = False
    d["enter_stack"] = []
    d["shape_env"] = shape_env
    stack = frames(sys._getframe(0))
    stack.append(_INIT_FRAME[0])  # (where torch's constructor records it)
    d["_stack_trace"] = stack
    d["_stack"] = None
    d["_mode_key"] = torch._C._TorchDispatchModeKey.FAKE
    d["nt_tensor_id_initial_count"] = d["nt_tensor_id_counter"] = nested._tensor_id_counter
    return mode


_INIT_FRAME: list = [None]  # the constructor's frame as its recorded stack ends


@functools.cache
def _parts() -> tuple:
    import torch._dynamo.config as dynamo
    import torch._functorch.config as functorch
    import torch.nested._internal.nested_tensor as nested
    from torch._subclasses import fake_tensor
    from torch.utils._python_dispatch import TorchDispatchMode

    return (fake_tensor.FakeTensorMode, functorch, dynamo, nested, fake_tensor.log,
            TorchDispatchMode.__init__)


def _parts_converter() -> Any:
    from torch._subclasses import fake_tensor

    return fake_tensor.FakeTensorConverter


@functools.cache
def _lazy_converter() -> type:
    """torch's ``FakeTensorConverter`` whose constructor runs when the converter is first
    used.  The conversion never asks the mode to convert a real tensor (its fake values
    are made from ours), so most conversions never use it; its constructor makes a
    ``MetaConverter`` with four weak dictionaries and a describer (~30k instructions, 2%
    of a small model's conversion).  Reading any of the three attributes the constructor
    sets (every method of the class reads one; ``tensor_memo`` reads ``meta_converter``)
    runs it first, as it would have run, on this object: from then on it is torch's
    converter, attributes and all."""
    base = _parts_converter()
    lock = threading.Lock()
    fields = frozenset(("meta_converter", "export", "constant_storage_mapping"))

    class FakeTensorConverter(base):  # type: ignore[misc, valid-type]
        def __init__(self, copy_data: bool) -> None:  # noqa: D107 - see _lazy_converter
            self.__dict__[_PENDING] = copy_data

        def __getattr__(self, name: str) -> Any:
            d = self.__dict__
            if name not in fields or _PENDING not in d:
                raise AttributeError(name)
            with lock:
                if _PENDING in d:
                    base.__init__(self, copy_data=d[_PENDING], export=False)
                    del d[_PENDING]
            return object.__getattribute__(self, name)

    FakeTensorConverter.__qualname__ = "_lazy_converter.<locals>.FakeTensorConverter"
    return FakeTensorConverter


_PENDING = "_st_pending_copy_data"  # (a lazy converter's argument, until first used)


@functools.lru_cache(maxsize=4)
def _fields_ok(init: Any) -> bool:
    """`_made`'s mode holds what the constructor `init` (run as `_copied`) puts in one,
    its stack included (checked once per process and constructor)."""
    try:
        env = conversion_env()
        copied = _copied(env)
        _INIT_FRAME[0] = copied._stack_trace[-1]
        return _same(copied, _made(env), env, compare_lines=False)
    except Exception:  # noqa: BLE001 - torch's class changed: the copy serves
        return False


def _copied(shape_env: Any) -> Any:
    from torch._subclasses.fake_tensor import FakeTensorMode

    init = _init_copy(FakeTensorMode.__init__)
    if init is None:
        return _torch(shape_env)
    mode = FakeTensorMode.__new__(FakeTensorMode)
    init(mode, shape_env=shape_env, allow_non_fake_inputs=True)
    return mode


@functools.lru_cache(maxsize=4)
def _init_copy(init: Any) -> Any:
    """`init` (torch's constructor) as a function whose globals read ``traceback`` as
    the stand-in below (None where it is not a plain function of that module)."""
    module = sys.modules.get(getattr(init, "__module__", ""), None)
    if module is None or getattr(module, "traceback", None) is not traceback:
        return None
    return rebound(init, {"traceback": _STAND_IN})


class _Traceback:
    """The ``traceback`` module, but for ``extract_stack()`` with no arguments (the form
    the constructor calls), whose lines are read when shown."""

    def __getattr__(self, name: str) -> Any:
        return getattr(traceback, name)

    @staticmethod
    def extract_stack(f: Any = None, limit: Any = None) -> Any:
        caller = sys._getframe(1)
        if f is not None or limit is not None or getattr(sys, "tracebacklimit", None) \
                is not None:  # (a limit: torch's own, from the same frame)
            return traceback.extract_stack(f if f is not None else caller, limit)
        return frames(caller)


_STAND_IN = _Traceback()


def frames(f: Any) -> Any:
    """``traceback.extract_stack(f)`` without its source-line reads (made when shown).
    A frame's summary (file, line number, function; its line once read) is made once
    per code object and instruction, and shared by the stacks that pass there.  (Keyed by
    the code object's id, the entry holding the code object itself so that the id stays
    its own: hashing a code object hashes its constants, a module's every function's code,
    ~3,000 instructions a frame, 5% of a small conversion; and by the instruction's
    offset, ``f_lasti``, not ``f_lineno``, which walks the code's line table on each
    read: the line is read once per summary made.)"""
    out = traceback.StackSummary()
    made = _SUMMARIES
    while f is not None:
        code = f.f_code
        key = (id(code), f.f_lasti)
        hit = made.get(key)
        if hit is None or hit[0] is not code:
            # (as extract_stack does: a module whose source comes from its loader
            # registers it; once per summary made, not per frame walked: ~1k instructions
            # a frame, a deep caller's stack tens of frames)
            linecache.lazycache(code.co_filename, f.f_globals)
            if len(made) > 20_000:
                made.clear()
            hit = made[key] = (code, traceback.FrameSummary(
                code.co_filename, f.f_lineno, code.co_name, lookup_line=False))
        out.append(hit[1])
        f = f.f_back
    out.reverse()
    return out


_SUMMARIES: dict[tuple, Any] = {}  # (id of a code object, offset) -> (it, its FrameSummary)


@functools.cache
def _same_as_torch() -> bool:
    """A mode made here and one made by torch's constructor hold the same attributes, of
    equal values (their recorded stacks equal frame for frame, lines included, outside this
    module) (checked once per process)."""
    try:
        env = conversion_env()
        theirs, ours = [make(env) for make in (_torch, _copied)]  # (from the same frames)
        return _same(theirs, ours, env)
    except Exception:  # noqa: BLE001 - torch's class changed: its constructor serves
        return False


def _same(theirs: Any, ours: Any, env: Any, compare_lines: bool = True) -> bool:
    """Two modes of `env` hold the same attributes, of equal values (their stacks frame
    for frame outside this module; lines read where `compare_lines`)."""
    a, b = vars(theirs), vars(ours)
    if a.keys() != b.keys() or type(theirs) is not type(ours):
        return False
    for key, value in a.items():
        other = b[key]
        if key == "_stack_trace":
            if type(value) is not type(other) or \
                    _lines(value, compare_lines) != _lines(other, compare_lines):
                return False
        elif key == "fake_tensor_converter":
            if type(other) is _lazy_converter():
                other.meta_converter  # noqa: B018 - (made here, as on first use)
                if type(value) is not _parts_converter() or \
                        _shallow(vars(value)) != _shallow(vars(other)):
                    return False
            elif type(value) is not type(other) or \
                    _shallow(vars(value)) != _shallow(vars(other)):
                return False
        elif key == "shape_env":
            if value is not env or other is not env:
                return False
        elif not _equal(value, other):
            return False
    return True


def _lines(stack: Any, lines: bool = True) -> list:
    return [(f.filename, f.lineno, f.name, f.line if lines else None, f.locals,
             f.end_lineno, f.colno, f.end_colno) for f in stack if f.filename != __file__]


def _shallow(fields: dict, depth: int = 2) -> dict:
    """A converter's fields: containers by type and size (fresh ones are empty), objects
    by type and fields."""
    out: dict[str, Any] = {}
    for k, v in fields.items():
        if k == "id":  # (a describer's number: from a process-wide counter)
            out[k] = type(v)
        elif hasattr(v, "__len__"):
            out[k] = (type(v), len(v))
        elif hasattr(v, "__dict__") and not isinstance(v, type) and depth:
            out[k] = (type(v), _shallow(vars(v), depth - 1))
        else:
            out[k] = v
    return out


def _equal(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - not comparable: only the same object is
        return a is b
