"""What the deploy tools refuse because their retrace would compute another result.

ONNX, ExecuTorch and AOTInductor retrace ``ep.to_torch()``'s program through torch's
functionalization and decompositions; the converted program runs as eager does, but:

* an in-place write one of whose other operands is a view of the written tensor
  (``v.index_add_(0, idx, v[:1].expand(2, n))``) is read, functionally, before the write,
  where eager reads it while writing: row 0 added to itself twice gives 9x in eager, 5x
  functional (``aliased_write``);
* size arithmetic torch's positive symbols simplify into another value at a size of 0
  (``max(n, 1)`` kept as ``n``: 0 elements where eager makes 1; ``folded_at_zero``);
* ``tensor_split(x, k, dim)`` over a symbolic size decomposes by the example's remainder
  (``n % k == 0`` at an even example: every piece ``n // k`` long), a guard the retrace
  drops: at an odd size the first piece loses a row (``retrace_specializes``).  The
  conversion writes the pieces read one by one as slices (``sections.py``); only a
  ``tensor_split`` whose pieces are also read as a whole is left to refuse.

Such a program is refused rather than deployed with another result."""

from __future__ import annotations

import ast
import re
from typing import Any

import torch

from safetrace.errors import interop as EI
from safetrace.interop.hops import FROM_OURS, functional_of, memory_of, reads_written
from safetrace.interop.positivity import folded_at_zero
from safetrace.interop.sections import dynamic_sections

_SECTIONS = torch.ops.aten.tensor_split.sections


def refuse_for_retrace(tep: Any, tool: str, folds: bool = True) -> None:
    """Raise for the first such node in `tep`'s graphs (branches and loop bodies too);
    with `folds`, also for size arithmetic the retrace would fold wrongly at 0
    (`refuse_folded`: st.to_onnx asks where it retraces)."""
    for module in tep.graph_module.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        for node in module.graph.nodes:
            t = node.target
            if node.op == "call_function" and FROM_OURS in node.meta:
                raise _cond_refused(tep, node, tool)
            if node.op != "call_function" or not isinstance(t, torch._ops.OpOverload):
                continue
            if t is _SECTIONS and dynamic_sections(node):
                raise EI.retrace_specializes(node.name, str(t), _where(node), tool)
            if not t._schema.is_mutable or functional_of(t) is None or \
                    not node.args or not isinstance(node.args[0], torch.fx.Node):
                continue
            if reads_written(node, memory_of(node.args[0])):
                raise EI.aliased_write(node.name, str(t), _where(node), tool,
                                       _cloned_line(node))
    if folds:
        refuse_folded(tep, tool)


def refuse_cond_from_ours(tep: Any, tool: str, exc: BaseException) -> None:
    """Raise for a cond whose value the conversion made from ours (`_cond_refused`), from
    `exc`: torch's error where ``tep.run_decompositions()`` stopped
    (``GuardOnDataDependentSymNode`` inside torch's cond)."""
    for module in tep.graph_module.modules():
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
                if node.op == "call_function" and FROM_OURS in node.meta:
                    raise _cond_refused(tep, node, tool) from exc


def refuse_folded(tep: Any, tool: str) -> None:
    """Raise where the retrace would keep torch's value of a size node, simplified on
    positive sizes, that differs at a size of 0 the program accepts
    (``interop/positivity.py``)."""
    folded = folded_at_zero(tep.graph)
    if folded is not None:
        node, symbol = folded
        labels = tep.graph_module.meta.get("safetrace_dim_labels") or {}
        raise EI.folded_at_zero(node.name, _where(node), labels.get(symbol, symbol), tool)


def _cond_refused(tep: Any, node: torch.fx.Node, tool: str) -> Exception:
    """The refusal of a cond whose value the conversion made from ours (`hops.hop_value`):
    torch's cond, run again by `tool`'s retrace, would raise its internal error."""
    where, splits = node.meta[FROM_OURS]
    return EI.cond_not_retraceable(node.name, where, splits, tool, _dim_fix(splits))


def _dim_fix(splits: str) -> str:
    """`` (e.g. Dim('d0', min=2, max=8))`` for a split whose main side is ``2 <= d0 <= 8``
    (``d0 >= 2``), else ''."""
    m = re.search(r"size split on `(?:(\d+) <= )?(\w+)(?: <= (\d+)| >= (\d+))?`", splits)
    if m is None or (m.group(1) is None and m.group(4) is None):
        return ""
    lo = m.group(1) or m.group(4)
    hi = f", max={m.group(3)}" if m.group(3) else ""
    return f" (e.g. Dim({m.group(2)!r}, min={lo}{hi}) for the split's side `{m.group(0)[15:-1]}`)"


def _cloned_line(write: torch.fx.Node) -> str | None:
    """The user's line of `write` with the operand that aliases the written tensor copied
    (``v.index_add_(0, i, v[:1].expand(2, n))`` -> ``... v[:1].expand(2, n).clone())``), the
    fix as code; None where the line's call cannot be matched to the operand."""
    trace = (write.meta.get("stack_trace") or "").strip().splitlines()
    if not trace:
        return None
    line = trace[-1].strip()
    memory = memory_of(write.args[0])
    aliased = [k for k, a in enumerate(write.args[1:], start=1)
               if isinstance(a, torch.fx.Node) and memory_of(a) is memory]
    name = write.target._schema.name.split("::")[-1]
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return None
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and
             isinstance(c.func, ast.Attribute) and c.func.attr == name]
    if len(calls) != 1 or len(aliased) != 1:
        return None
    k = aliased[0] - 1  # (the method's receiver is argument 0)
    if k >= len(calls[0].args):
        return None
    operand = ast.get_source_segment(line, calls[0].args[k])
    if operand is None:
        return None
    arg = calls[0].args[k]
    start, end = arg.col_offset, arg.end_col_offset
    return f"{line[:start]}{operand}.clone(){line[end:]}"


def _where(node: torch.fx.Node) -> str:
    trace = (node.meta.get("stack_trace") or "").strip().splitlines()
    return f" (at {trace[-2].strip()} `{trace[-1].strip()}`)" if len(trace) >= 2 else ""
