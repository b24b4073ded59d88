"""Forms of core ATen operators that ExecuTorch's runtime or passes lack
(``st.to_executorch``), decomposed with ``to_edge``'s table.

- ``aten.sort`` as ``aten.topk``: ExecuTorch's portable kernels have ``topk`` but no
  ``sort`` (a ``.pte`` calling it fails to load: ``Missing operator: aten::sort.values``);
  transformers' MoE experts sort the routed expert ids (``torch.sort(expert_ids)`` in
  ``integrations/moe.py``), so mixtral had no ``.pte``.  A sort along a dim of ``n``
  elements is the ``topk`` of all ``n``, sorted, the smallest first for an ascending sort:
  the same values in the same order.  Which of equal elements comes first is not specified
  by an unstable sort (eager's own order among ties is not stable from about 100 elements
  on), so only those are rewritten; a stable sort, and a bool one (``topk`` takes no bool),
  stay as they are and the runtime names the missing kernel.
- ``aten.empty.memory_format`` as ``aten.full`` of 0: ExecuTorch's memory-format pass
  turns ``empty`` into its ``_empty_dim_order``, whose size is ``int[]``, so a dynamic size
  was read as the example's (``inv_perm = torch.empty_like(perm)`` in the same MoE code:
  the whole ``.pte`` specialized ``seq`` to the example's length).  An empty tensor's values
  are unspecified, so zeros are one of them; ``full`` keeps the size symbolic.
"""

from __future__ import annotations

from typing import Any

import torch

aten = torch.ops.aten
# physical order of a memory format (the dims, outermost first), and back
_ORDER = {torch.channels_last: (0, 2, 3, 1), torch.channels_last_3d: (0, 2, 3, 4, 1)}


def sort_as_topk(x: Any, dim: int = -1, descending: bool = False) -> Any:
    """``aten.sort.default(x, dim, descending)`` through ``aten.topk``."""
    if x.dim() == 0:  # one element: itself, at index 0
        return aten.clone.default(x), aten.zeros_like.default(x, dtype=torch.int64)
    return aten.topk.default(x, x.shape[dim], dim, descending, True)


def empty_as_full(size: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: Any = None, memory_format: Any = None) -> Any:
    """``aten.empty.memory_format``: zeros (one of its values), laid out as asked."""
    order = _ORDER.get(memory_format, tuple(range(len(size))))
    if len(order) != len(size):
        order = tuple(range(len(size)))
    full = aten.full.default([size[d] for d in order], 0, dtype=dtype, layout=layout,
                             device=device, pin_memory=pin_memory)
    back = [order.index(d) for d in range(len(order))]
    return full if back == list(range(len(back))) else aten.permute.default(full, back)


def _sorts_unstably(node: Any) -> bool:
    val = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    return val is not None and val.dtype != torch.bool


def executorch_forms(gm: Any) -> dict:
    """``{op: form}`` for the operators above that `gm` (or a subgraph) calls: ``sort``
    when every sort there is one ``topk`` takes (the decomposition applies to the op), and
    ``empty`` when an ``empty`` variant is called (``empty_like`` and our
    ``empty_permuted`` form become it)."""
    nodes = [n for m in gm.modules() if isinstance(m, torch.fx.GraphModule)
             for n in m.graph.nodes if n.op == "call_function"]
    sorts = [n for n in nodes if n.target is aten.sort.default]
    forms: dict = {}
    if any(str(n.target).startswith(_EMPTIES) for n in nodes):
        forms[aten.empty.memory_format] = empty_as_full
    if sorts and all(map(_sorts_unstably, sorts)):
        forms[aten.sort.default] = sort_as_topk
    return forms


# the operators whose decompositions end in ``empty.memory_format``
_EMPTIES = ("aten.empty", "aten.new_empty")  # (empty_like, empty_permuted too)
