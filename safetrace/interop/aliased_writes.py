"""Deploy tools refuse an in-place write that reads the tensor it writes.

ONNX, ExecuTorch and AOTInductor retrace ``ep.to_torch()``'s program into functional
operators; an in-place write one of whose other operands is a view of the written tensor
(``v.index_add_(0, idx, v[:1].expand(2, n))``) then reads that operand before the write,
where eager (and the converted program, run as it is) reads it while writing: row 0 added
to itself twice gives 9x in eager, 5x functional.  Such a program is refused with
``aliased_write`` rather than deployed with another result."""

from __future__ import annotations

from typing import Any

import torch

from safetrace.errors import interop as EI
from safetrace.interop.hops import functional_of, memory_of, reads_written


def refuse_aliased_writes(tep: Any, tool: str) -> None:
    """Raise ``aliased_write`` for the first such write in `tep`'s graphs (its branches
    and loop bodies included)."""
    for module in tep.graph_module.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        for node in module.graph.nodes:
            t = node.target
            if node.op != "call_function" or not isinstance(t, torch._ops.OpOverload) or \
                    not t._schema.is_mutable or functional_of(t) is None or \
                    not node.args or not isinstance(node.args[0], torch.fx.Node):
                continue
            if reads_written(node, memory_of(node.args[0])):
                raise EI.aliased_write(node.name, str(t), _where(node), tool)


def _where(node: torch.fx.Node) -> str:
    trace = (node.meta.get("stack_trace") or "").strip().splitlines()
    return f" (at {trace[-2].strip()} `{trace[-1].strip()}`)" if len(trace) >= 2 else ""
