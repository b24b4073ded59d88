"""``save``: an ExportedProgram as one safetensors file (format 2).

The tensors are written straight from their memory in the safetensors layout
(``writer.py``: no copy of the model is made); the program's JSON document travels as
the header metadata entry ``safetrace.program``.  ``weights=False`` writes the graph only
(parameters and persistent buffers are then given to ``st.load(path, weights=...)``).
"""

from __future__ import annotations

import json
import os
from typing import Any

import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from safetrace import errors as E
from safetrace.errors.dropin import is_torch_program
from safetrace.exporter.split_report import describe
from safetrace.progress import task
from safetrace.serialize import operand_checks, record_checks, value_sizes, work, writer
from safetrace.serialize.codec import encode_record, encode_spec, encode_value, finite_or_none
from safetrace.serialize.subgraphs import encode as encode_subgraphs
from safetrace.serialize.targets import target_to_name
from safetrace.trace.hops import submodules
from safetrace.trace.subclasses import rebuild

FORMAT = "safetrace.program"
# 2.1: dim_names, training; dtypes without a safetensors code (the safetrace.dtypes entry)
# 2.2: splits (the lines of exporter/split_report.py, written only where there are some)
# 2.3: constant_paths, constant_aliases (torch.export's names of the lifted constants,
#      ``ep.constants``' keys; written only where one is not the placeholder's less c_)
VERSION = (2, 3)
# the metadata entry of the program (beside it: ``safetrace.dtypes``, see tensorfile.py)
PROGRAM = "safetrace.program"


def save(ep: Any, path: Any, *, weights: bool = True, verbose: bool | None = None) -> None:
    """Write ``ep`` to ``path`` (a file name or a binary file object).

    ``verbose``: report a long save's progress on standard error (by default only on a
    terminal; ``safetrace.progress``).

    ``weights=False`` leaves out the parameters and persistent buffers (a program exported
    on the meta device, or one whose weights live in a checkpoint); load it with
    ``st.load(path, weights=<safetensors file or state_dict>)``.
    """
    if is_torch_program(ep):
        raise E.ours_given_torch_program("st.save")
    external = set(ep.state_dict) if not weights else set()
    objects = {k: v for k, v in ep.lifted_constants.items()
               if not isinstance(v, torch.Tensor)}
    objects.update((i.path, i.value) for i in ep.contract.inputs
                   if type(getattr(i, "value", None)) is torch.ScriptObject)
    if objects:  # (torchbind objects, held or inputs: no allowlisted form)
        raise E.torchbind_save(list(objects), next(iter(objects.values()))._type()
                               .qualified_name())
    tensors = {f"state:{k}": v for k, v in ep._state.items() if k not in external}
    tensors.update({f"constant:{k}": v for k, v in ep.lifted_constants.items()})
    subclass = [k for k, v in tensors.items() if is_traceable_wrapper_subclass(v)]
    if subclass:
        raise E.subclass_save([k.split(":", 1)[1] for k in subclass],
                              type(tensors[subclass[0]]).__name__)
    made = [n for n in ep.graph.nodes if n.target is rebuild]
    if made:  # a tensor subclass the program returns
        raise E.subclass_save(["an output"], made[0].args[0].rpartition(".")[2])
    meta = sorted(k for k, v in tensors.items() if v.device.type == "meta")
    if meta:
        names = ", ".join(k.split(":", 1)[1] for k in meta[:8]) + (" ..." if len(meta) > 8 else "")
        kept = [k for k in meta if k.split(":", 1)[1] not in ep.state_dict]
        fix = ("st.save(ep, path, weights=False) writes the graph only; then "
               "st.load(path, weights=<safetensors file or state_dict>)")
        if kept:
            fix = ("these are constants or non-persistent buffers, which the file must "
                   "hold: export with them on a real device")
        raise ValueError(f"cannot save {len(meta)} tensor(s) on the meta device (no data): "
                         f"{names}.\nFix: {fix}")
    _not_onto_mapped(ep, path)
    with task(f"st.save: writing {path if isinstance(path, (str, os.PathLike)) else 'a file'}",
              verbose):
        prepared, aliases, dtypes = writer.prepare(tensors)
        doc = document(ep)
        doc["weights"] = bool(weights)
        doc["aliases"] = sorted([k, v] for k, v in aliases.items())
        program = json.dumps(doc, separators=(",", ":"), allow_nan=False)
        writer.write(path, prepared, {PROGRAM: program}, dtypes)


def _not_onto_mapped(ep: Any, path: Any) -> None:
    """Refuse to write through a file object into the file ``ep``'s weights are mapped
    from (``st.load(..., mmap=True)``): the writes would change (or, once the file is
    truncated, crash) the program being saved.  A path is safe: the new file replaces the
    old one by a rename and the mapping keeps the old one's data."""
    mapped = getattr(ep, "mapped_files", None)
    if not mapped or not hasattr(path, "write"):
        return
    try:
        info = os.fstat(path.fileno())
    except (AttributeError, OSError, ValueError):
        return
    if (info.st_dev, info.st_ino) in mapped:
        raise ValueError(
            "st.save refuses to write into the file this program's weights are mapped from "
            "(it was loaded with st.load(..., mmap=True)); opening it for writing has "
            "already truncated it, so the weights are gone from it.\nFix: save to a path, "
            "st.save(ep, path): the new file replaces the old one atomically; or load "
            "without mmap=True (the default reads the weights into memory)")


def dense_order(t: torch.Tensor) -> list | None:
    """For a state tensor dense in another order than row-major (a transposed or
    channels-last buffer), its dims from outermost to innermost: the file holds the values
    row-major and the loader lays them out so again (``x.contiguous()`` of it is a copy,
    not the buffer itself, as at export). None for a row-major tensor, or one of another
    layout (its loaded copy is row-major)."""
    if t.layout is not torch.strided or t.ndim < 2 or t.numel() == 0:
        return None
    strides = t.stride()
    order = sorted(range(t.ndim), key=lambda d: (-strides[d], d))
    if order == list(range(t.ndim)):
        return None
    with torch._C.DisableTorchFunction():
        probe = torch.empty_permuted(tuple(t.shape), order, device="meta")
    return order if probe.stride() == strides else None


def document(ep: Any) -> dict:
    """The JSON document of ``ep`` (everything but the tensor data)."""
    state_kinds = {s.target: s.kind for s in ep.graph_signature.input_specs
                   if s.kind in ("parameter", "buffer")}
    return {
        "format": FORMAT,
        "version": list(VERSION),
        "torch_version": torch.__version__,
        "symbols": _symbols(ep),
        "nodes": _nodes(ep.graph),
        "inputs": [{"kind": s.kind, "name": s.name, "target": s.target, "leaf": s.leaf,
                    "persistent": bool(s.persistent)} for s in ep.graph_signature.input_specs],
        "outputs": [{"kind": s.kind, "target": s.target}
                    for s in ep.graph_signature.output_specs],
        "contract": encode_record(ep.contract),
        "in_spec": encode_spec(ep.in_spec),
        "out_spec": encode_spec(ep.out_spec),
        "range_constraints": [[_sym_name(k), _bound(v.lower), _bound(v.upper)]
                              for k, v in ep.range_constraints.items()
                              if getattr(k, "op", "sym") == "sym"],  # (symbols: a derived
        # dim's entry, 3*s0 + 1, the loaded program's contract gives again)
        "dims_report": [[k, str(v)] for k, v in ep.dims_report.items()],
        "state": [{"name": k, "kind": state_kinds.get(k, "buffer"),
                   "requires_grad": bool(v.requires_grad),
                   "parameter": isinstance(v, torch.nn.Parameter),
                   "dtype": str(v.dtype).removeprefix("torch."), "shape": list(v.shape),
                   **({"order": order} if (order := dense_order(v)) is not None else {})}
                  for k, v in ep._state.items()],
        "constants": list(ep.lifted_constants),
        "dim_names": sorted([k, v] for k, v in getattr(ep, "dim_names", {}).items()
                            if ep.contract.symbol(k) is not None),
        "training": bool(getattr(ep, "exported_training", False)),
        **({"subgraphs": subgraphs} if (subgraphs := encode_subgraphs(ep.graph, _nodes))
           else {}),
        **({"splits": splits} if (splits := describe(ep.graph)) else {}),
        **_constant_paths(ep),
    }


def _constant_paths(ep: Any) -> dict:
    """torch.export's name of each lifted constant (its attribute path) where the loader
    cannot tell it from the placeholder's (``c_sub_w`` is ``sub.w``, not ``sub_w``), and
    the other paths of a constant held under two."""
    known = vars(ep).get("constant_targets") or {}
    paths = sorted([k, v] for k, v in known.items()
                   if k in ep.lifted_constants and v != k.removeprefix("c_"))
    aliases = sorted([k, v] for k, v in (vars(ep).get("constant_aliases") or {}).items())
    return {**({"constant_paths": paths} if paths else {}),
            **({"constant_aliases": aliases} if aliases else {})}


def _nodes(graph: torch.fx.Graph) -> list[dict]:
    names = {n: n.name for n in graph.nodes}
    ref = names.__getitem__
    # (the checks a load put before kernels that size their results by values are not
    # saved: each load makes its own, with its budget; files stay readable by loaders
    # without them)
    return [_node(n, ref) for n in graph.nodes
            if n.target not in _LOAD_CHECKS]


# (what a load puts into its graphs: value_sizes.py, work.py, operand_checks.py,
# record_checks.py)
_LOAD_CHECKS = (value_sizes.check, work.check, operand_checks.check, record_checks.check,
                record_checks.check_list)


def _node(n: torch.fx.Node, ref: Any) -> dict:
    out: dict = {"name": n.name, "op": n.op}
    if n.op == "call_function":
        out["target"] = target_to_name(n.target)
    elif n.op == "get_attr":  # a control-flow subgraph (saved under "subgraphs")
        out["target"] = str(n.target)
    elif n.op not in ("placeholder", "output"):
        raise ValueError(f"cannot save graph node {n.name} with opcode {n.op}")
    if n.args:
        out["args"] = [encode_value(a, ref) for a in n.args]
    if n.kwargs:
        out["kwargs"] = [[k, encode_value(v, ref)] for k, v in n.kwargs.items()]
    meta: dict = {}
    if "val" in n.meta and not getattr(n.meta["val"], "opaque", False):
        # (an opaque float's value is its node's recipe: nothing more to save)
        try:
            meta["val"] = encode_value(n.meta["val"])
        except ValueError as err:
            raise ValueError(f"cannot save node {n.name}: {err}") from None
    if n.meta.get("stack_trace"):
        meta["stack_trace"] = str(n.meta["stack_trace"])
    extra = {}
    for k, v in n.meta.items():
        if k in ("val", "stack_trace") or not isinstance(k, str):
            continue
        try:
            extra[k] = encode_value(v)
        except (ValueError, AttributeError):
            continue  # an annotation another pass added; not needed to run or print
    if extra:
        meta["extra"] = extra
    if meta:
        out["meta"] = meta
    return out


def _symbols(ep: Any) -> list[dict]:
    env = _find_env(ep)
    if env is None:
        return []
    out = []
    for name, (info, lo, hi) in _table(ep.graph, env).items():
        entry = {"name": name, "backed": bool(info.backed),
                 "hint": info.hint if info.backed else None,
                 "lo": _bound(lo), "hi": _bound(hi)}
        if getattr(info, "is_float", False):
            entry["float"] = True  # a float read from data (.item() of a float tensor)
        out.append(entry)
    return out


def _table(graph: torch.fx.Graph, env: Any) -> dict:
    """Symbol -> (its info, lo, hi) over every environment of the program's graphs: the
    table's (``env``, first), then each other that names a symbol it does not, in the
    graphs' order.  A split's sides were traced apart (``exporter/data_splits.py``,
    ``relation_splits.py``), each in an env of its own, and a side's cond of nested splits
    names its outputs' sizes fresh there (``u4``, ``branches.cond_outputs``): written from
    ``env`` alone, the file used a symbol its table did not declare and ``st.load``
    refused our own file (session 35, fuzz seed 3406).  A name several envs hold is
    written with the span of all their ranges (``_hull``)."""
    envs = {id(env): env}
    todo = [graph]
    while todo:
        g = todo.pop(0)
        for n in g.nodes:
            e = _env_of(n.meta.get("val"))
            if e is not None and hasattr(e, "symbols"):
                envs.setdefault(id(e), e)
        todo.extend(sub.graph for sub in submodules(g).values())
    out: dict = {}
    for e in envs.values():
        for name, info in e.symbols.items():
            if name not in out:
                out[name] = (info, *_hull(name, info, envs.values()))
    return out


def _hull(name: str, info: Any, envs: Any) -> tuple:
    """(lo, hi) of ``name`` over every env that names it as ``info`` does (backed or
    read from data).  A data split's sides each name the count they read again in
    their branch alike (``u0``), each under its own answer of the test: the general
    side's ``u0 >= 2``, the other's ``u0 <= 1`` (and an input size the general side was
    traced for part of, ``s0 >= 1``).  The table, one for all the graphs, writes the span
    of both; each side's narrower range is its branch's own assertion (the top graph's,
    for an input size).  (Written with the general side's, the loaded program's other
    branch recorded ``x[mask][:2]`` as ``[2]``, and its ``st.save`` wrote that.)"""
    lo, hi = info.range.lo, info.range.hi
    for other in envs:
        theirs = other.symbols.get(name)
        if theirs is not None and theirs.backed == info.backed:
            lo, hi = min(lo, theirs.range.lo), max(hi, theirs.range.hi)
    return lo, hi


def _env_of(val: Any) -> Any:
    """The env of a node's value (a size, a tensor's sizes, in lists), or None."""
    stack = [val]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif getattr(v, "env", None) is not None:
            return v.env
        elif hasattr(v, "st_meta"):
            stack.extend(s for s in v.st_meta.shape if not isinstance(s, int))
    return None


def _find_env(ep: Any) -> Any:
    for n in ep.graph.nodes:
        env = _env_of(n.meta.get("val"))
        if env is not None:
            return env
    return None


def _bound(x: Any) -> int | None:
    return finite_or_none(x)


def _sym_name(k: Any) -> str:
    return k.name if hasattr(k, "name") and isinstance(k.name, str) else str(k)
