"""Control flow (cond, while_loop, map, scan) in a converted program.

Our graphs already call torch's own higher-order operators on ``get_attr`` subgraphs, the
structure torch.export produces.  Each subgraph is converted like the program itself, node
for node over the same ShapeEnv (its placeholders get fake values of our shapes; a size
known only inside, such as a loop's changing length, a fresh unbacked torch symbol), into a
GraphModule the operator node names; the operator's own fake implementation then gives the
node's value, compared with ours like every other node's.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.errors import interop as EI
from safetrace.interop.contract import evaluate
from safetrace.interop.hierarchy import Boundaries
from safetrace.symbolic import to_expr
from safetrace.symbolic.expr import sym
from safetrace.trace.hops import submodules


def convert_get_attr(conv: Any, node: torch.fx.Node, owner: torch.fx.Graph) -> torch.fx.Node:
    """The new graph's get_attr for our subgraph `node` names, its module converted."""
    sub = submodules(owner).get(node.target)
    if sub is None:
        raise EI.not_a_subgraph(node.name, str(node.target))
    gm = convert_subgraph(conv, sub.graph)
    conv.attrs[node.target] = gm
    new = conv.graph.get_attr(node.target)
    conv.submodule_of[new] = gm
    return new


def convert_subgraph(conv: Any, graph: torch.fx.Graph) -> torch.fx.GraphModule:
    saved = (conv.graph, conv.env, conv.bounds, conv.stacks, conv.attrs)
    conv.graph, conv.env, conv.stacks, conv.attrs = torch.fx.Graph(), {}, {}, {}
    conv.bounds = Boundaries(conv, None, {})  # preserved calls never reach inside
    try:
        for n in graph.nodes:
            if n.op == "placeholder":
                new = conv.graph.placeholder(n.name)
                new.meta["val"] = fake_of(conv, n.meta.get("val"))
                conv.env[n] = new
            elif n.op == "get_attr":
                conv.env[n] = convert_get_attr(conv, n, graph)
            elif n.op == "call_function":
                conv.call_node(n)
            elif n.op == "output":
                conv.graph.output(torch.fx.node.map_arg(n.args[0], conv.env.__getitem__))
        root = torch.nn.Module()
        for name, gm in conv.attrs.items():
            root.add_module(name, gm)
        return torch.fx.GraphModule(root, conv.graph)
    finally:
        conv.graph, conv.env, conv.bounds, conv.stacks, conv.attrs = saved


def fake_of(conv: Any, val: Any) -> Any:
    """A fake value of our value `val` (a traced tensor, a symbolic or plain int)."""
    if isinstance(val, torch.Tensor):
        sizes = [torch_size(conv, s) for s in val.shape]
        return torch.empty(sizes, dtype=val.dtype, device=val.device)
    if hasattr(val, "expr") and hasattr(val, "env"):
        return torch_size(conv, val)
    return val


def torch_size(conv: Any, s: Any) -> Any:
    """Our size as a torch SymInt (or int); a symbol torch does not know yet, one born
    inside a subgraph, becomes a fresh unbacked one."""
    if isinstance(s, int):
        return s
    e = to_expr(s.env.simplify(s.expr) if hasattr(s, "env") else s)
    em = conv.emitter
    for name in sorted(e.free_symbols):
        if name not in em.values:
            with conv.shape_env.ignore_fresh_unbacked_symbols():
                u = conv.shape_env.create_unbacked_symint()
            em.values[name] = u
            em.symbol_names[u.node.expr] = sym(name)
    return evaluate(e, em.values)
