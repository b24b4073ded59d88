"""A text digest of exported programs, to show that a change to the tracer leaves them
identical: every node (op, target, arguments, and each ``meta`` entry: the value's sizes,
dtype and layout facts, stack trace, module stack, torch function), the signature, the
contract and ranges, the state (names, sizes, dtypes and a checksum of the values), the
printed program, and ``to_torch()``'s code and module call graph.

Each model is exported three times in one process (the first export fills the tracer's
tables, the later ones replay from them; ``memo.py``), and every export is digested.

Run: PYTHONPATH=$PWD .venv/bin/python benchmarks/program_digest.py OUT.txt [names]
     then ``diff`` two digests (names: ``trace_mlp`` / ``trace_attention`` /
     ``trace_convnet`` or a zoo entry; default: those three, the zoo's hand models, bert)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import safetrace as st  # noqa: E402
from benchmarks.instructions import case  # noqa: E402

DEFAULT = ("trace_mlp", "trace_attention", "trace_convnet", "mlp", "resnet", "unet",
           "transformer_encoder", "lstm_tagger", "gru_tagger", "recommender", "tiny_gpt",
           "data_dependent", "bert")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+|0x[0-9a-f]{6,}")


def show(v: Any, depth: int = 0) -> str:
    """A value of a node's meta as text (no object addresses)."""
    if depth > 6:
        return "..."
    if isinstance(v, torch.Tensor):
        with torch._C.DisableTorchFunction():
            head = f"{type(v).__name__}{tuple(str(s) for s in v.shape)} {v.dtype} {v.device}"
        attrs = _attributes(v)
        facts = {k: show(a, depth + 1) for k, a in sorted(attrs.items())
                 if k.startswith("st_") and k != "st_node"}
        node = attrs.get("st_node")
        return f"{head} node={getattr(node, 'name', None)} {facts}"
    if isinstance(v, torch.fx.Node):
        return f"%{v.name}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{show(k, depth + 1)}: {show(a, depth + 1)}"
                               for k, a in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        inner = ", ".join(show(a, depth + 1) for a in v)
        return f"{type(v).__name__}[{inner}]"
    return _ADDRESS.sub("", repr(v) if not hasattr(v, "expr") else f"sym({v})")


def _attributes(v: Any) -> dict:
    """A value's own attributes: its instance dict's and its classes' slots' (a proxy's
    ``st_meta``, ``st_node``, ``st_contig``, ``st_layout``, ``_st_value`` are slots), less
    a proxy's layout and value at their defaults (``_DEFAULTS``: class defaults before
    they were slots, so that digests of trees before and after compare)."""
    out = dict(vars(v))
    for cls in type(v).__mro__:
        for name in cls.__dict__.get("__slots__", ()):
            if name not in out and hasattr(v, name):
                out[name] = getattr(v, name)
    for name, default in _DEFAULTS.items():
        if name in out and out[name] is default:
            del out[name]
    return out


_DEFAULTS = {"st_contig": True, "st_layout": None, "_st_value": None}


def digest(ep: Any) -> list[str]:
    out = []
    for n in ep.graph.nodes:
        out.append(f"node {n.name} {n.op} {show(n.target)} args={show(n.args)} "
                   f"kwargs={show(n.kwargs)}")
        for k in sorted(n.meta):
            out.append(f"  {k} = {show(n.meta[k])}")
    out.append(f"signature {show(ep.graph_signature.input_specs)}")
    out.append(f"outputs {show(ep.graph_signature.output_specs)}")
    out.append(f"contract {ep.describe_contract()}")
    out.append(f"ranges {show(dict(ep.range_constraints))}")
    out.append(f"dims {show(ep.dims_report)}")
    out.append(f"module_call_graph {show(ep.module_call_graph)}")
    for name, t in ep.state_dict.items():
        with torch._C.DisableTorchFunction():
            total = float(t.double().sum()) if t.numel() and not t.is_complex() else 0.0
        out.append(f"state {name} {tuple(t.shape)} {t.dtype} {total!r}")
    out.append("printed\n" + _ADDRESS.sub("", str(ep)))
    converted = ep.to_torch()
    out.append("to_torch\n" + converted.graph_module.code)
    out.append(f"to_torch signature {converted.graph_signature}")
    for n in converted.graph.nodes:
        out.append(f"  tt {n.name} stack={show(n.meta.get('nn_module_stack'))} "
                   f"trace={show(n.meta.get('stack_trace'))}")
    return out


def main() -> None:
    path, names = Path(sys.argv[1]), sys.argv[2:] or DEFAULT
    lines = []
    for name in names:
        model, args, kwargs, spec = case(name)
        for i in range(3):
            ep = st.export(model, args, kwargs, dynamic_shapes=spec)
            lines.append(f"=== {name} export {i}")
            lines.extend(digest(ep))
        print(name, "ok", flush=True)
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
