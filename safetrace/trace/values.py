"""0-d integer tensors whose value is a known (symbolic) size, and real tensors whose value
is data (``program_data``).

``torch.tensor(n)`` / ``torch.div(n, 4, rounding_mode="trunc")`` on sizes, and integer
arithmetic on them, carry their value so that using them as a size or an index
(``__index__``, ``int()``, ``.item()``, slice bounds) gives that value instead of reading
tensor data.  A tensor written in place forgets it (see ``Tracer.emit``).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.errors import traced_subclass
from safetrace.trace.proxy import Proxy
from safetrace.trace.source import short, stack_trace
from safetrace.trace.recorder import Recorder
from safetrace.trace.versions import recipe_stamp

_A = torch.ops.aten
# op -> its value from its arguments' values (None: computed in scalar_value)
VALUE_OPS: dict[Any, Any] = {
    _A.scalar_tensor.default: lambda a: a[0],
    _A.add.Tensor: lambda a: a[0] + a[1], _A.add.Scalar: lambda a: a[0] + a[1],
    _A.sub.Tensor: lambda a: a[0] - a[1], _A.sub.Scalar: lambda a: a[0] - a[1],
    _A.rsub.Tensor: lambda a: a[1] - a[0], _A.rsub.Scalar: lambda a: a[1] - a[0],
    _A.mul.Tensor: lambda a: a[0] * a[1], _A.mul.Scalar: lambda a: a[0] * a[1],
    _A.neg.default: lambda a: -a[0],
    _A.floor_divide.default: lambda a: _floordiv(a[0], a[1]),
    _A.floor_divide.Scalar: lambda a: _floordiv(a[0], a[1]),
    _A.remainder.Scalar: lambda a: _mod(a[0], a[1]),
    _A.remainder.Tensor: lambda a: _mod(a[0], a[1]),
    _A.clone.default: lambda a: a[0],
    _A.to.dtype: lambda a: a[0], _A._to_copy.default: lambda a: a[0],
}
_MODE_OPS = (_A.div.Tensor_mode, _A.div.Scalar_mode)
for _op in _MODE_OPS:
    VALUE_OPS[_op] = None


def has_valued(v: Any) -> bool:
    """Whether `v` is (or a list or tuple holds) a proxy with a known value."""
    if isinstance(v, Proxy):
        return v.st_value is not None
    return isinstance(v, (list, tuple)) and any(has_valued(x) for x in v)


def values(v: Any) -> Any:
    """`v` with every proxy of known value replaced by that value."""
    if isinstance(v, Proxy) and (value := v.st_value) is not None:
        return value
    if isinstance(v, (list, tuple)):
        return type(v)(values(x) for x in v)
    return v


def _floordiv(a: Any, b: Any) -> Any:
    if isinstance(b, int) and b > 0:
        return a // b
    return None


def _mod(a: Any, b: Any) -> Any:
    """``torch.remainder`` of integers: Python's ``%`` (the divisor's sign), by a positive
    constant only (as ``_floordiv``)."""
    if isinstance(b, int) and not isinstance(b, bool) and b > 0:
        return a % b
    return None


def constant_int(t: torch.Tensor) -> int | None:
    """The value of a real 0-d integer tensor (a constant of the program), else None."""
    if t.ndim != 0 or t.dtype.is_floating_point or t.dtype.is_complex or t.dtype is torch.bool:
        return None
    with torch._C.DisableTorchFunction():
        return int(t.item())


def unit_alpha(kwargs: dict) -> bool:
    """add/sub's alpha is absent or the number 1; one read from data (``alpha=t`` of a 0-d
    tensor ``t``) is not known to be, and is not asked (a question on data)."""
    alpha = kwargs.get("alpha", 1)
    return type(alpha) in (bool, int, float) and alpha == 1


def scalar_value(op: Any, args: tuple, kwargs: dict, result: Proxy,
                 constant: Any = None) -> Any:
    """The known value of `result` of ``op(*args)`` (a 0-d integer tensor), or None;
    ``constant(t)`` gives the value of a real tensor argument (a constant whose value the
    graph keeps: ``torch.tensor(6) // 2``), or None where it is not known."""
    meta = result.st_meta
    if meta.shape != () or meta.dtype.is_floating_point or meta.dtype.is_complex or \
            meta.dtype is torch.bool:
        return None
    if not unit_alpha(kwargs):
        return None
    vals = []
    for a in args:
        if isinstance(a, Proxy):
            value = a.st_value
            if value is None:
                return None
            vals.append(value)
        elif isinstance(a, torch.Tensor):
            v = None if constant is None else constant(a)
            if v is None:
                return None
            vals.append(v)
        elif isinstance(a, bool) or not (isinstance(a, int) or hasattr(a, "expr")):
            if op in (_A.to.dtype,) and isinstance(a, torch.dtype):
                continue
            return None
        else:
            vals.append(a)
    if op in _MODE_OPS:
        mode = kwargs.get("rounding_mode")
        if mode == "floor" or (mode == "trunc" and vals[0] >= 0):
            return _floordiv(vals[0], vals[1])
        return None
    if not vals:
        return None
    return fitting(VALUE_OPS[op](vals), meta.dtype)


def fitting(value: Any, dtype: torch.dtype) -> Any:
    """``value`` where the integer dtype holds it at every size the export admits, else
    None: a narrower tensor wraps (``torch.tensor(n).to(torch.uint8)`` is ``n % 256``), so
    its value is read as data (``aten.item`` at run time), not taken as ``n``.  int64 is
    taken to hold it (a size is below 2**63; a product of several tensors' sizes past that
    is not looked for)."""
    if value is None or dtype is torch.int64:
        return value
    try:
        info = torch.iinfo(dtype)
    except TypeError:
        return None
    if isinstance(value, int):
        return value if info.min <= value <= info.max else None
    env, expr = getattr(value, "env", None), getattr(value, "expr", None)
    if env is None or expr is None:
        return None
    r = env.bounds(expr)
    return value if info.min <= r.lo and r.hi <= info.max else None


def value_recipe(op: Any, args: tuple, kwargs: dict, result: Proxy,
                 data: Any) -> tuple | None:
    """How to compute `result` (a 0-d integer tensor of `op` with no known value) from the
    values of its 0-d integer tensor operands, read when the value is asked for
    (``read_value``): ``(op, args)``, or None where it is not such a sum or product.
    ``data(t)`` is the graph value of a real tensor the program reads (a buffer), or None."""
    meta = result.st_meta
    if meta.shape != () or not integral(meta.dtype) or VALUE_OPS.get(op) is None or \
            not unit_alpha(kwargs):
        return None
    args = tuple(_data_or(data, a) for a in args)
    for a in args:
        if isinstance(a, Proxy):
            m = a.st_meta
            if m.shape != () or not integral(m.dtype):
                return None
        elif isinstance(a, torch.Tensor) or isinstance(a, bool) or \
                not (isinstance(a, int) or hasattr(a, "expr")):
            if not (op is _A.to.dtype and isinstance(a, torch.dtype)):
                return None
    return op, args


def _data_or(data: Any, a: Any) -> Any:
    if isinstance(a, torch.Tensor) and not isinstance(a, Proxy):
        p = data(a)
        return a if p is None else p
    return a


def read_value(tr: Recorder, x: Proxy, read: Any) -> Any:
    """The value of the 0-d integer tensor `x` as the graph reads it: its known value, or
    its recipe's sum/product of its operands' values (each operand read with `read`, so
    ``(cache_len + n).item()`` is ``cache_len.item() + n``: one data read, related sizes),
    or None.  A recipe holds while neither `x` nor its operands are written (its stamp,
    versions.py)."""
    if (value := x.st_value) is not None:
        return value
    recipe = getattr(x, "st_recipe", None)
    if recipe is None or recipe[0] != recipe_stamp(tr, x, recipe[2]):
        return None
    op, args = recipe[1], recipe[2]
    vals = []
    for a in args:
        if isinstance(a, Proxy):
            vals.append(read(tr, a))
        elif not isinstance(a, torch.dtype):
            vals.append(a)
    if any(v is None for v in vals):
        return None
    return fitting(VALUE_OPS[op](vals), x.st_meta.dtype)


def integral(dtype: torch.dtype) -> bool:
    """Integer dtypes; not bool (eager's size arguments refuse a bool tensor)."""
    return not (dtype.is_floating_point or dtype.is_complex or dtype is torch.bool)


def program_data(tr: Recorder, t: Any) -> Proxy | None:
    """A real tensor whose data the program reads at run time, as its graph value: a
    parameter or buffer (an input of the program, which its modules and the caller may
    write between calls: a step counter, a cache's length), or a constant the traced code
    wrote in place.  None for any other real tensor (a constant: its value is known)."""
    if not isinstance(t, torch.Tensor) or isinstance(t, Proxy):
        return None
    if id(t) not in tr.state and not (
            tr.written_storages and t.untyped_storage().data_ptr() in tr.written_storages):
        return None
    return tr.lift(t).meta["val"]


def read_data(tr: Recorder, t: Any) -> Proxy | None:
    """``program_data`` where Python reads `t`'s values (``.item()``, ``bool(t)``, an
    index): None for a constant, whose value export takes; its memory is noted
    (``value_reads``) so that a later write to it by the program, which would make that
    value stale on the next call, is refused at the end of the export."""
    traced = program_data(tr, t)
    if traced is None and isinstance(t, torch.Tensor) and id(t) not in tr.folded:
        with torch._C.DisableTorchFunction():
            storage = t.untyped_storage()
            ptr = storage.data_ptr() if storage.nbytes() else None
        if ptr is not None and ptr not in tr.value_reads:
            tr.value_reads[ptr] = short(stack_trace(3))
    return traced


def data_as_sizes(tr: Recorder, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    """(args, kwargs) with each one-element integer tensor whose data the program reads
    (``program_data``: a buffer, a constant written in place) replaced by its graph value,
    so a size given as one (``torch.zeros(self.count)``, read by torch's argument parser
    without asking the tracer) is read at run time through ``__index__``, not fixed at its
    export value; None when there is none (the common case)."""
    found = False
    for v in (*args, *kwargs.values()):
        for x in (v if type(v) in (list, tuple) else (v,)):
            if isinstance(x, torch.Tensor) and type(x) is not Proxy and _data_int(tr, x):
                found = True
    if not found:
        return None

    def swap(v: Any) -> Any:
        if type(v) in (list, tuple):
            return type(v)(swap(x) for x in v)
        if isinstance(v, torch.Tensor) and v.__class__ is not Proxy and _data_int(tr, v):
            return program_data(tr, v)
        return v
    return tuple(swap(a) for a in args), {k: swap(v) for k, v in kwargs.items()}


def _data_int(tr: Recorder, t: torch.Tensor) -> bool:
    with torch._C.DisableTorchFunction():
        if id(t) not in tr.state and not (
                tr.written_storages and t.untyped_storage().data_ptr() in tr.written_storages):
            return False
        return t.numel() == 1 and integral(t.dtype)


def plain_constant(t: torch.Tensor) -> torch.Tensor:
    """`t`, a real tensor met in the traced code (lifted as a constant), unless it is a
    tensor subclass built from traced tensors (``TwoTensor(x, x + 1)`` inside forward):
    its inner tensors are proxies, not data, so it is refused."""
    flatten = getattr(type(t), "__tensor_flatten__", None)
    if flatten is None:
        return t
    names, _ = flatten(t)
    for name in names:
        inner = getattr(t, name, None)
        if isinstance(inner, Proxy):
            raise traced_subclass(type(t).__name__, short(stack_trace(4)))
        if isinstance(inner, torch.Tensor):
            plain_constant(inner)
    return t
