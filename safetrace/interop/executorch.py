"""``st.to_executorch(ep, path)``: an ExecuTorch ``.pte`` through ``ep.to_torch()``.

The three lines ExecuTorch documents (``to_edge(ep).to_executorch()``, then write the
buffer), on the converted program, with the input contract written into the ``.pte`` as its
first instructions (``executorch_checks``: ExecuTorch drops the ``_assert_scalar`` nodes
that carry it in the converted graph), so the ``.pte`` refuses what ``ep.module()``
refuses.  ExecuTorch plans memory for the largest tensors: every dynamic dim needs an upper
bound (``Dim("batch", max=64)``).  A ``.pte`` whose memory plan, or a decision its lowering
took at the example's sizes, fails at a size the program accepts is refused here, naming the
Dim and the range where it holds (``executorch_plans``, ``retrace_guards``).
"""

from __future__ import annotations

import dataclasses
import operator
import warnings
from pathlib import Path
from typing import Any

import torch

from safetrace.errors import ConversionError, ConversionWarning, conversion_error
from safetrace.errors import interop as EI
from safetrace.exporter.contract import TensorInput
from safetrace.interop.retrace_pins import guard_count, refuse_pins
from safetrace.interop.retrace_refusals import refuse_for_retrace
from safetrace.interop.positivity import node_where
from safetrace.interop.composites import beyond_torch
from safetrace.interop.cond_bounds import bound_cond_outputs
from safetrace.interop.empty_rolls import roll_by_index
from safetrace.interop.slice_ends import explicit_slice_ends
from safetrace.interop.executorch_forms import executorch_forms
from safetrace.interop.executorch_prims import symbolic_prims
from safetrace.interop.executorch_strides import strides_from_sizes
from safetrace.interop.executorch_sums import for_executorch
from safetrace.interop.executorch_plans import plan_facts
from safetrace.interop.retrace_guards import (decided_facts, raise_taken, size_split,
                                               taken_guards)
from safetrace.interop.executorch_checks import (METHOD, add_input_checks, failure_points,
                                                  keep_data_checks, specialized)

INSTALL = ("pip install --no-deps executorch==1.5.1 flatbuffers ruamel.yaml pyyaml tabulate"
           "  (or: pip install 'safetrace[executorch]')")


def _exir() -> Any:
    try:
        from executorch import exir
    except ImportError as exc:
        raise conversion_error(
            f"st.to_executorch needs the executorch package, which is not installed "
            f"({type(exc).__name__}: {exc})", fix=INSTALL) from exc
    return exir


def export_executorch(ep: Any, path: Any = None, *, partitioner: Any = None,
                      compile_config: Any = None) -> Any:
    """The ``ExecutorchProgramManager`` of a safetrace program (its ``.pte`` written to
    `path` if given).  `partitioner` (a list, e.g. XNNPACK's) delegates what it claims;
    `compile_config` is an ``exir.EdgeCompileConfig``."""
    exir = _exir()
    tep = ep if isinstance(ep, torch.export.ExportedProgram) else ep.to_torch()
    refuse_for_retrace(tep, "st.to_executorch")
    since = guard_count(tep)  # (the decisions the lowering takes: those after these)
    if tep is not ep:  # (our conversion, made for this call: its strides as ExecuTorch's)
        strides_from_sizes(tep.graph_module)
        bound_cond_outputs(tep, ep)  # (a cond's fresh sizes: our bounds, cond_bounds.py)
        roll_by_index(tep)  # (a roll of a dim that may be 0: a gather, empty_rolls.py)
        explicit_slice_ends(tep)  # (z[:1] of z admitting 0: min(n, 1), slice_ends.py)
    _bounded(tep)
    _refuse_empty_roll(tep)
    # without autograd: ExecuTorch's passes replay a torch.cond under grad mode through
    # its autograd key, whose re-trace of the branches finds the data-dependent symbols
    # the replay made before the cond unbound (PendingUnbackedSymbolNotFound; torch's own
    # programs too, when a parameter requires grad)
    # (and with ExecuTorch's scalar operators on sizes symbolic: `executorch_prims`)
    try:
        program = _lowered(exir, ep, tep, partitioner, compile_config, since)
    except ConversionError:
        raise  # (our own refusals, `_refuse_specialized`'s: as they are)
    except Exception as exc:
        # (ExecuTorch's own error where torch's retrace pinned a size at the example, its
        # view passes' ``_ViewSpec is incompatible with its base``: the catalogue's instead)
        refuse_pins(tep, "st.to_executorch", exc)
        _refuse_unbounded(tep, exc)
        raise
    if path is not None:
        Path(path).write_bytes(program.buffer)
    return program


def _refuse_unbounded(tep: Any, exc: Exception) -> None:
    """ExecuTorch's memory plan stopped at a size of no upper bound (``Cannot evaluate a
    finite upper bound``) in a program with a torch.cond: the catalogue's error instead."""
    if "finite upper bound" not in str(exc):
        return
    conds = [n for m in _graph_modules(tep.graph_module) for n in m.graph.nodes
             if n.target is torch.ops.higher_order.cond]
    if conds:
        raise EI.unbounded_merged_size(node_where(conds[0]), "st.to_executorch") from exc


def _lowered(exir: Any, ep: Any, tep: Any, partitioner: Any, compile_config: Any,
             since: int) -> Any:
    with torch.no_grad(), symbolic_prims():
        tep = for_executorch(_beyond_torch_table(tep, compile_config))
        if isinstance(ep, torch.export.ExportedProgram):  # torch's own: no contract
            edge = _edge(exir, tep, partitioner, compile_config, None)
            program = edge.to_executorch()
        else:
            # the checks' texts: filled by the pass, which writes the checks (the
            # contract's, then the graph's data checks); the constant method holds them
            texts: list[str] = []
            edge = _edge(exir, tep, partitioner, compile_config, {METHOD: texts})
            written: list[int] = []
            pinned: list[tuple[int, int, int]] = []
            program = edge.to_executorch(exir.ExecutorchBackendConfig(
                passes=[_checks_pass(edge.exported_program(), ep.contract, texts, written,
                                     pinned)]))
            _verify(program, texts, written)
            _refuse_specialized(program, ep.contract, tep,
                                frozenset((k, d) for k, d, _ in pinned), since)
    return program


def specialized_warning(contract: Any, pinned: list[tuple[int, int, int]]) -> str:
    tensors = [inp for inp in contract.inputs if isinstance(inp, TensorInput)]
    dims = ", ".join(f"{tensors[k].where(d)} to {n}" for k, d, n in pinned)
    return (f"st.to_executorch: ExecuTorch's lowering specialized {dims} (the program "
            f"declares them dynamic); the .pte holds for those sizes only and checks them "
            f"(a failed check names the dim). Other sizes: export one program per size, or "
            f"see docs/deploying.md (ExecuTorch) for what specializes")


# (sizes' arithmetic torch's retrace writes as Python functions: `n != 3` as sym_not, a
# slice bound `min(n, k)` as sym_min; ExecuTorch maps each to its prim, after its verifier)
_SYM_FUNCTIONS = (operator.ne, torch.sym_not, torch.sym_min, torch.sym_max, torch.sym_ite,
                  torch.sym_int, torch.sym_float)


def _edge(exir: Any, tep: Any, partitioner: Any, compile_config: Any,
          methods: Any) -> Any:
    """``to_edge`` of `tep`.  A check ``a != b`` (``st.check(k != 3)`` on a value read
    from data) comes back from torch's retrace as ``torch.sym_not(a == b)``, a Python
    function the edge verifier refuses though ExecuTorch runs it (its
    ``executorch_prim.sym_not``, to which its own pass maps it later; so are ``sym_min`` and
    ``sym_max`` of a slice bound or a contract's ``max(d, 1)``): then the verifier
    runs after that mapping instead, on the same program, as strict as before."""
    config = compile_config if compile_config is not None else exir.EdgeCompileConfig()
    nodes = [n for m in _graph_modules(tep.graph_module) for n in m.graph.nodes
             if n.op == "call_function"]
    negated = config._check_ir_validity and any(
        n.target in _SYM_FUNCTIONS for n in nodes)
    listed = config._check_ir_validity and any(_returns_a_list(n.target) for n in nodes)
    if negated or listed:
        compile_config = dataclasses.replace(config, _check_ir_validity=False)
    def lower(compile_config: Any) -> Any:
        if partitioner:
            return exir.to_edge_transform_and_lower(tep, partitioner=list(partitioner),
                                                    compile_config=compile_config,
                                                    constant_methods=methods)
        return exir.to_edge(tep, compile_config=compile_config, constant_methods=methods)

    try:
        edge = lower(compile_config)
    except AssertionError:
        # (the decomposition itself can write those functions: `F.interpolate` with a
        # float `scale_factor` becomes `sym_float(n) * 2.0`, refused in `check_valid_
        # edge_op`; measured 2026-12-07, session 37): once more, verified after mapping
        if negated or listed or not config._check_ir_validity:
            raise
        negated = True
        edge = lower(dataclasses.replace(config, _check_ir_validity=False))
    if negated or listed:
        _verify_with_prim_not(edge, config)
    return edge


def _returns_a_list(target: Any) -> bool:
    """Whether `target` is an operator returning one ``Tensor[]`` (split, unbind, chunk)."""
    schema = getattr(target, "_schema", None)
    return schema is not None and len(schema.returns) == 1 and \
        schema.returns[0].type == torch.ListType.ofTensors()


def _verify_with_prim_not(edge: Any, config: Any) -> None:
    """Each ``torch.sym_not`` (``sym_max``, ``sym_min``, ...) of the edge programs as
    ExecuTorch's operator, then the edge verifier `to_edge` skipped (`config` as the
    caller gave it).

    The verifier's dtype check takes the result of an operator returning one ``Tensor[]``
    for a sequence of returns, so the list's first tensor for the list, and calls ``len``
    on it: a size guard on that tensor's dim 0, which specialized a dynamic dim of the
    program (``chunk`` of a ``[batch, ...]`` tensor: the ``.pte`` then took the example's
    batch only).  Here it sees each such result as one list, as the schema says, while it
    checks; the metadata is restored after."""
    from executorch.exir.dialects._ops import ops
    from executorch.exir.verification.verifier import EXIREdgeDialectVerifier

    prims = ops.backend.executorch_prim
    # (torch's Python functions on sizes: Python functions the verifier refuses, which
    # ExecuTorch's emitter maps to these operators; `max(d, 1)` of a contract assert)
    as_prim = {torch.sym_not: prims.sym_not.Scalar, torch.sym_max: prims.sym_max.Scalar,
               torch.sym_min: prims.sym_min.Scalar, torch.sym_ite: prims.sym_ite.Scalar,
               torch.sym_int: prims.sym_int.Scalar, torch.sym_float: prims.sym_float.Scalar}
    for name in edge.methods:
        gm = edge.exported_program(name).graph_module
        wrapped = []
        for sub in _graph_modules(gm):  # the branches' and loop bodies' too
            for node in sub.graph.nodes:
                if node.op == "call_function" and node.target in as_prim:
                    node.target = as_prim[node.target]
                elif node.op == "call_function" and _returns_a_list(node.target) and \
                        isinstance(node.meta.get("val"), (list, tuple)):
                    wrapped.append((node, node.meta["val"]))
                    node.meta["val"] = (node.meta["val"],)
            sub.recompile()
        try:
            EXIREdgeDialectVerifier(edge_compile_config=config, class_only=True,
                                    preserve_ops=list(config.preserve_ops))()(gm)
        finally:
            for node, val in wrapped:
                node.meta["val"] = val


def _verify(program: Any, texts: list[str], written: list[int]) -> None:
    """The lowered program holds every failure point written, and its constant method
    every text, in order; else no .pte (it would run inputs the program refuses)."""
    from executorch.runtime import Runtime

    points = sum(failure_points(m.graph)
                 for m in _graph_modules(program.exported_program().graph_module))
    listed = None
    if texts:
        method = Runtime.get().load_program(program.buffer).load_method(METHOD)
        listed = list(method.execute([]))
    if points != sum(written) or (texts and listed != texts) or (not texts and points):
        raise conversion_error(
            f"st.to_executorch: the input checks did not survive ExecuTorch's passes "
            f"({points} failure points of {sum(written)} written; "
            f"{len(listed or ())} texts of {len(texts)}), so the .pte would run inputs the "
            f"program refuses",
            fix="report this with your executorch version; meanwhile check inputs with "
                "ep.module()'s contract before calling the .pte")


def _refuse_specialized(program: Any, contract: Any, tep: Any, checked: frozenset,
                        since: int) -> None:
    """No .pte whose lowering kept, as facts of its sizes, decisions taken at the stand-in
    size that are false at a size the program accepts (``retrace_guards``): ExecuTorch
    plans memory and static sizes from them.  Where the program holds a size split, every
    guard is read (its branches ran at one size, each at a size the other side has);
    elsewhere the decisions on size expressions the lowering added (`since`: the guard
    count before it; ``retrace_pins.new_guards``), and a maximum it narrowed: a .pte
    planned for ``n <= 5`` of ``Dim(max=16)`` (``n//2 - 1 < 2``, a contiguity check at the
    example) failed at n = 6..16 with ExecuTorch's bare error codes."""
    lowered = program.exported_program()
    names = list(lowered.graph_signature.user_inputs)
    nodes = {n.name: n for n in lowered.graph.nodes if n.op == "placeholder"}
    split = size_split(tep)
    placeholders = [nodes.get(name) for name in names]
    decided = [] if split else decided_facts(tep, since)
    found = taken_guards(placeholders, contract, guards=split, checked=checked,
                         extra=(*decided, *plan_facts(lowered.graph_module)))
    if found is not None:
        raise_taken(found, contract, tep, "st.to_executorch", split)


def _checks_pass(edge_ep: Any, contract: Any, texts: list[str], written: list[int],
                 pinned_out: list) -> Any:
    """The pass ``to_executorch`` runs first: the contract's checks at the head of the
    graph, and the graph's data checks kept where they are (``executorch_checks``); the
    data checks' texts are appended to `texts`, the failure points' count to `written`, the
    dims ExecuTorch specialized (`specialized`) to `pinned_out`.
    Refuses a graph whose user inputs are not the contract's."""
    from torch.fx.passes.infra.pass_base import PassResult

    names = list(edge_ep.graph_signature.user_inputs)

    def add_checks(gm: Any) -> Any:
        nodes = {n.name: n for n in gm.graph.nodes if n.op == "placeholder"}
        inputs = [nodes.get(name) for name in names]
        if len(inputs) != len(contract.inputs) or any(
                node is None for node, inp in zip(inputs, contract.inputs)
                if isinstance(inp, TensorInput)):
            raise conversion_error(
                f"st.to_executorch: the edge program's user inputs ({len(inputs)}, "
                f"{sum(n is not None for n in inputs)} in its graph) are not the program's "
                f"{len(contract.inputs)} inputs, so its input checks cannot be written",
                fix="report this with the model; meanwhile check inputs with ep.module()'s "
                    "contract before calling the .pte")
        # the list the constant method holds becomes the checks written (a condition on
        # float arithmetic of sizes has no form here), then the data checks
        pinned = specialized(inputs, contract)
        pinned_out[:] = pinned
        if pinned:
            warnings.warn(specialized_warning(contract, pinned), ConversionWarning,
                          stacklevel=2)
        texts[:] = add_input_checks(gm.graph, inputs, contract, pinned)
        written[:] = [1] if texts else []
        # the data checks of every graph: the program's and its branches' and loop bodies'
        # (a split's cond holds each side's checks in its branch)
        for sub in _graph_modules(gm):
            data = keep_data_checks(sub.graph, len(texts) + 1)
            texts.extend(data)
            written.extend(1 for _ in data)
            sub.recompile()
        return PassResult(gm, True)

    return add_checks


def _graph_modules(gm: Any) -> list[Any]:
    """`gm` and the graph modules below it (cond branches, loop bodies), each once."""
    return [m for _, m in gm.named_modules(remove_duplicate=True)
            if isinstance(m, torch.fx.GraphModule)]


def _beyond_torch_table(tep: Any, compile_config: Any = None) -> Any:
    """`tep` decomposed as ``to_edge`` decomposes it (ExecuTorch's table, less the
    operators `compile_config` preserves), with safetrace's forms of the operators that
    table leaves (``composites.beyond_torch``: ``aten.histc`` and transformers'
    ``grouped_mm_fallback`` from its MoE code), when the program holds one, and the forms
    of ``executorch_forms`` (``sort`` as ``topk``, ``empty`` as ``full``: a kernel
    ExecuTorch lacks, a pass that would specialize a size); ``to_edge``'s own pass then
    finds core ATen only."""
    preserved = set(getattr(compile_config, "preserve_ops", None) or ())
    forms = {op: form for op, form in {**beyond_torch(tep.graph_module),
                                       **executorch_forms(tep.graph_module)}.items()
             if op not in preserved}
    if not forms:
        return tep
    from executorch.exir.tracer import _default_decomposition_table

    table = _default_decomposition_table()
    for op in preserved:
        table.pop(op, None)
    table.update(forms)
    return tep.run_decompositions(table)


def _refuse_empty_roll(tep: Any) -> None:
    """ExecuTorch's portable ``roll`` kernel divides by the rolled dim's size: a ``.pte``
    called with that size 0 stops the process (SIGFPE; measured 2026-12-07 on
    ``torch.roll(z, 1, 0)`` with ``Dim("n", max=16)`` at n = 0, which ep.module() runs):
    refused where the program admits 0 there."""
    for module in _graph_modules(tep.graph_module):
        for node in module.graph.nodes:
            if node.op != "call_function" or node.target is not torch.ops.aten.roll.default:
                continue
            val = getattr(node.args[0], "meta", {}).get("val")
            dims = node.args[2] if len(node.args) > 2 else node.kwargs.get("dims", ())
            shape = list(getattr(val, "shape", ()))
            sizes = [shape[d] for d in dims] if dims else shape
            for size in sizes:
                if isinstance(size, torch.SymInt) and _may_be_zero(size):
                    trace = (node.meta.get("stack_trace") or "").strip().splitlines()
                    line = f" (`{trace[-1].strip()}`)" if trace else ""
                    raise conversion_error(
                        f"st.to_executorch: node {node.name} (torch.roll){line} rolls a dim "
                        f"of size {size}, which the program admits at 0; ExecuTorch's roll "
                        f"kernel divides by that size, and the .pte would stop the process "
                        f"there (a floating point exception) where ep.module() returns an "
                        f"empty tensor",
                        fix="declare the Dim with min=1 (st.Dim(..., min=1)) where the size "
                            "is never 0, or run the program with ep.module()")


def _may_be_zero(size: Any) -> bool:
    try:
        return bool(size.node.shape_env.bound_sympy(size.node.expr).lower <= 0)
    except Exception:  # noqa: BLE001 - a range torch cannot bound: may be 0
        return True


def _bounded(tep: Any) -> None:
    """A dynamic dim without an upper bound cannot be memory-planned: say which and how."""
    from torch.utils._sympy.numbers import int_oo

    labels = tep.graph_module.meta.get("safetrace_dim_labels", {})
    inputs = {s.arg.name for s in tep.graph_signature.input_specs
              if s.kind.name == "USER_INPUT"}
    for node in tep.graph.nodes:
        if node.op != "placeholder" or node.name not in inputs:
            continue
        val = node.meta.get("val")
        for d, size in enumerate(getattr(val, "shape", ())):
            if not isinstance(size, torch.SymInt):
                continue
            for sym in size.node.expr.free_symbols:
                vr = tep.range_constraints.get(sym)
                if vr is not None and (vr.upper is int_oo or vr.upper == int_oo):
                    name = labels.get(str(sym), str(sym))
                    raise conversion_error(
                        f"st.to_executorch: {node.name}.shape[{d}] ({name}) has no upper "
                        f"bound; ExecuTorch plans memory for the largest size every dim "
                        f"can take",
                        fix=f'declare a maximum, e.g. Dim("{name}", max=1024), and export '
                            f"again")
