"""``torch.roll`` over a dim that may be 0, written without a division by that size.

Both deploy runtimes divide by the rolled dim's size: ExecuTorch's portable ``roll`` kernel
(the ``.pte`` stopped the process at 0 with SIGFPE, so ``st.to_executorch`` refused such a
program up front) and torch.onnx's function for ``aten.roll`` (onnxruntime: ``Integer
modulo by zero`` at 0, where ``ep.module()`` returns an empty tensor; measured
2026-12-07 with ``benchmarks/deploy_sizes.py``, ``torch.roll(z, 1, 0)``, ``Dim(max=16)``).
``roll_by_index`` writes each such roll of our conversion as the gather it is: along each
rolled dim of size n, ``index_select(x, d, (arange(n) - shift) % max(n, 1))``, the divisor a
tensor clamped to 1 (the index is empty at n == 0, so the value is never used there), the
dividend made non-negative (``+ max(n, 1) * |shift|``) so that every runtime's remainder
agrees with Python's.
"""

from __future__ import annotations

from typing import Any

import torch

_aten = torch.ops.aten


def roll_by_index(tep: Any) -> int:
    """Rewrite the ``aten.roll`` nodes of `tep`'s graphs that name their dims and roll a
    dim of symbolic size that may be 0; returns how many."""
    count = 0
    for gm in [m for m in tep.graph_module.modules() if isinstance(m, torch.fx.GraphModule)]:
        changed = False
        for node in list(gm.graph.nodes):
            if node.op == "call_function" and node.target is _aten.roll.default and \
                    _rewrite(gm.graph, node):
                count, changed = count + 1, True
        if changed:
            gm.graph.lint()
            gm.recompile()
    return count


def _rewrite(graph: torch.fx.Graph, node: torch.fx.Node) -> bool:
    x = node.args[0]
    shifts = node.args[1] if len(node.args) > 1 else node.kwargs.get("shifts")
    dims = node.args[2] if len(node.args) > 2 else node.kwargs.get("dims", ())
    val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or not dims:
        return False
    shifts, dims = list(shifts), [d % val.dim() for d in dims]
    if len(shifts) != len(dims) or not all(isinstance(s, int) for s in shifts) or \
            not any(_may_be_zero(val.shape[d]) for d in dims):
        return False
    mode = getattr(val, "fake_mode", None)
    if mode is None:
        return False

    def make(target: Any, args: tuple, kwargs: dict | None = None) -> torch.fx.Node:
        new = graph.call_function(target, args, kwargs or {})
        vals = torch.fx.node.map_arg(args, lambda a: a.meta["val"])
        with mode:
            new.meta["val"] = target(*vals, **(kwargs or {}))
        for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
            if key in node.meta:
                new.meta[key] = node.meta[key]
        return new

    with graph.inserting_before(node):
        out = x
        for shift, d in zip(shifts, dims):
            size = val.shape[d]
            n = make(_aten.sym_size.int, (x, d)) if isinstance(size, torch.SymInt) else size
            where = make(_aten.arange.start, (0, n), {"dtype": torch.int64})
            count = make(_aten.scalar_tensor.default, (n,), {"dtype": torch.int64})
            divisor = make(_aten.clamp_min.default, (count, 1))
            # (i - shift) % m as (i + m * |shift| - shift) % m: no negative operand, so C's
            # remainder (ExecuTorch's kernel gave -1 for (0 - 1) % 5) is Python's
            offset = make(_aten.sub.Tensor, (make(_aten.mul.Tensor, (divisor, abs(shift))),
                                              shift))
            index = make(_aten.remainder.Tensor, (make(_aten.add.Tensor, (where, offset)),
                                                  divisor))
            out = make(_aten.index.Tensor, (out, [None] * d + [index]))
    node.replace_all_uses_with(out)
    graph.erase_node(node)
    return True


def _may_be_zero(size: Any) -> bool:
    if not isinstance(size, torch.SymInt):
        return False
    try:
        return bool(size.node.shape_env.bound_sympy(size.node.expr).lower <= 0)
    except Exception:  # noqa: BLE001 - a range torch cannot bound: may be 0
        return True
