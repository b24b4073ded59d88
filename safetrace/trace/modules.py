"""The module hierarchy of a trace: while ``st.export`` traces, the stack of submodules
being called is kept (``ModuleStack``: each module call pushes and pops its entry), and the
tracer stamps the current stack (one shared dict per stack state, so a node costs one
reference) on each node it records, as torch.export writes ``nn_module_stack``.  The calls
of modules named in ``preserve_module_call_signature`` are recorded too (the graph values
in and out, their pytree specs); ``ep.to_torch()`` (``interop/hierarchy.py``) makes them
the module call signatures that ``torch.export.unflatten`` needs to rebuild a submodule
that can be swapped.

Only the exporting thread's module calls count: other threads call their modules as usual.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree

from safetrace import errors as E
from safetrace.pytree import module_walk
from safetrace.trace.recorder import Recorder


def _type_name(module: torch.nn.Module) -> str:
    cls = type(module)
    return f"{cls.__module__}.{cls.__qualname__}"


@dataclass
class ModuleCall:
    """One call of a module named in ``preserve_module_call_signature``: the graph values
    it received and returned (each ``("tensor" | "sym", node)`` or ``("const", value)``),
    with the pytree specs of ``(args, kwargs)`` and of its output."""

    fqn: str                      # "layer1", "layer1@1" for its second call
    key: str                      # its key in nodes' nn_module_stack
    in_spec: Any = None
    inputs: list = field(default_factory=list)
    out_spec: Any = None
    outputs: list = field(default_factory=list)


@dataclass
class Hierarchy:
    """What an export learnt of the model's module tree."""

    modules: list[str] = field(default_factory=list)  # every submodule path, model order
    calls: list[ModuleCall] = field(default_factory=list)  # preserved calls, in call order
    root_type: str = "torch.nn.modules.module.Module"  # the exported module's class


class ModuleStack:
    """``with ModuleStack(model, tracer, preserve, walk) as found:`` maintains
    ``tracer.nn_stack`` ({key: (fqn, type name)}) during the trace and records the calls of
    the submodules named in `preserve` (their inputs and outputs) into `found`, a
    `Hierarchy`.  `walk`: the model's ``pytree.module_walk``, when the caller has it.

    Module calls are followed one of two ways, with the same stacks:

    - **Wrapped** (the usual case): ``patches()`` gives one row per class of the model's
      modules setting the class's ``_compiled_call_impl`` (which ``nn.Module.__call__``
      calls instead of ``_call_impl`` when set) to `_module_call`, installed by the export
      session; on this thread it pushes and pops the module's entry around torch's own
      ``_call_impl``, on any other thread it is ``_call_impl``.  No global hook, so a module
      without hooks of its own keeps torch's fast path.
    - **Hooked**: two global module hooks (forward pre-hook and forward hook), as torch.export
      records it.  Used where the order of the stack's updates against other hooks shows
      (global module hooks, a module with forward or backward hooks), for preserved calls,
      for a module compiled with ``Module.compile()``, and for a class that overrides
      ``__call__``/``_call_impl``.  A wrapped export that meets such hooks added while
      tracing turns hooked from there on (its hooks placed where they would have been).
    """

    def __init__(self, model: Any, tracer: Recorder, preserve: Any = (),
                 walk: list | None = None) -> None:
        self.found = found = Hierarchy()
        self.model, self.tracer = model, tracer
        self.preserve = preserve = _preserved_names(model, preserve)
        self.rows: list[tuple[Any, str, Any]] = []
        self.handles: list = []
        self.call: Any = None  # (wrapped) this export's _module_call for this thread
        self.previous: Any = None
        self.active = isinstance(model, torch.nn.Module)
        if not self.active:
            return
        names: dict[int, str] = {}
        paths: dict[str, None] = {}  # (a dict: a list's `in` made this quadratic)
        every: dict[int, list[str]] = {}  # id(module) -> each of its paths
        containers: set[str] = set()
        classes: dict[type, None] = {}
        wrapped = not preserve and not any(_GLOBAL_HOOKS)
        for fqn, mod in walk if walk is not None else module_walk(model):
            ident = id(mod)
            if ident in names:
                every[ident].append(fqn)
            else:
                names[ident] = fqn
                every[ident] = [fqn]
                classes[type(mod)] = None
                if wrapped and (mod._forward_hooks or mod._backward_hooks or
                                mod._backward_pre_hooks or _CALL_ATTR in mod.__dict__):
                    wrapped = False
            if fqn:
                paths[fqn] = None
            if isinstance(mod, _CONTAINERS):
                containers.add(fqn)
        if wrapped and all(map(_wrappable, classes)):
            self.rows = [(cls, _CALL_ATTR, _module_call) for cls in classes]
        self.names, self.every = names, every
        # a module held twice by one container (nn.Sequential(ln, relu, ln)): its k-th call
        # there is named by its k-th place, as the container's own iteration reaches it
        self.seats = _container_seats(every, containers)
        found.modules = list(paths)
        found.root_type = _recorded_root(model) or _type_name(model)

    def patches(self) -> list[tuple[Any, str, Any]]:
        """What the export session installs for this stack (wrapped: a row per class)."""
        return self.rows

    def __enter__(self) -> Hierarchy:
        if not self.active:
            return self.found
        tracer, names, seats = self.tracer, self.names, self.seats
        seated: dict[tuple[str, int], int] = {}  # (container path, id(module)) -> calls so far
        # id(submodule) -> (its path, its key in nn_module_stack, its type's name): made on
        # its first call
        infos: dict[int | str, tuple[str, str, str]] = {}  # (a seated module: by its path)
        calls: dict[str, int] = {}
        stack: list[tuple[int, dict | None]] = []

        def push(module: torch.nn.Module) -> None:
            ident = id(module)
            if ident in seats:
                ident = _seat(seats[ident], tracer.nn_stack, seated, ident)
            info = infos.get(ident)
            if info is None:
                fqn = names.get(ident) if type(ident) is int else ident
                if not fqn:  # the root, or a module that is not a submodule of the model
                    stack.append((id(module), None))
                    return
                info = infos[ident] = (fqn, f"L__self___{fqn.replace('.', '_')}",
                                       _type_name(module))
            fqn = info[0]
            n = calls.get(fqn, 0)
            calls[fqn] = n + 1
            key = f"{info[1]}@{n}" if n else info[1]  # as torch's: the call count in the key
            stack.append((id(module), tracer.nn_stack))
            current = dict(tracer.nn_stack or {})
            current[key] = (fqn, info[2])
            tracer.nn_stack = current

        def pop(module: torch.nn.Module) -> None:
            # (a call that raised left its entry: popped with its caller's, as torch's hooks
            # run no forward hook for a call that raised while exporting)
            while stack:
                ident, previous = stack.pop()
                if previous is not None or names.get(ident):
                    tracer.nn_stack = previous
                if ident == id(module):
                    break

        # torch's global module hooks run on every thread: only this export's thread counts
        thread = threading.get_ident()
        ident_now = threading.get_ident

        def pre(module: torch.nn.Module, args: Any) -> None:
            if ident_now() == thread:
                push(module)

        def post(module: torch.nn.Module, args: Any, output: Any) -> None:
            if ident_now() == thread:
                pop(module)

        def hook() -> None:
            """Follow module calls with global hooks from now on, placed before those
            added since the export began (none was there when it began, or it would have
            been hooked from the start)."""
            h1 = torch.nn.modules.module.register_module_forward_pre_hook(pre)
            h2 = torch.nn.modules.module.register_module_forward_hook(post, always_call=True)
            self.handles += [h1, h2]
            if self.rows:
                _PRE_HOOKS.move_to_end(h1.id, last=False)
                _POST_HOOKS.move_to_end(h2.id, last=False)

        hooked = False

        def call(module: torch.nn.Module, args: tuple, kwargs: dict) -> Any:
            nonlocal hooked
            if hooked:
                return module._call_impl(*args, **kwargs)
            if _PRE_HOOKS or _POST_HOOKS or _BACKWARD_HOOKS or _BACKWARD_PRE_HOOKS or \
                    module._forward_hooks or module._backward_hooks or \
                    module._backward_pre_hooks:  # (added while tracing)
                hooked = True
                hook()
                return module._call_impl(*args, **kwargs)
            push(module)
            # (with forward pre-hooks torch's _call_impl runs the global forward hooks
            # present when forward returns: once hooked by then, `post` popped it)
            slow = bool(module._forward_pre_hooks)
            out = module._call_impl(*args, **kwargs)
            if not (slow and hooked):
                pop(module)
            return out

        if self.rows:
            self.call = call
            self.previous, _THREAD.call = _THREAD.call, call
        else:
            hook()
            self._preserve_hooks(calls)
        return self.found

    def _preserve_hooks(self, calls: dict[str, int]) -> None:
        model, tracer, found = self.model, self.tracer, self.found
        open_calls: dict[int, list[ModuleCall]] = {}

        # a module preserved under any of its paths: each call is recorded under the path
        # it ran as (the one its nodes' stacks name; hooked once per module)
        preserved_for: dict[int, str] = {}
        for fqn in self.preserve:
            preserved_for.setdefault(id(model.get_submodule(fqn)), fqn)

        def call_pre(module: torch.nn.Module, args: Any, kwargs: Any) -> None:
            key, (fqn, _) = next(reversed(tracer.nn_stack.items()))  # (pushed by `pre`)
            n = calls[fqn] - 1  # the global pre-hook ran first
            call = ModuleCall(fqn if not n else f"{fqn}@{n}", key)
            leaves, call.in_spec = _pytree.tree_flatten((tuple(args), dict(kwargs)))
            call.inputs = [_value(tracer, v, f"{fqn} input") for v in leaves]
            open_calls.setdefault(id(module), []).append(call)

        def call_post(module: torch.nn.Module, args: Any, kwargs: Any, output: Any) -> None:
            pending = open_calls.get(id(module))
            if not pending:
                return
            call = pending.pop()
            leaves, call.out_spec = _pytree.tree_flatten(output)
            call.outputs = [_value(tracer, v, f"{call.fqn} output") for v in leaves]
            found.calls.append(call)

        for ident, fqn in preserved_for.items():  # (once per module, whatever its paths)
            mod = model.get_submodule(fqn)
            self.handles.append(mod.register_forward_pre_hook(call_pre, with_kwargs=True))
            self.handles.append(mod.register_forward_hook(call_post, with_kwargs=True))
        # a preserved module the forward never calls keeps no signature (torch.export's
        # entry for it has signature None; unflatten makes it an empty module)

    def __exit__(self, *exc: Any) -> None:
        if not self.active:
            return
        if self.call is not None:
            _THREAD.call = self.previous
            self.call = None
        for h in self.handles:
            h.remove()
        self.handles = []
        self.tracer.nn_stack = None


_CALL_ATTR = "_compiled_call_impl"
_MODULE = torch.nn.Module
_M = torch.nn.modules.module
# torch's global module hook tables (module globals torch never rebinds)
_PRE_HOOKS = _M._global_forward_pre_hooks
_POST_HOOKS = _M._global_forward_hooks
_BACKWARD_HOOKS = _M._global_backward_hooks
_BACKWARD_PRE_HOOKS = _M._global_backward_pre_hooks
_GLOBAL_HOOKS = (_PRE_HOOKS, _POST_HOOKS, _BACKWARD_HOOKS, _BACKWARD_PRE_HOOKS)


class _Thread(threading.local):
    call: Any = None  # the wrapped ModuleStack's call on this thread (None: not exporting)


_THREAD = _Thread()


def _module_call(module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    """A module's ``_compiled_call_impl`` while an export wraps its class: this thread's
    export follows the call; on any other thread (or outside the stack) torch's own
    ``_call_impl``."""
    call = _THREAD.call
    if call is None:
        return module._call_impl(*args, **kwargs)
    return call(module, args, kwargs)


def _wrappable(cls: type) -> bool:
    """Whether every call of a `cls` module reaches ``_compiled_call_impl``: nn.Module's own
    call path, and no ``_compiled_call_impl`` of its own (another export's is ours); and a
    class attribute can be set (a plain metaclass)."""
    return type(cls).__setattr__ is type.__setattr__ and cls.__call__ is _MODULE.__call__ and \
        cls._call_impl is _MODULE._call_impl and \
        cls._wrapped_call_impl is _MODULE._wrapped_call_impl and \
        getattr(cls, _CALL_ATTR) in (None, _module_call) and \
        cls.__dict__.get(_CALL_ATTR, _module_call) is _module_call


def _preserved_names(model: Any, preserve: Any) -> list[str]:
    if isinstance(preserve, str):
        preserve = (preserve,)
    preserve = list(preserve or ())
    if not preserve:
        return []
    if not isinstance(model, torch.nn.Module):
        raise E.preserved_in_function()
    known = {fqn for fqn, _ in model.named_modules(remove_duplicate=False) if fqn}
    for fqn in preserve:
        if not isinstance(fqn, str) or fqn not in known:
            close = sorted(known, key=lambda k: (not k.endswith(str(fqn)), len(k)))[:3]
            raise E.preserved_unknown(fqn, type(model).__name__, close)
    return list(dict.fromkeys(preserve))


def _value(tracer: Recorder, v: Any, what: str) -> tuple[str, Any]:
    """A recorded call value: a tensor's or a symbolic size's node, or a constant."""
    if isinstance(v, torch.Tensor):
        node = tracer.unwrap(v)[1]
        if isinstance(node, torch.fx.Node):
            return ("tensor", node)
    elif hasattr(v, "expr") and hasattr(v, "env"):
        node = tracer.sym_node(v)
        return ("sym", node) if isinstance(node, torch.fx.Node) else ("const", node)
    elif v is None or isinstance(v, (int, float, bool, str, torch.dtype, torch.device)):
        return ("const", v)
    raise E.preserved_value(what, type(v).__name__, what.split(" ")[0].split("@")[0])


def _recorded_root(model: Any) -> str | None:
    """The root class a GraphModule's nodes record (an exported program's module exported
    again: its nodes' stacks start at the original class, which torch keeps)."""
    if not isinstance(model, torch.fx.GraphModule):
        return None
    for node in model.graph.nodes:
        for fqn, type_name in (node.meta.get("nn_module_stack") or {}).values():
            if fqn == "":
                return type_name
    return None


_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)


def _container_seats(every: dict[int, list[str]],
                     containers: set[str]) -> dict[int, dict[str, list[str]]]:
    """id(module) -> {container path: the module's paths in it, in order} for a module
    that a container (nn.Sequential, ModuleList, ModuleDict) holds more than once.  (Two
    attributes of a plain module holding one module are told apart only by the attribute
    the code reads, which a module hook does not see: such a call keeps the first path.)"""
    out: dict[int, dict[str, list[str]]] = {}
    for ident, fqns in every.items():
        if len(fqns) < 2:
            continue
        by_parent: dict[str, list[str]] = {}
        for fqn in fqns:
            by_parent.setdefault(fqn.rpartition(".")[0], []).append(fqn)
        many = {p: f for p, f in by_parent.items()  # (in the walk's order)
                if len(f) > 1 and p in containers}
        if many:
            out[ident] = many
    return out


def _seat(seats: dict[str, list[str]], stack: dict | None, seated: dict,
          ident: int) -> int | str:
    """The path of this call of a module a container holds more than once: the next of
    its places in the calling container (its first path when called from elsewhere)."""
    parent = next(reversed(stack.values()))[0] if stack else ""
    places = seats.get(parent)
    if places is None:
        return ident
    k = seated.get((parent, ident), 0)
    seated[(parent, ident)] = k + 1
    return places[k % len(places)]
