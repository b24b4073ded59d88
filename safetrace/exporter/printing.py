"""Readable printing of exported graphs: shapes per value, the user's line per group."""

from __future__ import annotations

from typing import Any

import torch

from safetrace.exporter.split_report import describe
from safetrace.meta import TensorMeta
from safetrace.trace.hops import submodules
from safetrace.trace.proxy import Proxy, annotation, current
from safetrace.trace.source import location


def value_annotation(val: Any) -> str:
    if isinstance(val, Proxy):
        return annotation(val.st_meta)
    if isinstance(val, torch.Tensor):
        return annotation_of_tensor(val)
    if hasattr(val, "expr"):
        return f"Sym({current(val)})"
    if getattr(val, "opaque", False):
        return f"Sym({val._symbolic_str()})"
    if isinstance(val, (list, tuple)):
        return "(" + ", ".join(value_annotation(v) for v in val) + ")" if val else "()"
    return ""


def annotation_of_tensor(t: torch.Tensor) -> str:
    return annotation(TensorMeta(tuple(t.shape), t.dtype, t.device))


def target_name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        ns, rest = target.name().split("::")
        return f"torch.ops.{ns}.{rest.replace('.', '.')}" + (
            "" if "." in rest else ".default")
    mod = getattr(target, "__module__", "") or ""
    name = getattr(target, "__name__", repr(target))
    if mod in ("_operator", "operator"):
        return f"operator.{name}"
    return f"{mod}.{name}" if mod else name


def format_arg(a: Any) -> str:
    if isinstance(a, torch.fx.Node):
        return a.name
    if isinstance(a, (list, tuple)):
        inner = ", ".join(format_arg(x) for x in a)
        if isinstance(a, list):
            return f"[{inner}]"
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, torch.dtype):
        return str(a)
    if isinstance(a, torch.device):
        return f"device(type='{a.type}'" + (f", index={a.index})" if a.index is not None else ")")
    return repr(a)


def print_readable(graph: torch.fx.Graph, name: str = "GraphModule") -> str:
    """The graph as Python: annotated values, grouped under the user's source lines."""
    params = []
    body: list[str] = []
    last_loc = None
    for node in graph.nodes:
        if node.op == "placeholder":
            ann = value_annotation(node.meta.get("val"))
            params.append(f'{node.name}: "{ann}"' if ann else node.name)
        elif node.op == "call_function":
            loc = location(node.meta.get("stack_trace", ""))
            if loc != last_loc:
                last_loc = loc
                body.append("")
                body.append(f"# {loc}" if loc else "# No stacktrace found for following nodes")
            args = [format_arg(a) for a in node.args]
            args += [f"{k} = {format_arg(v)}" for k, v in node.kwargs.items()]
            ann = value_annotation(node.meta.get("val"))
            lhs = f'{node.name}: "{ann}"' if ann else node.name
            body.append(f"{lhs} = {target_name(node.target)}({', '.join(args)})")
        elif node.op == "get_attr":  # a control-flow operator's subgraph
            body.append(f"{node.name} = self.{node.target}")
        elif node.op == "output":
            body.append(f"return {format_arg(node.args[0])}")
    lines = [f"class {name}(torch.nn.Module):",
             f"    def forward(self, {', '.join(params)}):"]
    # its splits (exporter/split_report.py): which sizes run which graph
    lines += [f"        # {line}" for line in describe(graph)]
    lines += [f"        {b}" if b else "" for b in body]
    for sub_name, sub in submodules(graph).items():
        lines.append("")
        lines += [f"    {s}" if s else "" for s in
                  print_readable(sub.graph, sub_name).rstrip("\n").split("\n")]
    return "\n".join(lines) + "\n"
