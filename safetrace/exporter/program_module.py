"""What ``ep.module()`` returns: torch's unlifted-module shape over the program's state.

A ``torch.fx.GraphModule`` like torch.export's own ``ep.module()``: its ``graph`` is the
program unlifted (``exporter/unlift.py``: state read by ``get_attr``, writes as in-graph
``copy_``, the input checks as the first call), its ``forward`` has the model's own
arguments, and its parameters and buffers are registered under the model's names.  A call
does not interpret that graph: ``forward`` checks the inputs, then runs the program's own
(lifted) code with the state, the fastest path; tools that read the graph instead of
calling the module (torch.export of a GraphModule runs it with an fx Interpreter, fx
passes, ``symbolic_trace``) get the unlifted graph, which computes the same.
"""

from __future__ import annotations

import copy
import weakref
from typing import Any

import torch

from safetrace import pytree
from safetrace.errors import InputMismatchError, state_name_taken
from safetrace.exporter.eager_cond import eager_forward
from safetrace.exporter.index_checks import refusal
from safetrace.exporter.unlift import (CHECKS, InputChecks, ProgramCodeGen, argument_names,
                                       flattener, named_forward, unlifted_graph)
from safetrace.interop.torch_errors import as_torch
from safetrace.trace.hops import owner_module

__all__ = ["ProgramModule", "adopt", "mode_dependent"]

_MODE_OPS = ("dropout", "batch_norm", "rrelu")


def mode_dependent(graph: torch.fx.Graph) -> bool:
    """Whether a graph traced in train mode computes differently in eval mode."""
    return any(n.op == "call_function" and any(k in str(n.target) for k in _MODE_OPS)
               for n in graph.nodes)


class _Parts:
    """What every module of one program shares, built once per program graph: the lifted
    code, the unlifted graph, the constants' attribute names, the named ``forward``."""

    def __init__(self, ep: Any, key: tuple) -> None:
        self.key = key
        self.ep = weakref.ref(ep)
        gm = ep.graph_module
        gm.recompile()  # (marks it stale: the graph may have been edited in place)
        gm.ensure_compiled()
        self.graph_forward = eager_forward(gm)
        self.grad_nodes = any(n.target is torch._C._set_grad_enabled for n in ep.graph.nodes)
        self.written = ep.written_placeholders()
        # (a constant's attribute must not shadow a state path or a subgraph)
        taken = {n.split(".")[0] for n in ep._state} | set(owner_module(ep.graph)._modules)
        self.const_attrs: dict[str, str] = {}
        for i, s in enumerate(s for s in ep.graph_signature.input_specs
                              if s.kind == "constant"):
            name = s.target
            if not (isinstance(name, str) and all(p.isidentifier() and not p.startswith("_st")
                                                  for p in name.split("."))) \
                    or name.split(".")[0] in taken | _TAKEN or name == CHECKS:
                name = f"_st_constant_{i}"
            self.const_attrs[s.target] = name
        self.graph = unlifted_graph(ep, self.const_attrs, self.grad_nodes)
        named = argument_names(ep)
        self.forward = None
        if named is not None:
            names, n_pos = named
            self.graph._codegen = ProgramCodeGen(
                names, n_pos, flattener(ep),
                lambda outs: pytree.tree_unflatten(outs, ep.out_spec))
            self.forward = named_forward(ProgramModule.forward, names, n_pos)

    def __deepcopy__(self, memo: dict) -> None:
        return None  # (a copied program builds its own)

    @staticmethod
    def of(ep: Any) -> _Parts:
        key = (id(ep.graph), len(ep.graph.nodes))
        parts = ep.__dict__.get("_st_module_parts")
        if parts is None or parts.key != key or parts.ep() is not ep:
            parts = ep.__dict__["_st_module_parts"] = _Parts(ep, key)
        return parts  # type: ignore[no-any-return]


_TAKEN = frozenset(dir(torch.fx.GraphModule)) | {"graph", "code", "training"}


class ProgramModule(torch.fx.GraphModule):
    """A GraphModule holding the program's state under the original names (``state_dict()``
    keys match the exported model's; ``load_state_dict`` and ``.to()`` work), that checks
    its inputs and runs the program.

    Everything a call needs is built here, eagerly (the input checks, the program's code),
    so that ``torch.compile`` captures a call in one graph: code generation (``exec``)
    inside the first call would be a graph break.  The unlifted graph's own code (``.code``,
    ``print``) is generated when first read."""

    def __init__(self, ep: Any) -> None:
        super().__init__(torch.nn.Module(), torch.fx.Graph(), "ProgramModule")
        parts = _Parts.of(ep)
        self.training = ep.exported_training
        self._ep = ep
        for name, sub in owner_module(ep.graph)._modules.items():  # control-flow subgraphs
            self.add_module(name, sub)
        specs = {s.target: s for s in ep.graph_signature.input_specs
                 if s.kind in ("parameter", "buffer")}
        # Buffers, written parameters and constants a write may reach (by analysis of
        # every graph) are the program's own copies, shared by all its modules
        # (ep.own_state, torch's semantics), and every parameter gets its own Parameter
        # object: running the program, .to()/.half() and load_state_dict never change the
        # exported model or the caller's weights= tensors.
        ep.own_state()
        in_place = parts.written
        self._written = {s.target for s in specs.values() if s.name in in_place}
        # (load_state_dict copies into these in place: the state the modules share)
        loaded = _loaded(ep)
        self._owned = {name for name, t in ep._state.items() if ep.owns(t) or name in loaded}
        _modules_of(ep).add(self)
        self._slots: dict[str, tuple] = {}  # state name -> (owning module, dict name, key)
        for name, t in ep._state.items():
            owner, key = self._owner(name)
            spec = specs.get(name)
            # (a buffer is registered as itself: `ep.module().buf is ep.state_dict["buf"]`,
            # as in torch; a parameter gets a Parameter of its own)
            value = t if spec is None or spec.kind != "parameter" else t.detach()
            if spec is not None and spec.kind == "parameter":
                owner.register_parameter(
                    key, torch.nn.Parameter(value, requires_grad=t.requires_grad))
                self._slots[name] = (owner, "_parameters", key)
            else:
                owner.register_buffer(key, value, persistent=spec is None or spec.persistent)
                self._slots[name] = (owner, "_buffers", key)
        self._const_attrs = parts.const_attrs
        sources: list = []
        for s in ep.graph_signature.input_specs:
            if s.kind == "user_input":
                sources.append(("leaf", s.leaf))
            elif s.kind == "constant":
                t = ep.lifted_constants[s.target]
                sources.append(("const", t))
                self._set_attr(self._const_attrs[s.target], t)
            else:
                owner, table, key = self._slots[s.target]
                # a parameter written in place runs detached, as under eager's no_grad
                kind = "written" if table == "_parameters" and s.target in self._written \
                    else "state"
                # (the owner, not its dict of tensors: torch.export's non-strict tracing
                # swaps a module's dicts for ones holding fake tensors while it runs)
                sources.append((kind, (owner, table, key)))
        self._sources = sources
        self._mutations = [(i, self._slots[s.target])
                           for i, s in enumerate(ep.graph_signature.output_specs)
                           if s.kind == "buffer_mutation"]
        self._n_mut = len(self._mutations)
        self._single_out = ep.out_spec.is_leaf()
        # a graph that changes grad mode (a no_grad block) hands the caller's back even if
        # it does not restore it itself (a loaded file need not)
        self._grad_nodes = parts.grad_nodes
        self._graph_forward = parts.graph_forward
        self.add_module(CHECKS, InputChecks(ep.leaf_checks()))
        # torch.compile reads a GraphModule's line map to copy node metadata by the line
        # of `forward`'s code; this `forward` is not the graph's generated code
        self._lineno_map = None
        if parts.forward is not None:
            type(self).forward = parts.forward  # (the class is this instance's own: fx's)
        self.graph = parts.graph

    # -- the unlifted graph's code ---------------------------------------------------
    def recompile(self) -> Any:  # type: ignore[override]
        """fx generates code on every graph change; here it is generated when read."""
        self.__dict__["_st_dirty"] = True

    def _generate(self) -> None:
        """The unlifted graph's code (``.code``; ``_unlifted_forward``), leaving this
        module's ``forward`` and ``__call__`` as they are."""
        if not self.__dict__.get("_st_dirty", True):
            return
        self.__dict__["_st_dirty"] = False
        cls = type(self)
        kept = {k: cls.__dict__[k] for k in ("forward",) if k in cls.__dict__}
        torch.fx.GraphModule.recompile(self)
        self.__dict__["_unlifted_forward"] = cls.__dict__["forward"].__get__(self)
        for k in ("forward", "__call__", "_wrapped_call"):
            if k in cls.__dict__:
                delattr(cls, k)
        for k, v in kept.items():
            setattr(cls, k, v)
        self._lineno_map = None  # (that code is not `forward`'s: see __init__)

    @property
    def code(self) -> str:  # type: ignore[override]
        self._generate()
        return self._code  # type: ignore[no-any-return]

    def __str__(self) -> str:
        self._generate()
        return super().__str__()

    def print_readable(self, *args: Any, **kwargs: Any) -> str:  # type: ignore[override]
        self._generate()
        return super().print_readable(*args, **kwargs)  # type: ignore[no-any-return]

    # -- copies, modes -----------------------------------------------------------------
    def __deepcopy__(self, memo: dict) -> ProgramModule:
        """A module of the same program with copies of this one's current state (fx's
        GraphModule copy would rebuild a plain GraphModule without the program)."""
        new = ProgramModule(self._ep)
        memo[id(self)] = new
        for name, (owner, table, key) in self._slots.items():
            o2, t2, k2 = new._slots[name]
            value = getattr(owner, table)[key]
            if table == "_buffers" and not value.is_leaf:  # written under grad mode: the
                value = value.detach()  # value is copied (torch refuses to copy a history)
            getattr(o2, t2)[k2] = copy.deepcopy(value, memo)
        new._owned = set(new._slots)
        new.training = self.training
        # (a constant the program writes: this module's current value, its own from now)
        written = _Parts.of(self._ep).written
        consts = iter(s for s in self._ep.graph_signature.input_specs if s.kind == "constant")
        sources = []
        for (k, v), (_, c) in zip(self._sources, new._sources):
            if k == "const":
                spec = next(consts)
                if spec.name in written:
                    c = copy.deepcopy(v, memo)
                    new._set_attr(new._const_attrs[spec.target], c)
            sources.append((k, c))
        new._sources = sources
        return new

    def train(self, mode: bool = True) -> ProgramModule:  # type: ignore[override]
        """The graph was traced in one mode: switching to train mode, or to eval mode when
        the graph has dropout or batch norm, would be silently ignored, so it is refused."""
        ep = self._ep
        if bool(mode) != ep.exported_training and (mode or mode_dependent(ep.graph)):
            was = "train" if ep.exported_training else "eval"
            raise RuntimeError(
                f"this program was exported in {was} mode; its graph cannot switch to "
                f"{'train' if mode else 'eval'} mode (.train()/.eval() would be silently "
                f"ignored).\nFix: call model.{'train' if mode else 'eval'}() before "
                f"st.export and export again")
        return self

    def _owner(self, name: str) -> tuple[torch.nn.Module, str]:
        """The (created on demand) submodule that holds dotted state `name`."""
        *path, key = name.split(".")
        owner: torch.nn.Module = self
        for part in path:
            child = owner._modules.get(part)
            if child is None:
                child = torch.nn.Module()
                owner.add_module(part, child)
            owner = child
        return owner, key

    def _set_attr(self, name: str, value: Any) -> None:
        """A plain (not registered) attribute at dotted `name`: a constant, as torch's."""
        owner, key = self._owner(name)
        owner.__dict__[key] = value

    # -- running -------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Check the inputs, run the program's code with the state, write the buffers.
        (Each program's copy presents the model's argument names: ``named_forward``.)"""
        try:
            leaves = self._ep.check_inputs(args, kwargs)
        except InputMismatchError as err:
            if _symbolic(args, kwargs):  # torch.fx.symbolic_trace: trace the unlifted code
                self._generate()
                return self._unlifted_forward(*args, **kwargs)
            # (also torch's class for it: code catching what torch's module raises)
            raise as_torch(err).with_traceback(err.__traceback__) from None
        call = []
        for kind, ref in self._sources:
            if kind == "leaf":
                call.append(leaves[ref])
            elif kind == "state":
                call.append(getattr(ref[0], ref[1])[ref[2]])
            elif kind == "written":
                call.append(getattr(ref[0], ref[1])[ref[2]].detach())
            else:
                call.append(ref)
        try:
            if self._grad_nodes:
                with torch.set_grad_enabled(torch.is_grad_enabled()):
                    outs = self._graph_forward(*call)
            else:
                outs = self._graph_forward(*call)
        except RuntimeError as err:  # (an index check's: the catalogue's error instead)
            refused = refusal(self._ep, err, leaves)
            if refused is None:
                raise
            raise refused.with_traceback(err.__traceback__) from None
        for i, (owner, table, key) in self._mutations:
            store = getattr(owner, table)
            old, new = store[key], outs[i]
            if new is old:
                continue
            if new.shape == old.shape and new.dtype == old.dtype and \
                    new.device == old.device:
                # an output that is a view of the buffer forward replaced (`v =
                # self.buf[:2]; self.buf = f(self.buf)`) keeps the old values, as in eager
                outs = _unshare(outs, self._n_mut, old)
                with torch.no_grad():  # written into the state every module shares
                    old.copy_(new)
            else:
                store[key] = new
        if self._single_out:
            return outs[self._n_mut]
        return pytree.tree_unflatten(list(outs[self._n_mut:]), self._ep.out_spec)

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        """As nn.Module's, and as torch.export's modules: values are copied into the
        program's state, which every module of the program (and ``ep.state_dict``) sees;
        the exported model's weights are never written (a parameter still shared with
        the model gets the program's own storage first, once)."""
        if not assign:
            ep, loaded = self._ep, _loaded(self._ep)
            for name, (owner, table, key) in self._slots.items():
                if name in self._owned:
                    continue
                t = getattr(owner, table)[key]
                new = state_dict.get(name) if hasattr(state_dict, "get") else None
                # (overwritten below: one copy; a value that is absent or may fail to
                # copy keeps the old one)
                overwritten = isinstance(new, torch.Tensor) and new.shape == t.shape and \
                    new.dtype == t.dtype
                shared = ep._state.get(name)
                if name in loaded or shared is None or \
                        not _same_storage(t, shared) or table != "_parameters":
                    # (this module's own value: converted by .to(), or a buffer)
                    fresh = torch.empty_like(t.detach()) if overwritten else t.detach().clone()
                    if table == "_parameters":
                        t.data = fresh
                    else:
                        owner._buffers[key] = fresh
                    self._owned.add(name)
                    continue
                # the program's own copy, put under every module still sharing the model's
                value = shared.detach()
                own = torch.nn.Parameter(torch.empty_like(value) if overwritten else value.clone(),
                                         requires_grad=shared.requires_grad)
                ep._state[name] = own
                loaded.add(name)
                for module in list(_modules_of(ep)):
                    slot = module._slots.get(name)
                    if slot is None or name in module._owned:
                        continue
                    p = getattr(slot[0], slot[1])[slot[2]]
                    if _same_storage(p, shared):
                        p.data = own.detach()  # (the Parameter object stays: optimizers)
                        module._owned.add(name)
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    def _current_state(self) -> dict[str, torch.Tensor]:
        """Current parameters and buffers by their original names (buffers as mutated)."""
        return {name: getattr(owner, table)[key]
                for name, (owner, table, key) in self._slots.items()}


# program -> its live modules, and the names of the parameters a module's load_state_dict
# gave the program's own storage (by the program's identity: it is not hashed by value)
_MODULES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOADED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def adopt(ep: Any, name: str, source: torch.Tensor, copy_: torch.Tensor) -> None:
    """Every live module of `ep` reading `source` itself as constant or parameter `name`
    reads `copy_` from now on (another program of the model writes it: ep.own_state)."""
    for module in list(_modules_of(ep)):
        if name in module._const_attrs:
            targets = [s.target for s in ep.graph_signature.input_specs if s.kind == "constant"]
            consts = iter(targets)
            sources = module._sources
            for i, (kind, value) in enumerate(sources):
                if kind == "const" and next(consts) == name and value is source:
                    sources[i] = (kind, copy_)
                    module._set_attr(module._const_attrs[name], copy_)
        slot = module._slots.get(name)
        if slot is not None and slot[1] == "_parameters":
            p = slot[0]._parameters[slot[2]]
            if name not in module._owned and _same_storage(p, source):
                p.data = copy_.detach()  # (the Parameter object stays: optimizers)


def _modules_of(ep: Any) -> weakref.WeakSet:
    found = _MODULES.get(ep)
    if found is None:
        found = _MODULES[ep] = weakref.WeakSet()
    return found


def _loaded(ep: Any) -> set:
    return _LOADED.setdefault(ep, set())


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.device == b.device and \
        a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() and \
        a.storage_offset() == b.storage_offset()


def _symbolic(args: tuple, kwargs: dict) -> bool:
    """Whether the inputs are torch.fx Proxies (a symbolic trace of the module)."""
    return any(isinstance(v, torch.fx.Proxy) for v in (*args, *kwargs.values()))


def _unshare(outs: Any, first: int, buf: torch.Tensor) -> Any:
    """`outs` with each user output (from index `first`) that shares `buf`'s memory
    replaced by a copy."""
    ptr = buf.untyped_storage().data_ptr()
    if not any(isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() == ptr
               for o in outs[first:]):
        return outs
    return type(outs)(o.clone() if i >= first and isinstance(o, torch.Tensor) and
                      o.untyped_storage().data_ptr() == ptr else o for i, o in enumerate(outs))


# attribute names of the module ep.module() builds, which no dotted part of a state name
# may take: a GraphModule's (graph, code, meta, shape_env, forward, ...) and ProgramModule's
# own (registering one raised KeyError or replaced the module's machinery; st.load refuses
# them in a file too)
MODULE_ATTRS = frozenset(dir(ProgramModule)) | frozenset(vars(torch.nn.Module())) | \
    frozenset(vars(torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph()))) | {
        "code", "graph", "training", "meta", "shape_env", "_ep", "_written", "_owned",
        "_slots", "_sources", "_mutations", "_n_mut", "_forward", "_single_out",
        "_input_checks", "_const_attrs", "_graph_forward", "_grad_nodes", "_unlifted_forward",
        "_lineno_map", "run"}


def check_state_names(names: Any, kinds: Any) -> None:
    """Refuse a state name with a dotted part ep.module() cannot hold (MODULE_ATTRS);
    ``kinds``: name -> "parameter" / "buffer" for the message (or a function making that
    dict, called only to raise).  A list of names found good is remembered (a function of
    the names alone: MODULE_ATTRS is fixed)."""
    key = tuple(names)
    if key in _GOOD_NAMES:
        return
    for name in key:
        for part in name.split("."):
            if part in MODULE_ATTRS:
                kinds = kinds() if callable(kinds) else kinds
                raise state_name_taken(name, part, kinds.get(name, "state"))
    if len(_GOOD_NAMES) > 1_000:
        _GOOD_NAMES.clear()
    _GOOD_NAMES.add(key)


_GOOD_NAMES: set[tuple[str, ...]] = set()  # tuples of state names check_state_names passed

