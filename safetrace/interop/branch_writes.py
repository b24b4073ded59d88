"""A user input that a ``cond``'s branch writes in place, written back after the cond.

A size split's sides (and a user's ``torch.cond``) may write an input in place
(``y.neg_()``) and return it. torch's cond takes functional branches only, so the
conversion makes each branch's writes functional (``hops.functional_writes``): the branch
then returns the input's new value, and nothing writes it into the caller's tensor any
more. Eager (and our own ``ep.module()``) leaves the caller's tensor written; the converted
program left it as it was (fuzz seed 3991: ``inputs after`` differed at every size).

Here the converted program's top graph gets ``aten.copy_(input, cond[k])`` after the cond
for each output ``k`` that a branch returns as a written user input; torch's training IR
keeps that write, and its ``run_decompositions`` (ONNX, ExecuTorch) makes it the program's
input mutation. A buffer written the same way is already one of the program's buffer
mutation outputs, so only user inputs are written back here.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from safetrace.interop.hops import memory_of
from safetrace.trace.hops import submodules

_COND = torch.ops.higher_order.cond


def written_outputs(branch: Any) -> dict[int, int]:
    """``{output position: operand position}`` for each output of `branch` that is one of
    its inputs written in place in it (directly, through a view, or inside a cond of its
    own that hands the written input back)."""
    inputs = [n for n in branch.graph.nodes if n.op == "placeholder"]
    written = _written(branch)
    out = next(n for n in reversed(branch.graph.nodes) if n.op == "output")
    vals = out.args[0] if isinstance(out.args[0], (tuple, list)) else (out.args[0],)
    found = {}
    for k, v in enumerate(vals):
        p = _input_of(v)
        if p is not None and p in written:
            found[k] = inputs.index(p)
    return found


def _written(branch: Any) -> set:
    """The placeholders of `branch` that an op in it writes in place."""
    found = set()
    for n in branch.graph.nodes:
        if n.op != "call_function":
            continue
        t = n.target
        if isinstance(t, torch._ops.OpOverload) and t._schema.is_mutable and n.args and \
                isinstance(n.args[0], torch.fx.Node):
            base = memory_of(n.args[0])
            if base.op == "placeholder":
                found.add(base)
        elif t is _COND:
            for j in _cond_writes(n).values():
                base = memory_of(n.args[3][j]) if isinstance(n.args[3][j], torch.fx.Node) \
                    else None
                if base is not None and base.op == "placeholder":
                    found.add(base)
    return found


def _cond_writes(node: torch.fx.Node) -> dict[int, int]:
    """`written_outputs` of either branch of the cond `node`."""
    found = {}
    subs = submodules(node.graph)
    for arg in node.args[1:3]:
        if isinstance(arg, torch.fx.Node) and arg.op == "get_attr":
            sub = subs.get(arg.target)
            if sub is not None:
                found.update(written_outputs(sub))
    return found


def _input_of(v: Any) -> Any:
    """The placeholder `v` is (itself, or a cond's output that hands it back)."""
    if not isinstance(v, torch.fx.Node):
        return None
    if v.op == "placeholder":
        return v
    if v.op == "call_function" and v.target is operator.getitem and \
            isinstance(v.args[0], torch.fx.Node) and v.args[0].target is _COND:
        cond = v.args[0]
        j = _cond_writes(cond).get(v.args[1])
        if j is not None and isinstance(cond.args[3][j], torch.fx.Node):
            return _input_of(cond.args[3][j])
    return None


def write_back(conv: Any, node: torch.fx.Node, user_inputs: set) -> None:
    """After the converted cond of our cond `node` (in the program's top graph), copy each
    output a branch returns as a written user input into that input."""
    writes = _cond_writes(node)
    if not writes:
        return
    new = conv.env[node]
    val = new.meta.get("val")
    last = new
    for k, j in sorted(writes.items()):
        operand = node.args[3][j]
        if not (isinstance(operand, torch.fx.Node) and operand.op == "placeholder" and
                operand.name in user_inputs):
            continue
        with conv.graph.inserting_after(last):
            part = conv.graph.call_function(operator.getitem, (new, k))
        part.meta["val"] = val[k] if isinstance(val, (tuple, list)) else None
        with conv.graph.inserting_after(part):
            target = conv.env[operand]
            copy = conv.graph.call_function(torch.ops.aten.copy_.default, (target, part))
        copy.meta["val"] = target.meta.get("val")
        last = copy
