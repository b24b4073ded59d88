"""``aten.sort`` as ``aten.topk`` for ExecuTorch (``st.to_executorch``).

ExecuTorch's portable kernels have ``topk`` but no ``sort`` (a ``.pte`` calling it fails
to load: ``Missing operator: aten::sort.values``); transformers' MoE experts sort the
routed expert ids (``torch.sort(expert_ids)`` in ``integrations/moe.py``), so mixtral had
no ``.pte``.  A sort along a dim of ``n`` elements is the ``topk`` of all ``n``, sorted,
the smallest first for an ascending sort: the same values in the same order.  Which of
equal elements comes first is not specified by an unstable sort (eager's own order among
ties is not stable from about 100 elements on), so only those are rewritten; a stable
sort, and a bool one (``topk`` takes no bool), stay as they are and the runtime names the
missing kernel.
"""

from __future__ import annotations

from typing import Any

import torch

aten = torch.ops.aten


def sort_as_topk(x: Any, dim: int = -1, descending: bool = False) -> Any:
    """``aten.sort.default(x, dim, descending)`` through ``aten.topk``."""
    if x.dim() == 0:  # one element: itself, at index 0
        return aten.clone.default(x), aten.zeros_like.default(x, dtype=torch.int64)
    return aten.topk.default(x, x.shape[dim], dim, descending, True)


def _rewritable(node: Any) -> bool:
    val = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    return val is not None and val.dtype != torch.bool


def sort_forms(gm: Any) -> dict:
    """``{aten.sort.default: sort_as_topk}`` when `gm` (or a subgraph) sorts, unstably,
    a tensor ``topk`` takes (every such sort: the decomposition applies to the op, so a
    bool sort anywhere keeps them all); else ``{}``."""
    sorts = [n for m in gm.modules() if isinstance(m, torch.fx.GraphModule)
             for n in m.graph.nodes
             if n.op == "call_function" and n.target is aten.sort.default]
    return {aten.sort.default: sort_as_topk} if sorts and all(map(_rewritable, sorts)) \
        else {}
