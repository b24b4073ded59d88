"""Branch outputs of a converted cond that torch's retrace takes.

A size split's side is traced for its own sizes and may return a view of an input
(``x.flatten()``, ``z[:0]``, ``x.squeeze(0)``) or one tensor twice: eager returns views.
torch's cond runs (``.module()``), and its fake merges them, but every tool that traces
the program again through functionalization (``run_decompositions``, hence ExecuTorch,
torch.onnx's own path) stops at torch's ``cond_true might be aliasing the input or the
output!`` (its ``_check_alias_and_mutation``).  Such an output becomes a copy
(``aten.clone``): the same values, and a cond's outputs are new tensors in torch's
semantics anyway (a write to one never reached the input in a torch.cond).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.interop.hops import memory_of

_CLONE = torch.ops.aten.clone.default


def unaliased_outputs(op: Any, args: tuple) -> None:
    """For a cond (`op` on converted `args`): each tensor output of its branch
    GraphModules that is an input, a view of one, or the memory of an earlier output
    made a ``clone`` of itself, in place."""
    if op is not torch.ops.higher_order.cond or len(args) < 3:
        return
    for gm in args[1:3]:
        if isinstance(gm, torch.fx.GraphModule):
            _unalias(gm)


def _unalias(gm: torch.fx.GraphModule) -> None:
    out = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    seen: set = set()
    changed = False

    def copy(n: Any) -> Any:
        nonlocal changed
        val = n.meta.get("val") if isinstance(n, torch.fx.Node) else None
        if not isinstance(val, torch.Tensor):
            return n
        base = memory_of(n)
        if base.op != "placeholder" and base not in seen:
            seen.add(base)
            return n
        with gm.graph.inserting_before(out):
            new = gm.graph.call_function(_CLONE, (n,))
        new.meta["val"] = _CLONE(val)
        if "stack_trace" in n.meta:
            new.meta["stack_trace"] = n.meta["stack_trace"]
        changed = True
        return new

    out.args = (torch.fx.node.map_aggregate(out.args[0], copy),)
    if changed:
        gm.recompile()
