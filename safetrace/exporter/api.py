"""``st.export``: trace a module or function on example inputs into an ExportedProgram."""

from __future__ import annotations

import copy
import functools
from typing import Any, Callable

import torch

from safetrace import pytree
from safetrace import errors as E
from safetrace.errors.dropin import is_torch_program
from safetrace.exporter.auto_seen import Seen
from safetrace.exporter.auto_small import (auto_budget, auto_places, auto_relations,
                                            split_auto_small)
from safetrace.exporter.caught import eager_classes, refusals_watched
from safetrace.exporter.fake_built import built_under
from safetrace.exporter.global_caches import GlobalCaches
from safetrace.exporter.contract import Contract, build_contract
from safetrace.exporter.implied_bounds import bound_by_checks
from safetrace.exporter.index_checks import check_indices_first
from safetrace.exporter.dynamic import DynamicDims, raise_violations
from safetrace.exporter.escapes import export_error_for, internal_error_for
from safetrace.exporter.example_ranges import refuse_conflicts
from safetrace.exporter.module_inputs import module_nodes, module_types
from safetrace.exporter.spec import check_additional, match_spec, unwrap_int_keys
from safetrace.exporter import python_state
from safetrace.exporter.call_check import check_call
from safetrace.exporter.relation_splits import relation_sides
from safetrace.exporter.small_splits import checked_below_two, small_sides
from safetrace.exporter.splits import MAX_SPLITS, export_with_splits
from safetrace.progress import task
from safetrace.exporter.program import ExportedProgram, InputSpec, OutputSpec
from safetrace.exporter import real_kernels
from safetrace.exporter.snapshot import ModuleGuard, same_form
from safetrace.exporter.lifting import given_shapes, lift_state, user_inputs
from safetrace.exporter.replay import forward_of
from safetrace.exporter.root_hooks import with_root_hooks
from safetrace.trace.modules import module_stack
from safetrace.trace.mutation import (base_placeholder, fresh_written_constants,
                                      stale_value_reads)
from safetrace.meta.symtypes import torch_env
from safetrace.symbolic.zerodiv import with_caught_fallback
from safetrace.symbolic import Contradiction, DataDependentQuestion, SymBool, SymFloat, SymInt
from safetrace.trace.asserts import describe_symbols
from safetrace.trace.pieces import Pieces
from safetrace.trace.graph import add_node
from safetrace.trace.handlers.casts import drop_replayed_checks
from safetrace.trace.handlers.grad import close_grad_regions
from safetrace.trace.proxy import Proxy, SymShape
from safetrace.trace.raising import in_subgraph, is_requirement
from safetrace.trace.session import ExportSession, gc_paused
from safetrace.trace.source import from_text, raised_at, short, stack_trace
from safetrace.trace.pieces import drop_unread
from safetrace.trace.subclasses import drop_unused, output_node, traceable, watch_state
from safetrace.trace.torchbind import is_torchbind
from safetrace.trace.tracer import Tracer


def export(model: Any = None, args: tuple = (), kwargs: dict | None = None, *,
           dynamic_shapes: Any = None, strict: bool | None = None,
           preserve_module_call_signature: tuple[str, ...] = (),
           max_splits: int = MAX_SPLITS, mod: Any = None,
           prefer_deferred_runtime_asserts_over_guards: bool = False,
           verbose: bool | None = None) -> ExportedProgram:
    """Capture ``model(*args, **kwargs)`` into a graph sound for the declared input space.

    ``preserve_module_call_signature`` names submodules whose calls keep their inputs and
    outputs, as in torch.export: ``torch.export.unflatten(ep.to_torch())`` then rebuilds
    each as a module with its own call signature, which can be swapped for another.
    ``mod=`` is torch.export's name for ``model`` and is accepted too.
    ``prefer_deferred_runtime_asserts_over_guards=True`` (torch.export's option): where
    the program needs less than a named Dim declares (a narrower range, a relation, one
    size), export anyway and let the program's input checks refuse the rest at run time
    (sound: such an input raises InputMismatchError before computing) instead of raising
    ConstraintViolationError; ``ep.deferred_checks`` lists them.  ``max_splits``
    bounds the size splits (``exporter/splits.py``); ``verbose`` reports a long export's
    progress on standard error (by default only on a terminal)."""
    with eager_classes(strict):  # (what leaves here carries torch.export's classes too)
        model, fn, args, kwargs = _checked_call(model, mod, args, kwargs)
        args, kwargs, dynamic_shapes = unwrap_int_keys(model, args, kwargs, dynamic_shapes)
        return with_caught_fallback(lambda: _export(  # (symbolic/zerodiv.py)
            model, fn, args, kwargs, dynamic_shapes, preserve_module_call_signature,
            max_splits, prefer_deferred_runtime_asserts_over_guards, verbose))


def _checked_call(model: Any, mod: Any, args: Any, kwargs: dict | None) -> tuple:
    """The model, its forward and the call's arguments, as st.export takes them."""
    if mod is not None:
        if model is not None:  # as Python says of a parameter given twice
            raise TypeError("st.export() got both model and mod= (torch.export's name for "
                            "it): pass one")
        model = mod
    if not isinstance(args, tuple):
        if isinstance(args, list):
            args = tuple(args)
        else:
            raise E.args_not_tuple(args)
    elif type(args) is not tuple:  # a namedtuple of inputs: positional inputs, as in torch
        args = tuple(args)
    kwargs = dict(kwargs or {})
    if isinstance(model, torch.jit.ScriptModule):
        raise E.script_module(model)
    if is_torch_program(model):  # (torch's raises "Expected `mod` to be an nn.Module")
        raise E.ours_given_torch_program("st.export")
    fn = model.forward if isinstance(model, torch.nn.Module) else model
    if not callable(fn):
        raise E.not_callable(model)
    return model, fn, args, kwargs


def _export(model: Any, fn: Callable, args: tuple, kwargs: dict, dynamic_shapes: Any,
            preserve_module_call_signature: tuple[str, ...], max_splits: int,
            prefer_deferred_runtime_asserts_over_guards: bool,
            verbose: bool | None) -> ExportedProgram:
    # the model's modules, walked once for the steps below and the first trace (a later
    # one walks again: forward may have changed the tree)
    walk = pytree.walk_of(model) if isinstance(model, torch.nn.Module) else None
    # the model's snapshot, taken first where the first trace walks these same modules (no
    # torch.compile wrapper among them, as an earlier export of them found): it finds the
    # code they hold with its reads (walk.held), for the namespaces' watch and the rewrite
    first = ModuleGuard(model, walk).__enter__() \
        if walk is not None and walk.facts.get("compiled") is False else None
    with built_under(model, walk), gc_paused(), \
            task(f"exporting {type(model).__name__}", verbose), \
            module_nodes(module_types(args, kwargs)), GlobalCaches(model, fn, walk) as caches:
        runs: list[Exporter] = []

        def one(sides: dict | None, flipped: frozenset = frozenset(), *,
                defer: bool | frozenset = False, named: dict | None = None) -> ExportedProgram:
            runs.append(Exporter(model, fn, preserve_module_call_signature, sides, flipped,
                                 defer=defer, walk=None if runs else walk, named=named,
                                 guard=None if runs else first))
            try:
                return runs[-1].run(args, kwargs, dynamic_shapes)
            except E.OpShapeError as exc:  # (eager raises at these hints: a split's side
                # may trace again with other named Dims at other sizes, splits.py)
                exc.st_dims = {n: (d.min, d.max) for n, d in runs[-1].dyn.declared.items()}
                exc.st_examples = runs[-1].dyn.examples
                raise

        def every(defer: bool | frozenset, named: dict | None = None,
                  start: tuple | None = None) -> ExportedProgram:
            ep = export_with_splits(  # (sizes 0 and 1: small_splits.py)
                functools.partial(one, defer=defer, named=named),
                max_splits + auto_budget(named),  # (Dim.AUTO sizes 0, 1: not the user's)
                start[1] if start is not None and start[0] == defer else None)
            # (read from the instance's dict: a miss of getattr goes through the program's
            # __getattr__ and an AttributeError, ~10k instructions per export)
            start = vars(ep).get("split_start")
            if isinstance(start, Exception):  # (auto_seen: how a warm export splits at once)
                ep.split_start = (defer, start)
            return ep

        deferred = prefer_deferred_runtime_asserts_over_guards
        # (a re-export of Dim.AUTO dims found not taken before, in the same state: auto_seen;
        # made when first needed, one for every whole() of this export)
        seen: list[Seen] = []

        def whole() -> ExportedProgram:  # (Dim.AUTO sizes 0 and 1: auto_small.py)
            first = checked_below_two(every, deferred)
            if not getattr(first, "auto_dims", False):
                return first  # (no Dim.AUTO / DYNAMIC size left symbolic: split_auto_small
                # finds no place, relation or Dim to re-export and returns it as it is)
            if not seen:
                seen.append(Seen(model, fn, args, kwargs, dynamic_shapes,
                                 (max_splits, deferred, preserve_module_call_signature)))
            return split_auto_small(first, lambda named, start=None: (
                checked_below_two(functools.partial(every, named=named, start=start),
                                  deferred)), seen[0], functools.partial(
                                      _admits, args=args, kwargs=kwargs))

        ep = whole()
        # (self.n += 1 in forward: the graph must not read it)
        python_state.check(ep, runs, whole, caches)
        check_additional(ep, dynamic_shapes)
        # (sizes its run-time checks refuse: input checks; an index check before the
        # first state write)
        return check_indices_first(bound_by_checks(ep))


def _admits(ep: ExportedProgram, args: tuple, kwargs: dict) -> bool:
    """Whether `ep`'s input checks accept the example it was exported from (a re-export of
    Dim.AUTO / DYNAMIC dims traced at other sizes may keep the other answer of a branch as
    a check: ``x.view_as(y) if x.numel() == y.numel() else ...``)."""
    try:
        ep.check_inputs(args, kwargs)
    except E.InputMismatchError:
        return False
    return True


def _user_origin() -> str:
    """Where in the user's code a size question was asked (the env's origin provider)."""
    return stack_trace(1)


class Exporter:
    def __init__(self, model: Any, fn: Callable, preserve: tuple[str, ...] = (),
                 sides: dict | None = None, flipped: frozenset = frozenset(),
                 defer: bool | frozenset = False, walk: Any = None,
                 named: dict | None = None, guard: ModuleGuard | None = None) -> None:
        self.defer = defer  # needs narrower than declared: run-time checks, not errors
        plain = _uncompiled(model)
        if plain is not model:  # torch.compile(model): export what it wraps
            model = plain
            fn = model.forward if isinstance(model, torch.nn.Module) else model
            walk = guard = None
        self.given_walk = walk  # pytree.walk_of(model) made just before, if any
        self.given_guard = guard  # its snapshot (ModuleGuard) taken just before, if any
        self.model = model
        self.fn = fn
        self.preserve = preserve
        self.graph = torch.fx.Graph()
        self.state: dict[int, torch.fx.Node] = {}
        self.state_tensors: dict[str, torch.Tensor] = {}
        self.python_state: list = []  # plain attributes forward changed (snapshot.py)
        self.input_specs: list[InputSpec] = []
        self.env = torch_env()
        self.env.origin_provider = _user_origin
        self.env.precondition_probe = is_requirement  # `assert`, `if ...: raise`, op checks
        self.env.subgraph_probe = in_subgraph
        self.dyn = DynamicDims(self.env)
        self.scalars: set[int] = set()  # leaves: ints declared dynamic
        if sides:  # a size split's side (exporter/splits.py; none: DynamicDims' own)
            self.dyn.set_overrides(sides)
        if named:  # Dim.AUTO dims traced as Dims (auto_small.py)
            self.dyn.auto_named = named
        if isinstance(defer, frozenset):
            self.dyn.defer_keys = defer
        self.env.flipped = flipped  # size tests answered the other way (splits.py)

    def run(self, args: tuple, kwargs: dict, dynamic_shapes: Any,
            report: Any = None) -> ExportedProgram | None:
        """Trace and build the program; with a `report`, collect problems instead of raising."""
        with _UnwrappedChildren(self.model, self.given_walk) as walk:
            self.walk = walk  # the model's modules (one walk for the whole export)
            # (a torch.jit.script / trace submodule is refused where it is called,
            # trace/scripted.py: held, or its parameters read, it exports as in torch)
            return self._run(args, kwargs, dynamic_shapes, report)

    def _run(self, args: tuple, kwargs: dict, dynamic_shapes: Any,
             report: Any = None) -> ExportedProgram | None:
        sig = check_call(self.model, self.fn, args, kwargs)  # (fn's signature, read once)
        names = pytree.positional_names(self.fn, len(args), sig)
        leaves, in_spec = pytree.flatten_inputs(self.fn, args, kwargs, names)
        specs: list = [None] * len(leaves)
        if dynamic_shapes is not None:
            specs = match_spec(self.fn, args, kwargs, dynamic_shapes, names)
        device = _common_device(leaves)
        guard = self.given_guard  # (the snapshot of these modules, taken just before)
        if guard is None or self.walk is not self.given_walk:
            guard = ModuleGuard(self.model, self.walk).__enter__()  # (entered again below)
        self._lift_state(guard)
        tracer = Tracer(self.graph, device, self.state, self._constant_namer(guard),
                        env=self.env)
        tracer.state_tensors = self.state_tensors  # (trace/versions.py: a buffer's memory)
        watch_state(tracer, self.state_tensors, self.state, leaves)  # tensor subclasses
        proxies = self._user_inputs(leaves, specs, tracer)
        if real_kernels.requested():  # a custom op's fake may be inferred (trace/draft.py)
            tracer.real_feed = functools.partial(self._example_values, leaves)
        targs, tkwargs = pytree.unflatten_inputs(proxies, in_spec)
        if report is not None:
            self.env.on_undecided = lambda q: report.question(q, _data_dependent(q, self.env))
            tracer.on_data_read = report.data_read
            report.env, report.dyn = self.env, self.dyn
        stack = module_stack(self.model, tracer, self.preserve, self.walk)
        try:
            try:
                with refusals_watched(self.env, lambda q: _data_dependent(q, self.env)), \
                        guard, ExportSession(self.model, self.fn, self.walk), tracer, \
                        stack as tree:
                    call = with_root_hooks(self.model, forward_of(self.model, self.fn),
                                           stack.global_hook_ids())
                    out = call(*targs, **tkwargs)  # (hooks of the model's call: root_hooks.py)
                    drop_replayed_checks(tracer)
                    # split/chunk pieces returned: all of them (their count is pinned now,
                    # before the contract is read)
                    out = _pin_pieces(out)
            except DataDependentQuestion as q:
                raise _data_dependent(q, self.env) from None
            except E.ExportError:  # (some are RuntimeErrors too: ours, never re-read below)
                raise
            except (AttributeError, RuntimeError, TypeError) as exc:
                err = export_error_for(exc)
                if err is exc:
                    raise
                raise err from None
            except (LookupError, ValueError, ArithmeticError) as exc:
                err = internal_error_for(exc)  # a bug of safetrace's own code, named
                if err is None:
                    raise
                raise err from exc
            except Contradiction as exc:
                raise E.contradictory_sizes(str(exc)) from None
        except E.ExportError as exc:
            refuse_conflicts(self.dyn)  # (an example outside a dim hint's range: the cause)
            if report is None:
                raise
            report.stopped(exc)
            try:  # what each declared dim had become when tracing stopped
                report.contract = self._contract(leaves, proxies, None)
            except (ValueError, KeyError):
                pass  # (a half-traced env may not make a consistent contract)
            return None
        self.python_state = guard.scalars
        contract = self._contract(leaves, proxies, tracer.layout_queried,
                                  tracer.strides_queried)
        refuse_conflicts(self.dyn, contract)  # (with the ranges the program works for)
        if report is not None:
            report.contract = contract
        problems = self.dyn.violations(contract)
        if tracer.specialized_by_op:  # also when only a product like b*t was pinned
            _raise_missing_rule(tracer, self.dyn)
        if problems and self.defer is not True:  # (a set: only those, small_splits.py)
            names = pytree.positional_names(self.fn, len(args))
            suggestion = self.dyn.suggestion(specs, leaves, in_spec, names)
            if report is not None:
                report.violations(problems, suggestion)
                return None
            raise_violations(problems, suggestion, self.dyn, names)
        out_leaves, out_spec = _flatten_outputs(out)
        outputs = self._outputs(tracer, guard, out_leaves)
        drop_unused(tracer)  # what tensor subclasses computed and nothing reads
        drop_unread(tracer)  # the pieces of a size-dependent split nothing reads
        constants = _used_constants(self.graph, tracer.constants)
        # (a tensor the code made, as torch.tensor(6.): made anew by each eager call; any
        # other, held by the model or not, is state a write keeps: ExportedProgram.own_state)
        fresh_written_constants(self.graph, {n for n, t in constants.items()
                                             if id(t) in tracer.folded})
        if tracer.value_reads:
            stale_value_reads(self.graph, constants, tracer.value_reads, self.constant_fqns)
        for name in constants:
            self.input_specs.append(InputSpec("constant", name, name, None, True))
        ep = ExportedProgram(
            self.graph, self.input_specs, outputs, in_spec, out_spec,
            state={**self.state_tensors}, constants=constants, contract=contract)
        ep.dim_names = dict(self.dyn.dim_names)  # symbol -> the user's Dim name (interop)
        ep.exported_training = bool(getattr(self.model, "training", False))
        ep.module_tree = tree  # submodule paths and preserved calls (interop)
        ep.state_aliases = self.state_aliases  # alias path -> the state's name (interop)
        # each constant's name in torch.export's program: the attribute's path, or
        # lifted_tensor_<n> for one made in forward (interop)
        fqns = self.constant_fqns
        ep.constant_targets = {n: fqns.get(n) or fqns.get(tracer.constant_bases.get(n), n[2:])
                               for n in constants} if constants else {}
        ep.constant_aliases = {path: ep.constant_targets[n] for path, n in
                               self.constant_aliases.items() if n in constants} \
            if constants and self.constant_aliases else {}  # (none: no comprehension)
        ep.retrace = functools.partial(
            export, prefer_deferred_runtime_asserts_over_guards=True) if self.defer else export
        # what the contract checks at run time beyond the declaration (the deferred asserts)
        ep.deferred_checks = [p.text() for p in problems + self.dyn.deferred] \
            if problems or self.dyn.deferred else []
        ep.defers_checks = bool(self.defer)
        ep.example_inputs = (args, kwargs)
        if real_kernels.requested():  # torch's fake_tensor_propagate_real_tensors
            real_kernels.check_custom_ops(ep, args, kwargs, self.env)
        if isinstance(self.model, torch.fx.GraphModule) and "custom" in self.model.meta:
            # a GraphModule exported again keeps its own annotations, as in torch.export
            ep.graph_module.meta["custom"] = copy.deepcopy(self.model.meta["custom"])
        # size-oblivious size tests checked at run time: those answered as for a general
        # size, and all (with those answered the other way, splits.py's retraces)
        settled = self.env.settled  # (none settled, the usual case: no generator)
        ep.size_tests = tuple(str(s.cond) for s in settled if s.kind == "size test" and
                              s.asserted) if settled else ()
        ep.size_checks = tuple(str(s.cond) for s in settled if s.kind.startswith(
            "size test") and s.asserted) if settled else ()
        # a relation checked at run time that refuses sizes 0 or 1 eager computes at
        # (no condition: none of these has a relation or Dim to split on, no call)
        ep.small_sides = [] if problems or not contract.conditions else small_sides(
            self.env, contract, self.dyn)
        if ep.small_sides:  # (the next candidates, where a split at the first fails)
            ep.small_more = functools.partial(small_sides, self.env, contract, self.dyn)
        ep.auto_places = auto_places(self.dyn, contract) if self.dyn.decls else {}
        ep.auto_dims = bool(ep.auto_places)  # (auto_seen keys only such exports)
        ep.auto_relations = [] if problems else None  # (found when first read: relations)
        ep.auto_relations_of = functools.partial(auto_relations, self.env, contract,
                                                 ep.auto_places)
        ep.relation_sides = [] if problems or not (contract.conditions or self.dyn.branched) \
            else relation_sides(self.env, contract, self.dyn)  # (relation_splits.py)
        return ep

    def _contract(self, leaves: list, proxies: list, layout_queried: str | None,
                  strides_queried: bool = False) -> Contract:
        env = self.env
        proxies, shapes = given_shapes(proxies, env)
        for i in self.scalars:  # an int declared dynamic: one "dim", its value
            shapes[i] = (proxies[i] if isinstance(proxies[i], int) else
                         _const_or(env.simplify(proxies[i].expr)),)
        layout = {}  # the code asked for a layout: inputs must have the traced one
        exact: set = set()  # ... and it read strides: row-major ones on dims of size 0 / 1 too
        if layout_queried:
            layout = {i: from_text(layout_queried) for i, p in enumerate(proxies)
                      if isinstance(p, Proxy) and p.st_contig}
            if strides_queried:
                exact = {i for i in layout if proxies[i].st_contig is True}
        return build_contract(env, self.dyn.decls, leaves, shapes, layout, self.dyn.origin_of,
                              self.scalars, exact)

    _lift_state = lift_state  # (placeholders for the state and the inputs: lifting.py)
    _user_inputs = user_inputs

    def _example_values(self, leaves: list) -> dict:
        """Each input and state placeholder's value in the example."""
        by_path = dict(leaves)
        out = {n: by_path[n.meta["path"]] for n in self.graph.nodes
               if n.op == "placeholder" and n.meta.get("kind") == "user_input"}
        for t in self.state_tensors.values():
            node = self.state.get(id(t))
            if node is not None:
                out[node] = t
        return out

    def _constant_namer(self, guard: ModuleGuard) -> Callable[[torch.Tensor], str]:
        names: dict[int, str] = {}
        self.constant_fqns: dict[str, str] = {}  # name -> the attribute's path (torch's key)
        # another attribute path of the same tensor -> the name of its first (torch lists
        # each path in ep.constants, the graph reads one)
        self.constant_aliases: dict[str, str] = {}
        for mname, attr, v in guard.tensor_attrs:  # (in walk order, as the snapshot's)
            if id(v) in self.state:
                continue
            full = f"{mname}.{attr}" if mname else attr
            if id(v) not in names:
                names[id(v)] = pytree.placeholder_name("c_" + full)
                self.constant_fqns.setdefault(names[id(v)], full)
            elif self.constant_fqns.get(names[id(v)]) != full:
                self.constant_aliases.setdefault(full, names[id(v)])
        counter = [0]

        def name(t: torch.Tensor) -> str:
            found = names.get(id(t))
            if found is not None:
                return found
            if is_torchbind(t):  # (a torchbind object, lifted: found where it is held)
                full = next((f"{m}.{k}" if m else k for m, mod, *_ in guard.saved
                             for k, v in vars(mod).items() if v is t),
                            f"lifted_custom_{id(t)}")
                names[id(t)] = pytree.placeholder_name("obj_" + full)
                self.constant_fqns[names[id(t)]] = full
                return names[id(t)]
            counter[0] += 1
            return f"c_lifted_tensor_{counter[0] - 1}"

        return name

    def _outputs(self, tracer: Tracer, guard: ModuleGuard, leaves: list) -> list[OutputSpec]:
        specs: list[OutputSpec] = []
        nodes: list = []
        # Buffers written in place, then buffers reassigned in forward (`self.b = self.b + 1`).
        for base in tracer.mutated:
            if base.meta.get("kind") == "buffer":
                nodes.append(base)
                specs.append(OutputSpec("buffer_mutation", base.meta["target"]))
        replaced = set()
        for target, value, before in guard.reassigned_buffers():
            same_form(target, value, before)
            node = value.st_node if isinstance(value, Proxy) else tracer.lift(value)
            nodes.append(node)
            specs.append(OutputSpec("buffer_mutation", target))
            replaced.add(target)
        for leaf in leaves:
            if isinstance(leaf, Proxy):
                if replaced and _placeholder_target(leaf.st_node) in replaced:
                    # a view of a buffer forward replaced (`v = self.b[:2]; self.b = ...`):
                    # eager's keeps the old values, which every runtime's write of the new
                    # buffer (torch.export's module, ExecuTorch) would change under it
                    leaf = tracer.emit(torch.ops.aten.clone.default, (leaf,), {})
                nodes.append(leaf.st_node)
            elif isinstance(leaf, torch.Tensor):  # (a tensor subclass: rebuilt from its inner)
                nodes.append(output_node(tracer, leaf) if traceable(leaf) else tracer.lift(leaf))
            elif isinstance(leaf, pytree.CONSTANT_LEAVES):
                nodes.append(leaf)
            elif isinstance(leaf, (SymInt, SymBool, SymFloat)) or getattr(leaf, "opaque", False):
                # computed by graph nodes
                nodes.append(tracer.sym_node(leaf))
            else:
                raise E.unflattenable_output(leaf)
            specs.append(OutputSpec("user_output", None))
        close_grad_regions(tracer)  # a grad mode the code set and left: the caller's again
        add_node(self.graph, "output", (tuple(nodes),), {}, "output", op="output")
        return specs


def _placeholder_target(node: Any) -> str | None:
    """The state name of the buffer a chain of views of `node` starts from (else None)."""
    base = base_placeholder(node)
    return base.meta.get("target") if base is not None and \
        base.meta.get("kind") == "buffer" else None


def _used_constants(graph: torch.fx.Graph, constants: dict) -> dict:
    """The tensor constants the graph reads; one made and never used (``y =
    torch.tensor(3)`` left unread) is no input of the program, as in torch.export."""
    if not constants:
        return {}
    used = {}
    for node in list(graph.find_nodes(op="placeholder")):
        if node.target in constants:
            if node.users:
                used[node.target] = constants[node.target]
            else:
                graph.erase_node(node)
    return {name: constants[name] for name in constants if name in used}


def _pin_pieces(out: Any) -> Any:
    """Returned split/chunk pieces as plain tuples (which pins their count); the rest of
    the output as it is (a torch.Size stays one)."""
    if type(out) is Proxy:
        return out

    def leaf(v: Any) -> bool:
        return isinstance(v, (Pieces, torch.Size, SymShape))

    if not any(isinstance(v, Pieces) for v in pytree.tree_flatten(out, is_leaf=leaf)[0]):
        return out
    return pytree.tree_map(lambda v: tuple(v) if isinstance(v, Pieces) else v, out,
                           is_leaf=leaf)


def _flatten_outputs(out: Any) -> tuple[list, Any]:
    """Flatten the model's outputs; a shape (``x.shape``, static or symbolic) flattens into
    its sizes (symbolic ones computed by the graph) and comes back as a torch.Size."""
    if type(out) is Proxy:
        return [out], _LEAF_SPEC

    def is_shape(v: Any) -> bool:
        return type(v) is SymShape or type(v) is torch.Size

    leaves, spec = pytree.tree_flatten(out, is_leaf=is_shape)
    if not any(is_shape(v) for v in leaves):
        return leaves, spec
    marked = pytree.tree_map(lambda v: pytree.SizeOutput(v) if is_shape(v) else v, out,
                             is_leaf=is_shape)
    flat = [s for v in leaves for s in (v if is_shape(v) else (v,))]
    return flat, pytree.tree_flatten(marked)[1]


def _compiled_wrapper(m: Any) -> bool:
    """torch.compile's module wrapper (recognised without importing torch._dynamo)."""
    return type(m).__name__ == "OptimizedModule" and \
        isinstance(getattr(m, "_orig_mod", None), torch.nn.Module)


def _uncompiled(model: Any) -> Any:
    """What torch.compile wrapped (a module or a function), else the model itself."""
    if _compiled_wrapper(model):
        return model._orig_mod
    if isinstance(model, torch.nn.Module) and type(model).__getattr__ is _MODULE_GETATTR:
        # (nn.Module's __getattr__ looks only at parameters, buffers and submodules, and
        # raises its AttributeError slowly: read the instance's and class's attributes)
        orig = model.__dict__.get("_torchdynamo_orig_callable",
                                  getattr(type(model), "_torchdynamo_orig_callable", None))
    else:
        orig = getattr(model, "_torchdynamo_orig_callable", None)
    return orig if callable(orig) else model


_MODULE_GETATTR = torch.nn.Module.__getattr__


class _UnwrappedChildren:
    """Submodules wrapped by torch.compile are traced as the modules they wrap (dynamo
    would otherwise try to compile the tracer); the wrappers are put back afterwards.
    Gives the model's (unwrapped) modules, ``pytree.module_walk``; None for a function.
    (A class: a generator context manager costs more than the walk for small models.)"""

    __slots__ = ("model", "walk", "swapped")

    def __init__(self, model: Any, walk: Any = None) -> None:
        self.model = model
        self.walk = walk  # pytree.walk_of(model), made just before (else walked here)
        self.swapped: list = []

    def __enter__(self) -> list | None:
        model = self.model
        if not isinstance(model, torch.nn.Module):
            return None
        walk = self.walk if self.walk is not None else pytree.walk_of(model)
        if walk.facts.get("compiled") is False:  # (no torch.compile wrapper among them)
            return walk
        seen: set[int] = set()
        compiled = False
        for _, mod in walk:
            if id(mod) in seen:
                continue
            seen.add(id(mod))
            for name, child in list(mod._modules.items()):
                # (the class name first, inline: one Python call less per module)
                if type(child).__name__ == "OptimizedModule":
                    compiled = True
                    if _compiled_wrapper(child):
                        mod._modules[name] = child._orig_mod
                        self.swapped.append((mod, name, child))
        if not compiled:  # (a fact of the walk's classes: kept while they are the same)
            walk.facts["compiled"] = False
        return pytree.walk_of(model) if self.swapped else walk

    def __exit__(self, *exc: Any) -> None:
        for mod, name, child in self.swapped:
            mod._modules[name] = child


def _common_device(leaves: list) -> torch.device:
    for _, v in leaves:
        if isinstance(v, torch.Tensor):
            return v.device
    return torch.device("cpu")


_LEAF_SPEC = pytree.tree_flatten(0)[1]  # the spec of one output


def _const_or(e: Any) -> Any:
    return int(e.value) if e.op == "const" else e


def _data_dependent(q: DataDependentQuestion, env: Any) -> E.DataDependentDecision:
    where = short(q.origin) if isinstance(q.origin, str) else \
        raised_at(q.__traceback__) or "<unknown location>"
    if not q.expr.is_bool:  # Python asked for the value itself: an int, a loop's length
        return E.data_dependent_int(str(q.expr), describe_symbols(env, q.expr), where)
    return E.data_dependent_decision(str(q.expr), describe_symbols(env, q.expr), where)


def _raise_missing_rule(tracer: Tracer, dyn: DynamicDims) -> None:
    """Dims declared dynamic were pinned by an op safetrace has no symbolic rule for."""
    declared = {n: d for d in dyn.decls if d.kind != "auto" for n in d.expr.free_symbols}
    for op, trace, names in tracer.specialized_by_op:
        hit = [declared[n].where for n in names if n in declared]
        if hit:
            raise E.missing_shape_rule(str(op), short(trace), hit)
