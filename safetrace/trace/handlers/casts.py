"""Casts and device moves: ``x.to(...)`` in all its spellings, ``x.float()``, ``x.cpu()``,
``x.type(dtype)``, each recorded as ``aten.to.dtype`` or ``aten.to.device``."""

from __future__ import annotations

from typing import Any

import torch

from safetrace.errors import to_argument, to_dtype, unknown_tensor_type
from safetrace.rules import get_rule
from safetrace.trace import memo
from safetrace.trace.handlers.metadata import real
from safetrace.trace.names import CAST_METHODS, PY_DTYPES
from safetrace.trace.proxy import Proxy
from safetrace.trace.registry import Handler, handles
from safetrace.trace.source import short, stack_trace
from safetrace.trace.vmapping import slice_format
from safetrace.trace.recorder import Recorder

T = torch.Tensor
aten = torch.ops.aten


@handles(T.to)
def to(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``x.to(dtype)``, ``x.to(device, dtype)``, ``x.to(other)``, ``x.to(float)``, keywords."""
    x, rest = args[0], list(args[1:])
    dtype = kwargs.get("dtype")
    if dtype.__class__ is type:
        dtype = PY_DTYPES.get(dtype, dtype)
    device = kwargs.get("device")
    copy = kwargs.get("copy", False)
    non_blocking = kwargs.get("non_blocking", False)
    for a in rest:
        if a.__class__ is type and a in PY_DTYPES:  # x.to(float): torch.float64
            a = PY_DTYPES[a]
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, (torch.device, str, int)) and not isinstance(a, bool):
            device = torch.device(a)
        elif isinstance(a, torch.Tensor):
            ref = a.st_meta if isinstance(a, Proxy) else a
            dtype, device = ref.dtype, ref.device
        elif isinstance(a, bool):
            non_blocking = a
        elif a is not None:
            raise to_argument(a, short(stack_trace(3)))
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise to_dtype(dtype, short(stack_trace(3)))
    extra = {}
    fmt = kwargs.get("memory_format")
    per_slice = fmt is not None and slice_format(x, fmt)
    if fmt is not None and not per_slice:
        extra["memory_format"] = fmt
    if device is None:
        args2: tuple = (x, dtype if dtype is not None else _dtype(x), non_blocking, copy)
        out = memo.emit(tr, aten.to.dtype, args2[:2] if not (non_blocking or copy) else args2,
                        extra)  # (replayed when its key was met before, memo.py)
    else:
        out = memo.emit(tr, aten.to.device, (x, torch.device(device),
                                             dtype if dtype is not None else _dtype(x),
                                             non_blocking, copy), extra)
    if per_slice and isinstance(out, Proxy):  # (eager's layout is the batched tensor's)
        out.st_contig = None
    return out


def _dtype(x: Any) -> torch.dtype:
    return x.st_meta.dtype if isinstance(x, Proxy) else x.dtype


def _device_move(device: str) -> Handler:
    def handler(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
        return to(tr, func, (args[0], torch.device(device)), {})

    return handler


handles(T.cpu)(_device_move("cpu"))
handles(T.cuda)(_device_move("cuda"))


@handles(T.type)
def type_(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``x.type()`` names the tensor type; ``x.type(dtype)`` is a cast."""
    dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
    x = args[0]
    if dtype is None:
        if not isinstance(x, Proxy):
            return real(func, args[:1], {})
        # the legacy name ("torch.FloatTensor", "torch.cuda.LongTensor") of an empty
        # tensor of the same dtype on the CPU, with the device's prefix
        name = real(T.type, (torch.empty(0, dtype=x.st_meta.dtype),), {})
        device = x.st_meta.device.type
        return name if device == "cpu" else name.replace("torch.", f"torch.{device}.", 1)
    if isinstance(dtype, str):  # x.type("torch.FloatTensor"): the legacy type's name
        dtype = _legacy_type(dtype)
    if isinstance(dtype, type) and hasattr(dtype, "dtype") and hasattr(dtype, "is_cuda"):
        # a legacy tensor type (torch.FloatTensor, torch.cuda.LongTensor): its dtype, on
        # the CPU or CUDA as the type says (eager moves the tensor too)
        target = torch.device("cuda") if dtype.is_cuda else torch.device("cpu")
        if x.st_meta.device.type == target.type:
            return to(tr, func, (x, dtype.dtype), {})
        return to(tr, func, (x, target, dtype.dtype), {})
    return to(tr, func, (x, dtype), {})


def _legacy_type(name: str) -> Any:
    """``"torch.FloatTensor"`` / ``"torch.cuda.HalfTensor"`` as the type object."""
    parts = name.split(".")
    owner: Any = torch
    if parts[0] == "torch" and len(parts) in (2, 3):
        for p in parts[1:]:
            owner = getattr(owner, p, None)
        if isinstance(owner, type) and hasattr(owner, "dtype"):
            return owner
    raise unknown_tensor_type(name, short(stack_trace(4)))


def _cast(dtype: torch.dtype) -> Handler:
    def handler(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
        fmt = kwargs.get("memory_format")
        if fmt is not None and slice_format(args[0], fmt):  # (as in `to` above)
            out = tr.emit(aten.to.dtype, (args[0], dtype), {})
            out.st_contig = None
            return out
        return memo.emit(tr, aten.to.dtype, (args[0], dtype), {} if fmt is None else
                         {"memory_format": fmt})

    return handler


for _name, _dtype_of in CAST_METHODS.items():  # x.float(), x.long(), x.bool(), ...
    handles(getattr(torch._C.TensorBase, _name))(_cast(_dtype_of))


_METADATA_ARGS = ("size", "stride", "dtype", "device", "layout")


@handles(aten._assert_tensor_metadata.default)
def assert_tensor_metadata(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """A program's own metadata check (torch's before a cast, our conversion's input
    check), met again when that program's module is exported: the dtype, device and sizes
    it names are decided now from the traced tensor (a symbolic size compared is a guard,
    as the rule compares them) and nothing is recorded, the new program's own input checks
    standing for it; the identity view feeding it (our conversion's rank check, an
    ``expand`` to sizes all -1; a ``permute`` to its own order in programs converted
    before) is dropped after the trace if nothing else read it.  A check naming strides is recorded
    (only the kernel checks those)."""
    given = dict(zip(_METADATA_ARGS, args[1:]), **kwargs)
    x = args[0]
    if not isinstance(x, Proxy) or given.get("stride") is not None or \
            given.get("layout") is not None:
        return tr.emit(func, args, kwargs)
    get_rule(func)(x.st_meta, given.get("size"), None, given.get("dtype"),
                   device=given.get("device"))
    node = x.st_node
    if node.op == "call_function" and (
            node.target is aten.permute.default and
            list(node.args[1]) == list(range(x.st_meta.ndim)) or
            node.target is aten.expand.default and
            list(node.args[1]) == [-1] * x.st_meta.ndim):
        tr.replayed_checks.append(node)
    return None


def drop_replayed_checks(tr: Recorder) -> None:
    """The identity views a re-exported program's own input checks read, now unread.  A
    scope whose first op was one starts at the op after it (sizes read later, for the
    outputs, go before that op: before an erased node they would be in no graph)."""
    for node in tr.replayed_checks:
        if not node.users and node.graph is not None:
            for scope in tr.scopes:
                if scope.first_op is node:
                    after = node.next
                    scope.first_op = None if after.op in ("root", "output") else after
            node.graph.erase_node(node)
