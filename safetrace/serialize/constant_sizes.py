"""Sizes read from the values of a loaded program's own constants, at load.

``bincount``, ``one_hot``, ``.item()`` then ``zeros``, ``repeat_interleave``, ``nonzero``:
a small constant can ask for a huge result.  ``memory.StaticMemory`` reads the size from
the constant itself (never from the file's metadata), unless the program writes it.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from safetrace.meta import TensorMeta

aten = torch.ops.aten
UNKNOWN = object()  # a size not read here
_CPU = torch.device("cpu")
# sizes read from a tensor's values: op -> how (see from_data)
_ITEM = frozenset((aten.item.default, aten._local_scalar_dense.default))


def from_data(op: Any, node: torch.fx.Node, args: Any, kwargs: dict, data: dict) -> Any:
    """The result (a number, or a meta tensor of the size) of an op whose size is read
    from the values of a constant the program never writes."""
    src = node.args[0] if node.args else None
    t = data.get(src) if isinstance(src, torch.fx.Node) else None
    if t is None:
        return UNKNOWN
    name = op._opname
    if op in _ITEM:
        return t.item() if t.numel() == 1 and not t.is_complex() else UNKNOWN
    if name == "bincount" and t.dim() == 1 and not t.is_floating_point():
        minlength = args[2] if len(args) > 2 else kwargs.get("minlength", 0)
        n = max(int(t.max()) + 1 if t.numel() else 0, minlength if isinstance(minlength, int)
                else 0)
        weights = args[1] if len(args) > 1 else kwargs.get("weights")
        # (eager's dtype: int64 counts, or the weights' floating dtype, else float64; an
        # empty input gives int64 zeros)
        dtype = torch.int64 if not isinstance(weights, TensorMeta) or not t.numel() else \
            weights.dtype if weights.dtype.is_floating_point else torch.float64
        return TensorMeta((max(n, 0),), dtype, _CPU)
    if name == "one_hot" and not t.is_floating_point():
        classes = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
        if not isinstance(classes, int):
            return UNKNOWN
        if classes < 0:
            classes = int(t.max()) + 1 if t.numel() else 0
        return TensorMeta((*t.shape, max(classes, 0)), torch.int64, _CPU)
    if name == "repeat_interleave" and op._overloadname == "Tensor" and t.dim() <= 1 and \
            not t.is_floating_point():
        return TensorMeta((int(t.sum()) if t.numel() else 0,), torch.int64, _CPU)
    if name == "repeat_interleave" and op._overloadname == "self_Tensor":
        return _repeated(node, args, kwargs, data)
    if name == "nonzero":
        return TensorMeta((int(torch.count_nonzero(t)), t.dim()), torch.int64, _CPU)
    return UNKNOWN


def _repeated(node: torch.fx.Node, args: Any, kwargs: dict, data: dict) -> Any:
    """``repeat_interleave(self, repeats)`` with ``repeats`` a constant's values."""
    src = node.args[1] if len(node.args) > 1 else node.kwargs.get("repeats")
    r = data.get(src) if isinstance(src, torch.fx.Node) else None
    this = args[0]
    dim = args[2] if len(args) > 2 else kwargs.get("dim")
    if r is None or r.is_floating_point() or r.dim() > 1 or not isinstance(this, TensorMeta):
        return UNKNOWN
    size = list(this.shape) if dim is not None else [math.prod(this.shape)]
    dim = 0 if dim is None else dim
    if not isinstance(dim, int) or not -len(size) <= dim < max(len(size), 1):
        return UNKNOWN
    size = size or [1]
    n = int(r.sum()) if r.numel() != 1 else int(r.reshape(())) * size[dim]
    size[dim] = max(n, 0)
    return TensorMeta(tuple(size), this.dtype, _CPU)
