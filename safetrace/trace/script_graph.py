"""A TorchScript method of a ``torch.jit.script`` / ``torch.jit.trace`` submodule, followed
node by node through the tracer.

Eager runs such a method in TorchScript's interpreter, which calls one ATen operator per
node of the method's graph.  Here each node of ``method.inlined_graph`` (the methods and
functions it calls inlined) is run as Python runs it: an ``aten::`` node is its
``torch.ops.aten`` overload, called on the traced values (so the tracer records it, with
its shape rule and its guards), an operator on ints, floats or bools is Python's own,
``prim::GetAttr`` reads the module (its parameters and buffers are the program's state),
``prim::If`` decides its condition as Python's ``if`` does, a dict is Python's dict, and a
``prim::CallMethod`` the inlining left (a ``@torch.jit.interface`` submodule) is followed
through the method of the submodule held.  Any other node kind (``prim::SetAttr``: the
module's attributes are not written while exporting) is refused, naming it: the graph is
never guessed at.  A traced module's graph is what eager
runs too (its branches frozen at the trace), so the program computes what eager computes.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any, Callable

import torch

from safetrace.errors import script_node

# operators of TorchScript on numbers (no tensor among the inputs): Python's
_NUMBER_OPS: dict[str, Callable[..., Any]] = {
    "aten::add": operator.add, "aten::sub": operator.sub, "aten::mul": operator.mul,
    "aten::floordiv": operator.floordiv, "aten::div": operator.truediv,
    "aten::remainder": operator.mod, "aten::neg": operator.neg,
    "aten::eq": operator.eq, "aten::ne": operator.ne, "aten::lt": operator.lt,
    "aten::le": operator.le, "aten::gt": operator.gt, "aten::ge": operator.ge,
    "aten::__and__": operator.and_, "aten::__or__": operator.or_,
    "aten::__not__": operator.not_, "aten::__getitem__": operator.getitem,
    "aten::len": len, "aten::Int": int, "aten::Float": float, "aten::Bool": bool,
    "aten::__is__": operator.is_, "aten::__isnot__": operator.is_not,
    "aten::__contains__": operator.contains, "aten::str": str,
    "aten::format": lambda text, *args: text.format(*args),
    "aten::warn": lambda message, stacklevel=2: warnings.warn(message, stacklevel=stacklevel),
    # a loop over range(lo, hi, step): its trip count and each index, as Python's range
    "aten::__range_length": lambda lo, hi, step: _range_length(lo, hi, step),
    "aten::__derive_index": lambda index, start, step: start + index * step,
}


def _range_length(lo: Any, hi: Any, step: Any) -> Any:
    """``len(range(lo, hi, step))`` (sizes stay symbolic: each comparison a guard)."""
    if step > 0:
        return (hi - lo + step - 1) // step if lo < hi else 0
    return (lo - hi - step - 1) // -step if lo > hi else 0

# ATen scalar types by TorchScript's int code (a dtype is an int in a TorchScript graph)
_DTYPES = dict(enumerate((torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                          torch.float16, torch.float32, torch.float64, torch.complex32,
                          torch.complex64, torch.complex128, torch.bool)))
_DTYPES[15] = torch.bfloat16

_CODES = {dtype: code for code, dtype in _DTYPES.items()}
_ENUMS = {
    "ScalarType": _DTYPES,
    "MemoryFormat": dict(enumerate((torch.contiguous_format, torch.preserve_format,
                                    torch.channels_last, torch.channels_last_3d))),
    "Layout": dict(enumerate((torch.strided, torch.sparse_coo))),
}

# operators on a TorchScript dict (ordered by insertion, as Python's), as Python's dict
# computes them; the writes change the dict itself, as TorchScript's do
_DICT_OPS: dict[str, Callable[..., Any]] = {
    "aten::keys": lambda d: list(d), "aten::values": lambda d: list(d.values()),
    "aten::items": lambda d: list(d.items()),
    "aten::get": lambda d, key, default=None: d.get(key, default),
    "aten::__contains__": operator.contains,
    "aten::_set_item": operator.setitem, "aten::Delete": operator.delitem,
    "aten::pop": lambda d, key, *default: d.pop(key, *default),
    "aten::setdefault": lambda d, key, default: d.setdefault(key, default),
    "aten::update": lambda d, other: d.update(other),
    "aten::clear": lambda d: d.clear(), "aten::popitem": lambda d: d.popitem(),
    "aten::copy": dict, "aten::dict": dict,
}

# other nodes of one output, as Python computes them
_PRIMS: dict[str, Callable[..., Any]] = {
    "prim::dtype": lambda t: _CODES[t.dtype], "prim::device": lambda t: t.device,
    "prim::min": min, "prim::max": max,
    "prim::requires_grad": lambda t: t.requires_grad,
    "prim::Uninitialized": lambda: None,
}

# tensor queries: the tensor's own methods (sizes stay the tracer's symbolic ints)
_QUERIES: dict[str, Callable[..., Any]] = {
    "aten::size": lambda t, *d: t.size(*d) if d else list(t.size()),
    "aten::dim": lambda t: t.dim(), "aten::numel": lambda t: t.numel(),
    # a tensor read as a Python number: as Python reads it (data-dependent in the tracer)
    "aten::Bool": bool, "aten::Int": int, "aten::Float": float,
    "aten::item": lambda t: t.item(),
}


# operators TorchScript's interpreter runs itself (not in PyTorch's dispatcher: torch.ops
# calls them outside it, so a traced call would record a node no program can run), as
# Python computes them
_INTERPRETER_ONLY: dict[str, Callable[..., Any]] = {
    "aten::tensor": lambda data, dtype=None, device=None, requires_grad=False: torch.tensor(
        data, dtype=dtype, device=device, requires_grad=requires_grad),
    "aten::list": list,
    "aten::slice": lambda values, start=None, end=None, step=1: values[start:end:step],
}


class _Refused(Exception):
    """A node this interpreter does not follow (its kind)."""


def run_method(method: Any, module: Any, args: tuple, kwargs: dict, path: str,
               where: str) -> Any:
    """What calling TorchScript `method` of `module` (the submodule at `path`) with `args`
    computes, traced; a node it cannot follow raises ScriptModuleInput naming it."""
    try:
        out = _run_graph(method, module, _bind(method.schema, args, kwargs))
    except _Refused as exc:
        raise script_node(path, type(module).__name__, method.name, str(exc), where) from None
    return out[0] if len(out) == 1 else tuple(out)


def _run_graph(method: Any, module: Any, args: list) -> list:
    """The outputs of `method`'s inlined graph run on `module` and `args` (bound)."""
    graph = method.inlined_graph
    inputs = list(graph.inputs())
    env: dict[Any, Any] = {inputs[0]: module}
    for value, arg in zip(inputs[1:], args):
        env[value] = arg
    return _run_block(graph, env)


def _call_method(target: Any, name: str, args: list) -> list:
    """``prim::CallMethod``: a method call the inlining left (a submodule typed by a
    ``@torch.jit.interface``, whose method is chosen when the program runs): the method
    of the submodule held now, followed through its own graph."""
    method = getattr(target, name, None)
    if not isinstance(target, torch.jit.ScriptModule) or \
            not hasattr(method, "inlined_graph"):
        raise _Refused(f"prim::CallMethod (of {name!r} on a {type(target).__name__})")
    return _run_graph(method, target, args)


def _bind(schema: Any, args: tuple, kwargs: dict) -> list:
    """The call's arguments in the schema's order (its defaults filled in)."""
    params = list(schema.arguments)[1:]  # (self first)
    out = list(args)
    for p in params[len(args):]:
        if p.name in kwargs:
            out.append(kwargs[p.name])
        elif p.has_default_value():
            out.append(p.default_value)
        else:
            raise TypeError(f"{schema.name}() missing required argument {p.name!r}")
    return out


def _run_block(block: Any, env: dict) -> list:
    for node in block.nodes():
        _run_node(node, env)
    ret = block.return_node() if isinstance(block, torch._C.Graph) else block.returnNode()
    return [env[v] for v in ret.inputs()]


def _run_node(node: Any, env: dict) -> None:
    kind = node.kind()
    ins = [env[v] for v in node.inputs()]
    outs = list(node.outputs())
    if kind == "prim::Constant":
        env[outs[0]] = _constant(node)
    elif kind == "prim::GetAttr":
        env[outs[0]] = getattr(ins[0], node.s("name"))
    elif kind == "prim::SetAttr":  # (the module's C++ attribute would hold a traced value)
        raise _Refused(f"prim::SetAttr (it sets the module's attribute `{node.s('name')}`)")
    elif kind in ("prim::ListConstruct", "prim::TupleConstruct"):
        env[outs[0]] = list(ins) if kind == "prim::ListConstruct" else tuple(ins)
    elif kind == "prim::DictConstruct":  # (keys and values in turn, in insertion order)
        env[outs[0]] = dict(zip(ins[0::2], ins[1::2]))
    elif kind == "prim::CallMethod":
        for v, x in zip(outs, _call_method(ins[0], node.s("name"), ins[1:])):
            env[v] = x
    elif kind in ("prim::ListUnpack", "prim::TupleUnpack"):
        for v, x in zip(outs, ins[0]):
            env[v] = x
    elif kind == "prim::TupleIndex":
        env[outs[0]] = ins[0][ins[1]]
    elif kind == "prim::unchecked_cast":
        env[outs[0]] = ins[0]
    elif kind == "prim::If":
        blocks = list(node.blocks())
        taken = blocks[0] if ins[0] else blocks[1]  # (a size condition becomes a guard)
        for v, x in zip(outs, _run_block(taken, env)):
            env[v] = x
    elif kind == "prim::Loop":
        for v, x in zip(outs, _loop(next(iter(node.blocks())), ins, env)):
            env[v] = x
    elif kind in _PRIMS:
        env[outs[0]] = _PRIMS[kind](*ins)
    elif kind == "prim::NumToTensor":
        env[outs[0]] = _num_to_tensor(ins[0], env)
    elif kind in ("aten::Int", "aten::Float") and _number_of(ins[0], env, kind) is not None:
        env[outs[0]] = _number_of(ins[0], env, kind)
    elif kind.startswith("aten::"):
        result = _aten(node, kind, ins)
        if len(outs) == 1:
            env[outs[0]] = result
        elif outs:  # (none: a node run for its effect, aten::warn)
            for v, x in zip(outs, result):
                env[v] = x
    else:
        raise _Refused(kind)


_NUMBERS = object()  # env's key for the numbers prim::NumToTensor made tensors of


def _num_to_tensor(n: Any, env: dict) -> Any:
    """TorchScript's ``prim::NumToTensor`` (a traced module's size, as a 0-dim tensor:
    int64, float64 for a float, as TorchScript makes it).  The number is kept: an
    ``aten::Int`` of the tensor is that number again, not a read of tensor data."""
    dtype = torch.bool if isinstance(n, (bool, torch.SymBool)) else torch.int64 if \
        isinstance(n, (int, torch.SymInt)) else torch.float64 if \
        isinstance(n, (float, torch.SymFloat)) else None
    if dtype is None:
        raise _Refused(f"prim::NumToTensor (of a {type(n).__name__})")
    t = torch.tensor(n, dtype=dtype)
    env.setdefault(_NUMBERS, {})[id(t)] = (t, n)
    return t


def _number_of(t: Any, env: dict, kind: str) -> Any:
    """The number prim::NumToTensor made `t` of, when ``kind`` (aten::Int, aten::Float)
    reads it back as a number of its own type; else None."""
    made = env.get(_NUMBERS, {}).get(id(t))
    if made is None or made[0] is not t or isinstance(made[1], (bool, torch.SymBool)):
        return None
    n = made[1]
    kinds = (int, torch.SymInt) if kind == "aten::Int" else (float, torch.SymFloat)
    return n if isinstance(n, kinds) else None


def _loop(body: Any, ins: list, env: dict) -> list:
    """TorchScript's loop: (trip count, condition, carried values); the body takes (the
    iteration, carried) and gives (condition, carried).  Unrolled as Python runs it: a
    trip count or condition on a size decides as Python's ``while`` does (a guard)."""
    trip, go, carried = ins[0], ins[1], list(ins[2:])
    params = list(body.inputs())
    i = 0
    while go and i < trip:
        env[params[0]] = i
        for v, x in zip(params[1:], carried):
            env[v] = x
        go, *carried = _run_block(body, env)
        i += 1
    return carried


def _constant(node: Any) -> Any:
    """A constant's value (None for ``prim::Constant()``; a tensor held in the graph stays
    that tensor, which the tracer lifts as a constant)."""
    return node.output().toIValue() if node.hasAttribute("value") else None


def _aten(node: Any, kind: str, ins: list) -> Any:
    if kind in ("aten::__getitem__", "aten::len") and isinstance(ins[0], (list, tuple, dict)):
        return _NUMBER_OPS[kind](*ins)
    if ins and isinstance(ins[0], dict) and kind in _DICT_OPS:  # (in place, as TorchScript's)
        return _DICT_OPS[kind](*ins)
    if kind == "aten::append" and isinstance(ins[0], list):  # (in place, as TorchScript's)
        ins[0].append(ins[1])
        return ins[0]
    if kind in _QUERIES and isinstance(ins[0], torch.Tensor):
        return _QUERIES[kind](*ins)
    op = _NUMBER_OPS.get(kind)
    if op is not None and not any(isinstance(x, torch.Tensor) for x in _leaves(ins)):
        return op(*ins)
    schema = torch._C.parse_schema(node.schema())
    packet = getattr(torch.ops.aten, kind.split("::", 1)[1], None)
    overload = getattr(packet, schema.overload_name or "default", None)
    if overload is None:
        raise _Refused(kind)
    for a in schema.arguments:  # a list or dict written in place: the copy that torch.ops
        # makes of a Python container would take the write, not the graph's value
        if a.alias_info is not None and a.alias_info.is_write and \
                "Tensor" not in str(a.real_type).replace("Tensor[]", ""):
            raise _Refused(f"{kind} (writes its {a.name} argument in place)")
    args: list = []
    kwargs: dict = {}
    for a, x in zip(schema.arguments, ins):
        if type(x) is int:  # (an enum is an int in a TorchScript graph)
            enum = str(a.real_type).replace("Optional[", "").rstrip("]")
            table = _ENUMS.get(enum)
            if table is not None and x not in table:
                raise _Refused(f"{kind} (its {a.name} is {enum} code {x})")
            x = x if table is None else table[x]
        if a.kwarg_only:
            kwargs[a.name] = x
        else:
            args.append(x)
    if not _dispatched(overload):
        python = _INTERPRETER_ONLY.get(kind)
        if python is None and not _tensors_in(ins, schema):
            return overload(*args, **kwargs)  # (on numbers and lists: no node recorded)
        if python is None:
            raise _Refused(f"{kind} (an operator of TorchScript's interpreter, outside "
                           f"PyTorch's dispatcher)")
        return python(*args, **kwargs)
    return overload(*args, **kwargs)


def _tensors_in(ins: list, schema: Any) -> bool:
    """Whether a node's inputs or results include a tensor."""
    return any(isinstance(x, torch.Tensor) for x in _leaves(ins)) or \
        any("Tensor" in str(r.type) for r in schema.returns)


def _dispatched(overload: Any) -> bool:
    """Whether `overload` is PyTorch's dispatcher's (not TorchScript's interpreter's own)."""
    known = _DISPATCHED.get(overload)
    if known is None:
        known = _DISPATCHED[overload] = torch._C._dispatch_has_kernel(overload.name())
    return known


_DISPATCHED: dict = {}


def _leaves(values: list) -> list:
    out = []
    for v in values:
        out += _leaves(list(v)) if isinstance(v, (list, tuple)) else [v]
    return out
