"""Eager's refusal to write in place into a tensor whose elements overlap.

An in-place pointwise op checks its output (TensorIterator's ``assert_no_internal_overlap``)
and raises "unsupported operation: more than one element of the written-to tensor refers to
a single memory location" where the tensor is not empty and has a dim of size >= 2 with
stride 0 (an ``expand``).  Where the strides of the written tensor are known
(``strides.py``) and one is 0, that condition is the op's own check, made before its
node: a program's ``except RuntimeError`` around ``x.expand(2, n).add_(1)`` catches it
where eager's does (the node was recorded before, and the program raised at run time
where eager ran the except side).  Only the ops in ``CHECKED`` (each tested against
eager; ``fill_``, ``zero_``, ``masked_fill_`` and ``index_fill_`` write an expanded tensor
without an error), and only where the stride-0 dims are known (the strides, or an
``expand``'s new and size-1 dims of any input): elsewhere the kernel decides at run time,
as before.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from safetrace.errors import OpShapeError
from safetrace.errors.base import with_eager_class
from safetrace.rules.common import check
from safetrace.symbolic import sym_and, sym_or
from safetrace.trace.proxy import Proxy
from safetrace.trace.strides import known_strides

MESSAGE = ("unsupported operation: more than one element of the written-to tensor refers to "
           "a single memory location. Please clone() the tensor before performing the "
           "operation.")
# in-place pointwise ops whose kernel checks its output for overlap (tests/trace checks
# each against eager)
CHECKED = ("add_", "sub_", "mul_", "div_", "copy_", "clamp_", "clamp_min_", "clamp_max_",
           "neg_", "abs_", "exp_", "log_", "sqrt_", "sigmoid_", "tanh_", "relu_", "pow_",
           "addcmul_", "addcdiv_", "lerp_", "floor_", "ceil_", "round_", "sin_", "cos_",
           "remainder_", "fmod_", "reciprocal_", "rsqrt_", "sign_", "trunc_")


def _check(name: str) -> Callable[[Any, tuple, dict], None]:
    def no_overlap(tr: Any, args: tuple, kwargs: dict) -> None:
        x = args[0] if args else None
        ok = _apart(x) if type(x) is Proxy else None
        if not ok:
            return
        try:  # (a guard where the sizes are symbolic: eager's own condition)
            # (empty as one test per dim: a product of sizes would relate the Dims)
            check(sym_or(*[n == 0 for n in x.st_meta.shape], sym_and(*ok)), name, MESSAGE)
        except OpShapeError as e:
            raise with_eager_class(e, RuntimeError) from None
    return no_overlap


def _apart(x: Proxy) -> list | None:
    """For each dim of `x` that may have stride 0, the condition that it is no overlap
    (its size below 2, or its stride not 0): from its strides where known, else where `x`
    is an ``expand``'s result, its new leading dims and the dims it expands from a size
    that may be 1 (stride 0 whatever the input's layout); None where not known."""
    found = known_strides(x)
    shape = x.st_meta.shape
    if found is not None:
        return [s <= 1 for s, st in zip(shape, found[0]) if type(st) is int and st == 0]
    node = x.st_node
    if getattr(node, "target", None) is not torch.ops.aten.expand.default:
        return None
    base = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    if type(base) is not Proxy:
        return None
    have = base.st_meta.shape
    lead = len(shape) - len(have)
    return [s <= 1 for s in shape[:lead]] + [
        sym_or(h != 1, s <= 1) for s, h in zip(shape[lead:], have)
        if s is not h and not (type(h) is int and h != 1)]


CHECKS: dict = {}
for _name in CHECKED:
    _packet = getattr(torch.ops.aten, _name)
    for _overload in _packet.overloads():
        CHECKS[getattr(_packet, _overload)] = _check(_name)
