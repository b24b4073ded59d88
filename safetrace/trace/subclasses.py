"""Traceable wrapper tensor subclasses: traced through their ``__torch_dispatch__``.

A traceable wrapper subclass (``__tensor_flatten__`` / ``__tensor_unflatten__`` with
``__torch_dispatch__``, as torch's two-tensor test subclass) that is a parameter or buffer
stays one in the program (its placeholder receives the subclass at run time); the graph reads
its inner tensors with ``torch.ops.export.access_subclass_inner_tensor`` (torch.export's own
node for it), right after the placeholders.  While tracing, the code sees a *view*: the same
class rebuilt by ``__tensor_unflatten__`` around the proxies of those inner tensors.  An op
that meets a subclass (``Tracer.emit`` finds one among its arguments, ``lift`` raises
``SubclassValue``) runs the subclass's ``__torch_dispatch__`` on the views; the calls its
Python code makes on the proxies reach ``Proxy.__torch_function__`` and are recorded as the
user's would be (``proxy.BENEATH``): the graph computes on plain tensors, as torch.export's
program does once decomposed.  A composite op (``F.linear``) is decomposed by torch's C++
kernel first, as eager does before ``__torch_dispatch__``; the ops that kernel makes on
proxies alone come back through ``Proxy.__torch_dispatch__``.  A subclass built in the
traced code works the same way; one the program returns is rebuilt from its inner tensors
(``rebuild``), as is one crossing a preserved module call's boundary (``across``: the
other side reads its inner tensors from that one value); what the dispatch computed that
nothing reads is erased after the trace.

Sizes must be static (the subclass's Python code and torch's C++ read them as ints), writes
into subclass state are refused, and so is a subclass that is not state (an attribute).  A
subclass *input* stays a plain tensor of the graph (its ops dispatch when the program runs).
"""

from __future__ import annotations

import contextlib
import operator
from typing import Any, Iterator

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from safetrace import errors
from safetrace.meta import TensorMeta
from safetrace.symbolic.records import DataDependentQuestion
from safetrace.trace.mutation import mutates
from safetrace.trace.proxy import BENEATH, Proxy
from safetrace.trace.recorder import Recorder
from safetrace.trace.registry import handles
from safetrace.trace.source import short, stack_trace

_COMPOSITE = "CompositeImplicitAutograd"
# torch.export's node for reading a subclass's inner tensor (defined when torch is imported)
ACCESS = torch.ops.export.access_subclass_inner_tensor.default
_PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter, Proxy)
_ALL_PLAIN = frozenset(_PLAIN_TYPES).issuperset  # (whether an iterable of types is all)


def traceable(t: Any) -> bool:
    """A real (or traced) instance of a traceable wrapper subclass."""
    return t.__class__ not in _PLAIN_TYPES and is_traceable_wrapper_subclass(t)


class Subclasses:
    """A tracer's subclass state: the placeholders of subclass parameters and buffers, the
    real inner tensors under them, their access nodes and their traced views."""

    def __init__(self) -> None:
        self.roots: dict[int, torch.fx.Node] = {}  # id(subclass state) -> its placeholder
        self.parents: dict[int, tuple[torch.Tensor, str]] = {}  # id(inner) -> (outer, attr)
        self.nodes: dict[int, torch.fx.Node] = {}  # id(real tensor) -> its graph node
        self.views: dict[int, torch.Tensor] = {}   # id(real subclass) -> its traced view
        self.keep: list = []  # the real tensors whose ids are keys above
        self.made: list[torch.fx.Node] = []  # nodes the subclasses' dispatch recorded
        self.inputs: list[tuple[str, str]] = []  # (path, class) of subclass inputs

    def watch(self, t: torch.Tensor, node: torch.fx.Node, dispatched: bool = True) -> None:
        """Subclass state `t` (placeholder `node`): its ops run its dispatch when
        `dispatched`, else they are plain ops on it; its inner tensors are read from it."""
        self.nodes[id(t)] = node
        if dispatched:
            self.roots[id(t)] = node
            # never replayed as a plain state tensor (memo.py keys static metas only)
            node.meta["val"].st_meta.static = None
        self._inner(t)

    def _inner(self, t: torch.Tensor) -> None:
        self.keep.append(t)
        for attr in t.__tensor_flatten__()[0]:
            inner = getattr(t, attr)
            self.parents[id(inner)] = (t, attr)
            if traceable(inner):
                self._inner(inner)
            else:
                self.keep.append(inner)

    def owns(self, t: torch.Tensor) -> bool:
        """`t` is subclass state or a tensor inside one."""
        return id(t) in self.nodes or id(t) in self.parents


def watch_state(tr: Any, tensors: dict[str, torch.Tensor], state: dict,
                inputs: list[tuple[str, Any]]) -> None:
    """Note the traceable subclass parameters and buffers among `tensors` (name -> tensor;
    `state`: id -> placeholder) on the tracer; refuse a class overriding __torch_function__
    among them and the `inputs` ((path, value) pairs).  A subclass input stays a tensor of
    the graph: its ops dispatch to the subclass when the program runs, as in eager (and so
    does subclass state then; no dispatch is traced)."""
    for path, x in inputs:
        if isinstance(x, torch.Tensor) and x.__class__ not in _PLAIN_TYPES:
            if overrides_torch_function(type(x)):
                raise errors.subclass_torch_function(type(x).__name__, path)
            if traceable(x):  # (traced as a plain tensor: no subclass dispatch may meet it)
                if tr.subclasses is None:
                    tr.subclasses = Subclasses()
                tr.subclasses.inputs.append((path, type(x).__name__))
    if _ALL_PLAIN(map(type, tensors.values())):  # (the usual state: one pass in C)
        return
    for name, t in tensors.items():
        if t.__class__ in _PLAIN_TYPES:
            continue
        if overrides_torch_function(type(t)):  # (traceable or not: eager runs the override)
            raise errors.subclass_torch_function(type(t).__name__, name)
        if traceable(t):
            if tr.subclasses is None:
                tr.subclasses = Subclasses()
            # with a subclass input (dispatched when the program runs) subclass state is too:
            # traced as a plain tensor, so the two meet at run time as in eager
            tr.subclasses.watch(t, state[id(t)], dispatched=not tr.subclasses.inputs)


def overrides_torch_function(cls: type) -> bool:
    """`cls` has a ``__torch_function__`` of its own (not torch's default nor disabled)."""
    own = getattr(cls.__torch_function__, "__func__", cls.__torch_function__)
    return own not in (getattr(torch.Tensor.__torch_function__, "__func__", None),
                       torch._C._disabled_torch_function_impl)


def node_of(tr: Recorder, t: torch.Tensor) -> torch.fx.Node | None:
    """The graph node of a real tensor of subclass state (the placeholder, or the access
    node of an inner tensor, made on first use); raises ``SubclassValue`` for a subclass
    (its ops run its __torch_dispatch__); None for any other tensor."""
    if traceable(t):
        raise errors.subclass_value(type(t).__name__, list(t.__tensor_flatten__()[0]),
                                    short(stack_trace(4)))
    reg = getattr(tr, "subclasses", None)
    if reg is None or id(t) not in reg.parents:
        return None
    return _access(tr, reg, t)


def _access(tr: Recorder, reg: Subclasses, t: torch.Tensor) -> torch.fx.Node:
    node = reg.nodes.get(id(t))
    if node is not None:
        return node
    outer, attr = reg.parents[id(t)]
    parent = _access(tr, reg, outer)
    graph = tr.scopes[0].graph
    if parent.op == "placeholder":  # after every placeholder (torch's programs keep them first)
        anchor = next((n for n in graph.nodes if n.op != "placeholder"), None)
        where = graph.inserting_before(anchor) if anchor is not None else \
            graph.inserting_after(next(reversed(graph.nodes)))
    else:
        where = graph.inserting_after(parent)
    with where:
        node = graph.call_function(ACCESS, (parent, attr))
    p = Proxy(TensorMeta(tuple(t.shape), t.dtype, t.device), node)
    p.st_subclass = type(outer).__name__  # (named in refusals)
    if not (t.is_contiguous() and t.storage_offset() == 0):
        p.st_contig = None
    node.meta.update(val=p, stack_trace="")
    reg.nodes[id(t)] = node
    return node


def view_of(tr: Recorder, t: torch.Tensor) -> torch.Tensor:
    """The traced view of a real subclass of the program's state: its class rebuilt around
    the proxies of its inner tensors (made once per tensor)."""
    reg: Subclasses = tr.subclasses  # type: ignore[attr-defined]
    view = reg.views.get(id(t))
    if view is not None:
        return view
    names, ctx = t.__tensor_flatten__()
    inner = {}
    for attr in names:
        x = getattr(t, attr)
        inner[attr] = view_of(tr, x) if traceable(x) else _access(tr, reg, x).meta["val"]
    try:
        with _beneath_mode(tr):
            view = type(t).__tensor_unflatten__(inner, ctx, t.size(), t.stride())
    except (errors.StructuredError, DataDependentQuestion):
        raise
    except Exception as exc:  # the subclass's own code failed on traced tensors
        raise errors.subclass_dispatch_failed(type(t).__name__, "__tensor_unflatten__",
                                              short(stack_trace(4)), exc) from exc
    reg.views[id(t)] = view
    return view


def output_node(tr: Recorder, t: torch.Tensor) -> torch.fx.Node:
    """The graph value of a tensor subclass the program returns: subclass state as it is
    read, a value traced around proxies rebuilt from its inner tensors by its own
    ``__tensor_unflatten__`` (the class's context and outer size as constants)."""
    reg: Subclasses | None = getattr(tr, "subclasses", None)
    if reg is not None and reg.owns(t):
        return _access(tr, reg, t)
    names, ctx = t.__tensor_flatten__()
    leaves: list = []
    _leaves(t, leaves)
    if not any(v.__class__ is Proxy for v in leaves):
        raise errors.subclass_constant(type(t).__name__, "the program's output")
    if not _plain_constant(ctx):
        raise errors.subclass_value(type(t).__name__, list(names), "the program's output")
    inner = {}
    for attr in names:
        x = getattr(t, attr)
        inner[attr] = x.st_node if x.__class__ is Proxy else \
            output_node(tr, x) if traceable(x) else tr.lift(x)
    with torch._C.DisableTorchFunctionSubclass():
        shape, stride = list(t.shape), list(t.stride())
    graph = tr.scopes[0].graph
    name = f"{type(t).__module__}.{type(t).__qualname__}"
    CLASSES[name] = type(t)
    node = graph.call_function(rebuild, (name, inner, ctx, shape, stride))
    node.meta.update(stack_trace="", val=Proxy(TensorMeta(tuple(shape), t.dtype,
                                                         traced_inner(t).st_meta.device), node))
    return node


def across(tr: Recorder, t: torch.Tensor, value_stack: Any,
           read_stack: Any) -> tuple[torch.fx.Node, torch.Tensor] | None:
    """A subclass `t` crossing a preserved module call's boundary, as torch's training IR
    passes it: one graph value (subclass state's placeholder, or `t` rebuilt from its inner
    tensors, recorded under `value_stack`) and a fresh view of that value whose inner
    tensors are read from it under `read_stack`, so the code on the other side of the
    boundary reads nothing else.  None where it cannot (a subclass of subclasses, or one in
    a branch being traced): the caller refuses it."""
    names, ctx = t.__tensor_flatten__()
    reg: Subclasses | None = getattr(tr, "subclasses", None)
    real = reg is not None and reg.owns(t)
    if tr.scope is not tr.scopes[0] or not _plain_constant(ctx) or any(
            traceable(getattr(t, a)) for a in names):
        return None
    if not real and traced_inner(t) is None:
        return None  # (a subclass of real tensors that is not state: refused as before)
    node = output_node(tr, t)
    if node.op == "call_function" and node.target is rebuild:
        node.meta["nn_module_stack"] = value_stack
    if reg is None:
        reg = tr.subclasses = Subclasses()  # type: ignore[attr-defined]
    graph = tr.scopes[0].graph
    inner = {}
    for attr in names:
        x = getattr(t, attr)
        meta = x.st_meta if x.__class__ is Proxy else \
            TensorMeta(tuple(x.shape), x.dtype, x.device)
        read = graph.call_function(ACCESS, (node, attr))
        p = Proxy(TensorMeta(meta.shape, meta.dtype, meta.device), read)
        p.st_subclass = type(t).__name__  # (named in refusals)
        if x.__class__ is Proxy:  # (the same tensor object at run time: its layout too)
            p.st_contig, p.st_layout = x.st_contig, x.st_layout
        elif not (x.is_contiguous() and x.storage_offset() == 0):
            p.st_contig = None
        read.meta.update(val=p, stack_trace="", nn_module_stack=read_stack)
        reg.made.append(read)  # (erased after the trace when nothing reads it)
        inner[attr] = p
    with torch._C.DisableTorchFunctionSubclass():
        shape, stride = t.size(), t.stride()
    try:
        with _beneath_mode(tr):
            view = type(t).__tensor_unflatten__(inner, ctx, shape, stride)
    except (errors.StructuredError, DataDependentQuestion):
        raise
    except Exception as exc:  # the subclass's own code failed on traced tensors
        raise errors.subclass_dispatch_failed(type(t).__name__, "__tensor_unflatten__",
                                              short(stack_trace(4)), exc) from exc
    return node, view


# the tensor subclasses programs return, by their qualified names (what rebuild nodes hold)
CLASSES: dict[str, type] = {}


def rebuild(cls: str, inner: dict, ctx: Any, size: list, stride: list) -> torch.Tensor:
    """A tensor subclass from its inner tensors, as the program returns it (a graph node;
    `cls` its class's qualified name)."""
    found = CLASSES.get(cls)
    if found is None:  # (never imported by name: a program is rebuilt only where it was made)
        raise RuntimeError(f"{cls} is not a tensor subclass this process exported")
    return found.__tensor_unflatten__(inner, ctx, size, stride)  # type: ignore[attr-defined]


def _plain_constant(v: Any) -> bool:
    """A value the graph's code can hold as a literal (a flatten context)."""
    if v is None or isinstance(v, (bool, int, float, str, torch.dtype, torch.device)):
        return True
    if type(v) in (tuple, list):
        return all(_plain_constant(x) for x in v)
    if type(v) is dict:
        return all(isinstance(k, str) and _plain_constant(x) for k, x in v.items())
    return False


def traced_inner(t: Any) -> Proxy | None:
    """The first proxy inside a tensor subclass traced around proxies; None for any other
    value (a real tensor, a subclass of real tensors)."""
    if t.__class__ is Proxy or not isinstance(t, torch.Tensor) or not traceable(t):
        return None
    leaves: list = []
    _leaves(t, leaves)
    return next((v for v in leaves if v.__class__ is Proxy), None)


def _leaves(t: Any, out: list) -> None:
    """The proxies inside a traced subclass value (nested ones included)."""
    if t.__class__ is Proxy:
        out.append(t)
    elif isinstance(t, torch.Tensor) and traceable(t):
        for attr in t.__tensor_flatten__()[0]:
            _leaves(getattr(t, attr), out)
    else:
        out.append(t)


def dispatch(tr: Recorder, op: Any, args: tuple, kwargs: dict, recording: bool = True) -> Any:
    """Record ``op(*args, **kwargs)`` where a traceable subclass is among the arguments: its
    ``__torch_dispatch__`` runs on traced views, and records the ops it makes.  Not while
    the tracer only computes metadata (`recording` False: a custom op's fake function)."""
    reg: Subclasses | None = getattr(tr, "subclasses", None)
    flat, spec = pytree.tree_flatten((args, kwargs))
    if not recording:
        sub = next((x for x in flat if isinstance(x, torch.Tensor) and traceable(x)), None)
        raise errors.subclass_value(type(sub).__name__, list(sub.__tensor_flatten__()[0])
                                    if sub is not None else [], short(stack_trace(4)))
    types: list[type] = []
    writes = mutates(op)
    for i, x in enumerate(flat):
        if not isinstance(x, torch.Tensor) or x.__class__ is Proxy:
            continue
        if reg is not None and reg.owns(x):
            if writes:
                raise errors.subclass_write(type(x).__name__, str(op), short(stack_trace(4)))
            if traceable(x):
                flat[i] = x = view_of(tr, x)
        elif traceable(x):
            leaves: list = []
            _leaves(x, leaves)
            if not any(v.__class__ is Proxy for v in leaves):
                raise errors.subclass_constant(type(x).__name__, short(stack_trace(4)))
        if traceable(x) and type(x) not in types:
            if overrides_torch_function(type(x)):  # (one built in the traced code)
                raise errors.subclass_torch_function(type(x).__name__, short(stack_trace(4)))
            types.append(type(x))
    leaves = []
    for x in flat:
        _leaves(x, leaves)
    name = types[0].__name__ if types else "tensor subclass"
    if any(any(type(s) is not int for s in v.st_meta.shape) if v.__class__ is Proxy
           else hasattr(v, "expr") and not isinstance(v, torch.Tensor) for v in leaves):
        raise errors.subclass_dynamic(name, str(op), short(stack_trace(4)))
    if reg is not None and reg.inputs:
        # the input is a plain tensor of the graph but a subclass when the program runs: the
        # dispatch traced here would not be the one that runs (a two-tensor inside another)
        raise errors.subclass_input_mixed(*reg.inputs[0], name, str(op), short(stack_trace(4)))
    args, kwargs = pytree.tree_unflatten(flat, spec)
    if reg is None:  # (a subclass built in the traced code: its nodes are noted too)
        reg = tr.subclasses = Subclasses()  # type: ignore[attr-defined]
    graph = tr.scope.graph
    last = next(iter(reversed(graph.nodes)), None)
    try:
        with _beneath_mode(tr), _noting(reg, graph, last):
            if torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), _COMPOSITE):
                # decomposed by torch's C++ kernel before any __torch_dispatch__, as in eager
                # (the kernel itself called past __torch_function__, once)
                return torch._C._skip_one_hop_torch_function(
                    op.decompose, (), args, kwargs)
            for cls in types:
                out = cls.__torch_dispatch__(op, tuple(types), args, kwargs)
                if out is not NotImplemented:
                    return out
    except (errors.StructuredError, DataDependentQuestion):
        raise
    except Exception as exc:  # the subclass's own code failed on traced tensors
        raise errors.subclass_dispatch_failed(name, str(op), short(stack_trace(4)),
                                              exc) from exc
    raise errors.subclass_dispatch_failed(
        name, str(op), short(stack_trace(3)),
        NotImplementedError("every __torch_dispatch__ returned NotImplemented"))


@contextlib.contextmanager
def _noting(reg: Subclasses, graph: torch.fx.Graph, last: Any) -> Iterator[None]:
    """Note the nodes recorded after `last` (the ops of one dispatch)."""
    try:
        yield
    finally:
        node = last.next if last is not None else next(iter(graph.nodes), None)
        while node is not None and node.op != "root":
            reg.made.append(node)
            node = node.next


def drop_unused(tr: Any) -> None:
    """After the trace: erase what the subclasses' dispatch computed and nothing reads (a
    two-tensor computes both halves where the code reads one), and unread access nodes."""
    reg: Subclasses | None = tr.subclasses
    if reg is None:
        return
    sources = {v if isinstance(v, torch.fx.Node) else v[0] for v in tr.sym_sources.values()}
    access = [n for n in reg.nodes.values() if n.op == "call_function"]
    # the ops first, latest first (a node of a dispatch inside another is noted by both),
    # then the access nodes they read
    for node in [*reversed(dict.fromkeys(reg.made)), *reversed(access)]:
        if node.users or node in sources or node.op != "call_function":
            continue
        op = node.target
        if op is operator.getitem or op is ACCESS or (
                isinstance(op, torch._ops.OpOverload) and not mutates(op) and
                torch.Tag.nondeterministic_seeded not in op.tags):
            node.graph.erase_node(node)


@contextlib.contextmanager
def _beneath_mode(tr: Recorder) -> Iterator[None]:
    """While a subclass's own code runs on proxies: its Python-level calls on them are
    recorded as the user's would be (metadata queries answered from the proxies, wrapper
    facts such as storage_offset by the wrapper tensors), and so are the ops torch's C++
    makes on proxies alone beneath it (a composite's decomposition)."""
    saved = BENEATH.function, BENEATH.dispatch
    BENEATH.function = lambda func, tys, a, kw: _function(tr, func, a, kw)
    BENEATH.dispatch = lambda func, tys, a, kw: _beneath(tr, func, tys, a, kw)
    try:
        yield
    finally:
        BENEATH.function, BENEATH.dispatch = saved


# what a wrapper subclass's constructor asks of its inner tensors that the tracer's
# handlers would treat as a layout question of the user's (answered by the wrapper)
_WRAPPER_FACTS = frozenset((torch.Tensor.storage_offset, torch.Tensor.layout.__get__,
                            torch.Tensor.requires_grad.__get__, torch.Tensor.is_leaf.__get__))


def _function(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    if func in _WRAPPER_FACTS:
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)
    return tr.redispatch(func, args, kwargs)


def refuse_inner_write(op: Any, target: Any) -> None:
    """Refuse an in-place write whose target is (a view of) an inner tensor of subclass
    state: at run time it would write the subclass's own tensor, which the program does not
    carry as a buffer write."""
    node = target
    for _ in range(256):
        if not isinstance(node, torch.fx.Node) or node.op != "call_function" or not node.args:
            return
        if node.target is ACCESS:
            raise errors.subclass_write(node.meta["val"].st_subclass,
                                        str(op), short(stack_trace(5)))
        target_op = node.target
        if target_op is operator.getitem:
            node = node.args[0]
            continue
        returns = getattr(getattr(target_op, "_schema", None), "returns", None)
        if not returns or returns[0].alias_info is None:
            return  # a new tensor: not the subclass's
        node = node.args[0]


def _beneath(tr: Recorder, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
    """An op torch's C++ made on proxies beneath a subclass's dispatch: recorded as the code's
    call would be; a subclass among them answers first."""
    if any(not issubclass(t, Proxy) for t in types):
        return NotImplemented
    return tr.redispatch(func, args, kwargs)


@handles(ACCESS)
def access(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``access_subclass_inner_tensor(t, attr)`` in traced code (a program's graph exported
    again): the inner tensor of the subclass's view, as the graph's own read gives it."""
    named = {"src_subclass_tensor": args[0] if args else None,
             "attr": args[1] if len(args) > 1 else None, **kwargs}
    t, attr = named["src_subclass_tensor"], named["attr"]
    reg: Subclasses | None = getattr(tr, "subclasses", None)
    if isinstance(t, torch.Tensor) and t.__class__ is not Proxy and traceable(t):
        view = view_of(tr, t) if reg is not None and reg.owns(t) else t
        return getattr(view, attr)
    raise errors.tensor_attribute(str(attr), short(stack_trace(3)))  # not a subclass here
