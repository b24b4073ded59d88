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
without an error), and only where the strides are known: elsewhere the kernel decides at
run time, as before.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from safetrace.errors import OpShapeError
from safetrace.errors.base import with_eager_class
from safetrace.rules.common import check
from safetrace.symbolic import sym_or
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
        found = known_strides(x) if type(x) is Proxy else None
        if found is None:
            return
        shape = x.st_meta.shape
        zero = [s for s, st in zip(shape, found[0]) if type(st) is int and st == 0]
        if not zero:
            return
        try:  # (a guard where the sizes are symbolic: eager's own condition)
            check(sym_or(math.prod(shape) == 0, *[s <= 1 for s in zero]), name, MESSAGE)
        except OpShapeError as e:
            raise with_eager_class(e, RuntimeError) from None
    return no_overlap


CHECKS: dict = {}
for _name in CHECKED:
    _packet = getattr(torch.ops.aten, _name)
    for _overload in _packet.overloads():
        CHECKS[getattr(_packet, _overload)] = _check(_name)
