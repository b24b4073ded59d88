"""The program's placeholders: the model's state (each parameter and buffer, lifted once)
and the user's inputs, with their metas, wrapper proxies and input specs.  Methods of
``api.Exporter`` (``self`` is the exporter), kept here to keep ``api.py`` small."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from safetrace import pytree
from safetrace.exporter.contract import linear_in
from safetrace.exporter.signature import InputSpec
from safetrace.exporter.spec import ScalarSpec
from safetrace.exporter.state_rows import state_rows
from safetrace.meta import TensorMeta
from safetrace.meta.tensor import static_meta
from safetrace.trace.graph import add_placeholder, add_placeholders
from safetrace.trace.layout import LOOSE, exact_contiguous
from safetrace.trace.mutation import input_itself
from safetrace.trace.proxy import WRAPPER, Proxy

_STRIDED = torch.strided
_META, _CPU = torch.device("meta"), torch.device("cpu")
# an input's path -> pytree.placeholder_name of it (cached)
_STATE_NAMES: dict[str, str] = {}
_NEW = object.__new__
# whether InputSpec's fields are the five written directly below, in that order (else its
# constructor makes each spec)
_DIRECT_SPECS = tuple(f.name for f in dataclasses.fields(InputSpec)) == (
    "kind", "name", "target", "leaf", "persistent") and "__post_init__" not in vars(InputSpec)


def lift_state(self: Any, guard: Any) -> None:
    """Placeholders for every parameter and buffer (shared tensors lifted once)."""
    # other names of the same tensors (a module or parameter shared under two paths):
    # torch.export's state_dict lists each, as the model's own state_dict does (the
    # snapshot walks every path, as named_parameters(remove_duplicate=False))
    state, tensors, add_spec = self.state, self.state_tensors, self.input_specs.append
    lifted, places, again = state_rows(guard.saved)
    # (the placeholders made in one pass: the graph has no node before them)
    for (t, name, kind, persistent), node in zip(lifted,
                                                 add_placeholders(self.graph, places)):
        # (Proxy.__new__ inline: a real tensor's sizes are ints, its meta made from
        # its static key without TensorMeta's look at each size; `t.device` makes a
        # new device object at each read, a CPU tensor's is the one CPU device)
        if t._has_symbolic_sizes_strides:
            meta, shape = TensorMeta(t.shape, t.dtype, t.device), None
        else:  # (meta.tensor.static_meta, inline: one Python call less per tensor)
            shape = tuple(t.shape)
            meta = _NEW(TensorMeta)
            meta.shape, meta.ndim = shape, len(shape)
            meta.dtype, meta.device = dtype, device = t.dtype, _CPU if t.is_cpu else t.device
            meta._bounds = meta._mask_cell = meta._symbolic = None
            meta._bounds_epoch = 0
            meta.static = (shape, dtype, device)
        p = WRAPPER(Proxy, meta.shape, None, None, None, meta.dtype, _STRIDED, _META)
        p.st_meta, p.st_node = meta, node
        p.st_layout = p._st_value = None  # (Proxy's slots, all set here)
        # (exact_contiguous, inline where no size is 0 or 1: is_contiguous() has then
        # compared every stride with the row-major one)
        if not (shape is not None and 1 not in shape and 0 not in shape and
                t.is_contiguous() and not t.storage_offset()) and not exact_contiguous(t):
            p.st_contig, p.st_strides = None, tuple(t.stride())
        else:
            p.st_contig = True
        own = node.meta  # (stores: a keyword dict merged in costs twice as much)
        own["val"], own["stack_trace"], own["kind"], own["target"] = p, "", kind, name
        state[id(t)] = node
        tensors[name] = t
        if _DIRECT_SPECS:  # (InputSpec(kind, node.name, name, None, persistent), its
            # fields set in the order its __init__ sets them: no Python __init__ from C)
            spec = _NEW(InputSpec)
            spec.kind, spec.name, spec.target, spec.leaf, spec.persistent = \
                kind, node.name, name, None, persistent
        else:
            spec = InputSpec(kind, node.name, name, None, persistent)
        add_spec(spec)
    self.state_aliases: dict[str, str] = {}
    if again:
        names = {id(t): n for n, t in self.state_tensors.items()}
        for fqn, ident in again:
            if fqn not in self.state_tensors:
                self.state_aliases[fqn] = names[ident]


def user_inputs(self: Any, leaves: list, specs: list, tracer: Any) -> list:
    """A placeholder for each flattened input: its proxy, symbolic int or value."""
    proxies = []
    used: set = set()
    for i, ((path, value), spec) in enumerate(zip(leaves, specs)):
        name = _STATE_NAMES.get(path)  # (one table: each key's name is a function of it)
        if name is None:
            name = _STATE_NAMES[path] = pytree.placeholder_name(path)
        while name in used:
            name += "_"
        used.add(name)
        node = add_placeholder(self.graph, name)
        meta = node.meta
        meta["stack_trace"], meta["kind"], meta["path"] = "", "user_input", path
        if isinstance(value, torch.Tensor):
            decls = self.dyn.decls
            n_decl = len(decls)
            shape = self.dyn.sizes(path, value, spec)
            if len(decls) != n_decl:
                for decl in decls[n_decl:]:
                    _source(tracer, node, decl)
            if spec is None:  # (no dim declared: the example's sizes, as the state's
                # meta made from its static key; Proxy.__new__ inline)
                m = static_meta((shape, value.dtype, _CPU if value.is_cpu else value.device))
                p = WRAPPER(Proxy, shape, None, None, None, m.dtype, _STRIDED, m.device)
                p.st_meta, p.st_node = m, node
                p.st_contig = True  # (Proxy's slots, all set here)
                p.st_layout = p._st_value = None
            else:
                p = Proxy(TensorMeta(shape, value.dtype, value.device), node)
            # (input_layout, is_contiguous() asked once: exact where the example's sizes
            # have no 0 or 1 and its offset is 0)
            if not value.is_contiguous():
                p.st_contig = None
                if value.layout is torch.strided:
                    p.st_strides = tuple(value.stride())
            elif value.storage_offset() or not (spec is None and 1 not in shape and
                                                0 not in shape) and not exact_contiguous(value):
                p.st_contig = LOOSE
            meta["val"] = p
            if value.requires_grad:  # (torch's placeholder keeps it; to_torch reads it)
                meta["requires_grad"] = True
            proxies.append(p)
        elif isinstance(spec, ScalarSpec):  # an int declared dynamic: a symbolic int
            n_decl = len(self.dyn.decls)
            (size,) = self.dyn.sizes(path, _Scalar(value), spec)
            for decl in self.dyn.decls[n_decl:]:
                decl.scalar = True
                _source(tracer, node, decl)
            self.scalars.add(i)
            node.meta["val"] = size
            proxies.append(size)
        else:
            node.meta["val"] = value
            proxies.append(value)
        if _DIRECT_SPECS:  # (InputSpec("user_input", node.name, None, i, True))
            spec = _NEW(InputSpec)
            spec.kind, spec.name, spec.target, spec.leaf, spec.persistent = \
                "user_input", node.name, None, i, True
        else:
            spec = InputSpec("user_input", node.name, None, i, True)
        self.input_specs.append(spec)
    return proxies


def _source(tracer: Any, node: torch.fx.Node, decl: Any) -> None:
    """Where the graph reads a symbol at run time: the first dim declared with it."""
    for name in decl.expr.free_symbols:
        lin = linear_in(decl.expr, name)
        if lin is not None:  # (an int input: its own value, dim None)
            tracer.sym_sources.setdefault(name, (node, None if decl.scalar else decl.dim)
                                          + lin)


class _Scalar:
    """An int input declared dynamic, as DynamicDims.sizes reads a tensor: one "dim"."""

    def __init__(self, value: int) -> None:
        self.shape = (value,)


def as_given(p: Any) -> Any:
    """An input's proxy as forward was given it: an in-place op that changed its shape
    (``x.t_()``, ``x.unsqueeze_(0)``) leaves the proxy with the new shape, and its
    placeholder with the given one as its value (trace/proxy.py ``reshaped_in_place``);
    the contract checks the inputs as given."""
    if not isinstance(p, Proxy):
        return p
    node = input_itself(p.st_node)
    given = node.meta.get("val") if node is not None else None
    return given if isinstance(given, Proxy) else p


def given_shapes(proxies: list, env: Any) -> tuple[list, list]:
    """The inputs as forward was given them (``as_given``) and the traced shape of each
    tensor among them (ints, and each symbolic size as its simplified expression, or the
    int it simplifies to; None for a value that is not a tensor): the contract's view."""
    shapes: list = []
    given = []
    for p in proxies:
        if not (type(p) is Proxy and (n := p.st_node).op == "placeholder" and
                n.meta.get("val") is p):  # (its placeholder's own value: as_given's answer)
            p = as_given(p)
        given.append(p)
        if not isinstance(p, Proxy):
            shapes.append(None)
        elif (static := p.st_meta.static) is not None:  # (int sizes: the tuple as it is)
            shapes.append(static[0])
        else:
            shapes.append(tuple(s if isinstance(s, int) else _const_or(env.simplify(s.expr))
                                for s in p.st_meta.shape))
    return given, shapes


def _const_or(e: Any) -> Any:
    return int(e.value) if e.op == "const" else e
