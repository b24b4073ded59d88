"""A tensor's strides read from its sizes, for ExecuTorch and ONNX (``st.to_executorch``,
``st.to_onnx``).

``to_torch`` writes a point side's operand in a size split's cond branch (``x[:, 0:1]``
where ``seq == 1``) as an ``as_strided`` of the input, its strides read with
``aten.sym_stride.int`` (``hops.identity_slice``).  ExecuTorch's runtime has no kernel for
that operator: the ``.pte`` was written, and loading it failed (``Missing operator:
aten::sym_stride.int``; measured 2026-12-07, session 37, executorch 1.5.1).  An ExecuTorch
tensor has no strides of its own: they follow from its sizes and its dim order, which
ExecuTorch takes from the strides of the program's fake value.  So where that fake value's
stride is the row-major one of its sizes (every input of a program without a memory
format), ``strides_from_sizes`` writes it as the product of the later dims' sizes
(``sym_size``, ExecuTorch's ``executorch_prim::mul``), the value ExecuTorch's layout gives.
A later size that may be 0 counts as ``max(size, 1)`` (``torch.sym_max``), torch's rule for
a contiguous tensor's strides (a tensor with a 0 has no element to read through them
either way).  A stride the fake value does not give that way is left as it is (the
``.pte`` then fails to load, naming the operator: never a wrong layout).

torch.onnx has no function for ``aten.sym_stride.int`` either: ``st.to_onnx`` rewrites its
own conversion the same way (an ONNX tensor is row-major).
"""

from __future__ import annotations

import operator
from typing import Any

import torch

_aten = torch.ops.aten


def strides_from_sizes(gm: Any) -> int:
    """Rewrite each ``aten.sym_stride.int`` node of `gm` and its graph modules below whose
    tensor's fake value is row-major on the dims after it; returns how many."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    count = 0
    for sub in [m for _, m in gm.named_modules() if isinstance(m, torch.fx.GraphModule)]:
        graph, changed = sub.graph, False
        for node in list(graph.nodes):
            if node.op != "call_function" or node.target is not _aten.sym_stride.int:
                continue
            x, d = node.args
            val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
            if not isinstance(val, torch.Tensor) or not isinstance(d, int):
                continue
            d %= max(val.dim(), 1)
            value: Any = 1
            for size in val.shape[d + 1:]:
                value = value * _row_factor(size, statically_known_true)
            if not _same(value, val.stride(d), statically_known_true):
                continue
            with graph.inserting_before(node):
                total, acc = 1, 1
                for i, size in enumerate(val.shape[d + 1:], start=d + 1):
                    acc = acc * _row_factor(size, statically_known_true)
                    if isinstance(size, int):
                        factor: Any = max(size, 1)
                    else:
                        factor = graph.call_function(_aten.sym_size.int, (x, i))
                        factor.meta["val"] = size
                        if not statically_known_true(size >= 1):  # (may be 0)
                            factor = graph.call_function(torch.sym_max, (factor, 1))
                            factor.meta["val"] = _row_factor(size, statically_known_true)
                    if isinstance(total, int) and isinstance(factor, int):
                        total = total * factor
                    elif isinstance(total, int) and total == 1:
                        total = factor
                    else:
                        total = graph.call_function(operator.mul, (total, factor))
                        total.meta["val"] = acc
            node.replace_all_uses_with(total)
            graph.erase_node(node)
            count, changed = count + 1, True
        if changed:
            sub.recompile()
    return count


def _row_factor(size: Any, known: Any) -> Any:
    """A size's factor in the row-major strides of a contiguous tensor: torch's contiguity
    rule (``c10::contiguous_strides``) multiplies ``max(size, 1)``, so that a dim of 0
    leaves the strides of the dims before it as at 1."""
    if isinstance(size, int):
        return max(size, 1)
    return size if known(size >= 1) else torch.sym_max(size, 1)


def _same(a: Any, b: Any, known: Any) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return bool(known(a == b))
