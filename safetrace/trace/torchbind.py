"""A method of a torchbind object the model holds, recorded as torch.export records it.

A TorchScript custom class object (``torch.classes.ns.Cls``: C++ code, no graph) held by
one of the model's modules, whose method the traced code calls, becomes one
``torch.ops.higher_order.call_torchbind`` node (the object, the method's name, its
arguments) and the object a constant input of the program under its attribute path
(torch.export's lifted custom object).  The result's metadata comes from the fake class
registered for the object's class (``torch._library.register_fake_class``), made from the
object's flattened state and run on the arguments' metadata without recording, as torch
runs it on fake tensors.  The real method runs when the program runs; each tensor it
returns is checked there against that metadata (sizes, dtype, device:
``aten._assert_tensor_metadata``), so a call whose object has moved on to other shapes
stops rather than flowing into ops traced for the old ones, and its strides are taken as
unknown.  No fake class, a fake class without the method, a result that is not tensors
(a number would be fixed at its export value), or sizes the fake makes up: refused.
"""

from __future__ import annotations

import operator
import weakref
from typing import Any

import torch
from torch.utils import _pytree as pytree

from safetrace import errors
from safetrace.meta import TensorMeta
from safetrace.trace.asserts import assert_sym, emit_assert
from safetrace.trace.graph import placeholder_before_ops
from safetrace.trace.proxy import Proxy
from safetrace.trace.recorder import Recorder
from safetrace.trace.source import short, stack_trace, torch_fn

try:  # torch's registry of fake classes (torch._library.register_fake_class)
    from torch._library.fake_class_registry import find_fake_class
except ImportError:  # pragma: no cover - older torch
    find_fake_class = None  # type: ignore[assignment]

CALL_TORCHBIND = getattr(torch.ops.higher_order, "call_torchbind", None)
_ASSERT_META = torch.ops.aten._assert_tensor_metadata.default
_SIZE = torch.ops.aten.sym_size.int
_ORIGINAL_CALL = torch.ScriptMethod.__call__  # (scripted.py's patch sends calls here)
_FAKES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # tracer -> {id: fake}


def is_torchbind(value: Any) -> bool:
    """A torchbind object (not a compiled module's C++ object, also a ScriptObject)."""
    return type(value) is torch.ScriptObject and \
        value._type().qualified_name().startswith("__torch__.torch.classes.")


def class_name(obj: Any) -> str:
    return obj._type().qualified_name()


def call(tr: Recorder, held: Any, method: str, args: tuple, kwargs: dict, where: str,
         enter: bool = False) -> Any:
    """``held.method(*args, **kwargs)`` of the object `held` (the model's attribute);
    `enter`: the tracer's mode is to be entered for the fake (a handler's call)."""
    kind = class_name(held)
    fake_class = find_fake_class(kind) if find_fake_class is not None else None
    if fake_class is None or CALL_TORCHBIND is None:
        raise errors.torchbind_no_fake(method, kind, where)
    if tr.scope is not tr.scopes[0]:  # (the object would be an operand of the branch)
        raise errors.torchbind_unshaped(method, kind, where, "the call is inside a "
                                        "torch.cond branch or a loop body, where safetrace "
                                        "does not record it")
    fake = fake_for(tr, held, fake_class, method, where)
    fn = getattr(fake, method, None)
    if not callable(fn):
        raise errors.torchbind_unshaped(method, kind, where,
                                        f"its fake class {fake_class.__name__} has no "
                                        f"method `{method}`")
    env = tr.env
    n_syms = len(env.symbols)
    saved = tr.recording, tr.pending_checks
    tr.recording, tr.pending_checks = False, []
    try:
        if enter:
            with tr:
                result = fn(*args, **kwargs)
        else:
            result = fn(*args, **kwargs)
        checks = tr.pending_checks
    finally:
        tr.recording, tr.pending_checks = saved
    if len(env.symbols) != n_syms:
        raise errors.torchbind_unshaped(method, kind, where,
                                        "its fake makes data-dependent sizes")
    outs = result if isinstance(result, (tuple, list)) else (result,)
    bad = next((o for o in outs if not isinstance(o, Proxy)), outs)
    if result is not None and bad is not outs:
        raise errors.torchbind_unshaped(method, kind, where,
                                        f"its fake returns {type(bad).__name__}, not tensors")
    wrong = _unlike_schema(held, method, result)
    if wrong is not None:
        raise errors.torchbind_unshaped(method, kind, where, wrong)
    trace = stack_trace(3, tr.nn_stack)
    nargs, nkwargs = pytree.tree_map(lambda a: tr.unwrap(a)[1], (args, kwargs))
    node = tr.scope.record(CALL_TORCHBIND, (_lift(tr, held), method, *nargs), nkwargs,
                           "call_torchbind", trace)
    value = _wrap(tr, node, result, trace)
    for i, p in enumerate((value,) if isinstance(value, Proxy) else value or ()):
        _check_result(tr, p, f"{kind}.{method}", i, trace)
    for expr, msg, origin in checks:
        emit_assert(tr, expr, msg, origin or trace)
    return value


def fake_for(tr: Recorder, held: Any, fake_class: Any, method: str, where: str) -> Any:
    """The fake object standing for `held` in this trace: one per object for the whole
    trace (as torch's fake mode keeps one), so the state its methods and the custom ops
    given it change carries to later calls."""
    fakes = _FAKES.setdefault(tr, {})
    fake = fakes.get(id(held))
    if fake is None:
        fake = fakes[id(held)] = _fake_object(held, fake_class, method, where)
    return fake


def op_arguments(tr: Recorder, op: Any, args: tuple,
                 kwargs: dict) -> tuple[tuple, dict, tuple, dict, str] | None:
    """A custom op given torchbind objects the model holds or takes (``torch.ops.ns.op(
    self.obj, x)``): the arguments its fake runs on (each object its fake object), those its
    node takes (each object its placeholder, as torch.export lifts it) and the user's line;
    None when no argument is one."""
    leaves = pytree.tree_leaves((args, kwargs))
    if not any(type(a) is torch.ScriptObject for a in leaves):
        return None
    name, where = str(op), short(stack_trace(4))
    for obj in leaves:
        if type(obj) is not torch.ScriptObject:
            continue
        if not is_torchbind(obj):
            raise errors.torchbind_no_fake(name, class_name(obj), where)
        fake_class = find_fake_class(class_name(obj)) if find_fake_class is not None else None
        if fake_class is None:
            raise errors.torchbind_no_fake(name, class_name(obj), where)
        if tr.scope is not tr.scopes[0]:
            raise errors.torchbind_unshaped(name, class_name(obj), where, "the call is inside "
                                            "a torch.cond branch or a loop body, where "
                                            "safetrace does not record it")
        fake_for(tr, obj, fake_class, name, where)
    fakes = _FAKES[tr]

    def faked(a: Any) -> Any:
        return fakes[id(a)] if type(a) is torch.ScriptObject else a

    def lifted(a: Any) -> Any:
        return _lift(tr, a) if type(a) is torch.ScriptObject else a

    fargs, fkwargs = pytree.tree_map(faked, (args, kwargs))
    nargs, nkwargs = pytree.tree_map(lifted, (args, kwargs))
    return fargs, fkwargs, nargs, nkwargs, where


def tensors_only(op: Any, args: tuple, kwargs: dict, result: Any, where: str) -> None:
    """Refuse a custom op given a torchbind object whose fake returns anything but tensors
    (or nothing): a number read from the object's state would be fixed at its export value
    (torch.export fixes it; the object's state at run time may differ)."""
    outs = result if isinstance(result, (tuple, list)) else (result,)
    bad = next((o for o in outs if not isinstance(o, Proxy)), None)
    if result is None or bad is None:
        return
    obj = next(a for a in pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.fx.Node)
               and type(a.meta.get("val")) is torch.ScriptObject)
    raise errors.torchbind_unshaped(str(op), class_name(obj.meta["val"]), where,
                                    f"its fake returns {type(bad).__name__}, not tensors")


def check_results(tr: Recorder, op: Any, value: Any) -> None:
    """Each tensor a custom op given a torchbind object returns is checked against its
    fake's sizes, dtype and device when the program runs, as a method's results are."""
    trace = stack_trace(4, tr.nn_stack)
    outs = (value,) if isinstance(value, Proxy) else value if isinstance(
        value, (tuple, list)) else ()
    for i, p in enumerate(outs):
        if isinstance(p, Proxy):
            _check_result(tr, p, str(op), i, trace)


def _unlike_schema(held: Any, method: str, result: Any) -> str | None:
    """How the fake's result differs in form from what the method's schema returns (a
    tensor, a tuple of tensors, None), or None when it has that form; a method that
    writes an argument in place (the trace would not know the new values) is refused."""
    schema = getattr(held, method).schema
    written = [a.name for a in schema.arguments[1:]
               if a.alias_info is not None and a.alias_info.is_write]
    if written:
        return f"the method writes its argument `{written[0]}` in place ({schema})"
    returns = [r.type for r in schema.returns]
    if len(returns) == 1 and isinstance(returns[0], torch.TupleType):
        returns, single = list(returns[0].elements()), False
    else:
        single = len(returns) == 1
    tensor = torch.TensorType.get()
    if any(t != tensor for t in returns) and returns != [torch.NoneType.get()]:
        return (f"the method returns {', '.join(map(str, returns))} (the program can check "
                f"tensors and tuples of them only)")
    if returns in ([], [torch.NoneType.get()]):
        form = result is None
    elif single:
        form = isinstance(result, Proxy)
    else:
        form = isinstance(result, tuple) and len(result) == len(returns)
    return None if form else (f"its fake returns {type(result).__name__} where the "
                              f"method's schema returns {returns or 'nothing'}")


def _check_result(tr: Recorder, p: Proxy, what: str, i: int, trace: str) -> None:
    """The real method's tensor `p` has the fake's sizes, dtype and device, or the program
    stops there (each size: ``assert_sym(sym_size(p, d) == size)``; dtype and device:
    ``aten._assert_tensor_metadata``); its strides are the method's own."""
    p.st_contig = None
    meta = p.st_meta
    graph = tr.scope.graph
    for d, size in enumerate(meta.shape):
        read = graph.call_function(_SIZE, (p.st_node, d))
        read.meta["val"] = size
        same = graph.call_function(operator.eq, (read, tr.sym_node(size)))
        same.meta["val"] = True
        text = (f"{what} returned a tensor (result {i}) whose size {d} is not {size}, "
                f"what its registered fake class gave when the program was exported")
        done = graph.call_function(assert_sym, (same, text))
        for n in (read, same, done):
            n.meta["stack_trace"] = trace
        done.meta["val"] = None
    tr.emit(_ASSERT_META, (p,), {"dtype": meta.dtype, "device": meta.device})


def _fake_object(held: Any, fake_class: Any, method: str, where: str) -> Any:
    """The fake class's object for `held`: ``__obj_unflatten__`` of its flattened state,
    each tensor there a proxy of its metadata (read, never recorded: as torch's fake)."""
    with torch._C.DisableTorchFunction():
        flat = _ORIGINAL_CALL(held.__obj_flatten__) if held._has_method(
            "__obj_flatten__") else None
    unflatten = getattr(fake_class, "__obj_unflatten__", None)
    if not isinstance(flat, tuple) or unflatten is None:
        raise errors.torchbind_unshaped(method, class_name(held), where,
                                        "its class has no __obj_flatten__ or its fake class "
                                        "no __obj_unflatten__")
    return unflatten(pytree.tree_map_only(
        torch.Tensor, lambda t: Proxy(TensorMeta(tuple(t.shape), t.dtype, t.device), None),
        flat))


def input_node(tr: Recorder, obj: Any) -> torch.fx.Node | None:
    """The placeholder of the program's input that is the object `obj` itself (torch.export
    takes a torchbind object as an input as it is), None when no input is."""
    for node in tr.scopes[0].graph.find_nodes(op="placeholder"):
        if node.meta.get("kind") == "user_input" and node.meta.get("val") is obj:
            return node
    return None


def _lift(tr: Recorder, held: Any) -> torch.fx.Node:
    """The object's placeholder: a constant input of the program, before its first op (or
    the input it is)."""
    node = tr.const_nodes.get(id(held))
    if node is not None:
        return node
    node = input_node(tr, held)
    if node is not None:
        return node
    name = tr.const_name(held)
    node = placeholder_before_ops(tr.scopes[0].graph, name)
    node.meta["val"] = held
    node.meta["stack_trace"] = ""
    node.meta["kind"] = "constant"
    tr.constants[node.name] = held
    tr.keepalive.append(held)
    tr.const_nodes[id(held)] = node
    return node


def _wrap(tr: Recorder, node: torch.fx.Node, result: Any, trace: str) -> Any:
    """The node's value: a proxy, or one getitem node per tensor of a tuple/list."""
    node.meta["torch_fn"] = torch_fn(tr.fn_calls, CALL_TORCHBIND)
    if tr.nn_stack:
        node.meta["nn_module_stack"] = tr.nn_stack
    if result is None:
        node.meta["val"] = None
        return None
    if isinstance(result, Proxy):
        value = node.meta["val"] = Proxy(result.st_meta, node)
        return value
    outs = []
    for i, r in enumerate(result):
        g = tr.scope.graph.call_function(operator.getitem, (node, i))
        g.meta["stack_trace"] = trace
        if tr.nn_stack:
            g.meta["nn_module_stack"] = tr.nn_stack
        outs.append(Proxy(r.st_meta, g))
        g.meta["val"] = outs[-1]
    node.meta["val"] = tuple(outs)
    return outs if isinstance(result, list) else tuple(outs)
