"""The exported program: graph, signature, state, input contract; ``module()`` runs it."""

from __future__ import annotations

import threading
import weakref
from typing import Any

import torch

from safetrace import interop, pytree
from safetrace.errors import torch_api_given_ours, wrong_structure
from safetrace.exporter.checks import CheckBuilder
from safetrace.exporter.contract import Contract, RangeConstraints
from safetrace.exporter.html import render_html
from safetrace.exporter.module_inputs import module_nodes, spec_module_types
from safetrace.exporter.printing import print_readable
from safetrace.exporter.program_module import ProgramModule, adopt, check_state_names
from safetrace.exporter.signature import (ExportGraphSignature, InputSpec, OutputSpec,
                                          torch_only, type_check_caller)
from safetrace.interop.state import program_state, torch_target
from safetrace.progress import task
from safetrace.trace.hops import owner_module
from safetrace.trace.mutation import written_inputs

__all__ = ["ExportedProgram", "InputSpec", "OutputSpec", "ExportedGraphModule"]


class ExportedGraphModule(torch.fx.GraphModule):
    """A torch.fx GraphModule whose ``print_readable`` annotates shapes and source lines.

    Its Python code is generated on first use (a call, ``.code``), not at export: fx code
    generation costs about a millisecond, more than tracing a small model.
    """

    def recompile(self) -> None:  # type: ignore[override]
        self.__dict__["_st_dirty"] = True

    def ensure_compiled(self) -> None:
        """Generate the graph's Python code if the graph changed since the last time."""
        if self.__dict__.get("_st_dirty", True):
            self.__dict__["_st_dirty"] = False
            torch.fx.GraphModule.recompile(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.ensure_compiled()
        return torch.nn.Module.__call__(self, *args, **kwargs)

    @property
    def code(self) -> str:  # type: ignore[override]
        self.ensure_compiled()
        return self._code

    def __str__(self) -> str:
        self.ensure_compiled()
        return super().__str__()

    def print_readable(self, print_output: bool = True, **kwargs: Any) -> str:  # type: ignore[override]
        text = print_readable(self.graph, type(self).__name__.replace("Exported", ""))
        if print_output:
            print(text)
        return text


class ExportedProgram:
    """A traced program, sound for the input space it was exported for."""

    # torch.export's program has these and ours not: code reading them wants torch's
    _TORCH_ONLY = frozenset({
        "_check_input_constraints", "_constants", "_example_inputs",
        "_get_flat_args_with_check", "_graph_module", "_graph_module_flat_inputs",
        "_graph_signature", "_guards_code", "_module_call_graph",
        "_num_lifted_params_buffers", "_range_constraints", "_state_dict",
        "_transform_do_not_use", "_update", "_validate", "_verifiers", "call_spec", "dialect",
        "validate", "verifier", "verifiers"})

    def __getattr__(self, name: str) -> Any:
        return torch_only("ExportedProgram", name, self._TORCH_ONLY)

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        """The class, except to a torch.export-family API checking ``isinstance(ep,
        torch.export.ExportedProgram)``: that call is told to pass ``ep.to_torch()``
        (instead of "must be an instance of 'ExportedProgram', got 'ExportedProgram'")."""
        api = type_check_caller()
        if api is not None:
            raise torch_api_given_ours(api)
        return type(self)

    def __init__(self, graph_module: torch.fx.GraphModule | torch.fx.Graph,
                 input_specs: list[InputSpec],
                 output_specs: list[OutputSpec], in_spec: Any, out_spec: Any, *,
                 state: dict[str, torch.Tensor], constants: dict[str, torch.Tensor],
                 contract: Contract) -> None:
        # The GraphModule (an nn.Module with a class of its own) is built on first use:
        # the graph is the program; the module is a way to run and print it.
        self._gm: ExportedGraphModule | None = None
        if isinstance(graph_module, torch.fx.Graph):
            self._graph = graph_module
        else:
            self._graph = graph_module.graph
            if isinstance(graph_module, ExportedGraphModule):
                self._gm = graph_module
        # (the graph's last node, read from fx's node list: the output unless a pass
        # appended after it; reversed(graph.nodes) is a Python object and generator)
        last = getattr(getattr(self._graph, "_root", None), "_prev", None)
        out_node = last if getattr(last, "op", None) == "output" else \
            next(n for n in reversed(self._graph.nodes) if n.op == "output")
        for spec, node in zip(output_specs, out_node.args[0]):
            spec.name = node.name if isinstance(node, torch.fx.Node) else repr(node)
        self.graph_signature = ExportGraphSignature(input_specs, output_specs)
        self.graph_signature.program = weakref.ref(self)
        check_state_names(state, lambda: {s.target: s.kind for s in input_specs
                                          if s.kind in ("parameter", "buffer")})
        self._state = state
        # the lifted constants (tensors, torchbind objects) by placeholder target
        # (``c_sub_w``): the table the library reads; ``constants`` is torch's view of it
        self.lifted_constants = constants
        self.in_spec = in_spec
        self.out_spec = out_spec
        self.contract = contract
        self._ranges: RangeConstraints | None = None
        self.dim_names: dict[str, str] = {}  # symbol -> the user's Dim name, where declared
        self.exported_training = False  # the module's .training at export (set by export)
        # the model's submodule paths and the preserved module calls (set by export; read
        # by ep.to_torch() for the module call graph)
        self.module_tree: Any = None
        # st.export, handed in by whoever made the program (export, load): retracing for
        # run_decompositions needs it, and this module sits below the exporter's
        self.retrace: Any = None
        # torch.export's prefer_deferred_runtime_asserts_over_guards: what the input checks
        # refuse beyond the declared space (one line per declared dim)
        self.deferred_checks: list[str] = []
        self.defers_checks = False  # (exported with that option: checks raise at run time)
        # (args, kwargs) the program was exported with, as torch.export keeps them (None
        # for a loaded program: the file holds no inputs)
        self.example_inputs: tuple[tuple, dict] | None = None
        self._check_fn: Any = None
        self._owns_state = False  # state replaced by the shared program copies (own_state)

    # -- views ---------------------------------------------------------------------
    @property
    def graph(self) -> torch.fx.Graph:
        return self._graph

    @property
    def graph_module(self) -> ExportedGraphModule:
        """The graph as a ``torch.fx.GraphModule`` (its code is generated on first call)."""
        if self._gm is None:
            root = owner_module(self._graph)
            self._gm = ExportedGraphModule(root, self._graph, "GraphModule")
        return self._gm

    @property
    def state_dict(self) -> dict[str, torch.Tensor]:
        """Parameters and persistent buffers by their names in the original module (the
        state the program writes as its modules' calls left it)."""
        self.own_state()
        non_persistent = set(self.graph_signature.non_persistent_buffers)
        return {k: v for k, v in self._state.items() if k not in non_persistent}

    @property
    def constants(self) -> dict[str, Any]:
        """torch.export's ``ExportedProgram.constants``: the lifted constants by attribute
        path (``sub.table``; ``lifted_tensor_0`` for a tensor made in ``forward``) and the
        non-persistent buffers by name, as ``ep.to_torch().constants`` holds them (a
        parameter held outside the module's registry detached, as torch's).  The tensors
        are the program's own (``own_state``): writing into one is seen by every
        ``module()`` of the program.  A new dict per read, as ``state_dict``: putting a
        key in it changes nothing (``ep.lifted_constants`` is the table the program runs
        on, by placeholder target)."""
        held = program_state(self, self.graph_signature.input_specs)[1]
        buffers = set(self.graph_signature.non_persistent_buffers)  # (last, as torch's)
        return {**{k: v for k, v in held.items() if k not in buffers},
                **{k: v for k, v in held.items() if k in buffers}}

    @constants.setter
    def constants(self, value: Any) -> None:
        raise RuntimeError("Unable to set ExportedProgram's constants attribute.")  # (torch's)

    @property
    def tensor_constants(self) -> dict[str, Any]:
        """``constants`` (torch.export's other name for it)."""
        return self.constants

    def constant_key(self, spec: InputSpec) -> tuple[str, bool]:
        """A lifted constant's key in ``constants`` (torch.export's name: its attribute
        path, ``lifted_tensor_<n>`` for a tensor made in ``forward``) and whether it is a
        tensor (else a torchbind object)."""
        return torch_target(self, spec), isinstance(self.lifted_constants.get(spec.target),
                                                    torch.Tensor)

    def named_parameters(self) -> Any:
        """(name, parameter) of the program, as torch.export's ``named_parameters``."""
        self.own_state()
        for name in self.graph_signature.parameters:
            yield name, self._state[name]

    def parameters(self) -> Any:
        """The program's parameters."""
        for _, p in self.named_parameters():
            yield p

    def named_buffers(self) -> Any:
        """(name, buffer) of the program, non-persistent ones included, as torch.export's
        ``named_buffers``: the tensors its modules run on."""
        self.own_state()
        for name in self.graph_signature.buffers:
            yield name, self._state[name]

    def buffers(self) -> Any:
        """The program's buffers."""
        for _, b in self.named_buffers():
            yield b

    def written_state(self) -> set[str]:
        """Names of the parameters and buffers the graph writes (in place or by
        reassignment)."""
        in_place = _written_inputs(self)
        names = {s.target for s in self.graph_signature.input_specs
                 if s.kind in ("parameter", "buffer") and s.name in in_place}
        return names | set(self.graph_signature.buffers_to_mutate.values())

    def written_placeholders(self) -> set:
        """Names of the placeholders a write of the program may reach."""
        return _written_inputs(self)

    @staticmethod
    def owns(t: torch.Tensor) -> bool:
        """Whether `t` is a program-owned copy of a model tensor (see ``own_state``)."""
        return _SHADOWS.existing(t) is t

    def own_state(self) -> None:
        """The program's buffers, and the parameters it writes, become the program's:
        torch.export's rule (every ``module()`` of a program, and ``state_dict``, see the
        writes of the others; programs exported from one model share its buffers).

        torch.export's program aliases the model's own tensors, so its modules write into
        the model.  Here each such tensor is replaced, once, by a copy shared by every
        program whose state is that tensor: the exported model, and memory handed to
        ``st.load``, are never written.  All buffers are copied, not only the ones this
        program writes: another program of the same model may write one this one reads.
        A parameter is copied when this program writes it (or another one already did),
        and so is a constant (a plain tensor attribute, an element of a list or dict of
        them): one the program writes in place is program state as a buffer is."""
        if self._owns_state:
            return
        with _SHADOWS.lock:
            if self._owns_state:
                return
            written = self.written_state()
            kinds = {s.target: s.kind for s in self.graph_signature.input_specs}
            for name, t in self._state.items():
                if kinds.get(name) != "parameter" or name in written:
                    self._state[name] = _SHADOWS.of(t)
                else:
                    self._state[name] = _SHADOWS.read(t, self, name)
            in_place = _written_inputs(self)
            written_constants = {s.target for s in self.graph_signature.input_specs
                                 if s.kind == "constant" and s.name in in_place}
            for name, t in self.lifted_constants.items():
                self.lifted_constants[name] = _SHADOWS.of(t) \
                    if name in written_constants else _SHADOWS.read(t, self, name)
            self._owns_state = True

    def _adopt(self, name: str, source: torch.Tensor, copy_: torch.Tensor) -> None:
        """Another program now writes `source`, which this one reads as it is: this program
        and its modules read `copy_`, the copy that program writes, from now on."""
        if self.lifted_constants.get(name) is source:
            self.lifted_constants[name] = copy_
        elif self._state.get(name) is source:
            self._state[name] = copy_
        else:
            return
        adopt(self, name, source, copy_)

    # -- checks --------------------------------------------------------------------
    def _build_checks(self) -> Any:
        # (a function of the contract alone: made once per contract, which a program
        # exported again with the same static inputs shares)
        return self.contract.derived("checks", lambda c: CheckBuilder().build(c))

    def describe_contract(self) -> str:
        """The input space in words: shapes with symbols, ranges, relations, checks."""
        return self.contract.text()

    @property
    def range_constraints(self) -> RangeConstraints:
        """``{symbol: ValueRange}`` of every free symbol (dynamic dims and data-dependent
        values), as torch.export's ``ExportedProgram.range_constraints``."""
        if self._ranges is None:
            self._ranges = self.contract.range_constraints()
        return self._ranges

    @property
    def dims_report(self) -> dict[str, str]:
        """What each dim declared in dynamic_shapes became (``"static 3"``, ``"dynamic
        s0 ..."``)."""
        return self.contract.dims_report()

    def _flat_arity(self) -> tuple | None:
        """(positional recipes, keyword names, keyword recipes) when every input is a plain
        leaf or a list/tuple of plain leaves (a recipe: None, or (container type, length));
        None for deeper structures (the pytree walk handles those)."""
        if not hasattr(self, "_arity"):
            arity = None
            try:
                args_spec, kwargs_spec = _children(self.in_spec)
                if args_spec.type is tuple and kwargs_spec.type is dict:
                    recipes = [_recipe(c) for c in _children(args_spec)]
                    kw_recipes = [_recipe(c) for c in _children(kwargs_spec)]
                    if _UNSUPPORTED not in recipes and _UNSUPPORTED not in kw_recipes:
                        arity = (recipes, tuple(kwargs_spec.context), kw_recipes)
            except (AttributeError, ValueError, TypeError):
                arity = None
            self._arity = arity
        return self._arity

    def _ordered(self, kwargs: dict | None) -> dict:
        """Keyword arguments in the order they were exported with (order is not meaning)."""
        kwargs = dict(kwargs or {})
        try:
            order = list(_children(self.in_spec)[1].context)
        except (AttributeError, IndexError, TypeError):
            return kwargs
        if set(order) == set(kwargs) and list(kwargs) != order:
            return {k: kwargs[k] for k in order}
        return kwargs

    def module_types(self) -> set[type]:
        """The nn.Module classes the program takes as inputs (``module_inputs.py``)."""
        if not hasattr(self, "_module_types"):
            self._module_types = spec_module_types(self.in_spec)
        return self._module_types

    def _pytree_leaves(self, args: tuple, kwargs: dict | None) -> list:
        """The leaves by the pytree walk; WrongStructure when the containers differ."""
        if self.module_types():
            with module_nodes(self.module_types()):
                return self._structured_leaves(args, kwargs)
        return self._structured_leaves(args, kwargs)

    def _structured_leaves(self, args: tuple, kwargs: dict | None) -> list:
        leaves, spec = pytree.tree_flatten((tuple(args), self._ordered(kwargs)))
        if spec != self.in_spec:
            # the same dict keys in another insertion order: as at export (order is not meaning)
            reordered = pytree.in_spec_order((tuple(args), self._ordered(kwargs)), self.in_spec)
            if reordered is not None:
                leaves, spec = pytree.tree_flatten(reordered)
        if spec != self.in_spec:
            try:
                why, fix = pytree.describe_mismatch(self.in_spec, spec, leaves,
                                                    [inp.path for inp in self.contract.inputs])
            except Exception:  # noqa: BLE001 - never hide the mismatch behind a bug here
                why, fix = "its containers differ.", ("call with the same containers (lists/"
                                                      "tuples/dicts/dataclasses) and keyword "
                                                      "names as at export")
            raise wrong_structure(why, fix)
        return leaves

    def flat_inputs(self, args: tuple, kwargs: dict | None = None) -> list:
        """A call's inputs flattened to the leaves, their structure checked (the leaves
        themselves are not: ``leaf_checks``)."""
        arity = self._flat_arity()
        leaves = None
        if arity is not None and len(args) == len(arity[0]) and (
                not kwargs if not arity[1] else tuple(kwargs or ()) == arity[1]):
            # plain inputs (and lists of them): the structure is checked here, without the
            # pytree walk; anything unexpected falls back to it
            leaves = _flat_leaves(args, arity[0])
            if leaves is not None and kwargs:
                more = _flat_leaves(tuple(kwargs.values()), arity[2])
                leaves = None if more is None else leaves + more
        return self._pytree_leaves(args, kwargs) if leaves is None else leaves

    def leaf_checks(self) -> Any:
        """The generated checks of the leaves (type, dtype, rank, sizes, ranges,
        relations): a function of the list of leaves that raises InputMismatchError."""
        if self._check_fn is None:
            self._check_fn = self._build_checks()
        return self._check_fn

    def check_inputs(self, args: tuple, kwargs: dict | None = None) -> list:
        """Validate a call's inputs against the contract; return the flattened leaves."""
        leaves = self.flat_inputs(args, kwargs)
        (self._check_fn or self.leaf_checks())(leaves)
        return leaves

    @property
    def module_call_graph(self) -> list:
        """torch.export's ``ModuleCallEntry`` list: the root's calling convention, every
        submodule, the preserved module calls (what torch's unflatten reads)."""
        return interop.module_call_graph(self)

    # -- running -------------------------------------------------------------------
    def module(self, check_guards: bool = True) -> torch.nn.Module:
        """A callable nn.Module, shaped as torch.export's unlifted module: checks its
        inputs, then runs the graph (``exporter/program_module.py``).  ``check_guards``
        is torch's keyword: both ways the inputs are checked (torch's ``False`` checks
        them in a pre-hook instead of in the graph)."""
        return ProgramModule(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("an ExportedProgram is not callable; use ep.module()(*args)")

    # -- the deployment stack ------------------------------------------------------------
    def to_torch(self, *, strict: bool = False, verify: bool | None = None,
                 verbose: bool | None = None) -> Any:
        """This program as a ``torch.export.ExportedProgram`` (validate()-clean, same input
        contract), for AOTInductor, ONNX, ExecuTorch, ``torch.export.save``/``unflatten``.
        Its fake values are built from this program's shapes; ``verify=True`` recomputes
        them with torch's meta kernels and compares (default: the environment variable
        ``SAFETRACE_VERIFY_TO_TORCH=1``).
        ``verbose``: progress on standard error (default: only on a terminal)."""
        with task("ep.to_torch(): building torch.export's program", verbose), \
                module_nodes(self.module_types()):
            return interop.to_torch(self, strict=strict, verify=verify)

    def run_decompositions(self, decomp_table: dict | None = None) -> ExportedProgram:
        """This program retraced by safetrace's tracer with each operator decomposed
        (default: torch's core ATen table): same numerics and contract."""
        if self.retrace is None:
            raise TypeError("this ExportedProgram was built by hand: run_decompositions needs "
                            "one made by st.export or st.load")
        return interop.run_decompositions(self, decomp_table, export=self.retrace)

    def to_html(self, path: Any = None, *, title: str = "safetrace program") -> str:
        """This program as one self-contained HTML page (graph by module, shapes, source
        lines, input contract, dims, operator histogram); written to `path` if given."""
        page = render_html(self, title)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(page)
        return page

    def __str__(self) -> str:
        text = ["ExportedProgram:", self.graph_module.print_readable(print_output=False),
                self.describe_contract()]
        text.append(f"Graph signature: {self.graph_signature}")
        text.append(f"Range constraints: {self.range_constraints.text(self.dim_names)}")
        return "\n".join(text)

    __repr__ = __str__


_CONTAINERS = (list, tuple, dict)
_UNSUPPORTED = ("deeper",)


def _recipe(spec: Any) -> Any:
    """None for a leaf, (list or tuple, n) for a flat container of n leaves."""
    if spec.is_leaf():
        return None
    if spec.type in (list, tuple) and all(c.is_leaf() for c in _children(spec)):
        return (spec.type, spec.num_children)
    return _UNSUPPORTED


def _flat_leaves(values: tuple, recipes: list) -> list | None:
    """The leaves of `values` laid out as `recipes` say, or None when they do not fit."""
    out: list = []
    for v, r in zip(values, recipes):
        t = type(v)
        if r is None:
            if t in _CONTAINERS:
                return None
            out.append(v)
        elif t is r[0] and len(v) == r[1] and not any(type(x) in _CONTAINERS for x in v):
            out.extend(v)
        else:
            return None
    return out


def _children(spec: Any) -> list:
    """A TreeSpec's child specs (``children()`` in new torch, ``children_specs`` before)."""
    fn = getattr(spec, "children", None)
    return list(fn()) if callable(fn) else list(spec.children_specs)


def _written_inputs(ep: ExportedProgram) -> set:
    """The placeholders a write of the program may reach (cached while its graph holds
    the same nodes)."""
    key = (id(ep.graph), len(ep.graph.nodes))
    cached = ep.__dict__.get("_st_written")
    if cached is None or cached[0] != key:
        cached = ep.__dict__["_st_written"] = (key, written_inputs(ep.graph))
    return cached[1]


class _Shadows:
    """The program-owned copy of each model tensor programs hold as state: one per source
    tensor (by identity), shared by every program exported from it while one of them
    lives (then freed: a later program copies the source again)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._copies: dict[int, tuple[Any, Any]] = {}  # id(source) -> (ref, ref to copy)
        self._ours: dict[int, Any] = {}  # id(copy) -> ref: a copy is its own copy
        # id(source) -> (ref, [(ref to a program, name)]): programs reading the source
        # itself (``read``)
        self._readers: dict[int, tuple[Any, list]] = {}

    def existing(self, t: torch.Tensor) -> torch.Tensor | None:
        """`t`'s copy if one lives (or `t` itself if it is one), else None."""
        with self.lock:
            mine = self._ours.get(id(t))
            if mine is not None and mine() is t:
                return t
            entry = self._copies.get(id(t))
            if entry is not None and entry[0]() is t:
                return entry[1]()  # type: ignore[no-any-return]
            return None

    def current(self, t: torch.Tensor) -> torch.Tensor | None:
        """`t`'s copy as ``existing``, first brought up to `t`'s values where `t` was
        written in place since the copy last read it (``load_state_dict``, an eager
        training step): torch.export's programs alias the model's tensors and see such a
        write, so every program sharing the copy sees it too."""
        with self.lock:
            found = self.existing(t)
            entry = self._copies.get(id(t))
            if found is None or found is t or entry is None:
                return found
            version = _version(t)
            if version is not None and version != entry[2]:
                with torch.no_grad():
                    found.copy_(t)
                self._copies[id(t)] = (entry[0], entry[1], version)
            return found

    def read(self, t: torch.Tensor, ep: ExportedProgram, name: str) -> torch.Tensor:
        """What program `ep` reads for `t`, which it does not write: `t`'s copy where
        another program writes `t`, else `t` itself, until one does (``of`` then hands
        `ep` the copy: every program of the model reads what that one writes)."""
        with self.lock:
            found = self.current(t)
            if found is not None:
                return found
            entry = self._readers.get(id(t))
            if entry is None or entry[0]() is not t:  # (freed with the source)
                entry = self._readers[id(t)] = (
                    weakref.ref(t, self._forget(self._readers, id(t))), [])
            entry[1][:] = [r for r in entry[1] if r[0]() is not None]
            entry[1].append((weakref.ref(ep), name))
            return t

    def of(self, t: torch.Tensor) -> torch.Tensor:
        """`t`'s copy, made on first use."""
        with self.lock:
            found = self.current(t)
            if found is not None:
                return found
            try:
                copy_ = t.detach().clone()
            except (NotImplementedError, RuntimeError):
                # a dtype without a copy kernel (int1, ...): no kernel can write it either
                return t
            if isinstance(t, torch.nn.Parameter):
                copy_ = torch.nn.Parameter(copy_, requires_grad=t.requires_grad)
            src, mine = id(t), id(copy_)
            self._copies[src] = (weakref.ref(t, self._forget(self._copies, src)),
                                 weakref.ref(copy_, self._forget(self._copies, src)),
                                 _version(t))
            self._ours[mine] = weakref.ref(copy_, self._forget(self._ours, mine))
            readers = self._readers.pop(src, None)
            for ref, name in readers[1] if readers and readers[0]() is t else ():
                reader = ref()
                if reader is not None:
                    reader._adopt(name, t, copy_)
            return copy_

    def _forget(self, table: dict, key: int) -> Any:
        def drop(ref: Any) -> None:
            with self.lock:
                entry = table.get(key)
                if entry is ref or (type(entry) is tuple and any(r is ref for r in entry)):
                    del table[key]
        return drop


def _version(t: torch.Tensor) -> int | None:
    """`t`'s in-place write counter (None where it keeps none: an inference tensor)."""
    try:
        return t._version
    except RuntimeError:
        return None


_SHADOWS = _Shadows()
