"""How each torch function is handled while tracing: the plans.

A plan is chosen once per function: an ATen packet named like the function (methods,
functions, operators), a Python composite (one node when the ATen namesake accepts the
call, traced through otherwise), a property that computes (``x.T``), a cast method, or a
global-state function run as it is.  The tracer (``tracer.py``) calls the plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import torch

from safetrace.errors import UnsupportedOpError
from safetrace.trace import composites, names
from safetrace.trace.proxy import Proxy
from safetrace.trace.schema import resolve
from safetrace.trace.source import short, stack_trace
from safetrace.trace.values import has_valued, values

if TYPE_CHECKING:
    from safetrace.trace.tracer import Tracer

# -- plans: how a given torch function is handled ------------------------------------------

_PLANS: dict[Any, Callable] = {}


def _has_tensor(v: Any) -> bool:
    if isinstance(v, torch.Tensor):
        return True
    if isinstance(v, (list, tuple)):
        return any(_has_tensor(x) for x in v)
    return False


def _make_plan(func: Any) -> Callable:
    if isinstance(func, torch._ops.OpOverload):
        from safetrace.trace.custom import call_overload

        return lambda tr, f, a, k: call_overload(tr, f, a, k)
    if isinstance(func, torch._ops.OpOverloadPacket):
        from safetrace.trace.custom import call_packet

        return lambda tr, f, a, k: call_packet(tr, f, a, k)
    name = names.func_name(func)
    if name in names.PASSTHROUGH_NAMES:
        return _passthrough
    if name in names.DUNDERS:
        packet, swap = names.DUNDERS[name]
        return lambda tr, f, a, k: _dunder(tr, f, packet, swap, a, k)
    if name == "__set__" and getattr(getattr(func, "__self__", None), "__name__", "") == "data":
        return lambda tr, f, a, k: _set_data(tr, a[0], a[1])
    if name == "__get__" and isinstance(getattr(func, "__self__", None), type(torch.Tensor.T)):
        prop = func.__self__.__name__  # a Tensor property that computes: x.T, x.mT, x.real
        return lambda tr, f, a, k: _property(tr, f, prop, a)
    if name in names.CAST_METHODS and getattr(func, "__qualname__", "").startswith("TensorBase"):
        dtype = names.CAST_METHODS[name]
        return lambda tr, f, a, k: _cast(tr, a[0], dtype, k)
    packet = names.ALIASES.get(name, name)
    if packet not in SPECIAL_OPS and composites.through(func) is None:
        return lambda tr, f, a, k: _aten(tr, f, packet, a, k)
    return lambda tr, f, a, k: _op_or_through(tr, f, packet, a, k)


def _aten(tr: Tracer, func: Any, packet: str, args: tuple, kwargs: dict) -> Any:
    """A function with an ATen namesake and no Python body (``torch.relu``, ``x.view``):
    the overload the arguments fit, else the general path."""
    found = resolve(packet, args, kwargs)
    if found is None:
        return _op_or_through(tr, func, packet, args, kwargs)
    op, bargs, bkwargs = found
    return tr.emit(op, *numbers_as_tensors(tr, op, bargs, bkwargs))


def _dunder(tr: Tracer, func: Any, packet: str, swap: bool, args: tuple, kwargs: dict) -> Any:
    """Operators (``x + 1``, ``2 ** x``): the ATen op the table names, operands in order."""
    if swap:
        args = (args[1], args[0]) + args[2:]
    found = resolve(packet, args, kwargs)
    if found is None:
        if swap:
            args = (args[1], args[0]) + args[2:]
        return _op_or_through(tr, func, packet, args, kwargs)
    return tr.emit(found[0], *numbers_as_tensors(tr, *found))


def _set_data(tr: Tracer, target: Any, value: Any) -> None:
    """``w.data = v`` (masked or pruned weights updated in forward): an in-place copy into
    the tensor's storage, recorded like any write to module state."""
    t_meta = target.st_meta if isinstance(target, Proxy) else target
    v_meta = value.st_meta if isinstance(value, Proxy) else value
    if not isinstance(value, torch.Tensor) or t_meta.dtype != v_meta.dtype or \
            len(t_meta.shape) != len(v_meta.shape) or \
            not all(a is b or a == b for a, b in zip(t_meta.shape, v_meta.shape)):
        raise UnsupportedOpError(
            f"`x.data = value` at {short(stack_trace(3))} changes the tensor's shape or dtype, "
            f"which an exported graph cannot do to module state.\nFix: assign a value of "
            f"the same shape and dtype, or compute with a new tensor instead")
    tr.emit(torch.ops.aten.copy_.default, (target, value), {})


def _property(tr: Tracer, func: Any, prop: str, args: tuple) -> Any:
    """Tensor properties that compute a new tensor."""
    x = args[0]
    aten = torch.ops.aten
    ndim = x.st_meta.ndim if isinstance(x, Proxy) else x.dim()
    if prop == "T":
        return tr.emit(aten.permute.default, (x, list(range(ndim))[::-1]), {})
    if prop in ("mT", "mH"):
        y = tr.emit(aten.transpose.int, (x, -2, -1), {})
        return tr.emit(aten.conj.default, (y,), {}) if prop == "mH" else y
    if prop == "H":
        y = tr.emit(aten.permute.default, (x, list(range(ndim))[::-1]), {})
        return tr.emit(aten.conj.default, (y,), {})
    if prop in ("real", "imag"):
        return tr.emit(getattr(aten, prop).default, (x,), {})
    if prop == "data":
        return tr.emit(aten.detach.default, (x,), {})
    return _op_or_through(tr, func, prop, args, {})


_OPTIONAL_TENSORS: dict[int, tuple] = {}
_KEEP: list = []


def numbers_as_tensors(tr: Tracer, op: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A Python number given for a ``Tensor?`` argument (``torch.clamp(x, 0, t)``) becomes a
    scalar tensor node: eager's argument parser wraps it, an ATen overload call does not."""
    slots = _OPTIONAL_TENSORS.get(id(op))  # by id: an OpOverload hashes in Python
    if slots is None:
        slots = tuple(
            (i, a.name) for i, a in enumerate(op._schema.arguments)
            if isinstance(a.real_type, torch.OptionalType)
            and isinstance(a.real_type.getElementType(), torch.TensorType))
        _OPTIONAL_TENSORS[id(op)] = slots
        _KEEP.append(op)  # the id stays this op's
    if not slots:
        return args, kwargs
    from safetrace.trace.schema import _is_number

    args = list(args)
    for i, name in slots:
        if i < len(args) and _is_number(args[i]):
            args[i] = _scalar(tr, args[i])
        elif name in kwargs and _is_number(kwargs[name]):
            kwargs = {**kwargs, name: _scalar(tr, kwargs[name])}
    return tuple(args), kwargs


def _scalar(tr: Tracer, v: Any) -> Any:
    dtype = torch.get_default_dtype() if isinstance(v, float) or hasattr(v, "num") else (
        torch.bool if isinstance(v, bool) else torch.int64)
    return tr.emit(torch.ops.aten.scalar_tensor.default, (v,),
                   {"dtype": dtype, "device": tr.device})


def _passthrough(tr: Tracer, func: Any, args: tuple, kwargs: dict) -> Any:
    return func(*args, **kwargs)


def _cast(tr: Tracer, x: Any, dtype: torch.dtype, kwargs: dict) -> Any:
    kw = {}
    if kwargs.get("memory_format") is not None:
        kw["memory_format"] = kwargs["memory_format"]
    return tr.emit(torch.ops.aten.to.dtype, (x, dtype), kw)


def _op_or_through(tr: Tracer, func: Any, packet: str, args: tuple, kwargs: dict,
                   special_ok: bool = True) -> Any:
    special = SPECIAL_OPS.get(packet) if special_ok else None
    if special is not None:
        return special(tr, func, args, kwargs)
    if composites.through(func) is not None:
        if not _has_tensor(args) and not _has_tensor(list(kwargs.values())):
            # a Python helper on sizes and numbers (torch.sym_max, broadcast_shapes): it
            # computes no tensors, so it runs as it is, on the symbolic values
            with torch._C.DisableTorchFunction():
                return func(*args, **kwargs)
        return _composite(tr, func, packet, args, kwargs)
    found = resolve(packet, args, kwargs)
    if found is None and _has_python_dtype(args, kwargs):
        # torch.ones(n, dtype=bool), x.to(float): Python types stand for dtypes
        args = tuple(names.PY_DTYPES.get(a, a) if a.__class__ is type else a for a in args)
        kwargs = {k: names.PY_DTYPES.get(v, v) if v.__class__ is type else v
                  for k, v in kwargs.items()}
        found = resolve(packet, args, kwargs)
    if found is None and any(_real_scalar_tensor(a) for a in (*args, *kwargs.values())):
        # torch.full(size, stride) with `stride` an element of a real (constant) tensor:
        # eager reads the value; a constant's value is known at export
        args = tuple(a.item() if _real_scalar_tensor(a) else a for a in args)
        kwargs = {k: v.item() if _real_scalar_tensor(v) else v for k, v in kwargs.items()}
        found = resolve(packet, args, kwargs)
    if found is None and args and not _has_tensor(args) and hasattr(args[0], "expr"):
        # torch.div(n, 4, rounding_mode="trunc") on a size: eager wraps n in a 0-d tensor
        from safetrace.trace.handlers import _tensor_of_syms

        args = (_tensor_of_syms(tr, args[0], {}),) + tuple(args[1:])
        found = resolve(packet, args, kwargs)
    if found is None and has_valued(args[1:]):
        # x.view(b, torch.div(n, 2, rounding_mode="trunc")): eager reads a 0-d size tensor
        # through __index__; its value is known
        args = (args[0],) + tuple(values(a) for a in args[1:])
        found = resolve(packet, args, kwargs)
    if found is None:
        if not _has_tensor(args) and not _has_tensor(list(kwargs.values())) and not hasattr(
                torch.ops.aten, packet):
            return func(*args, **kwargs)
        raise _unsupported(func, packet, args, kwargs)
    op, bargs, bkwargs = found
    bargs, bkwargs = numbers_as_tensors(tr, op, bargs, bkwargs)
    return tr.emit(op, bargs, bkwargs)


def _real_scalar_tensor(v: Any) -> bool:
    return isinstance(v, torch.Tensor) and not isinstance(v, Proxy) and v.dim() == 0 and \
        v.device.type != "meta"


def _has_python_dtype(args: tuple, kwargs: dict) -> bool:
    return any(v.__class__ is type and v in names.PY_DTYPES
               for v in (*args, *kwargs.values()))


def _composite(tr: Tracer, func: Any, packet: str, args: tuple, kwargs: dict) -> Any:
    choice = composites.boolean_dispatch_choice(func, args, kwargs)
    target = func
    if choice is not None:
        packet, target = choice
    if func not in tr._through_active:
        named = composites.bind_by_name(target, packet, args, kwargs)
        if named is not None:
            found = resolve(packet, (), named)
            if found is not None and choice is not None and target is not func and \
                    len(found[0]._schema.returns) > 1 and packet == func.__name__:
                found = None  # F.adaptive_max_pool2d without indices: aten returns both
            if found is not None:
                op, bargs, bkwargs = found
                return tr.emit(op, *numbers_as_tensors(tr, op, bargs, bkwargs))
    body = composites.through(target)
    if func in tr._through_active or body is None:
        raise _unsupported(func, packet, args, kwargs)
    tr._through_active.add(func)
    try:
        with tr:
            return body(*args, **kwargs)
    finally:
        tr._through_active.discard(func)


def _describe(v: Any) -> str:
    if isinstance(v, Proxy):
        from safetrace.trace.proxy import annotation

        return f"Tensor {annotation(v.st_meta)}"
    if isinstance(v, torch.Tensor):
        return f"Tensor {list(v.shape)}"
    if isinstance(v, (list, tuple)):
        return type(v).__name__ + "[" + ", ".join(_describe(x) for x in v) + "]"
    return repr(v)


def _unsupported(func: Any, packet: str, args: tuple, kwargs: dict) -> UnsupportedOpError:
    trace = stack_trace(4)
    qual = getattr(func, "__qualname__", None) or names.func_name(func)
    call = ", ".join([_describe(a) for a in args]
                     + [f"{k}={_describe(v)}" for k, v in kwargs.items()])
    if hasattr(torch.ops.aten, packet):
        why = f"no overload of aten.{packet} accepts these arguments"
    else:
        why = f"there is no ATen operator named {packet!r} and safetrace cannot trace into it"
    return UnsupportedOpError(
        f"cannot trace {qual}({call}): {why}.\n  at {short(trace)}\n"
        f"Fix: use an equivalent torch operation, or wrap the code in a custom op "
        f"(st.custom_op) with a fake implementation (st.register_fake).")


from safetrace.trace.handlers import HANDLERS, SPECIAL_OPS  # noqa: E402


def _tensor_where(tr: Tracer, func: Any, args: tuple, kwargs: dict) -> Any:
    """``x.where(cond, y)`` is ``torch.where(cond, x, y)``: the method's self is the value."""
    rest = list(args[1:]) + [kwargs[k] for k in ("condition", "other") if k in kwargs]
    return _op_or_through(tr, torch.where, "where", (rest[0], args[0], rest[1]), {})


HANDLERS[torch.Tensor.where] = _tensor_where


def _new_tensor(tr: Tracer, func: Any, args: tuple, kwargs: dict) -> Any:
    """``x.new_tensor(data)`` is ``torch.tensor(data)`` with x's dtype and device (unless
    given): a constant for Python numbers, graph nodes for sizes, a copy of a tensor."""
    from safetrace.trace.handlers import _constant_tensor, _to

    x, data = args[0], args[1] if len(args) > 1 else kwargs["data"]
    meta = x.st_meta if isinstance(x, Proxy) else x
    dtype = kwargs.get("dtype") or meta.dtype
    device = kwargs.get("device") or meta.device
    out = _constant_tensor(tr, torch.tensor, (data,), {"dtype": dtype, "device": device})
    if isinstance(data, torch.Tensor):  # copied as it is: cast to the result's dtype
        out = _to(tr, torch.Tensor.to, (out, dtype), {})
    return out


def _nonzero(tr: Tracer, func: Any, args: tuple, kwargs: dict) -> Any:
    """``nonzero(m, as_tuple=True)``: the columns of ``nonzero(m)`` (a 0-dim m counts as
    1-dim, as in eager), each of the data-dependent length."""
    kwargs = dict(kwargs)
    if not kwargs.pop("as_tuple", False) or not isinstance(args[0], Proxy):
        return _aten(tr, func, "nonzero", args, kwargs)
    x = args[0]
    aten = torch.ops.aten
    if x.st_meta.ndim == 0:
        x = tr.emit(aten.reshape.default, (x, [1]), {})
    rows = tr.emit(aten.nonzero.default, (x,), {})
    return tuple(tr.emit(aten.unbind.int, (rows, 1), {}))


HANDLERS[torch.Tensor.new_tensor] = _new_tensor
HANDLERS[torch.nonzero] = _nonzero
HANDLERS[torch.Tensor.nonzero] = _nonzero
