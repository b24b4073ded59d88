"""From a Python call's arguments to an ATen overload's: normalization and resolution.

A call is resolved as written (``schema.resolve``, cached on the argument types).  When
no overload accepts it (``resolve_normalized``), its arguments are normalized once, with the conversions eager's
argument parser makes implicitly, and resolved once more:

- a Python type standing for a dtype (``torch.ones(n, dtype=bool)``, ``x.to(float)``);
- a real (constant) 0-d tensor where a number is expected (``torch.full(size, stride)``
  with ``stride`` an element of a buffer): eager reads its value, which is known;
- a 0-d integer proxy whose value is a known size (``x.view(b, torch.div(n, 2, ...))``):
  eager reads it through ``__index__``;

and as a last resort, a number given where only a tensor fits (``torch.div(n, 4,
rounding_mode="trunc")``, ``torch.floor_divide(2, x)``) is wrapped in a 0-d tensor, as
eager wraps it.

After resolution, a number bound to a ``Tensor?`` argument becomes a scalar tensor node
(``numbers_as_tensors``): the parser wraps it, an overload called directly does not.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.symbolic import SymFloat
from safetrace.trace.names import PY_DTYPES
from safetrace.trace.proxy import Proxy
from safetrace.trace.schema import is_number, resolve
from safetrace.trace.values import has_valued, values
from safetrace.trace.recorder import Recorder


def has_tensor(v: Any) -> bool:
    """Whether `v` is a tensor or a (nested) list or tuple holding one."""
    if isinstance(v, torch.Tensor):
        return True
    if isinstance(v, (list, tuple)):
        return any(has_tensor(x) for x in v)
    return False


def resolve_normalized(tr: Recorder, packet: str, args: tuple, kwargs: dict) -> tuple | None:
    """(overload, args, kwargs) of the ``aten.<packet>`` overload meant by a call that does
    not resolve as written (``schema.resolve`` failed on it), or None."""
    found = None
    normalized = _normalize(args, kwargs)
    if normalized is not None:
        args, kwargs = normalized
        found = resolve(packet, args, kwargs)
    if found is None:
        found = _zero_dim_as_scalars(tr, packet, args, kwargs)
    if found is None and args and is_number(args[0]) and not isinstance(args[0], complex):
        # a number where only a tensor fits (torch.div(n, 4, rounding_mode="trunc"),
        # torch.floor_divide(2, x) from `2 // x`): eager wraps it in a 0-d tensor.  Last,
        # because it adds nodes, and because a number first is fine for
        # torch.ones(n, dtype=bool) or torch.arange(n, stop) once normalized.
        args = (_wrapped_number(tr, args[0], args[1:]),) + tuple(args[1:])
        found = resolve(packet, args, kwargs)
    return found


def _zero_dim_as_scalars(tr: Recorder, packet: str, args: tuple, kwargs: dict) -> tuple | None:
    """``torch.clamp(x, t, 2.5)`` with a traced 0-d `t`: eager's parser gives the Scalar
    overload the tensor's value (``.item()``, a data read), so its dtype promotes as a
    number's and a value out of the result dtype's range raises; the first argument stays.
    So for a ``float`` argument (``torch.isclose(x, y, rtol=t)``, ``nan_to_num(nan=t)``).
    Keywords alone first: ``a.add(b, alpha=t)`` of 0-d `a`, `b` and `t` keeps `b` a tensor."""
    if any(_zero_dim(v) for v in kwargs.values()) and any(_zero_dim(v) for v in args[1:]):
        found = _as_scalars(tr, packet, args, kwargs, 0)
        if found is not None:
            return found
    if not any(_zero_dim(v) for v in (*args[1:], *kwargs.values())):
        return None
    return _as_scalars(tr, packet, args, kwargs, len(args))


def _as_scalars(tr: Recorder, packet: str, args: tuple, kwargs: dict, upto: int) -> tuple | None:
    """The overload with the 0-d tensors in ``args[1:upto]`` and in `kwargs` read as numbers."""
    stand_in = {torch.bool: True}   # the kind of number each tensor gives (resolving only)
    read = [0 < i < upto and _zero_dim(v) for i, v in enumerate(args)]

    def standing(v: Any) -> Any:
        if not _zero_dim(v):
            return v
        return stand_in.get(v.dtype, 1.0 if v.dtype.is_floating_point else 1)

    found = resolve(packet, tuple(standing(a) if r else a for a, r in zip(args, read)),
                    {k: standing(v) for k, v in kwargs.items()})
    if found is None:
        return None
    schema = {a.name: str(a.real_type) for a in found[0]._schema.arguments}
    names = [a.name for a in found[0]._schema.arguments]
    given = [(names[i], v) for i, v in enumerate(args) if read[i] and i < len(names)] + \
        list(kwargs.items())
    if any(_zero_dim(v) and schema.get(k, "").removeprefix("Optional[").rstrip("]") not in
           ("Scalar", "number", "float") for k, v in given):
        return None    # (a 0-d integer tensor for a size is read as __index__: dispatch.py)

    def item(v: Any) -> Any:
        return tr.redispatch(torch.Tensor.item, (v,), {}) if _zero_dim(v) else v

    return resolve(packet, tuple(item(a) if r else a for a, r in zip(args, read)),
                   {k: item(v) for k, v in kwargs.items()})


def _zero_dim(v: Any) -> bool:
    return isinstance(v, Proxy) and v.dim() == 0 and not v.dtype.is_complex


def _wrapped_number(tr: Recorder, v: Any, rest: tuple) -> Any:
    """Number `v` as the 0-d tensor eager's parser makes of it: typed so that it promotes
    with the call's tensor operand as the number itself would (``2 // x`` of an int32 x is
    int32, ``1.5 // x`` is float)."""
    other = next((a for a in rest if isinstance(a, torch.Tensor)), None)
    if other is None:
        return tensor_of_values(tr, v, {})
    meta = other.st_meta if isinstance(other, Proxy) else other
    kind = True if isinstance(v, bool) else 1.0 if isinstance(v, (float, SymFloat)) else 1
    with torch._C.DisableTorchFunction():
        dtype = torch.result_type(kind, torch.empty(0, dtype=meta.dtype, device="meta"))
    if kind == 1 and dtype not in (torch.int64, torch.bool) and not dtype.is_floating_point \
            and not dtype.is_complex and not (type(v) is int and torch.iinfo(dtype).min <= v
                                              <= torch.iinfo(dtype).max):
        # an int out of the narrower dtype's range (`300 // x` of an int8 x, or a size that
        # may be): eager's wrapped number is int64 and its cast wraps (300 -> 44), where
        # scalar_tensor of the narrow dtype raises
        wide = tr.emit(torch.ops.aten.scalar_tensor.default, (v,),
                       {"dtype": torch.int64, "device": meta.device})
        return tr.emit(torch.ops.aten._to_copy.default, (wide,), {"dtype": dtype})
    return tr.emit(torch.ops.aten.scalar_tensor.default, (v,),
                   {"dtype": dtype, "device": meta.device})


def _normalize(args: tuple, kwargs: dict) -> tuple | None:
    """The call's arguments as eager's parser reads them, or None when that changes none."""
    changed = False
    if _has_python_dtype(args, kwargs):
        args = tuple(PY_DTYPES.get(a, a) if a.__class__ is type else a for a in args)
        kwargs = {k: PY_DTYPES.get(v, v) if v.__class__ is type else v
                  for k, v in kwargs.items()}
        changed = True
    if any(_real_scalar_tensor(a) for a in (*args, *kwargs.values())):
        args = tuple(a.item() if _real_scalar_tensor(a) else a for a in args)
        kwargs = {k: v.item() if _real_scalar_tensor(v) else v for k, v in kwargs.items()}
        changed = True
    if any(numpy_number(a) or _holds_numpy_number(a) for a in (*args, *kwargs.values())):
        args = tuple(_python_number(a) for a in args)
        kwargs = {k: _python_number(v) for k, v in kwargs.items()}
        changed = True
    if has_valued(args[1:]):
        args = (args[0],) + tuple(values(a) for a in args[1:])
        changed = True
    if any(_unset(k, v) for k, v in kwargs.items()):
        kwargs = {k: v for k, v in kwargs.items() if not _unset(k, v)}
        changed = True
    return (args, kwargs) if changed else None


def _unset(name: str, v: Any) -> bool:
    """A keyword that eager's parser reads as not given: one given as None (`stride=None`
    of avg_pool2d takes the schema's default []), or a factory's Python-level
    `requires_grad=False` (torch's decompositions write it), which changes nothing."""
    return v is None or (name == "requires_grad" and v is False)


def numpy_number(v: Any) -> bool:
    """A numpy integer or floating scalar (``np.sqrt(d)``, ``np.int64(3)``): eager's parser
    reads it as the Python number it holds (a bool or complex one it does not: eager's
    ``int64 * np.bool_(True)`` is float32), so the call is traced with that number."""
    return type(v).__module__ == "numpy" and getattr(getattr(v, "dtype", None), "kind",
                                                     None) in ("f", "i", "u") and \
        getattr(v, "ndim", None) == 0


def _holds_numpy_number(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and any(numpy_number(a) for a in v)


def _python_number(v: Any) -> Any:
    """`v` with its numpy numbers (itself, or the items of a list / tuple) as Python ones."""
    if numpy_number(v):
        return v.item()
    if _holds_numpy_number(v):
        return type(v)(a.item() if numpy_number(a) else a for a in v)
    return v


def _real_scalar_tensor(v: Any) -> bool:
    return isinstance(v, torch.Tensor) and not isinstance(v, Proxy) and v.dim() == 0 and \
        v.device.type != "meta"


def _has_python_dtype(args: tuple, kwargs: dict) -> bool:
    return any(v.__class__ is type and v in PY_DTYPES for v in (*args, *kwargs.values()))


# id(op) -> its ``Tensor?`` arguments (index, name); callers skip the call for an op whose
# entry is () (by id: an OpOverload hashes in Python)
OPTIONAL_TENSORS: dict[int, tuple] = {}
_KEEP: list = []


def numbers_as_tensors(tr: Recorder, op: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A Python number given for a ``Tensor?`` argument (``torch.clamp(x, 0, t)``) becomes a
    scalar tensor node: eager's argument parser wraps it, an ATen overload call does not."""
    slots = OPTIONAL_TENSORS.get(id(op))
    if slots is None:
        slots = tuple(
            (i, a.name) for i, a in enumerate(op._schema.arguments)
            if isinstance(a.real_type, torch.OptionalType)
            and isinstance(a.real_type.getElementType(), torch.TensorType))
        OPTIONAL_TENSORS[id(op)] = slots
        _KEEP.append(op)  # the id stays this op's
    if not slots:
        return args, kwargs
    items = list(args)
    for i, name in slots:
        if i < len(items) and is_number(items[i]):
            items[i] = scalar_tensor(tr, items[i])
        elif name in kwargs and is_number(kwargs[name]):
            kwargs = {**kwargs, name: scalar_tensor(tr, kwargs[name])}
    return tuple(items), kwargs


# id(op) -> its int arguments (index, name, is a list); () for an op without one
INT_SLOTS: dict[int, tuple] = {}


def _int_slots(op: Any) -> tuple:
    slots = INT_SLOTS.get(id(op))
    if slots is None:
        found = []
        for i, a in enumerate(op._schema.arguments):
            t = a.type.getElementType() if isinstance(a.type, torch.OptionalType) else a.type
            if isinstance(t, torch.IntType):
                found.append((i, a.name, False))
            elif isinstance(t, torch.ListType) and isinstance(t.getElementType(),
                                                               torch.IntType):
                found.append((i, a.name, True))
        slots = INT_SLOTS[id(op)] = tuple(found)
        _KEEP.append(op)  # the id stays this op's
    return slots


def tensors_as_ints(tr: Recorder, op: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A tensor given to an overload for an ``int``/``SymInt`` (or ``int[]``) argument
    (``torch.ops.aten.nonzero_static.default(x, size=torch.tensor(4))``): eager's parser
    reads it through ``__index__`` (a known value, else an unbacked size as ``.item()``;
    its handler refuses what eager refuses), so the node gets that int."""
    slots = _int_slots(op)
    if not slots:
        return args, kwargs

    def read(v: Any, many: bool) -> Any:
        if many and isinstance(v, (list, tuple)):
            return type(v)(read(x, False) for x in v)
        if isinstance(v, torch.Tensor):
            # (one int: a float tensor's value truncated, as eager's parser takes it)
            read_as = torch.Tensor.__int__ if not many and (
                v.dtype.is_floating_point or v.dtype.is_complex) else torch.Tensor.__index__
            return tr.redispatch(read_as, (v,), {})
        return v

    items = list(args)
    for i, name, many in slots:
        if i < len(items):
            items[i] = read(items[i], many)
        elif name in kwargs:
            kwargs = {**kwargs, name: read(kwargs[name], many)}
    return tuple(items), kwargs


def scalar_tensor(tr: Recorder, v: Any) -> Any:
    """A 0-d tensor node holding number `v`, typed as eager wraps a Python number."""
    dtype = torch.get_default_dtype() if isinstance(v, (float, SymFloat)) else (
        torch.bool if isinstance(v, bool) else torch.int64)
    return tr.emit(torch.ops.aten.scalar_tensor.default, (v,),
                   {"dtype": dtype, "device": tr.device})


def tensor_of_values(tr: Recorder, data: Any, kwargs: dict) -> Any:
    """``torch.tensor(n)`` / ``torch.tensor([n, 4])`` / ``torch.tensor([(h, w), (h2, w2)])`` of
    symbolic sizes: computed in the graph (the leaves stacked, then viewed as the nesting)."""
    dtype = kwargs.get("dtype")
    device = kwargs.get("device")
    if has_tensor(data):
        raise tr.data_read("torch.tensor() of nested traced values")
    shape = _nested_shape(data)
    items = _leaves(data)
    if dtype is None:
        floaty = any(isinstance(v, (float, SymFloat)) for v in items)
        dtype = torch.get_default_dtype() if floaty else (
            torch.bool if all(isinstance(v, bool) or hasattr(v, "expr") and v.expr.is_bool
                              for v in items) else torch.int64)
    kw = {"dtype": dtype, "device": torch.device(device) if device is not None else tr.device}
    scalars = [tr.emit(torch.ops.aten.scalar_tensor.default, (v,), kw) for v in items]
    if not isinstance(data, (list, tuple)):
        return scalars[0]
    flat = tr.emit(torch.ops.aten.stack.default, (scalars,), {})
    if len(shape) == 1:
        return flat
    return tr.emit(torch.ops.aten.view.default, (flat, list(shape)), {})


def _leaves(data: Any) -> list:
    if isinstance(data, (list, tuple)):
        return [v for x in data for v in _leaves(x)]
    return [data]


def _nested_shape(data: Any) -> tuple[int, ...]:
    """The sizes of a nested list of numbers as eager's ``torch.tensor`` reads them, which do
    not depend on the values: read from a stand-in of zeros (a ragged nesting raises eager's
    own error)."""
    with torch._C.DisableTorchFunction():
        return tuple(torch.tensor(_zeros(data)).shape)


def _zeros(data: Any) -> Any:
    if isinstance(data, (list, tuple)):
        return [_zeros(x) for x in data]
    return 0
