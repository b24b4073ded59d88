"""The tracer: a TorchFunctionMode that turns every torch call into graph nodes.

Each call is answered in one of two ways: a special handler registered for the callable
(``registry.HANDLERS``: metadata queries, data reads, casts, factories, indexing, ...), or
the callable's plan (``dispatch.py``: an ATen overload chosen by name, an operator, a
Python composite traced as one node or traced through).  Shapes and dtypes of results
come from the shape rules (``safetrace.rules``), else from PyTorch's meta kernels.
"""

from __future__ import annotations

import contextlib
import functools
import operator
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

import safetrace.trace.handlers  # noqa: F401  (registers every special handler)
from safetrace import errors
from safetrace.errors import DataDependentError, OpShapeError
from safetrace.errors.base import note_raised
from safetrace.meta import TensorMeta
from safetrace.meta.active import ACTIVE
from safetrace.meta.symtypes import SYM_CLASSES
from safetrace.rules.oblivious import oblivious_answer
from safetrace.symbolic import make_int
from safetrace.symbolic.expr import sym
from safetrace.trace import fast_overrides, memo, rulecache, subclasses
from safetrace.trace.autocast import autocast_changes
from safetrace.trace.current import set_active_tracer
from safetrace.trace.dispatch import PLANS, aten_call, composite_call, dunder, plan_for
from safetrace.trace.eager_raise import eager_class, traced_arguments
from safetrace.trace.graph import add_node, placeholder_before_ops
from safetrace.trace.index_ranges import FROM_ARGUMENTS
from safetrace.trace.layout import exact_contiguous, set_layout
from safetrace.trace.raising import program_catches
from safetrace.trace.metakernel import meta_kernel
from safetrace.trace.mutation import (constant_written, note_constant_storage,
                                      reads_own_memory, refuse_input_reshape, state_alias,
                                      traced_elsewhere,
                                      write_target, written_args)
from safetrace.trace.numbering import number_mask
from safetrace.trace.opinfo import (OP_INFO, RESHAPES_SELF, op_info, refresh_op_info,
                                    return_type)
from safetrace.trace.pieces import Pieces
from safetrace.trace.scope import Scope
from safetrace.trace.proxy import Proxy, reshaped_in_place
from safetrace.trace.asserts import emit_assert
from safetrace.trace.registry import HANDLERS
from safetrace.trace.source import FN_TEXTS, fn_text, library_frame, short, stack_trace
from safetrace.trace.symnodes import expr_node, size_source, sym_to_node
from safetrace.trace.versions import (Versions, forget_roots, note_write, recipe_stamp,
                                      stamp)
from safetrace.trace.values import (constant_int, plain_constant, program_data,
                                    scalar_value, value_recipe)

_autocast_on = getattr(torch._C, "_is_any_autocast_enabled", lambda: False)


class Tracer(TorchFunctionMode):
    """Records torch calls into the graph of its current scope (``self.scope.graph``,
    a torch.fx.Graph; see scope.py).

    What special handlers and plans use to build the graph:

    - ``emit(op, args, kwargs)``: record one ATen overload call, return its proxies;
    - ``lift(tensor)``: the graph input of a real tensor met in the code (state or a
      constant);
    - ``sym_node(size)``: the graph value of a symbolic size (nodes computing it);
    - ``redispatch(func, args, kwargs)``: trace a call as if the code had made it;
    - ``data_read(what)``: the error for reading tensor data.
    """

    # (the attributes made in __init__ as slots, the constant ones as class defaults)
    __slots__ = ("scope", "scopes", "device", "state", "const_name", "constants", "env",
                 "constant_bases", "const_nodes", "keepalive", "mutated", "symbols",
                 "value_reads", "sym_sources", "tracing_through", "pending_checks", "folded",
                 "specialized_by_op", "_saved_env", "grad_regions", "fn_calls", "literals",
                 "replayed_checks", "unsourced_settled", "written_storages", "const_storages",
                 "data_versions", "state_tensors", "value_numbers", "masks_by_value")
    real_feed: Callable[[], dict] | None = None  # placeholder -> example (draft.py)
    # the submodules being called ({key: (fqn, type)}) stamped on each node (modules.py)
    nn_stack: dict | None = None
    nn_layer: tuple | None = None  # its last entry (fqn, type name): the innermost
    recording = True  # False while running a custom op's fake function
    # node.meta["torch_fn"] as torch.export writes it: the user's torch call, its count
    torch_fn: tuple[str, str] | None = None
    layout_queried: str | None = None  # where the code first asked for a layout
    strides_queried = False  # the code read a stride or storage offset (layout.py)
    vmapped = False  # a torch.vmap output was recorded (layout.py's view check)
    on_data_read: Callable | None = None  # st.explain: bool(tensor) -> assumed
    state_memory: dict | None = None  # memory -> state names (mutation.py)
    n_emits = 0  # ops recorded so far, and the last one that took the plain path (memo.py)
    plain_emit: tuple | None = None
    subclasses: Any = None  # tensor subclass state, if any (subclasses.py)

    def __init__(self, graph: torch.fx.Graph, device: torch.device,
                 state: dict[int, torch.fx.Node], const_name: Callable[[torch.Tensor], str],
                 env: Any = None) -> None:
        super().__init__()
        self.scope = Scope(graph)  # the program's graph; a branch or body pushes its own
        self.scopes: list[Scope] = [self.scope]
        self.device = device
        self.state = state            # id(real tensor) -> placeholder node (params, buffers)
        self.const_name = const_name  # names a constant tensor found in the code
        self.constants: dict[str, torch.Tensor] = {}
        self.constant_bases: dict[str, str] = {}  # a renamed constant -> the namer's name
        self.const_nodes: dict[int, torch.fx.Node] = {}
        self.keepalive: list = []
        self.mutated: dict[torch.fx.Node, torch.fx.Node] = {}  # state placeholder -> last write
        self.env = env
        self.symbols: dict = env.symbols if env is not None else {}  # (sourced after an op)
        self.value_reads: dict[int, str] = {}  # constant's memory -> where Python read it
        self.sym_sources: dict[str, Any] = {}  # symbol -> (placeholder, dim) or its node
        self.tracing_through: set = set()  # Python composites whose body runs now
        self.pending_checks: list = []  # checks made inside a fake, asserted after the op
        self.specialized_by_op: list = []  # (op, trace, symbols) sizes pinned by rule-less ops
        self._saved_env: list = []
        self.grad_regions: list = []  # set_grad_enabled changes still open (handlers/grad)
        self.fn_calls: dict[Any, int] = {}
        self.replayed_checks: list = []  # views for a replay's meta check only (casts.py)
        self.unsourced_settled: list = []  # size-oblivious asserts waiting for a symbol
        self.folded: set[int] = set()  # ids of constants the code made (literals, _fold)
        self.written_storages: set[int] = set()  # constants' storages an op wrote: not folded
        self.const_storages: dict[int, set[int]] = {}  # storage -> ids of its lifted tensors
        self.literals: dict[int, tuple] = {}  # id(0-d int literal) -> its stamp (versions.py)
        self.data_versions = Versions()  # which storages each write reached (versions.py)
        self.state_tensors: dict[str, torch.Tensor] = {}  # state name -> tensor (exporter)
        self.value_numbers: dict[torch.fx.Node, tuple] = {}  # masks by value (numbering.py)
        self.masks_by_value: dict[tuple, tuple] = {}  # -> (the first mask, its stamp)
        refresh_op_info()

    def __enter__(self) -> Tracer:
        env = self.env
        self._saved_env.append((ACTIVE.env, set_active_tracer(self),
                                (env.on_settled, env.settle_policy) if env is not None
                                else None))
        ACTIVE.env = env
        if env is not None:
            env.on_settled = self._assert_settled
            env.settle_policy = lambda q: oblivious_answer(env, q, program_catches)
            if len(self._saved_env) == 1:  # (what the rules read of the env besides its
                # state, set before the trace: memo.py's key names it; a composite traced
                # through enters again)
                env.note((frozenset(env.flexible), frozenset(env.named), env.flipped,
                          env.on_undecided is None, env.precondition_probe,
                          env.opaque_float is not None, env.int_cls))
        return super().__enter__()

    def __exit__(self, *exc: Any) -> Any:
        ACTIVE.env, previous, hooks = self._saved_env.pop()
        if self.env is not None:
            self.env.on_settled, self.env.settle_policy = hooks
        set_active_tracer(previous)
        return super().__exit__(*exc)

    def _assert_settled(self, item: Any) -> None:
        """A size-oblivious answer the excluded values would contradict: a run-time
        assertion, placed before the op that asked (once its sizes have graph nodes)."""
        msg = (f"as {item.why}" if item.kind == "assert" else
               f"the program was traced for it (size-oblivious: {item.why})")
        origin = item.origin if isinstance(item.origin, str) else ""
        if not self.recording:  # inside a custom op's fake: after the op
            self.pending_checks.append((item.cond, msg, origin))
        elif all(n in self.sym_sources for n in item.cond.free_symbols):
            emit_assert(self, item.cond, msg, origin)
        else:  # a size the current op creates: asserted right after it
            self.unsourced_settled.append((item.cond, msg, origin))

    # -- the mode --------------------------------------------------------------------
    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None):
        if kwargs is None:
            kwargs = {}
        if func in HANDLERS:  # (cond, grad modes...: the calls inside are the user's own)
            try:
                return HANDLERS[func](self, func, args, kwargs)
            except Exception as exc:  # (as below)
                if traced_arguments(args, kwargs):
                    note_raised(exc)
                raise
        outer = self.torch_fn is None
        if outer:  # the user's own call (not one inside a traced composite): torch_fn
            # (source.torch_fn, inline: this runs for every op)
            n = self.fn_calls[func] + 1 if func in self.fn_calls else 1
            self.fn_calls[func] = n
            key = (func, n)  # (its node.meta["torch_fn"], kept per callable and count)
            self.torch_fn = FN_TEXTS.get(key) or fn_text(func, n)
        try:
            plan = PLANS[func] if func in PLANS else plan_for(func)
            if plan.__class__ is functools.partial and plan.func in _MEMO_PLANS and \
                    self.recording and not self.unsourced_settled:
                return memo.call(self, func, plan, args, kwargs)  # (replayed when known)
            return plan(self, func, args, kwargs)
        except Exception as exc:  # what the program's `except` may catch (exporter/caught.py)
            if outer and traced_arguments(args, kwargs):  # (else eager's own kernel raised)
                note_raised(exc)
            raise
        finally:
            if outer:
                self.torch_fn = None

    def redispatch(self, func: Any, args: tuple, kwargs: dict | None = None, *,
                   handlers: bool = True) -> Any:
        """Trace ``func(*args, **kwargs)`` as if the code had called it; with
        ``handlers=False``, by the callable's plan even when it has a special handler (a
        handler passing on a call it does not need to treat specially)."""
        if kwargs is None:
            kwargs = {}
        handler = HANDLERS.get(func) if handlers else None
        if handler is not None:
            return handler(self, func, args, kwargs)
        return plan_for(func)(self, func, args, kwargs)

    # -- values -> graph ---------------------------------------------------------------
    def lift(self, t: torch.Tensor) -> torch.fx.Node:
        """The placeholder of a real tensor met in the code (state, or a new constant)."""
        node = self.state.get(id(t)) or self.const_nodes.get(id(t))
        if node is not None and (self.subclasses is None or id(t) not in self.subclasses.roots):
            return node
        if self.subclasses is not None or t.__class__ is not torch.Tensor:
            if traced_elsewhere(t):
                raise errors.state_traced_elsewhere("a tensor the model reads",
                                                    t.__class__.__name__,
                                                    short(stack_trace(2, self.nn_stack)))
            node = subclasses.node_of(self, t)  # a subclass raises SubclassValue: dispatched
            if node is not None:  # (an inner tensor of subclass state: its access node)
                return node
        name = self.const_name(plain_constant(t))  # (a subclass of proxies: refused)
        graph = self.scopes[0].graph
        # (a user input may already hold the name: forward(self, c_gamma) reading
        # self.gamma; the placeholder, its spec and its entry must share one name)
        taken = {n.name for n in graph.find_nodes(op="placeholder")}
        base, i = name, 0
        while name in self.constants or name in taken:
            i += 1
            name = f"{base}_{i}"
        if base not in self.constants and name != base:
            self.constant_bases[name] = base  # (its attribute path is the base's)
        self.constants[name] = t
        self.keepalive.append(t)
        note_constant_storage(self, t, stack_trace)
        # an input of the whole program: a placeholder of the program's graph (also while
        # a branch is traced), before its first node that is not one (an op, or an
        # input's sym_size read before any op)
        node = placeholder_before_ops(graph, name)
        p = node.meta["val"] = Proxy(TensorMeta(tuple(t.shape), t.dtype, t.device), node)
        if not exact_contiguous(t):
            p.st_contig = None
            if t.layout is torch.strided:
                p.st_strides = tuple(t.stride())
        node.meta["stack_trace"] = ""
        node.meta["kind"] = "constant"
        self.const_nodes[id(t)] = node
        return node

    def sym_node(self, v: Any) -> Any:
        """The graph value of a size used as an argument: a static one as it is, a
        symbolic one as the node computing it."""
        return sym_to_node(self, v)

    def symbol_node(self, name: str) -> torch.fx.Node:
        """The node holding symbol `name` at run time: ``aten.sym_size.int`` of the input
        (or op result) whose size it is, or the op result that is its value."""
        src = self.sym_sources.get(name)
        if src is None:
            raise errors.internal_error(f"symbol {name} has no source in the graph")
        if isinstance(src, torch.fx.Node):
            return src
        scope = self.scope
        if src[0].graph is not scope.graph:
            # the size of a tensor of an enclosing graph: read there (and lifted from it)
            owner = next((s for s in self.scopes if s.graph is src[0].graph), scope)
            self.scope = owner
            try:
                return self._size_read(name, src, owner is self.scopes[0] or owner is scope)
            finally:
                self.scope = scope
        return self._size_read(name, src, True)

    def _size_read(self, name: str, src: tuple, anchored: bool) -> torch.fx.Node:
        """The nodes computing symbol `name` from a size (value = coef * symbol + offset,
        where value is the size `dim` of `src_node`'s tensor, or `src_node`'s own value
        when dim is None), in the current scope's graph; an input's size is read before
        the scope's first op when `anchored`."""
        src_node, dim, coef, offset = src
        graph = self.scope.graph
        anchor = self.scope.first_op if anchored and src_node.op == "placeholder" else None
        ctx = graph.inserting_before(anchor) if anchor is not None else \
            contextlib.nullcontext()
        with ctx:
            node = src_node
            if dim is not None:
                node = graph.call_function(torch.ops.aten.sym_size.int, (src_node, dim))
                node.meta["stack_trace"] = ""
                node.meta["val"] = src_node.meta["val"].st_meta.shape[dim]
            if coef != 1 or not (isinstance(offset, int) and offset == 0):
                off = offset if isinstance(offset, int) else expr_node(self, offset, self.env)
                node = graph.call_function(operator.sub, (node, off))
                node.meta["stack_trace"] = ""
                node = graph.call_function(operator.floordiv, (node, coef))
                node.meta["stack_trace"] = ""
        if node is src_node:
            return node
        node.meta["val"] = make_int(sym(name), self.env)
        self.sym_sources[name] = node
        return node

    def unwrap(self, v: Any) -> tuple[Any, Any]:
        """(value for the rule, value for the node) of one argument."""
        t = type(v)
        if t is Proxy:
            return v.st_meta, v.st_node
        if t is int or t is float or t is bool or v is None:
            return v, v
        if t in SYM_CLASSES:  # (first: their type tests may run Python, trace/pycalls.py)
            return v, (self.sym_node(v) if self.recording else None)
        if isinstance(v, Proxy):
            return v.st_meta, v.st_node
        if isinstance(v, torch.Tensor):
            if not self.recording:  # inside a custom op's fake: metadata only
                return TensorMeta(tuple(v.shape), v.dtype, v.device), None
            node = self.lift(v)
            return node.meta["val"].st_meta, node
        if isinstance(v, Pieces):  # split/chunk pieces handed to an op: all of them
            v.pin()
        if isinstance(v, (list, tuple)):
            metas, nodes = [], []
            for x in v:
                m, n = self.unwrap(x)
                metas.append(m)
                nodes.append(n)
            return (metas, nodes) if isinstance(v, list) else (tuple(metas), tuple(nodes))
        if isinstance(v, (int, float, bool, str, type(None), torch.dtype, torch.device)):
            return v, v
        if isinstance(v, torch.Generator):
            raise errors.generator_argument(short(stack_trace(3)))
        if hasattr(v, "env") and (hasattr(v, "expr") or hasattr(v, "opaque")):  # Sym values
            return v, (self.sym_node(v) if self.recording else None)  # (none in a fake's)
        return v, v

    # -- emitting --------------------------------------------------------------------
    def emit(self, op: Any, args: tuple, kwargs: dict, out: Any = None,
             n_syms: int | None = None) -> Any:
        """Record ``op(*args, **kwargs)``: compute its metadata and add one node.

        `out` is the result's metadata when already known (a custom op's fake ran), and
        `n_syms` the symbol count before it ran (to find the sizes it created).
        """
        self.n_emits += 1
        rule_path = out is None
        margs, nargs = [], []
        known = True  # every tensor argument has a known (contiguous) layout
        loose = False  # one has layout.LOOSE (its result may keep its strides)
        if out is None and self.recording and (self.const_nodes or self.folded) and \
                not any(type(a) is Proxy for a in args):
            folded = self._fold(op, args, kwargs)
            if folded is not None:
                return folded[0]
        try:
            for a in args:
                t = type(a)
                if t is Proxy:
                    margs.append(a.st_meta)
                    nargs.append(a.st_node)
                    if a.st_contig is not True:
                        if a.st_contig is None:
                            known = False
                        else:
                            loose = True
                elif t is int or t is float or t is bool or a is None:
                    margs.append(a)
                    nargs.append(a)
                else:
                    if t is list or t is tuple:  # a list of plain ints (sizes, dims): as it is
                        for x in a:
                            if x.__class__ is not int:
                                break
                        else:
                            margs.append(a[:])
                            nargs.append(a[:])
                            continue
                    m, n = self.unwrap(a)
                    margs.append(m)
                    nargs.append(n)
                    if t is list or t is tuple:
                        known = known and all(_layout_known(x, y) for x, y in zip(a, n))
                    elif known and not _layout_known(a, n):  # (state, a lifted constant)
                        known = False
            if kwargs:
                mkwargs, nkwargs = {}, {}
                for k, a in kwargs.items():
                    mkwargs[k], nkwargs[k] = self.unwrap(a)
                    if known and not _layout_known(a, nkwargs[k]):
                        known = False
            else:
                mkwargs = nkwargs = {}
        except errors.SubclassValue:  # a tensor subclass among the arguments: its dispatch
            return subclasses.dispatch(self, op, args, kwargs, out is None and self.recording)
        trace = stack_trace(3, self.nn_stack)
        if _autocast_on() and autocast_changes(op, margs, mkwargs):
            raise errors.autocast_active(short(trace), op)
        symbols = self.symbols
        if n_syms is None:
            n_syms = len(symbols)
        info = OP_INFO.get(id(op))
        if info is None:
            info = op_info(op)
        if out is None:  # the rule's answer (remembered on static sizes), else the kernel's
            try:
                if info[3] is None:
                    out = meta_kernel(self, op, margs, mkwargs)
                else:
                    out = rulecache.call(info[3], op, margs, mkwargs)
            except (OpShapeError, errors.DataDependentShape) as exc:
                raise eager_class(exc.at(short(trace)), op, margs, mkwargs) from None
        if not self.recording:
            return _unrecorded(out)
        if info[8] is not None:  # (eager's bounds check on an index of known span, before it)
            info[8](self, args, kwargs)
        node = self.scope.record(op, tuple(nargs), nkwargs, info[0], trace)
        meta = node.meta
        if self.torch_fn is not None:
            meta["torch_fn"] = self.torch_fn
        if self.nn_stack:
            recorded = meta.get("nn_module_stack")  # (a replayed node's, scope.py)
            meta["nn_module_stack"] = self.nn_stack if recorded is None else \
                {**recorded, **{k: v for k, v in self.nn_stack.items() if v[0]}}
        # (an op that may write, called so that it writes nothing: batch_norm in eval)
        writes = info[1] and (info[0] == "set_" or written_args(op, nargs, nkwargs))
        if writes:
            # facts about the data of what this may reach are stale from now on
            note_write(self, written_args(op, nargs, nkwargs))
            if info[0] == "set_" and nargs and isinstance(nargs[0], torch.fx.Node):
                forget_roots(self, nargs[0])  # x.set_(y): x is y's memory from now on
            self._note_mutation(op, nargs, nkwargs, node)
            for a in args:  # a tensor written in place no longer holds its known value
                if type(a) is Proxy and a.st_value is not None:
                    a.st_value = None
                elif isinstance(a, torch.Tensor) and type(a) is not Proxy:
                    # a real constant written in the graph: its eager value is stale now
                    constant_written(self, a, trace)
        if info[2] and args and isinstance(args[0], torch.Tensor):
            meta["val"] = Proxy(out, node) if isinstance(out, TensorMeta) else out
            x = args[0]
            if info[0] in RESHAPES_SELF and isinstance(out, TensorMeta):
                refuse_input_reshape(self, info[0], x, type(x) is Proxy)
                reshaped_in_place(x, out, node, info[0] in ("squeeze_", "unsqueeze_"))
            return x
        if type(out) is TensorMeta:
            result = meta["val"] = Proxy(out, node)
        else:
            result = self.wrap(out, node)
        if info[5] or info[6] is not None or not known or loose:
            set_layout(info[5], info[6], op, args, kwargs, known, result)
        if info[9] is not None and type(result) is Proxy:  # the values an index spans
            info[9](self, args, kwargs, result)
        if info[4] and isinstance(result, Proxy) and result.st_meta.shape == ():
            value = scalar_value(op, args, kwargs, result, self.constant_value)
            if value is not None:
                result.st_value = value
            else:
                recipe = value_recipe(op, args, kwargs, result,
                                      lambda t: program_data(self, t))
                if recipe is not None:
                    result.st_recipe = (recipe_stamp(self, result, recipe[1]), *recipe)
        if type(result) is Proxy and result.st_meta.dtype is torch.bool:
            number_mask(self, op, args, kwargs, result, node)
        if len(symbols) != n_syms:
            self._source_new_symbols(n_syms, result, node, trace)
        elif rule_path and info[3] is not None and type(out) is TensorMeta and not writes \
                and out.dtype is not torch.bool and not (info[4] and out.shape == ()) and \
                (info[9] is None or out.dtype.is_floating_point or op in FROM_ARGUMENTS) and \
                (out.static is not None or out.symbolic_key(self.env) is not None):
            # the plain path: what memo.py needs to record this call again (not for an
            # integer add/sub: the span emit notes, index_ranges.py, would be lost; an
            # arange's follows from its arguments, memo.py keeps it)
            self.plain_emit = (node, op, tuple(nargs), nkwargs, info[0],
                               out.static or (out.shape, out.dtype, out.device),
                               result.st_contig, len(self.tracing_through))
        elif rule_path and info[3] is not None and not writes and info[8] is None and \
                info[9] is None and \
                (type(out) is tuple or type(out) is list) and out and \
                all(type(m) is TensorMeta and m.static is not None for m in out):
            # several tensors on static sizes (split, unbind): one node and a getitem each
            # (memo.py records them again; 9 fields: the kind of list and the named
            # tuple type of the result, after the results' static metas and layouts)
            self.plain_emit = (node, op, tuple(nargs), nkwargs, info[0],
                               tuple(m.static for m in out),
                               tuple(p.st_contig for p in node.meta["val"]),
                               (type(out), return_type(op)), len(self.tracing_through))
        if self.unsourced_settled:
            late, self.unsourced_settled = self.unsourced_settled, []
            for cond, msg, origin in late:
                emit_assert(self, cond, msg, origin)
        return result

    def _fold(self, op: Any, args: tuple, kwargs: dict) -> tuple | None:
        """(result,) of an op whose tensors are all small constants made in the traced code
        (``torch.tensor(0.25).log2()``): computed now, so Python may read its value, as
        with any constant; None when the op must be recorded."""
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        tensors += [x for a in (*args, *kwargs.values()) if isinstance(a, (list, tuple))
                    for x in a if isinstance(x, torch.Tensor)]
        if not tensors or any(type(t) is Proxy or t.numel() > 4096 or (
                id(t) not in self.const_nodes and id(t) not in self.folded) or
                t.untyped_storage().data_ptr() in self.written_storages for t in tensors):
            return None
        if _has_symbolic(args) or _has_symbolic(list(kwargs.values())):
            return None  # a symbolic size among the arguments: the result depends on it
        info = OP_INFO.get(id(op)) or op_info(op)
        if info[1] or torch.Tag.nondeterministic_seeded in getattr(op, "tags", ()):
            return None  # a write or a random draw must happen when the program runs
        with torch._C.DisableTorchFunction():
            result = op(*args, **kwargs)
        named = return_type(op)
        if named is not None and type(result) is tuple:
            # an overload returns a plain tuple; torch.topk & co. a torch.return_types
            # (.values / .indices), as the recorded path gives
            result = named(result)
        for t in (result if isinstance(result, (tuple, list)) else (result,)):
            if isinstance(t, torch.Tensor):  # lifted when a recorded op uses it
                self.folded.add(id(t))
                self.keepalive.append(t)
        return (result,)

    def _source_new_symbols(self, n_before: int, result: Any, node: Any, trace: str) -> None:
        """Record where the graph reads each data-dependent size this op created."""
        names = list(self.env.symbols)[n_before:]
        values = result if isinstance(result, (tuple, list)) else (result,)
        for name in names:
            info = self.env.symbols[name]
            info.origin = f"{info.origin} at {short(trace)}" if trace else info.origin
            if name in self.sym_sources:
                continue
            for i, v in enumerate(values):
                src = node
                if values is result and hasattr(v, "expr") and not isinstance(v, torch.Tensor):
                    src = self._item_node(node, i)  # an int among several outputs
                found = size_source(name, v, src)
                if found is not None:
                    self.sym_sources[name] = found
                    break

    def _item_node(self, node: Any, i: int) -> Any:
        """``node[i]`` (once per output): where the graph reads a symbolic int that an op
        returns among others (a custom op's ``-> (SymInt, SymInt)``)."""
        items = node.meta.setdefault("st_item_nodes", {})
        if i not in items:
            g = add_node(node.graph, operator.getitem, (node, i), {}, "getitem")
            g.meta["stack_trace"] = node.meta.get("stack_trace", "")
            g.meta["val"] = node.meta["val"][i]
            items[i] = g
        return items[i]

    def wrap(self, out: Any, node: torch.fx.Node) -> Any:
        """Proxies for a rule's result; multiple outputs get getitem nodes."""
        if isinstance(out, TensorMeta):
            p = Proxy(out, node)
            node.meta["val"] = p
            return p
        if isinstance(out, (tuple, list)):
            items = []
            for i, m in enumerate(out):
                if isinstance(m, TensorMeta):
                    g = add_node(self.scope.graph, operator.getitem, (node, i), {}, "getitem")
                    g.meta["stack_trace"] = node.meta["stack_trace"]
                    p = Proxy(m, g)
                    g.meta["val"] = p
                    items.append(p)
                else:
                    items.append(m)
            node.meta["val"] = type(out)(items) if isinstance(out, list) else tuple(items)
            named = return_type(node.target)
            return named(items) if named is not None else node.meta["val"]
        node.meta["val"] = out
        return out

    def _note_mutation(self, op: Any, nargs: list, nkwargs: dict, node: torch.fx.Node) -> None:
        for target in written_args(op, nargs, nkwargs):
            reads_own_memory(op, target, nargs)  # (v.add_(v[0]) of unknown strides)
            what, base = write_target(target)  # (one walk of its views)
            if what is not None:
                raise errors.picked_tensor_written(op, short(stack_trace(3)), what)
            if base is not None and base.meta.get("kind") in ("buffer", "parameter"):
                self.mutated[base] = node
                if (alias := state_alias(self, base)) is not None:  # (the trace only then)
                    raise errors.state_written_through_alias(*alias, short(stack_trace(3)))
            elif base is None and self.subclasses is not None:
                subclasses.refuse_inner_write(op, target)  # into a subclass's inner tensor

    def note_literal(self, t: torch.Tensor) -> None:
        """``torch.tensor(6)`` made in the code: a constant of the graph whose value ops on
        it may use (``torch.tensor(6) // 2`` as a size) while nothing is written in place."""
        if constant_int(t) is not None:
            self.keepalive.append(t)
            self.literals[id(t)] = stamp(t, self)

    def constant_value(self, t: torch.Tensor) -> int | None:
        """The value of a literal's tensor (see note_literal), else None (state and other
        real tensors may change; any in-place write may have reached the literal)."""
        if id(t) not in self.literals or self.literals[id(t)] != stamp(t, self):
            return None
        return constant_int(t)

    # -- data reads --------------------------------------------------------------------
    def data_read(self, what: str, fix: str | None = None) -> DataDependentError:
        """The error for reading tensor data (`what`: ``"bool() of a tensor f32[]"``), at
        the user's line; `fix` replaces the generic advice."""
        trace = stack_trace(3)
        inner = library_frame(3)  # the read happened inside torch's own Python code
        return errors.data_read(what, short(trace), inner or "", fix)


def _has_symbolic(v: Any) -> bool:
    """Whether a (nested) argument holds a symbolic int, float or bool."""
    if isinstance(v, (list, tuple)):
        return any(_has_symbolic(x) for x in v)
    return hasattr(v, "expr") and not isinstance(v, torch.Tensor)


def _unrecorded(out: Any) -> Any:
    """Proxies without graph nodes: results of ops run inside a custom op's fake."""
    if isinstance(out, TensorMeta):
        return Proxy(out, None)
    if isinstance(out, (tuple, list)):
        return type(out)(_unrecorded(x) for x in out)
    return out


# the plans whose calls memo.py may remember (an ATen namesake, an operator, a composite)
_MEMO_PLANS = frozenset((aten_call, composite_call, dunder))


def _layout_known(a: Any, node: Any) -> bool:
    """Is argument `a` (its graph node `node`) a tensor of known contiguous layout, or no
    tensor?  A real tensor (the model's state, a lifted constant) has its placeholder's
    layout, read from the tensor when it was lifted."""
    if type(a) is Proxy:
        return a.st_contig is not None
    if isinstance(a, torch.Tensor) and isinstance(node, torch.fx.Node):
        val = node.meta.get("val")
        return not isinstance(val, Proxy) or val.st_contig is not None
    return True


fast_overrides.TRACERS.add(Tracer)  # (F.relu & co. call it in one step while exporting)
