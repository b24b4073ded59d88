"""How a torch callable without a special handler is traced: its plan.

The tracer looks a call up in ``registry.HANDLERS`` first; every other callable gets a
plan, chosen once per callable (``plan_for``) and cached:

- an operator object: ``torch.ops.ns.op.overload`` is recorded as it is, a packet
  ``torch.ops.ns.op`` after choosing its overload (``custom.py``);
- a global-state function (``torch._C._set_grad_enabled``): run as it is;
- a Python operator (``x + 1``, ``2 ** x``): the ATen op ``names.DUNDERS`` names, operands
  in ATen's order;
- a Python composite (``F.layer_norm``, ``Tensor.unflatten``): one node when its ATen
  namesake accepts the call, traced through otherwise (``composites.py``);
- anything else (``torch.relu``, ``x.view``, a Tensor property): the overload of its ATen
  namesake that the arguments fit (``schema.resolve``; ``arguments.resolve_normalized``
  when they fit as eager's parser reads them).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

from safetrace import errors
from safetrace.errors import unknown_higher_order_op
from safetrace.trace import composites, names
from safetrace.trace.arguments import (OPTIONAL_TENSORS, has_tensor, numbers_as_tensors,
                                       resolve_normalized)
from safetrace.trace.custom import call_overload, call_packet
from safetrace.trace.outarg import rewrite_out
from safetrace.trace.proxy import Proxy, annotation
from safetrace.trace.schema import resolve
from safetrace.trace.source import parse, short, stack_trace
from safetrace.trace.recorder import Recorder
from safetrace.trace.values import data_as_sizes

Plan = Callable[[Any, Any, tuple, dict], Any]

PLANS: dict[Any, Plan] = {}  # torch callable -> its plan (filled by plan_for)

_GETSET = type(torch.Tensor.T)  # the descriptor type of Tensor properties


def plan_for(func: Any) -> Plan:
    """The plan of `func` (made on first use, then cached)."""
    plan = PLANS.get(func)
    if plan is None:
        plan = PLANS[func] = _make_plan(func)
    return plan


def _make_plan(func: Any) -> Plan:
    if isinstance(func, torch._ops.OpOverload):
        return call_overload_plan
    if isinstance(func, torch._ops.OpOverloadPacket):
        return call_packet_plan
    if isinstance(func, torch._ops.HigherOrderOperator):  # none of those with a handler
        return higher_order_plan
    name = names.func_name(func)
    if name in names.PASSTHROUGH_NAMES:
        return passthrough
    if name in names.DUNDERS:
        packet, swap = names.DUNDERS[name]
        return functools.partial(dunder, packet, swap)
    if name == "__get__" and isinstance(getattr(func, "__self__", None), _GETSET):
        name = func.__self__.__name__  # a property with no handler: its ATen namesake
    packet = names.ALIASES.get(name, name)
    # (a partial, not a lambda: one Python call less on every op)
    if composites.through(func) is None:
        return functools.partial(aten_call, packet)
    return functools.partial(composite_call, packet)


def call_overload_plan(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    return call_overload(tr, func, args, kwargs)


def call_packet_plan(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    return call_packet(tr, func, args, kwargs)


# the kernels eager runs for plain tensors, in the order the dispatcher would pick them
_DENSE_KEYS = (torch._C.DispatchKey.CompositeExplicitAutograd,
               torch._C.DispatchKey.CompositeImplicitAutograd, torch._C.DispatchKey.CPU)


def higher_order_plan(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """A higher-order operator without a handler.  One defined outside torch (a
    ``HigherOrderOperator`` subclass of the user's) with a dense kernel is traced through
    that kernel, as eager runs it (the graph computes eager's values; the operator itself
    leaves no node, as torch.export's ProxyTorchDispatchMode rule of such an operator
    usually inlines it); the others are refused, naming them."""
    if not type(func).__module__.startswith("torch"):
        dense = next((func.py_kernels[k] for k in _DENSE_KEYS if k in func.py_kernels), None)
        if dense is not None:
            with tr:
                return dense(*args, **kwargs)
    fn = args[0] if func.name() == "custom_function_call" and args else None
    raise unknown_higher_order_op(func.name(), short(stack_trace(4)),
                                  getattr(fn, "__name__", "") if isinstance(fn, type) else "")


def passthrough(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """Global-state functions (grad mode, autocast queries): run once, as they are (a
    proxy argument, as in ``Module.to``'s ``_has_compatible_shallow_copy_type(p, q)``, as
    the plain tensor it stands for)."""
    with torch._C.DisableTorchFunctionSubclass():
        return func(*args, **kwargs)


def aten_call(packet: str, tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """A function with an ATen namesake (``torch.relu``, ``x.view``): the overload the
    arguments fit.  A call of numbers only with no ATen namesake runs as it is."""
    if tr.state or tr.written_storages:  # a buffer given for a size: read at run time
        swapped = data_as_sizes(tr, args, kwargs)
        if swapped is not None:
            args, kwargs = swapped
    found = resolve(packet, args, kwargs)  # as written: the cached fast path
    if found is None:
        found = resolve_normalized(tr, packet, args, kwargs)
    if found is None:
        if not has_tensor(args) and not has_tensor(list(kwargs.values())) and not hasattr(
                torch.ops.aten, packet):
            out = func(*args, **kwargs)
            if isinstance(out, torch.Tensor):  # (torch.from_numpy: made by this call)
                tr.folded.add(id(out))
                tr.keepalive.append(out)
            return out
        # (a Tensor method's first argument is its tensor; a function's may be the size)
        first = 1 if getattr(func, "__objclass__", None) is torch._C.TensorBase else 0
        scalar = _integer_scalar(args[first:], kwargs)
        if scalar is not None:
            # x.new_zeros(t), torch.ones(b, t): eager reads a 0-d integer tensor given for
            # a size through __index__ (an unbacked size, as .item(); its handler refuses
            # what eager refuses): the call again with that int in its place
            value = scalar.st_value if type(scalar) is Proxy else None  # (a size's
            if value is None:  # value stays symbolic: no Python __index__ protocol here)
                value = tr.redispatch(torch.Tensor.__index__, (scalar,), {})
            args, kwargs = _replaced((args[:first], args[first:], kwargs), scalar, value)
            return aten_call(packet, tr, func, args, kwargs)
        raise _unsupported(func, packet, args, kwargs)
    op, bargs, bkwargs = found
    if OPTIONAL_TENSORS.get(id(op)) == ():  # no number to wrap (the call skipped)
        return tr.emit(op, bargs, bkwargs)
    return tr.emit(op, *numbers_as_tensors(tr, op, bargs, bkwargs))


def _replaced(parts: tuple, old: Any, new: Any) -> tuple[tuple, dict]:
    """(args, kwargs) with every `old` (in lists too) replaced, but in `head`."""
    def swap(v: Any) -> Any:
        if v is old:
            return new
        if type(v) in (list, tuple):
            return type(v)(swap(x) for x in v)
        return v

    head, rest, kwargs = parts
    return (*head, *(swap(a) for a in rest)), {k: swap(v) for k, v in kwargs.items()}


def _integer_scalar(args: tuple, kwargs: dict) -> Proxy | None:
    """A one-element integer tensor among the arguments (in lists too), or None (eager
    reads those through __index__ where an int is expected): a proxy, or a constant made
    in ``forward`` (``torch.empty(torch.tensor([3]))``)."""
    for v in (*args, *kwargs.values()):
        for x in (v if isinstance(v, (list, tuple)) else (v,)):
            meta = x.st_meta if isinstance(x, Proxy) else x if isinstance(
                x, torch.Tensor) else None
            if meta is not None and all(type(s) is int and s == 1 for s in meta.shape) \
                    and not (meta.dtype.is_floating_point or meta.dtype.is_complex):
                return x  # type: ignore[no-any-return]
    return None


def dunder(packet: str, swap: bool, tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """Operators (``x + 1``, ``2 ** x``): the ATen op the table names, operands in order;
    when no overload takes them, the operator method is traced like any other function."""
    swapped = (args[1], args[0]) + args[2:] if swap else args
    found = resolve(packet, swapped, kwargs)
    if found is None:
        if composites.through(func) is not None:  # Tensor.__rsub__, __rpow__ (Python)
            return composite_call(packet, tr, func, args, kwargs)
        return aten_call(packet, tr, func, args, kwargs)
    if OPTIONAL_TENSORS.get(id(found[0])) == ():  # no number to wrap (the call skipped)
        return tr.emit(*found)
    return tr.emit(found[0], *numbers_as_tensors(tr, *found))


def composite_call(packet: str, tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """A Python composite: one node when its ATen namesake accepts the call, else its body
    traced through (once at a time: a body that calls itself cannot be traced)."""
    if not has_tensor(args) and not has_tensor(list(kwargs.values())):
        # a Python helper on sizes and numbers (torch.sym_max, broadcast_shapes): it
        # computes no tensors, so it runs as it is, on the symbolic values
        with torch._C.DisableTorchFunction():
            return func(*args, **kwargs)
    choice = composites.boolean_dispatch_choice(func, args, kwargs)
    target = func
    if choice is not None:
        packet, target = choice
    if func not in tr.tracing_through:
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
    if func in tr.tracing_through or body is None:
        raise _unsupported(func, packet, args, kwargs)
    tr.tracing_through.add(func)
    try:
        with tr:
            return body(*args, **kwargs)
    finally:
        tr.tracing_through.discard(func)


def _describe(v: Any) -> str:
    if isinstance(v, Proxy):
        return f"Tensor {annotation(v.st_meta)}"
    if isinstance(v, torch.Tensor):
        return f"Tensor {list(v.shape)}"
    if isinstance(v, list):
        return "[" + ", ".join(_describe(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(_describe(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def _callee(func: Any) -> str:
    """The call as the user spells it: ``torch.add`` (not its C class's
    ``_VariableFunctionsClass.add``), ``Tensor.add`` (not ``TensorBase.add``)."""
    qual = getattr(func, "__qualname__", None) or names.func_name(func)
    head, dot, name = qual.rpartition(".")
    if dot and head.startswith("_VariableFunctions"):
        return f"torch.{name}"
    return f"Tensor.{name}" if head == "TensorBase" else qual


def _unsupported(func: Any, packet: str, args: tuple, kwargs: dict) -> Exception:
    trace = stack_trace(4)
    p = parse(trace)
    rewrite = rewrite_out(p[3]) if p and isinstance(kwargs.get("out"), torch.Tensor) else None
    text = {"out": rewrite[1]} if rewrite else {}  # the out= tensor as the user wrote it
    call = ", ".join([_describe(a) for a in args]
                     + [f"{k}={text.get(k) or _describe(v)}" for k, v in kwargs.items()])
    call = f"{_callee(func)}({call})"
    if isinstance(kwargs.get("out"), torch.Tensor):
        rebind = f"{rewrite[1]} = {rewrite[2]}" if rewrite and rewrite[1].isidentifier() \
            else None
        return errors.out_argument(call, rewrite and rewrite[0], rebind, short(trace))
    return errors.untraceable_call(call, packet, hasattr(torch.ops.aten, packet),
                                   short(trace))
