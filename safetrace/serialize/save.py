"""``save``: an ExportedProgram as one zip archive of JSON and safetensors."""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from typing import Any

import torch

from safetrace.serialize import tensorfile
from safetrace.serialize.codec import encode_record, encode_spec, encode_value, finite_or_none
from safetrace.serialize.targets import target_to_name

FORMAT = "safetrace.program"
VERSION = (1, 0)
PROGRAM = "program.json"
TENSORS = "tensors.safetensors"


def save(ep: Any, path: Any) -> None:
    """Write ``ep`` to ``path`` (a file name or a binary file object): JSON plus tensors."""
    doc = document(ep)
    tensors = {f"state:{k}": v for k, v in ep._state.items()}
    tensors.update({f"constant:{k}": v for k, v in ep.constants.items()})
    blob = _archive(json.dumps(doc, separators=(",", ":"), allow_nan=False).encode(),
                    tensorfile.dump(tensors))
    if hasattr(path, "write"):
        path.write(blob)
        return
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".safetrace-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _archive(program: bytes, tensors: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo(PROGRAM, (1980, 1, 1, 0, 0, 0)), program,
                   compress_type=zipfile.ZIP_DEFLATED)
        z.writestr(zipfile.ZipInfo(TENSORS, (1980, 1, 1, 0, 0, 0)), tensors,
                   compress_type=zipfile.ZIP_STORED)
    return buf.getvalue()


def document(ep: Any) -> dict:
    """The JSON document of ``ep`` (everything but the tensor data)."""
    nodes = list(ep.graph.nodes)
    names = {n: n.name for n in nodes}
    ref = names.__getitem__
    state_kinds = {s.target: s.kind for s in ep.graph_signature.input_specs
                   if s.kind in ("parameter", "buffer")}
    return {
        "format": FORMAT,
        "version": list(VERSION),
        "torch_version": torch.__version__,
        "symbols": _symbols(ep),
        "nodes": [_node(n, ref) for n in nodes],
        "inputs": [{"kind": s.kind, "name": s.name, "target": s.target, "leaf": s.leaf,
                    "persistent": bool(s.persistent)} for s in ep.graph_signature.input_specs],
        "outputs": [{"kind": s.kind, "target": s.target}
                    for s in ep.graph_signature.output_specs],
        "contract": encode_record(ep.contract),
        "in_spec": encode_spec(ep.in_spec),
        "out_spec": encode_spec(ep.out_spec),
        "range_constraints": [[_sym_name(k), _bound(v.lower), _bound(v.upper)]
                              for k, v in ep.range_constraints.items()],
        "dims_report": [[k, str(v)] for k, v in ep.dims_report.items()],
        "state": [{"name": k, "kind": state_kinds.get(k, "buffer"),
                   "requires_grad": bool(v.requires_grad),
                   "parameter": isinstance(v, torch.nn.Parameter)}
                  for k, v in ep._state.items()],
        "constants": list(ep.constants),
    }


def _node(n: torch.fx.Node, ref: Any) -> dict:
    out: dict = {"name": n.name, "op": n.op}
    if n.op == "call_function":
        out["target"] = target_to_name(n.target)
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
    for name, info in env.symbols.items():
        entry = {"name": name, "backed": bool(info.backed),
                 "hint": info.hint if info.backed else None,
                 "lo": _bound(info.range.lo), "hi": _bound(info.range.hi)}
        if getattr(info, "is_float", False):
            entry["float"] = True  # a float read from data (.item() of a float tensor)
        out.append(entry)
    return out


def _find_env(ep: Any) -> Any:
    for n in ep.graph.nodes:
        stack = [n.meta.get("val")]
        while stack:
            v = stack.pop()
            if isinstance(v, (list, tuple)):
                stack.extend(v)
            elif getattr(v, "env", None) is not None:
                return v.env
            elif hasattr(v, "st_meta"):
                stack.extend(s for s in v.st_meta.shape if not isinstance(s, int))
    return None


def _bound(x: Any) -> int | None:
    return finite_or_none(x)


def _sym_name(k: Any) -> str:
    return k.name if hasattr(k, "name") and isinstance(k.name, str) else str(k)
