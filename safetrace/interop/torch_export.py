"""``ep.to_torch()``: a safetrace program as a ``torch.export.ExportedProgram``.

The graph is rebuilt node for node (names and ``stack_trace`` kept) in torch's layout:
placeholders ordered parameters, buffers, constants, user inputs; every node's ``val``
recomputed by FakeTensor propagation over a ShapeEnv whose symbols carry our ranges, under
the Python dispatcher (so size arithmetic gets SymInts and unbacked ops their
``unbacked_bindings``).  The input contract travels in the graph itself as
``aten._assert_scalar`` nodes right after the placeholders (see ``interop/contract.py``):
torch's generated input guards skip lower bounds <= 2, derived dims they cannot solve and
every residual condition, so relying on them alone would accept inputs ours rejects.

Every tensor node's shape from torch's propagation is compared with ours; a difference
stops the conversion.  Guards torch records inside op kernels that our contract does not
imply are reported (``ConversionWarning``; ``strict=True`` refuses).
"""

from __future__ import annotations

import builtins
import copy
import math
import operator
import threading
import warnings
from typing import Any

import torch
from torch.utils import _pytree

from safetrace.errors import ConversionWarning
from safetrace.errors import interop as EI
from safetrace.exporter.contract import ConstInput, TensorInput
from safetrace.interop.construct import (allowed_builtins, config_set, exported_program,
                                         provenance, root_of, training_verifier)
from safetrace.interop.contract import ContractEmitter, shared_custom_meta
from safetrace.interop.fakes import KNOWN, FakeBuilder, builds, detached
from safetrace.interop.modes import conversion_mode, entered, outside_modes
from safetrace.interop.subclass_values import rebuild_call
from safetrace.interop.state import alias_inputs, program_state, torch_target
from safetrace.interop.symbols import backed_symint, conversion_env, value_range
from safetrace.interop.symops import size_op
from safetrace.interop.torchbind import const_input, custom_obj_input, custom_obj_values
from safetrace.interop.unbacked import all_bindings, fresh_bindings, known_unbacked
from safetrace.interop.examples import on_device, real_example
from safetrace.interop.node_checks import (Respecialize, bind_unbacked, check_narrowing,
                                          dims_kept, kernel_pinned, same_shape, where,
                                          why_failed)
from safetrace.interop.hierarchy import (Boundaries, arg_names, call_graph,
                                         stack_fqns)
from safetrace.interop.input_guards import input_guards, with_guards
from safetrace.interop.branch_writes import write_back
from safetrace.interop.cond_merge import unaliased_outputs
from safetrace.interop.quoted_guards import quoted_paths
from safetrace.interop.sections import split_sections
from safetrace.interop.load_checks import lowered
from safetrace.interop.memos import MASK_OPS, remember, shared_rows
from safetrace.interop.plan import (SPECIALIZING, input_kind, plan_of, positional, settled,
                                    specialized, state_spec)
from safetrace.interop.positivity import converted
from safetrace.interop.hops import (MAP_IMPL, convert_get_attr, fake_of, hop_value,
                                   holds_where_branch_runs, identity_slice, map_under_grad,
                                   quiet_symbol_logs, sizes_from_data,
                                   without_empty_regions, written_after)
from safetrace.interop.lazy import fx_config, graph_signature, python_dispatch
from safetrace.symbolic import to_expr
from safetrace.trace.asserts import assert_sym
from safetrace.trace.graph import (add_node, add_placeholder, add_placeholders, one_line,
                                   target_name)
from safetrace.trace.session import gc_paused
from safetrace.trace.subclasses import rebuild

# Python callables our graphs may call that torch's verifier refuses, and what replaces
# them (same value on ints and on SymInts).
_REPLACE = {builtins.min: torch.sym_min, builtins.max: torch.sym_max,
            builtins.int: torch.sym_int, builtins.float: torch.sym_float,
            math.sqrt: torch.sym_sqrt}
_DROP = (operator.pos,)
_CONTIGUOUS, _SIZE = torch.ops.aten.contiguous.default, torch.ops.aten.sym_size.int
_SLICE = torch.ops.aten.slice.Tensor
_COND = torch.ops.higher_order.cond
_NO_VALUE = (torch.ops.aten._assert_tensor_metadata.default,
             torch.ops.aten._assert_scalar.default, torch.ops.aten._assert_async.msg)


# One conversion at a time propagates under torch's Python dispatcher.  Its cache of each
# op's handler per dispatch key (``OpOverload._dispatch_cache``) is filled on the op's first
# dispatch in the process, unlocked: torch's C++ side finds no entry and calls
# ``_get_dispatch``, which raises ``AssertionError: aten.relu.default DispatchKey.Python
# already in dispatch cache`` where another thread filled it in between (again after a
# Python kernel's registration, which empties an op's cache).  Threads converting at once
# as a process's first conversions failed so (``sys.setswitchinterval(1e-6)``: 2 threads,
# a Linear and a ReLU, 1 process in 16; 4 threads, 12 ops, 4 in 11).  The rest of the
# conversion runs unlocked.  Reentrant: a fake kernel may convert.
_PROPAGATING = threading.RLock()


def convert(ep: Any, *, strict: bool = False, verify: bool = False) -> Any:
    """See :func:`safetrace.interop.to_torch`.  (The cyclic collector paused, as during an
    export: a full collection in the middle costs tens of ms in a process holding torch.)"""
    # (a conversion inside the user's own FakeTensorMode: the program is built with its
    # own fake values, outside the user's mode, as torch.export builds its own)
    with outside_modes(), gc_paused():
        while True:  # (again where an op's kernel pinned a Dim: its values then ours)
            try:
                return converted(ep, ("from_zero", strict, verify),
                                 lambda names: _Converter(ep, strict, verify, names))
            except Respecialize:
                continue


class _Converter:
    def __init__(self, ep: Any, strict: bool, verify: bool = False,
                 from_zero: frozenset = frozenset()) -> None:
        self.ep = ep
        self.strict = strict
        self.verify = verify
        self.from_zero = from_zero  # (our symbols made non-positive: positivity.py)
        self.zero_folds, self.zero_sizes = {}, {}  # our symbol -> 1st / all sizes folded at 0
        self.ours: dict[Any, str] = {}  # torch symbol -> our symbol's name
        self.zero_symbols = False  # (whether an input symbol's range may hold 0)
        self.shape_env = conversion_env()
        quiet_symbol_logs(self.shape_env)
        self.mode = conversion_mode(self.shape_env)
        self.graph = torch.fx.Graph()
        self.env: dict[torch.fx.Node, torch.fx.Node] = {}  # our node -> new node
        self.attrs: dict[str, torch.fx.GraphModule] = {}  # the graph's subgraphs
        self.submodule_of: dict[torch.fx.Node, torch.fx.GraphModule] = {}  # get_attr's
        self.export_grad: bool | None = None  # grad mode at export, where regions exist
        self.custom_targets: dict[str, str] = {}  # a torchbind object's placeholder -> path
        self.fake_objects = False  # (a placeholder's value is a fake torchbind object)

    # -- the whole conversion --------------------------------------------------------------
    def run(self) -> Any:
        enable_python_dispatcher = python_dispatch().enable_python_dispatcher
        ExportGraphSignature = graph_signature().ExportGraphSignature

        ep = self.ep
        ours, ordered, calls, self.stacks, env, self.built, self.memo, walk, out = plan_of(ep)
        self.own = self.memo.setdefault("own", set())  # (ops whose kernels pin a Dim)
        # (our node -> its value's meta tensors, where all sizes and strides are ints:
        # `FakeBuilder.value`'s, kept per program; none while verifying)
        self.static_values = None if self.verify else self.memo.setdefault("static", {})
        self.fakes = FakeBuilder(self)
        self.state_fakes = self.fakes.statics(
            {s.name: self._state_value(s) for s in ordered if s.kind != "user_input"})
        self.emitter = ContractEmitter(self, ep.contract, env)
        for size, root in self.emitter.derived_roots():
            self.fakes.seed(size, root)
        self.bounds = Boundaries(self, getattr(ep, "module_tree", None), self.stacks)
        # Size-oblivious answers for `size == 1` tests (broadcasting, contiguity): our
        # engine already proved every shape for the whole input space, and each node's
        # shape is compared with ours below, so torch needs no 0/1 guards of its own.
        if settled(self, ordered, calls, walk):  # (no kernel runs: no mode needed)
            inputs, outputs = self._nodes(ours, ordered, calls, walk, out)
        else:
            with _PROPAGATING, config_set(fx_config(), "backed_size_oblivious", True), \
                    entered(self.mode), enable_python_dispatcher(), \
                    torch.set_grad_enabled(torch.is_grad_enabled()):
                inputs, outputs = self._nodes(ours, ordered, calls, walk, out)
        shared_custom_meta(calls, self.graph)
        if self.fake_objects:  # (a torchbind object's placeholder: torchbind.py)
            custom_obj_values(self, self.graph)
        for node in self.graph.find_nodes(op="call_function", target=_SIZE):
            if not node.users:  # a size read for no check: dead code to torch
                self.graph.erase_node(node)
        self._as_torch_settings()
        tree = getattr(ep, "module_tree", None)
        provenance(self.graph, getattr(tree, "root_type", "torch.nn.modules.module.Module"))
        root = root_of(self.attrs)  # (subgraphs, pytree specs of flat_apply)
        signature = ExportGraphSignature(inputs, outputs)
        graph = self.graph
        if self.export_grad is not None:
            # grad regions, the program's and its branches', become wrap_with_set_grad_enabled
            # by torch's pass in the export's mode, as torch.export runs it (a raw
            # _set_grad_enabled left in a branch set the export's mode on the caller)
            from torch._export.passes.replace_set_grad_with_hop_pass import \
                replace_set_grad_with_hop_pass as regions
            with torch.set_grad_enabled(self.export_grad):
                root, signature = regions(torch.fx.GraphModule(root, graph), signature)
            graph = without_empty_regions(root)  # (a region of sizes only: none)
        state, constants = program_state(self.ep, ordered)
        # (the graph module is made once, by the constructor, which also validates it)
        tep = exported_program(
            root=root, graph=graph, graph_signature=signature, state_dict=state,
            range_constraints=self._range_constraints(), module_call_graph=
            self._module_call_graph(), example_inputs=self._examples(),
            constants=constants, verifiers=[training_verifier()], validate=self.verify,
            guards=bool(self.shape_env.guards))
        meta = tep.graph_module.meta
        meta["safetrace_dim_labels"] = self.emitter.labels(getattr(ep, "dim_names", {}))
        meta["safetrace_torch_guards"] = self.torch_guards
        ours = getattr(self.ep, "_gm", None)  # (made only when something asked for it)
        if ours is not None and "custom" in ours.meta:  # the exported GraphModule's own
            meta["custom"] = copy.deepcopy(ours.meta["custom"])
        quoted = self.memo.get("quoted")  # (the plan's: found once per program)
        if quoted is None:
            quoted = self.memo["quoted"] = quoted_paths(self.ep)
        tep._st_names = arg_names(self.ep)  # (retrace_pins' guards name inputs by them)
        with_guards(tep, input_guards(self.ep, tep), quoted)
        return tep

    def _nodes(self, ours: dict, ordered: list, calls: list, walk: list | None,
               out: torch.fx.Node) -> tuple[list, list]:
        """Placeholders, the contract's checks, nodes, output: input and output specs."""
        ep = self.ep
        inputs = []
        aliased = vars(ep).get("state_aliases")
        # (the placeholders made in one run, their names kept per program's list:
        # trace/graph.py's add_placeholders; a state's other paths interleave theirs)
        made = None if aliased else add_placeholders(
            self.graph, [ours[s.name].name for s in ordered])
        for k, s in enumerate(ordered):  # (a state's other paths: placeholders too)
            inputs.append(self._placeholder(s, ours[s.name],
                                            made[k] if made is not None else None))
            if aliased:
                inputs += alias_inputs(self, s, inputs[-1])
        self.emitter.emit(self._user_leaves(ordered, ours))
        self.contract_guards = len(self.shape_env.guards)
        if walk is None:  # (no subgraph: the plan's call nodes, in order)
            call = self._call
            for node in calls:
                call(node)
        else:
            for node in walk:
                if node.op == "call_function":
                    self._call(node)
                else:  # a control-flow subgraph
                    self.env[node] = convert_get_attr(self, node, ep.graph)
        self.bounds.returned_sizes()  # (a preserved call's size outputs: inside it)
        outputs = self._output(out)
        check_narrowing(self)
        split_sections(self.graph, self.attrs)  # (dynamic tensor_split: slices)
        return inputs, outputs

    def _as_torch_settings(self) -> None:
        """After propagation, the ShapeEnv specializes 0 and 1 as torch.export's does.

        Tools that retrace the program (``run_decompositions``, hence ONNX and ExecuTorch)
        find this ShapeEnv on the graph's fake values and make a symbol of every int
        input; a bool input (``use_cache=False``) is an int to them, and a symbol of value
        False breaks torch's range check (``upper must be a sympy.Expr``) unless 0/1 are
        specialized.  Only symbols created later see the setting: ours are all made."""
        settings = self.shape_env.settings
        if not settings.specialize_zero_one:
            self.shape_env.settings = specialized(settings)

    # -- symbols -----------------------------------------------------------------------------
    def make_symbol(self, name: str, hint: int, lo: int, hi: int | None, where: str) -> Any:
        """A backed torch SymInt for one of our input symbols, with our range."""
        vr = value_range(lo, hi)
        if vr.lower == vr.upper:  # a range of one value: torch would make it static
            return int(lo)
        positive = name not in self.from_zero
        if hint in ((0, 1) if not positive else (1,)) and (hi is None or hi >= 2):
            hint = max(lo, 2)  # (torch's retrace decides guards at the hint and keeps an
            # equality as a replacement: Eq(n, 1) true at an example of 1 made the
            # decomposed program's n the number 1, Eq(n, 0) at 0 of a non-positive n)
        v = backed_symint(self.shape_env, hint, where, vr, positive)
        self.ours[v.node.expr] = name
        if not (type(lo) is int and lo > 0):
            self.zero_symbols = True
        return v

    def ours_of(self) -> dict[str, str]:
        """torch symbol name -> ours (sympy's printer per symbol: made where asked)."""
        return {str(expr): name for expr, name in self.ours.items()}

    # -- placeholders ------------------------------------------------------------------------
    def _placeholder(self, spec: Any, node: torch.fx.Node,
                     new: torch.fx.Node | None = None) -> Any:
        if new is None:
            new = add_placeholder(self.graph, node.name)
        meta = node.meta
        if "stack_trace" in meta:
            new.meta["stack_trace"] = meta["stack_trace"]
        self.env[node] = new
        kind = spec.kind
        if kind == "user_input":
            gs = graph_signature()
            inp = self.ep.contract.inputs[spec.leaf]
            if isinstance(inp, ConstInput):  # (a torchbind object: a CustomObjArgument)
                return const_input(self, new, inp.value)
            new.meta["val"] = val = self.emitter.fake_input(spec.leaf, inp, meta.get("val"))
            if meta.get("requires_grad") and isinstance(val, torch.Tensor):
                val.requires_grad_(True)  # as the example input did (torch's placeholders)
            if self.mode.propagate_real_tensors:  # (draft export: torch's retrace runs
                real_example(val, self.ep, spec.leaf)  # the real kernels, as for its own)
            arg = gs.SymIntArgument(new.name) if isinstance(val, torch.SymInt) else \
                gs.ConstantArgument(new.name, val) if inp.scalar else \
                gs.TensorArgument(new.name)
            return gs.InputSpec(gs.InputKind.USER_INPUT, arg, None)
        if kind == "constant":
            obj = self.ep.lifted_constants.get(spec.target)
            if obj is not None and not isinstance(obj, torch.Tensor):  # a torchbind object
                return custom_obj_input(self, spec, new, obj)
        made = self.state_fakes.get(spec.name)
        new.meta["val"] = made if made is not None else self.fakes.static(
            self._state_value(spec))
        return state_spec(input_kind(kind), new.name, spec.target if kind != "constant"
                          else torch_target(self.ep, spec),
                          spec.persistent if kind == "buffer" else None)

    def _state_value(self, spec: Any) -> torch.Tensor:
        if spec.kind == "constant":
            return self.ep.lifted_constants[spec.target]
        t = self.ep._state[spec.target]
        # a buffer written under grad mode (a KV cache filled outside no_grad) carries
        # autograd history; in torch's program a buffer never requires grad
        return t.detach() if spec.kind == "buffer" and t.requires_grad else t

    def _user_leaves(self, ordered: list, ours: dict) -> list:
        """(leaf index, new placeholder) of every user tensor input (`ours`: our
        placeholders by name, each mapped to its new one)."""
        inputs, env = self.ep.contract.inputs, self.env
        return [(s.leaf, env[ours[s.name]]) for s in ordered if s.kind == "user_input" and
                isinstance(inputs[s.leaf], TensorInput)]

    # -- nodes -------------------------------------------------------------------------------
    def call(self, target: Any, args: tuple, origin: str | None = None,
             name: str | None = None, value: Any = None,
             kwargs: dict | None = None) -> torch.fx.Node:
        """Append ``target(*args, **kwargs)`` (new-graph nodes or values) and compute its
        ``val`` (or take `value`, torch's value of it made already, unless verifying)."""
        node = add_node(self.graph, target, args, kwargs or {},
                        name or target_name(self.graph, target))
        if origin:
            node.meta["stack_trace"] = origin
        if value is not None and not self.verify:
            node.meta["val"] = value
        elif target in _NO_VALUE:
            node.meta["val"] = None
        elif not self.verify and (op := size_op(target, args)) is not None:
            node.meta["val"] = op()  # (size arithmetic: the contract's range checks)
        elif target is torch.ops.aten.expand.default and not self.verify and \
                all(s == -1 for s in args[1]):  # (the contract's rank check)
            node.meta["val"] = self.fakes.same_view(args[0].meta["val"])
        else:
            node.meta["val"] = self._run(target, args, kwargs or {})
        return node

    def _run(self, target: Any, args: tuple, kwargs: dict) -> Any:
        """torch's kernel's value, detached as torch.export records it (snapshot_fake)."""
        if not self.verify and (op := size_op(target, args)) is not None:
            return op()  # (the program's own size arithmetic: symops' direct path)
        subs = self.submodule_of
        vals = torch.fx.node.map_arg((args, kwargs), lambda n: subs[n] if n in subs
                                     else n.meta["val"])
        if isinstance(target, torch._ops.HigherOrderOperator):
            unaliased_outputs(target, vals[0])  # (cond_merge: views copied for a retrace)
            return detached(hop_value(self, target, vals[0], vals[1]))
        return detached(target(*vals[0], **vals[1]))

    def call_node(self, node: torch.fx.Node) -> None:
        """Convert one of our call_function nodes (of the program or a subgraph)."""
        self._call(node)

    def _call(self, node: torch.fx.Node) -> None:
        target = node.target
        if self.bounds.calls:  # (preserved module calls: values crossing one are checked)
            arg = self.bounds.arg
            args = torch.fx.node.map_arg(node.args, lambda m: arg(m, node))
            kwargs = torch.fx.node.map_arg(node.kwargs, lambda m: arg(m, node))
        else:  # (each argument node's new node: two Python calls fewer per argument)
            new = self.env.__getitem__
            args = torch.fx.node.map_arg(node.args, new)
            kwargs = torch.fx.node.map_arg(node.kwargs, new) if node.kwargs else node.kwargs
        if type(target) is torch._ops.OpOverload and target is not _CONTIGUOUS:
            if target is _SLICE and getattr(self, "branch_depth", 0):
                whole = identity_slice(self, node, args)
                if whole is not None:  # (a point side's operand: hops.py)
                    target, args, kwargs = torch.ops.aten.as_strided.default, whole, {}
            self._op(node, target, args, kwargs)  # (no rewrite below applies)
            return
        if target in _DROP:
            self.env[node] = args[0]
            return
        if target is assert_sym:
            self._assert(node, args)
            return
        if target is torch.is_grad_enabled or target is torch._C._set_grad_enabled:
            self._grad_mode(node, args)
            return
        target = _REPLACE.get(target, target)
        if target is _CONTIGUOUS and not written_after(node):
            # torch's graphs never hold it (a composite, gone by export time); a program
            # output made by it would lose its name when run_decompositions removes it.
            # (Where a write follows, it stays: eager's result aliases a contiguous input,
            # which the write then changes, and a clone would not: fuzz seed 3402)
            target = torch.ops.aten.clone.default
            kwargs = {"memory_format": args[1] if len(args) > 1 else
                      kwargs.get("memory_format", torch.contiguous_format)}
            args = args[:1]
        if target is MAP_IMPL and sizes_from_data(self.submodule_of.get(args[0])):
            warnings.warn(map_under_grad(where(node)), ConversionWarning, stacklevel=6)
        if not isinstance(target, (torch._ops.OpOverload, torch._ops.HigherOrderOperator)) \
                and target not in allowed_builtins():
            if lowered(self, node, target, args):  # (a loaded program's budget check)
                return
            if target is not rebuild:  # (a subclass built from its inner tensors: below)
                raise EI.unrepresentable_call(node.name, target, where(node))
            target, args = rebuild_call(self, args)
        self._op(node, target, args, kwargs)
        if target is _COND and not getattr(self, "branch_depth", 0):
            # (a branch's in-place write of a user input, made functional for torch's cond)
            write_back(self, node, set(self.ep.graph_signature.user_inputs))

    def _op(self, node: torch.fx.Node, target: Any, args: tuple, kwargs: dict) -> None:
        """Append `node`'s call of `target` (torch's form of it) and its value."""
        if isinstance(target, torch._ops.OpOverload):
            # ATen schemas take lists (int[], Tensor[]); torch's graphs never hold tuples
            # there, and code generated from them (unflatten's) would fail on one
            if tuple in map(type, args):
                args = tuple(list(a) if type(a) is tuple else a for a in args)
            if kwargs:
                kwargs = {k: list(v) if type(v) is tuple else v for k, v in kwargs.items()}
        new = add_node(  # (create_node's pytree scan of all arguments: ~2 µs a leaf)
            self.graph, target, args, kwargs, node.name)
        meta, made = node.meta, new.meta  # (unrolled: a loop over the four keys cost more)
        if "stack_trace" in meta:
            made["stack_trace"] = meta["stack_trace"]
        if "source_fn_stack" in meta:
            made["source_fn_stack"] = meta["source_fn_stack"]
        if "torch_fn" in meta:
            made["torch_fn"] = meta["torch_fn"]
        if "custom" in meta:
            made["custom"] = meta["custom"]
        stack = self.stacks.get(node)
        if stack:
            made["nn_module_stack"] = stack
        self.env[node], self.current, ours = new, node, meta.get("val")
        mask = shared_rows(self, target, args, node) if target in MASK_OPS and \
            not self.verify else None
        fast = False
        if not self.verify:
            # (a node whose sizes all had torch symbols in an earlier conversion of this
            # program has them here too: each conversion makes the same in the same order)
            fast = node in self.built or builds(target, ours, self.fakes)
            if fast is KNOWN:
                self.built.add(node)
        if fast or (node.meta.get("st_fake_inferred") and (
                self.fakes.known(ours) or self.fakes.born(ours))):
            # (st_fake_inferred: trace/draft.py's, for an op torch has no fake of)
            new.meta["val"] = val = self.fakes.value(target, args, kwargs, ours,
                                                     self.static_values, node)
            if self.shape_env.pending_fresh_unbacked_symbols:  # sizes from data
                new.meta["unbacked_bindings"] = fresh_bindings(self.shape_env, val)
                remember(mask, val)  # (the mask's count, for a later op on it)
            return
        if not self.verify:
            if target is operator.getitem and isinstance(args[0], torch.fx.Node) and \
                    isinstance(args[0].meta.get("val"), (tuple, list)):
                new.meta["val"] = args[0].meta["val"][args[1]]  # a part of a value made
                return
        mark = len(self.shape_env.replacements)  # (a kernel pinning a Dim adds one)
        try:
            val = self._from_ours(node) if target in SPECIALIZING or target in self.own else \
                self._size_of(args) if target is _SIZE and not (kwargs or self.verify) \
                else self._run(target, args, kwargs)
        except Respecialize:  # (a subgraph's node, inside a control-flow op)
            raise
        except Exception as exc:  # noqa: BLE001 - reraised with the node that failed
            raise why_failed(node, target, exc, self.ep.graph) from exc
        if len(self.shape_env.replacements) != mark:
            kernel_pinned(self, node, target, mark)
        new.meta["val"] = val
        bindings = all_bindings(self.shape_env, val)
        if bindings:
            new.meta["unbacked_bindings"] = bindings
            bind_unbacked(self, node, val, bindings)
        elif known_unbacked(val, self.emitter.symbol_names) and hasattr(ours, "expr") and \
                to_expr(ours.expr).op == "sym":
            # a tensor read again, unwritten since: torch's fake memo gives the earlier symbol
            self.emitter.values.setdefault(to_expr(ours.expr).name, val)
        same_shape(self, node, val)

    def _size_of(self, args: tuple) -> Any:
        """``aten.sym_size.int(x, d)``'s value: a fake value's own size, what torch's kernel
        returns (a SymInt of the same node, or the int), without the dispatch through the
        fake mode and the Python dispatcher (~60 µs amid a conversion)."""
        if len(args) == 2 and isinstance(args[0], torch.fx.Node) and type(args[1]) is int:
            fake = args[0].meta.get("val")
            if type(fake) is self.fakes.fake_class:
                return fake.size(args[1])
        return self._run(_SIZE, args, {})

    def _from_ours(self, node: torch.fx.Node) -> Any:
        """Fake outputs of our shapes (proven for the whole input space) for an op whose
        fake kernel would pin a dynamic size."""
        ours = node.meta["val"]
        if isinstance(ours, (tuple, list)):
            return tuple(fake_of(self, p) for p in ours)
        return fake_of(self, ours)

    def _assert(self, node: torch.fx.Node, args: tuple) -> None:
        """Our run-time assertion becomes torch's, and a fact torch's engine may use."""
        cond, message = args
        if type(message) is str:  # (the user's torch._check text: quotes, line breaks)
            message = one_line(message)
        val = cond.meta["val"] if isinstance(cond, torch.fx.Node) else cond
        if getattr(self, "branch_depth", 0) and isinstance(val, torch.SymBool) and \
                val.node.has_hint() and not val.node.hint and \
                isinstance(node.args[0], torch.fx.Node) and \
                holds_where_branch_runs(self, node.args[0].meta.get("val")):
            # false at the sizes torch's cond traces this branch at (another side's),
            # never where the branch runs: left out (kept where it holds there: a fact
            # for the ops after it)
            self.env[node] = None
            return
        new = add_node(self.graph, torch.ops.aten._assert_scalar.default, (cond, message), {},
                       node.name)
        if "stack_trace" in node.meta:
            new.meta["stack_trace"] = node.meta["stack_trace"]
        new.meta["val"] = None
        self.env[node] = new
        if isinstance(val, torch.SymBool):
            if getattr(self, "branch_depth", 0) == 0:
                torch._check(val)
                return
            try:  # (a cond branch: torch's engine keeps the branches' facts as one)
                torch._check(val)
            except RuntimeError:  # another branch's answer (exporter/data_splits.py)
                pass  # (the node above checks it where this branch runs)

    # -- outputs -----------------------------------------------------------------------------
    def _output(self, out: torch.fx.Node) -> list:
        gs = graph_signature()
        ConstantArgument, OutputKind, OutputSpec = gs.ConstantArgument, gs.OutputKind, \
            gs.OutputSpec
        SymBoolArgument, SymFloatArgument, SymIntArgument, TensorArgument = \
            gs.SymBoolArgument, gs.SymFloatArgument, gs.SymIntArgument, gs.TensorArgument

        specs, values = [], []
        written = None  # (the placeholders' new nodes, where the program writes a buffer)
        for spec, value in zip(self.ep.graph_signature.output_specs, out.args[0]):
            new = self.env[value] if isinstance(value, torch.fx.Node) else value
            if spec.kind == "buffer_mutation":
                if written is None:
                    written = {self.env[n] for n in self.ep.graph.find_nodes(op="placeholder")}
                if new in written and new.name == self._placeholder_of(spec.target):
                    # written in place: torch's graphs keep the in-place op and no output
                    continue
                kind = OutputKind.BUFFER_MUTATION
            else:
                kind = OutputKind.USER_OUTPUT
            if not isinstance(new, torch.fx.Node):
                arg: Any = ConstantArgument("", new)
            else:
                val = new.meta.get("val")
                if isinstance(val, torch.SymInt):
                    arg = SymIntArgument(new.name)
                elif isinstance(val, torch.SymFloat):
                    arg = SymFloatArgument(new.name)
                elif isinstance(val, torch.SymBool):
                    arg = SymBoolArgument(new.name)
                elif isinstance(val, torch.Tensor):
                    arg = TensorArgument(new.name)
                else:
                    arg = ConstantArgument(new.name, val)
            specs.append(OutputSpec(kind, arg, spec.target if spec.kind != "user_output"
                                    else None))
            values.append(new)
        # (Graph.output's general node constructor: ~4x the direct one)
        add_node(self.graph, "output", (tuple(values),), {}, "output", op="output")
        return specs

    def _placeholder_of(self, target: str) -> str | None:
        for s in self.ep.graph_signature.input_specs:
            if s.target == target and s.kind == "buffer":
                return s.name
        return None

    # -- contract checks ---------------------------------------------------------------------
    def _range_constraints(self) -> dict:
        """Our ranges for our input symbols (never the ranges torch's guards narrowed),
        torch's own for the data-dependent symbols it created."""
        dims_kept(self)  # (each dynamic Dim of ours is one of torch's symbols still)
        out = {}
        roots = self.emitter.root_ranges()
        for sym, vr in self.shape_env.var_to_range.items():
            if sym in self.shape_env.replacements:
                continue
            lo, hi = roots.get(sym, (vr.lower, vr.upper))
            out[sym] = value_range(lo, None if hi is None or hi == math.inf else hi)
        return self.emitter.with_derived_ranges(out)

    # -- calling convention ------------------------------------------------------------------
    def _arg_names(self) -> list[str]:
        return arg_names(self.ep)

    def _grad_mode(self, node: torch.fx.Node, args: tuple) -> None:
        """A no_grad block as torch's pre-dispatch graph has it, for torch's HOP pass."""
        if node.target is torch.is_grad_enabled:
            self.env[node] = node.meta["val"]  # the mode around the block at export
            if self.export_grad is None:  # (the first read: the export's mode)
                self.export_grad = bool(node.meta["val"])
            return
        new = self.graph.call_function(torch._C._set_grad_enabled, (bool(args[0]),))
        new.meta["val"] = None
        self.env[node] = new
        torch._C._set_grad_enabled(bool(args[0]))

    def _module_call_graph(self) -> list:
        # (the submodule paths in our nodes' stacks: the plan's, found once per program)
        found = self.memo.get("stack_fqns")
        if found is None:
            found = self.memo["stack_fqns"] = tuple(stack_fqns(self.stacks.values()))
        return call_graph(self.ep, self.graph, self.bounds.signatures(), self._arg_names(),
                          found=found)

    def _examples(self) -> tuple:
        """Stand-in example inputs (zeros of the example sizes): torch builds its input
        guard function from their structure."""
        leaves = self.emitter.stand_ins()
        for leaf, ph in self.emitter.placeholders.items():
            # on the device the program runs on: AOTInductor compares each example with
            # its placeholder's fake value (a CUDA program with CPU examples is refused)
            val = ph.meta.get("val")
            if isinstance(val, torch.Tensor) and isinstance(leaves[leaf], torch.Tensor) and \
                    leaves[leaf].device != val.device:
                leaves[leaf] = on_device(leaves[leaf], val)
        spec = self.ep.in_spec
        known = self.memo.get("positional")  # (the plan's: found once per input spec)
        if known is None or known[0] is not spec:
            known = self.memo["positional"] = (spec, positional(spec))
        if known[1] == len(leaves):  # ((leaf, ...), {}): what tree_unflatten makes
            return tuple(leaves), {}
        args, kwargs = _pytree.tree_unflatten(leaves, spec)
        return tuple(args), dict(kwargs)


def module_call_graph(ep: Any) -> list:
    """``ep.module_call_graph``: from the program alone, or the conversion's where a call
    signature is preserved (its arguments name the converted graph's nodes)."""
    tree = getattr(ep, "module_tree", None)
    if tree is not None and tree.calls:
        return convert(ep).module_call_graph
    return call_graph(ep, ep.graph, {}, arg_names(ep))
