"""The module hierarchy of a trace: while ``st.export`` traces, the stack of submodules
being called is kept (each submodule's call followed through its own
``_compiled_call_impl``, set for the export's duration, or through two global forward
(pre-)hooks where that cannot be exact: ``_follow``), and the tracer stamps the current stack (one
shared dict per stack state, so a node costs one reference) on each node it records, as
torch.export writes ``nn_module_stack``.  The calls of modules named in
``preserve_module_call_signature`` are recorded too (the graph values in and out, their
pytree specs); ``ep.to_torch()`` (``interop/hierarchy.py``) makes them the module call
signatures that ``torch.export.unflatten`` needs to rebuild a submodule that can be
swapped.

Only the exporting thread's calls count: other threads call the same modules as usual.
"""

from __future__ import annotations

import itertools
import threading
from types import CodeType, MethodType
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.nn.modules import module as nn_module
from torch.utils import _pytree

from safetrace import errors as E
from safetrace.pytree import module_walk
from safetrace.trace import subclasses
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
    stack: Any = None             # the nn_module_stack inside the call


@dataclass
class Hierarchy:
    """What an export learnt of the model's module tree."""

    modules: list[str] = field(default_factory=list)  # every submodule path, model order
    calls: list[ModuleCall] = field(default_factory=list)  # preserved calls, in call order
    root_type: str = "torch.nn.modules.module.Module"  # the exported module's class


def module_stack(model: Any, tracer: Recorder, preserve: Any = (),
                 walk: list | None = None) -> ModuleStack:
    """Maintain ``tracer.nn_stack`` ({key: (fqn, type name)}) during the trace, and record
    the calls of the submodules named in `preserve` (their inputs and outputs).  `walk`:
    the model's ``pytree.module_walk``, when the caller has it.  ``with`` gives the
    ``Hierarchy`` found."""
    return ModuleStack(model, tracer, preserve, walk)


class ModuleStack:
    """The context manager of ``module_stack`` (a class: every export enters one, and a
    generator's context manager costs more than its body for small models)."""

    __slots__ = ("model", "tracer", "preserve", "walk", "found", "handles", "keys",
                 "tracked")

    def __init__(self, model: Any, tracer: Recorder, preserve: Any,
                 walk: list | None) -> None:
        self.model, self.tracer, self.preserve, self.walk = model, tracer, preserve, walk
        self.found = Hierarchy()
        self.handles: list = []  # the preserved calls' hooks on their modules
        # the global pre-hook's and hook's ids, once registered (a live set: the model's
        # own call reads it, exporter/root_hooks.py, and hooks may come while tracing)
        self.keys: set[int] = set()
        self.tracked: list = []  # (module __dict__, its call) of each module followed

    def __enter__(self) -> Hierarchy:
        model, tracer, found = self.model, self.tracer, self.found
        preserve = _preserved_names(model, self.preserve)
        if not isinstance(model, torch.nn.Module):
            return found
        try:
            _follow(self, model, tracer, preserve, self.walk, found)
        except BaseException:
            self.__exit__()
            raise
        return found

    def __exit__(self, *exc: Any) -> None:
        if not isinstance(self.model, torch.nn.Module):
            return
        for d, call in self.tracked:  # (each module's own: removed while it is ours)
            if d.get(_CALL_ATTR) is call:
                del d[_CALL_ATTR]
        self.tracked = []
        if self.keys:
            _remove_global(self.keys)
            self.keys.clear()
        for h in self.handles:
            h.remove()
        self.tracer.nn_stack = None
        self.tracer.nn_layer = None
        # (a preserved module the forward never calls keeps no signature: torch.export's
        # entry for it has signature None; unflatten makes it an empty module)

    def global_hook_ids(self) -> set[int]:
        """The ids of the global module hooks this stack registered (a live set, while
        entered): the export's own, not the user's (``exporter/root_hooks.py`` leaves them
        out)."""
        return self.keys


_CALL_ATTR = "_compiled_call_impl"  # (nn.Module.__call__ calls it instead of _call_impl)
_MODULE = torch.nn.Module
# torch's global module hook tables (mutated in place by torch, never rebound)
_PRE_HOOKS, _POST_HOOKS = nn_module._global_forward_pre_hooks, nn_module._global_forward_hooks
_BACK_HOOKS = nn_module._global_backward_hooks
_BACK_PRE_HOOKS = nn_module._global_backward_pre_hooks
_TRACING_STATE = torch._C._get_tracing_state


def _plain_call(cls: type) -> bool:
    """Whether ``cls(...)`` reaches ``_compiled_call_impl`` as nn.Module's call does."""
    return cls.__call__ is _MODULE.__call__ and cls._call_impl is _MODULE._call_impl and \
        getattr(cls, _CALL_ATTR, None) is None


def _follow(owner: ModuleStack, model: torch.nn.Module, tracer: Recorder,
            preserve: list[str], walk: list | None, found: Hierarchy) -> None:
    """Follow the model's module calls on this thread, pushing and popping each call's
    entry of ``tracer.nn_stack`` (and record the preserved calls).

    Two ways, with the same stacks:

    - **followed** (the usual case): each submodule's own ``_compiled_call_impl`` (which
      ``nn.Module.__call__`` calls, when set, instead of ``_call_impl``) is this export's
      `tracked` for the export's duration: on this thread, while no hook of any kind is
      registered, it pushes the entry, calls ``forward`` as torch's ``_call_impl`` does
      without hooks, and pops it; on any other thread it is ``_call_impl``.  No global
      hook: torch's call takes its fast path.
    - **hooked**: a global forward pre-hook and forward hook (``always_call``), as torch's
      strict export follows calls.  From the start for preserved calls, global hooks
      already registered, a class with its own ``__call__`` or ``_call_impl``, a module
      compiled with ``Module.compile()`` or followed by another export; from the first
      call that meets a hook otherwise (added while tracing: the export's global hooks
      placed before those, where they would have been from the start)."""
    facts = getattr(walk, "facts", None)  # (pytree.walk_of's: kept while the walk is)
    tables = facts.get("stack") if facts is not None else None
    if walk is None:
        walk = module_walk(model)
    if tables is None:
        tables = _tables(walk)
        if facts is not None:
            facts["stack"] = tables
    names, modules, seats, infos, at, classes = tables
    seated: dict[tuple[str, int], int] = {}  # (container path, id(module)) -> calls so far
    found.modules = list(modules)
    found.root_type = _recorded_root(model) or _type_name(model)
    calls: dict[str, int] = {}
    stack: list[tuple[int, dict | None, tuple | None]] = []
    # torch's global module hooks run on every thread: only this export's thread counts
    thread = threading.get_ident()
    ident_now = threading.get_ident

    def push(module: torch.nn.Module) -> None:
        ident = id(module)
        if ident in seats:
            ident = _seat(seats[ident], tracer.nn_stack, seated, ident)
        info = infos.get(ident)
        if info is None:  # the root, or a module that is not a submodule of the model
            stack.append((id(module), None, None))
            return
        fqn = info[0]
        n = calls.get(fqn, 0)
        calls[fqn] = n + 1
        key = f"{info[1]}@{n}" if n else info[1]  # as torch's: the call count in the key
        stack.append((id(module), tracer.nn_stack, tracer.nn_layer))
        current = dict(tracer.nn_stack or {})
        current[key] = layer = (fqn, info[2])
        tracer.nn_stack = current
        tracer.nn_layer = layer  # (the innermost call: the stack's last entry)

    def pop(module: torch.nn.Module) -> None:
        while stack:
            ident, previous, layer = stack.pop()
            if previous is not None or names.get(ident):
                tracer.nn_stack = previous
                tracer.nn_layer = layer
            if ident == id(module):
                break

    def hook(first: bool) -> None:
        """Follow calls with the two global hooks from now on; `first`: placed before any
        global hook registered since the export began (none was there when it began, or
        it would have been hooked from the start)."""
        if owner.keys:
            return

        def pre(module: torch.nn.Module, args: Any) -> None:
            if ident_now() == thread:
                push(module)

        def post(module: torch.nn.Module, args: Any, output: Any) -> None:
            if ident_now() == thread:
                pop(module)

        pre_id, post_id = _add_global(pre, post)
        owner.keys.update((pre_id, post_id))
        if first:
            _PRE_HOOKS.move_to_end(pre_id, last=False)
            _POST_HOOKS.move_to_end(post_id, last=False)

    def tracked(module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        # (torch's _call_impl takes its fast path on the same condition, hooks aside)
        if owner.keys or _PRE_HOOKS or _POST_HOOKS or _BACK_HOOKS or _BACK_PRE_HOOKS or \
                module._forward_pre_hooks or module._forward_hooks or \
                module._backward_hooks or module._backward_pre_hooks or \
                _TRACING_STATE() or ident_now() != thread:
            if ident_now() == thread:
                hook(True)
            return module._call_impl(*args, **kwargs)
        ident = id(module)
        info = None if ident in seats else infos.get(ident)
        if info is None:  # (a seated module, or one outside the model's tree)
            push(module)
        else:  # (push, inline)
            fqn = info[0]
            n = calls.get(fqn, 0)
            calls[fqn] = n + 1
            key = f"{info[1]}@{n}" if n else info[1]
            previous = tracer.nn_stack
            stack.append((ident, previous, tracer.nn_layer))
            current = dict(previous) if previous else {}
            current[key] = layer = (fqn, info[2])
            tracer.nn_stack = current
            tracer.nn_layer = layer
        try:
            return module.forward(*args, **kwargs)
        finally:  # (pop, inline)
            while stack:
                entry = stack.pop()
                if entry[1] is not None or names.get(entry[0]):
                    tracer.nn_stack, tracer.nn_layer = entry[1], entry[2]
                if entry[0] == ident:
                    break

    if preserve or _PRE_HOOKS or _POST_HOOKS or _BACK_HOOKS or _BACK_PRE_HOOKS or \
            not all(map(_plain_call, classes)) or not _install(owner.tracked, walk, at,
                                                               tracked):
        hook(False)
    if preserve:
        owner.handles = _preserve_hooks(model, tracer, preserve, found, calls, stack)


def followed(value: Any) -> bool:
    """Whether `value` (a module's ``_compiled_call_impl``) is an export's own, set while it
    follows that module's calls (``_follow``): what another export running at the same time
    leaves alone in its snapshot of the module and its scan for the user's code."""
    return type(value) is MethodType and value.__func__.__code__ is _TRACKED


def _install(done: list, walk: list, at: tuple, tracked: Any) -> bool:
    """Set the ``_compiled_call_impl`` of each submodule (at those places of `walk`) to
    `tracked` bound to it, listed in `done`; False (and nothing set) where one has its own
    (``Module.compile()``, or another export following it now)."""
    for i in at:
        mod = walk[i][1]
        d = mod.__dict__
        call = MethodType(tracked, mod)
        if d.setdefault(_CALL_ATTR, call) is not call:  # (one step in C: another thread's
            break  # export may be setting the same modules' now)
        done.append((d, call))
    else:
        return True
    for d, call in done:
        if d.get(_CALL_ATTR) is call:
            del d[_CALL_ATTR]
    done.clear()
    return False


# the code of _follow's `tracked` (every export's is a closure of this one code object)
_TRACKED = next(c for c in _follow.__code__.co_consts
                if isinstance(c, CodeType) and c.co_name == "tracked")


def _preserve_hooks(model: torch.nn.Module, tracer: Recorder, preserve: list[str],
                    found: Hierarchy, calls: dict[str, int], stack: list) -> list:
    """The preserved calls' hooks on their modules (the global pre-hook runs first)."""
    open_calls: dict[int, list[ModuleCall]] = {}
    thread = threading.get_ident()
    ident_now = threading.get_ident

    # a module preserved under any of its paths: each call is recorded under the path
    # it ran as (the one its nodes' stacks name; hooked once per module)
    preserved_for: dict[int, str] = {}
    for fqn in preserve:
        preserved_for.setdefault(id(model.get_submodule(fqn)), fqn)

    # (hooks on the user's own submodules run for every thread's calls of them too)
    def call_pre(module: torch.nn.Module, args: Any, kwargs: Any) -> Any:
        if ident_now() != thread:
            return
        key, (fqn, _) = next(reversed(tracer.nn_stack.items()))  # (pushed by `pre`)
        n = calls[fqn] - 1  # the global pre-hook above ran first
        call = ModuleCall(fqn if not n else f"{fqn}@{n}", key, stack=tracer.nn_stack)
        leaves, call.in_spec = _pytree.tree_flatten((tuple(args), dict(kwargs)))
        crossed = _across(leaves, f"{fqn} input", fqn, tracer, model, stack[-1][1],
                          tracer.nn_stack)
        call.inputs = [crossed[i][0] if i in crossed else _value(tracer, v, f"{fqn} input")
                       for i, v in enumerate(leaves)]
        open_calls.setdefault(id(module), []).append(call)
        if crossed:  # (the call reads its subclass inputs from the boundary's values)
            return _pytree.tree_unflatten(
                [crossed[i][1] if i in crossed else v for i, v in enumerate(leaves)],
                call.in_spec)
        return None

    def call_post(module: torch.nn.Module, args: Any, kwargs: Any, output: Any) -> Any:
        if ident_now() != thread:
            return
        pending = open_calls.get(id(module))
        if not pending:
            return
        call = pending.pop()
        leaves, call.out_spec = _pytree.tree_flatten(output)
        crossed = _across(leaves, f"{call.fqn} output", call.fqn, tracer, model, call.stack,
                          tracer.nn_stack)
        call.outputs = [crossed[i][0] if i in crossed else
                        _value(tracer, v, f"{call.fqn} output") for i, v in enumerate(leaves)]
        found.calls.append(call)
        if crossed:  # (the caller reads the subclass outputs from the boundary's values)
            return _pytree.tree_unflatten(
                [crossed[i][1] if i in crossed else v for i, v in enumerate(leaves)],
                call.out_spec)
        return None

    handles = []
    for ident, fqn in preserved_for.items():  # (once per module, whatever its paths)
        mod = model.get_submodule(fqn)
        handles.append(mod.register_forward_pre_hook(call_pre, with_kwargs=True))
        handles.append(mod.register_forward_hook(call_post, with_kwargs=True))
    # (the global hooks run before a module's own whatever the order they were
    # registered in; always_call: a call whose forward raised is popped too, its
    # exception caught by a caller; trace/session.py keeps nn.Module._call_impl on that
    # path under export)
    return handles


# ids of the module stack's global hooks: negative, so never one of torch's handles' ids
# (RemovableHandle counts up from 0); next() on a count is atomic, for exporting threads
_GLOBAL_IDS = itertools.count(-1, -1)


def _add_global(pre: Any, post: Any) -> tuple[int, int]:
    """Register `pre` as a global module forward pre-hook and `post` as a global forward
    hook with ``always_call``, as ``register_module_forward_pre_hook`` and
    ``register_module_forward_hook`` do, without their handles (whose weak references and
    class counter cost a tiny export ~20k instructions); gives their ids."""
    pre_id, post_id = next(_GLOBAL_IDS), next(_GLOBAL_IDS)
    nn_module._global_forward_pre_hooks[pre_id] = pre
    nn_module._global_forward_hooks[post_id] = post
    nn_module._global_forward_hooks_always_called[post_id] = True
    return pre_id, post_id


def _remove_global(ids: set[int]) -> None:
    """Remove the hooks `_add_global` registered (as their handles' ``remove``)."""
    for key in ids:
        nn_module._global_forward_pre_hooks.pop(key, None)
        nn_module._global_forward_hooks.pop(key, None)
        nn_module._global_forward_hooks_always_called.pop(key, None)


def _tables(walk: list) -> tuple[dict, tuple, dict, dict, tuple, tuple]:
    """What the module stack reads of the model's walk: id(module) -> its first path, every
    submodule path (the model's order), the seats of modules a container holds more than
    once (``_container_seats``), id(submodule) (or a seated module's path) -> (its
    path, its key in nn_module_stack, its class's name), the places in the walk of each
    submodule (once) and their classes (once each).  A function of the walk's paths,
    module ids and classes alone (kept with ``pytree.walk_of``'s facts: no module held)."""
    names: dict[int, str] = {}
    paths: dict[str, None] = {}  # (a dict: a list's `in` made this quadratic)
    every: dict[int, list[str]] = {}  # id(module) -> each of its paths
    containers: set[str] = set()
    types: dict[int, str] = {}
    # a graph's own graphs (an exported program's module: the bodies its higher-order ops
    # call) are no module calls of the user's, as in torch.export's retrace of it
    graph_root = bool(walk) and isinstance(walk[0][1], torch.fx.GraphModule)
    at: list[int] = []
    classes: dict[type, None] = {}
    for i, (fqn, mod) in enumerate(walk):
        if graph_root and fqn and isinstance(mod, torch.fx.GraphModule):
            continue
        if fqn and id(mod) not in names:
            at.append(i)
            classes[type(mod)] = None
        names.setdefault(id(mod), fqn)
        every.setdefault(id(mod), []).append(fqn)
        if fqn:
            paths[fqn] = None
            types[id(mod)] = _type_name(mod)
        if isinstance(mod, _CONTAINERS):
            containers.add(fqn)
    # a module held twice by one container (nn.Sequential(ln, relu, ln)): its k-th call
    # there is named by its k-th place, as the container's own iteration reaches it
    seats = _container_seats(every, containers)
    infos: dict[int | str, tuple[str, str, str]] = {}
    for ident, fqns in every.items():
        first = names[ident]
        if not first:  # (the root: no entry of its own)
            continue
        # (a module held twice: one key for all its places, as torch's strict export
        # keys by the module object, so unflatten makes it one module again)
        info = (first, f"L__self___{first.replace('.', '_')}", types[ident])
        infos[ident] = info
        for places in seats.get(ident, {}).values():
            for place in places:
                infos[place] = (place, info[1], info[2])
    return names, tuple(paths), seats, infos, tuple(at), tuple(classes)


def _preserved_names(model: Any, preserve: Any) -> list[str]:
    if isinstance(preserve, str):
        preserve = (preserve,)
    preserve = list(preserve or ())
    if not preserve:
        return []
    if not isinstance(model, torch.nn.Module):
        raise E.preserved_in_function()
    if isinstance(model, torch.fx.GraphModule):
        # a graph (an exported program's module, retraced): its submodules' calls are
        # gone, and torch.export leaves the names out there too (no signature preserved)
        return []
    known = {fqn for fqn, _ in model.named_modules(remove_duplicate=False) if fqn}
    for fqn in preserve:
        if not isinstance(fqn, str) or fqn not in known:
            close = sorted(known, key=lambda k: (not k.endswith(str(fqn)), len(k)))[:3]
            raise E.preserved_unknown(fqn, type(model).__name__, close)
    return list(dict.fromkeys(preserve))


def _across(leaves: list, what: str, fqn: str, tracer: Recorder, model: torch.nn.Module,
            value_stack: Any, read_stack: Any) -> dict[int, tuple[tuple[str, Any], Any]]:
    """The tensor subclasses among a preserved call's inputs or outputs (`what`), by place:
    each one graph value at the boundary (``("tensor", node)``) and the view the other side
    reads instead (``subclasses.across``); one that cannot cross is refused."""
    crossed: dict[int, tuple[tuple[str, Any], Any]] = {}
    for i, v in enumerate(leaves):
        if not subclasses.traceable(v):
            continue
        got = subclasses.across(tracer, v, value_stack, read_stack)
        if got is None:
            raise E.preserved_subclass(what, type(v).__name__, list(v.__tensor_flatten__()[0]),
                                       fqn.split("@")[0], _state_name(tracer, model, v))
        crossed[i] = (("tensor", got[0]), got[1])
    return crossed


def _state_name(tracer: Recorder, model: torch.nn.Module, v: Any) -> str | None:
    """torch.export's placeholder name of the parameter or buffer `v` is (``p_param``,
    ``b_sub_buf``), None when it is neither."""
    reg = getattr(tracer, "subclasses", None)
    if reg is not None:  # the traced view of subclass state (what forward reads)
        real = next((k for k, view in reg.views.items() if view is v), id(v))
        node = reg.roots.get(real)
        if node is not None:
            return node.name
    for prefix, named in (("p_", model.named_parameters), ("b_", model.named_buffers)):
        for name, t in named(remove_duplicate=False):
            if t is v:
                return prefix + name.replace(".", "_")
    return None


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
