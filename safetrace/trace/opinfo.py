"""What the tracer knows about an ATen op, computed once per op and kept until the rule
registry changes: its node name, whether it writes an input or returns one, its shape rule,
its result's layout, its index check and span note (index_ranges.py) or its overlap check
(overlap.py), and the named
return type of its results."""

from __future__ import annotations

from typing import Any

import torch

from safetrace.rules import get_rule, registry
from safetrace.trace import memo
from safetrace.trace.index_ranges import CHECKS, SPANS
from safetrace.trace.layout import layout_kind
from safetrace.trace.mutation import mutates, returns_self
from safetrace.trace.overlap import CHECKS as OVERLAP
from safetrace.trace.values import VALUE_OPS

# op -> (node name, mutates an input, returns self, shape rule, carries a known value,
# result layout kind, memory_format argument index, the op, its index check (CHECKS) and
# what its result spans (SPANS), index_ranges.py).
# Keyed by id (an OpOverload hashes in Python; the record holds the op, so the id stays
# its own); one lookup per traced op; cleared when the rule registry changes.
OP_INFO: dict[int, tuple] = {}


def op_info(op: Any) -> tuple:
    info = OP_INFO[id(op)] = (op._opname, mutates(op), returns_self(op),
                               get_rule(op), op in VALUE_OPS, *layout_kind(op),
                               op,  # (keeps its id valid)
                               CHECKS.get(op) or OVERLAP.get(op), SPANS.get(op))
    return info


_OP_INFO_VERSION: list = [None]

# In-place ops that change the shape or strides of their first argument (not its values)
RESHAPES_SELF = frozenset({"t_", "transpose_", "swapaxes_", "swapdims_", "squeeze_",
                            "unsqueeze_", "as_strided_", "resize_", "resize_as_"})


def refresh_op_info() -> None:
    """Forget cached rules, and the calls remembered with them (memo.py), when the
    registry changed since (called once per trace)."""
    version = (registry.VERSION[0], len(registry.RULES))
    if version != _OP_INFO_VERSION[0]:
        OP_INFO.clear()
        memo.refresh()
        _OP_INFO_VERSION[0] = version


_RETURN_TYPES: dict[Any, Any] = {}


def return_type(op: Any) -> Any:
    """torch.return_types.<op> when the op's results are named (max.dim -> values, indices)."""
    if op not in _RETURN_TYPES:
        cls = None
        returns = getattr(op, "_schema", None) and op._schema.returns
        if returns and len(returns) > 1 and all(r.name for r in returns):
            cls = getattr(torch.return_types, op._opname, None)
        _RETURN_TYPES[op] = cls
    return _RETURN_TYPES[op]
