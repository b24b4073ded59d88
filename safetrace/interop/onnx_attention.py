"""Masked attention for ``st.to_onnx``: torch's own operator, then a row with every
position masked set to 0.

torch's ONNX function of ``scaled_dot_product_attention`` masks with the dtype's lowest
value instead of ``-inf``: where a row keeps a position, exp(lowest - max) = 0 as -inf's
weight is, so the rows agree; a row whose every position is masked (a left-padded
prompt's padding) averages every position there, where torch's kernels give 0.  The
form keeps the operator (one ONNX function, as torch.onnx exports it) and sets those
rows to 0 from the mask itself: an ``any`` and a ``where`` per call, where decomposing
the whole attention into core ATen (``composites.sdpa``) cost the ONNX export's retrace
and translation about a dozen operators per call (GPT-2: st.to_onnx slower than
torch.onnx).  ``is_causal`` alone needs no form: row i keeps key 0.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import torch

aten = torch.ops.aten
_SDPA = aten.scaled_dot_product_attention.default
_HERE = threading.local()  # .inside: the form's own call of the operator (kept as is)


def masked_attention(gm: torch.fx.GraphModule) -> dict:
    """``{sdpa: form}`` when `gm` (or a subgraph) calls ``scaled_dot_product_attention``
    with a mask and no dropout, else ``{}``."""
    masked = False
    for m in gm.modules():
        if not isinstance(m, torch.fx.GraphModule):
            continue
        for n in m.graph.nodes:
            if n.op != "call_function" or n.target is not _SDPA:
                continue
            mask, dropout = mask_and_dropout(n)
            if dropout:
                return {}
            masked = masked or mask is not None
    return {_SDPA: zero_masked_rows} if masked else {}


def mask_and_dropout(node: torch.fx.Node) -> tuple[Any, Any]:
    """The ``attn_mask`` and ``dropout_p`` of a ``scaled_dot_product_attention`` node."""
    mask = node.args[3] if len(node.args) > 3 else node.kwargs.get("attn_mask")
    dropout = node.args[4] if len(node.args) > 4 else node.kwargs.get("dropout_p", 0.0)
    return mask, dropout


def empty_rows(mask: Any, dtype: torch.dtype, call: Any) -> Any:
    """The rows of `mask` (of `dtype`) that mask every position (True there), computed
    with ``call(op, *args)``: on values, or as nodes of a graph (``onnx_lean``)."""
    if dtype == torch.bool:
        return call(aten.logical_not.default, call(aten.any.dim, mask, -1, True))
    # (an additive mask: a row of -inf only)
    return call(aten.eq.Scalar, call(aten.amax.default, mask, [-1], True), -math.inf)


def _apply(op: Any, *args: Any) -> Any:
    return op(*args)


def zero_masked_rows(q: Any, k: Any, v: Any, attn_mask: Any = None, dropout_p: float = 0.0,
                     is_causal: bool = False, scale: Any = None,
                     enable_gqa: bool = False) -> Any:
    """``scaled_dot_product_attention`` as it is, 0 on the rows its mask masks whole.
    Within the decomposition the form's own call comes back here: NotImplemented then
    keeps the operator in the graph (torch.onnx translates it)."""
    if getattr(_HERE, "inside", False):
        return NotImplemented
    _HERE.inside = True
    try:
        out = _SDPA(q, k, v, attn_mask, dropout_p, is_causal, scale=scale,
                    enable_gqa=enable_gqa)
    finally:
        _HERE.inside = False
    if attn_mask is None or dropout_p:
        return out
    empty = empty_rows(attn_mask, attn_mask.dtype, _apply)
    zero = aten.full.default([], 0.0, dtype=out.dtype, device=out.device)
    return aten.where.self(empty, zero, out)
