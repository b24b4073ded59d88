"""TorchScript methods called by the code being exported run as their Python originals.

A ``torch.jit.ScriptModule`` subclass written with ``@torch.jit.script_method`` keeps each
method's Python function (``ScriptMethod.__wrapped__``).  torch.export runs that Python
function where eager would run TorchScript's interpreter (``torch.jit.is_scripting()`` is
False there), as it does for a ``@torch.jit.script`` function; safetrace does the same,
with the module itself as ``self`` (torch passes the method object, so a method that reads
its module's state fails there).  The module must be one of the exported model's modules,
so that its parameters and buffers are the program's state.  A method of a
``torch.jit.script`` / ``torch.jit.trace`` submodule follows its graph
(``script_graph.py``), and so does one of such a module's C++ object that the model holds
as a plain attribute (``self.add = torch.jit.script(Add())._c``, torch's
test_export_script_module): its tensors are constants of the program, as torch.export
lifts them, and a graph that writes one in place is refused (eager keeps the write).  A
method of a TorchScript custom class object (torchbind: C++ code, no graph) the model
holds is one call_torchbind node shaped by its registered fake class (``torchbind.py``);
one held elsewhere is refused (``torchbind_call``), as is any other script method reached
outside the model.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

import torch

from safetrace.errors import script_method_call, script_node, torchbind_call
from safetrace.trace import torchbind
from safetrace.trace.current import active_tracer, exporting
from safetrace.trace.recorder import Recorder
from safetrace.trace.registry import handles
from safetrace.trace.script_graph import run_method
from safetrace.trace.source import short, stack_trace

_ORIGINAL_CALL = torch.ScriptMethod.__call__


class _Local(threading.local):
    # (the exported model's class-API script modules, or None while no export runs;
    # each of its torch.jit.script / torch.jit.trace submodules with its path and class
    # name: a call of one of their methods follows the method's graph, script_graph.py;
    # the exported model's (path, module) pairs), as one value: one thread-local read
    # and store each on an export's entry and exit
    state: tuple = (None, (), None)


_LOCAL = _Local()
_NO_SCRIPT: tuple = ((), ())  # (owners, compiled) of a model without script modules


def class_api(module: Any) -> bool:
    """A module of a ``torch.jit.ScriptModule`` subclass written with ``@script_method``
    (not what ``torch.jit.script(module)`` or ``torch.jit.trace`` returns)."""
    return isinstance(module, torch.jit.ScriptModule) and \
        type(module) is not torch.jit.RecursiveScriptModule and \
        not isinstance(module, torch.jit.TracedModule) and \
        "_actual_script_module" in module.__dict__


def enter(walk: list | None) -> list | None:
    """While exporting the model whose modules are `walk` (this thread): its class-API
    script modules are the owners a script method call may run on.  Returns what to give
    `leave`."""
    previous = _LOCAL.state
    facts = getattr(walk, "facts", None)  # (pytree.walk_of's: kept while its classes are)
    if facts is not None and facts.get("scripted") is False:
        _LOCAL.state = (*_NO_SCRIPT, walk)
        return previous
    script = torch.jit.ScriptModule
    owners = [m for _, m in walk or () if isinstance(m, script) and class_api(m)]
    compiled = [(m, p, type(m).__name__) for p, m in walk or ()
                if isinstance(m, script) and not class_api(m)]
    _LOCAL.state = (owners, compiled, walk)
    if facts is not None and not owners and not compiled:
        facts["scripted"] = False  # (no module of a script class: none can become one)
    return previous


def leave(previous: Any) -> None:
    _LOCAL.state = previous


def _held_compiled(owner: Any) -> tuple | None:
    """A compiled module's C++ object the model holds as a plain attribute
    (``self.add = torch.jit.script(Add())._c``) whose method is `owner`'s: the object and
    its path.  Its tensors are not the model's state: read by the graph, they are
    constants of the program, as torch.export lifts them."""
    for path, module in _LOCAL.state[2] or ():
        for key, value in module.__dict__.items():
            if type(value) is torch.ScriptModule and value == owner:
                return value, f"{path}.{key}" if path else key
    return None


def _held_object(owner: Any, tr: Any = None) -> Any:
    """The torchbind object one of the model's modules holds as an attribute, or the
    program takes as an input, that is `owner` (each read of a method makes a new Python
    wrapper of the same C++ object, whose hash is the object's)."""
    for _, module in _LOCAL.state[2] or ():
        for value in module.__dict__.values():
            if torchbind.is_torchbind(value) and hash(value) == hash(owner):
                return value
    if tr is not None:
        for node in tr.scopes[0].graph.find_nodes(op="placeholder"):
            value = node.meta.get("val")
            if node.meta.get("kind") == "user_input" and torchbind.is_torchbind(value) and \
                    hash(value) == hash(owner):
                return value
    return None


def _in_place(block: Any) -> str | None:
    """The kind of the first node of `block` (nested blocks included) that writes a
    tensor in place (an ATen ``op_`` node), else None."""
    for node in block.nodes():
        kind = node.kind()
        if kind.startswith("aten::") and kind.endswith("_") and not kind.endswith("__"):
            return kind
        for inner in node.blocks():
            found = _in_place(inner)
            if found is not None:
                return found
    return None


def _call(method: Any, *args: Any, **kwargs: Any) -> Any:
    owners, compiled, _ = _LOCAL.state
    if not exporting() or owners is None:
        return _ORIGINAL_CALL(method, *args, **kwargs)
    original = getattr(method, "__wrapped__", None)
    owner = next((m for m in owners if m._c == method.owner), None)
    if owner is None or not inspect.isfunction(original):
        where = short(stack_trace(1))
        kind = method.owner._type().qualified_name()
        if kind.startswith("__torch__.torch.classes."):  # (a torchbind object: C++ code)
            tr = active_tracer()
            held = _held_object(method.raw_owner, tr)
            if held is None or tr is None:
                raise torchbind_call(method.name, kind, where)
            return torchbind.call(tr, held, method.name, args, kwargs, where)
        held = next((c for c in compiled if c[0]._c == method.owner), None)
        if held is not None:  # a torch.jit.script / trace submodule: its graph, followed
            return run_method(method, held[0], args, kwargs, held[1], where)
        attribute = _held_compiled(method.owner)
        if attribute is not None:  # (its C++ object, held outside the module tree)
            write = _in_place(method.inlined_graph)
            if write is not None:  # (its tensors are constants: eager keeps the write)
                raise script_node(attribute[1], "torch.ScriptModule", method.name,
                                  f"{write} (a write in place)", where)
            return run_method(method, attribute[0], args, kwargs, attribute[1], where)
        raise script_method_call(method.name, where)
    return original(owner, *args, **kwargs)


if torchbind.CALL_TORCHBIND is not None:
    @handles(torchbind.CALL_TORCHBIND)
    def _call_torchbind(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
        """``call_torchbind(obj, method, *args)`` met in the traced code (a program module
        of ours or torch's, exported again): the same node, when the model holds `obj`."""
        obj, method, *rest = args
        where = short(stack_trace(3))
        held = _held_object(obj, tr) if torchbind.is_torchbind(obj) else None
        if held is None:
            raise torchbind_call(method, torchbind.class_name(obj) if isinstance(
                obj, torch.ScriptObject) else type(obj).__name__, where)
        return torchbind.call(tr, held, method, tuple(rest), kwargs, where, enter=True)


def patches() -> list[tuple[Any, str, Any]]:
    """Script method calls, for the export session to install."""
    return [(torch.ScriptMethod, "__call__", _call)]
