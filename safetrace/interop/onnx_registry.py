"""torch.onnx's operator registry, built once per process instead of once per export.

``torch.onnx.export(..., dynamo=True)`` starts every call with
``ONNXRegistry.from_torchlib()``: it wraps each of ~550 torchlib functions in metadata and
infers its ONNX signature, 0.7 s of CPU, more than the rest of an MLP's export.  The
result depends only on the opset and on what is registered: torchlib's two registries
(they only grow, at import) and the torch operators its names resolve to (a torchvision
or quantized operator resolves once its library is loaded).  Here the registry is built
once per opset and reused while all three are unchanged; each export gets a registry of
its own (the same entries in new lists, so that a ``custom_translation_table`` registered
into it stays in that export).

Used by ``st.to_onnx`` only: torch's class method is replaced during the call and
restored when the last concurrent call ends; the replacement answers from the cache only
on a thread inside ``st.to_onnx`` (any other thread's ``torch.onnx.export`` meanwhile
runs torch's own method).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Iterator

from safetrace.interop.rebind import rebound
from safetrace.interop.shared_patch import SharedPatch

_PATCH = SharedPatch()
_BUILT: dict[int, tuple] = {}  # opset -> (registries' sizes, names not resolved, registry)
_HERE = threading.local()  # .depth: this thread's st.to_onnx calls in progress


@contextlib.contextmanager
def cached_registry() -> Iterator[None]:
    """While active, ``ONNXRegistry.from_torchlib`` returns a copy of this process's
    registry for the opset (built on first use, rebuilt when what it reads changed)."""
    from torch.onnx._internal.exporter._registration import ONNXRegistry

    _HERE.depth = getattr(_HERE, "depth", 0) + 1
    try:
        with _PATCH.applied(ONNXRegistry, "from_torchlib", classmethod(_from_cache)):
            yield
    finally:
        _HERE.depth -= 1


def implemented() -> frozenset:
    """The operators the registry translates (read inside ``cached_registry``: its copy)."""
    from torch.onnx._internal.exporter import _decomp
    from torch.onnx._internal.exporter._registration import ONNXRegistry

    return frozenset(_decomp.get_onnx_implemented_overloads(ONNXRegistry.from_torchlib()))


def _from_cache(cls: type, opset_version: int | None = None) -> Any:
    from torch.onnx._internal.exporter import _constants

    opset = _constants.TORCHLIB_OPSET if opset_version is None else opset_version
    if not getattr(_HERE, "depth", 0):  # another thread's torch.onnx.export: torch's own
        return _PATCH.original.__func__(cls, opset_version=opset)
    entry = _BUILT.get(opset)
    if entry is None or entry[0] != _sizes() or _any_resolves(entry[1]):
        built = _builder(_PATCH.original.__func__)(cls, opset_version=opset)
        entry = _BUILT[opset] = (_sizes(), _unresolved(), built)
    built = entry[2]
    registry = cls()
    registry._opset_version = built._opset_version
    registry.functions = {k: list(v) for k, v in built.functions.items()}
    return registry


@functools.lru_cache(maxsize=4)
def _builder(from_torchlib: Any) -> Any:
    """torch's `from_torchlib` whose list of onnxscript's torchlib functions is made without
    building each function's IR: onnxscript's ``get_torchlib_ops`` reads every function's
    ``function_ir.domain``, and for a traced function (most of torchlib) that property
    parses the function's source and translates its signature anew each time it is read,
    ~40% of the build, for a field `from_torchlib` never reads (it reads the name, the
    function and whether it is the complex variant; the signature it infers comes from
    the function itself).  torch's own where the list is not made as expected."""
    from torch.onnx._internal import _lazy_import

    if not hasattr(_torchlib_meta(), "__dataclass_fields__"):
        return from_torchlib
    fast = rebound(from_torchlib, {"onnxscript_apis": _Apis(_lazy_import.onnxscript_apis)})
    return fast if fast is not None else from_torchlib


def _torchlib_meta() -> Any:
    try:
        from onnxscript._framework_apis.torch_2_5 import _OnnxFunctionMeta
    except ImportError:
        return None
    return _OnnxFunctionMeta


class _Apis:
    """torch's ``onnxscript_apis`` (its other functions read through), but for
    ``get_torchlib_ops``, whose list holds the same functions with the domain read from
    each function's opset (the same domain, without its IR)."""

    def __init__(self, apis: Any) -> None:
        self._apis = apis

    def __getattr__(self, name: str) -> Any:
        return getattr(self._apis, name)

    @staticmethod
    def get_torchlib_ops() -> list:
        from onnxscript.function_libs.torch_lib import ops, registration  # noqa: F401

        meta = _torchlib_meta()
        out = []
        for name, functions in registration.default_registry.items():
            if name.startswith("internal::"):  # (onnxscript's own helpers)
                continue
            for fn, complex_ in [(f, False) for f in functions.overloads] + \
                    [(f, True) for f in functions.complex]:
                out.append(meta(qualified_name=name, function=fn, domain=fn.domain,
                                name=fn.name, is_complex=complex_))
        return out


def _sizes() -> tuple[int, int]:
    """How many functions torch's and onnxscript's torchlib registries hold."""
    from onnxscript.function_libs.torch_lib import registration
    from torch.onnx._internal.exporter._torchlib import _torchlib_registry

    onnxscript = sum(len(f.overloads) + len(f.complex)
                     for _, f in registration.default_registry.items())
    return len(_torchlib_registry._registry), onnxscript


def _names() -> list[str]:
    from onnxscript.function_libs.torch_lib import registration

    return [name for name, _ in registration.default_registry.items()
            if not name.startswith("internal::")]


def _unresolved() -> tuple[str, ...]:
    """The torchlib names no torch operator answers yet (skipped by the build)."""
    from torch.onnx._internal.exporter._registration import _get_overload

    return tuple(n for n in _names() if _get_overload(n) is None)


def _any_resolves(names: tuple[str, ...]) -> bool:
    from torch.onnx._internal.exporter._registration import _get_overload

    return any(_get_overload(n) is not None for n in names)
