"""``st.to_onnx(ep, path)``: ONNX through ``torch.onnx.export(ep.to_torch())``.

The ONNX graph's symbolic dims carry the user's names: ``Dim("batch")`` becomes the
dim_param ``batch`` on every input, output and intermediate value that has it (torch's
exporter would call it ``s55``); symbols without a declared Dim keep safetrace's name
(``s0``), derived dims their form (``2*d + 1``).
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import torch

from safetrace.interop.retrace_guards import refuse_decisions
from safetrace.interop.retrace_pins import guard_count, refuse_pins
from safetrace.interop.executorch_strides import strides_from_sizes
from safetrace.interop.empty_rolls import roll_by_index
from safetrace.interop.retrace_refusals import refuse_folded, refuse_for_retrace
from safetrace.interop.composites import beyond_torch
from safetrace.interop.onnx_attention import masked_attention
from safetrace.interop.onnx_checks import add_input_checks
from safetrace.interop.onnx_decompose import can_fold, folded
from safetrace.interop.onnx_lean import as_decomposed, can_skip, lower
from safetrace.interop.onnx_registry import cached_registry, implemented


def symbol_labels(tep: Any) -> dict[str, str]:
    """torch symbol name -> the user-facing name of that dim (stored by the conversion)."""
    return dict(tep.graph_module.meta.get("safetrace_dim_labels", {}))


def export_onnx(ep: Any, path: Any = None, **kwargs: Any) -> Any:
    """The ``torch.onnx.ONNXProgram`` of a safetrace program (saved to `path` if given);
    `kwargs` go to ``torch.onnx.export`` (``opset_version``, ``optimize``, ...)."""
    own = not isinstance(ep, torch.export.ExportedProgram)
    tep = _own_strides(ep.to_torch()) if own else ep
    refuse_for_retrace(tep, "st.to_onnx", folds=False)  # (the lean path keeps the nodes)
    kwargs.setdefault("verbose", False)
    # (torch's operator registry: 0.7 s to build, made once)
    with cached_registry():
        # our own program, functional and within the registry: lowered here, node by
        # node, without torch.onnx's retrace (onnx_lean)
        if own and "custom_translation_table" not in kwargs and can_skip() and \
                not beyond_torch(tep.graph_module) and lower(tep, implemented()):
            try:
                with as_decomposed(tep):
                    program = torch.onnx.export(tep, dynamo=True, **kwargs)
            except Exception:  # noqa: BLE001  (what torch.onnx's retrace may still take)
                tep = _own_strides(ep.to_torch())
                program = _retraced(tep, kwargs, ep.contract)
        else:
            program = _retraced(tep, kwargs, ep.contract if own else None)
    if own:  # our program: its contract's checks onnxruntime does not make
        add_input_checks(program.model, ep.contract)
    rename_dims(program.model, symbol_labels(tep))
    if path is not None:
        program.save(str(path))
    return program


def _own_strides(tep: Any) -> Any:
    """`tep` (our conversion, made for this call) with its ``aten.sym_stride.int`` reads
    of row-major values written from sizes: torch.onnx has no function for that operator
    (``interop/executorch_strides.py``); and its rolls of a dim that may be 0 as gathers
    (torch.onnx's roll divides by that size: ``interop/empty_rolls.py``)."""
    strides_from_sizes(tep.graph_module)
    roll_by_index(tep)
    return tep


def _retraced(tep: Any, kwargs: dict, contract: Any = None) -> Any:
    """``torch.onnx.export`` through its own decomposition, with safetrace's forms added
    to its table: operators no ONNX function covers (transformers' grouped_mm_fallback),
    and masked attention, whose ONNX function differs from torch on fully masked rows.
    With our program's `contract`: refused where the retrace decided a size expression at
    the example that is false at a size the program accepts (``retrace_guards``)."""
    refuse_folded(tep, "st.to_onnx")  # (torch.onnx's retrace keeps torch's sizes)
    since = guard_count(tep)
    forms = {**beyond_torch(tep.graph_module), **masked_attention(tep.graph_module)}
    fold = bool(forms) and can_fold()
    if forms and not fold:  # (a torch.onnx whose table this cannot add to: one retrace more)
        tep = tep.run_decompositions(forms)
    with folded(forms) if fold else contextlib.nullcontext():
        program = torch.onnx.export(tep, dynamo=True, **kwargs)
    # (torch.onnx's retrace ran its meta kernels at the example's sizes: a size it pinned
    # there in the ShapeEnv its programs share, it wrote into the model as a number)
    refuse_pins(tep, "st.to_onnx", exact=True)
    if contract is not None:
        refuse_decisions(tep, contract, since, "st.to_onnx")
    return program


def rename_dims(model: Any, labels: dict[str, str]) -> None:
    """Rename symbolic dims in an onnx_ir model, in place: whole symbols inside each
    dim's expression (``s55*2`` -> ``batch*2``)."""
    if not labels:
        return
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in
                                           sorted(labels, key=len, reverse=True)) + r")\b")

    def fix(value: Any) -> None:
        shape = getattr(value, "shape", None)
        if shape is None:
            return
        dims = list(shape.dims)
        changed = False
        for i, d in enumerate(dims):
            name = getattr(d, "value", None)
            if isinstance(name, str):
                new = pattern.sub(lambda m: labels[m.group(1)], name)
                if new != name:
                    dims[i] = new
                    changed = True
        if changed:
            value.shape = type(shape)(dims)

    graph = model.graph
    for v in list(graph.inputs) + list(graph.outputs):
        fix(v)
    for node in graph.all_nodes() if hasattr(graph, "all_nodes") else graph:
        for v in node.outputs:
            fix(v)
