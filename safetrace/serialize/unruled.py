"""The result of a listed ATen operator without a shape rule, for the loader's evaluation.

safetrace's tracer records an operator it has no rule for through torch's meta kernel,
with every size of its operands made static (a dim declared dynamic that reaches one
fails to export), so a file's call of such an operator has operands of static sizes.  The
loader computes its result the same way, with the meta kernel on meta tensors of the sizes
its own evaluation works out (never the file's metadata): the file's record of it is held
against that (``recorded.py``) and its bytes count in the memory budget.  Where those
sizes vary with the inputs the file is not the exporter's: ``SYMBOLIC``, refused at load
(without it a file's ``combinations(x, 3)`` over a declared range would allocate
``n**3`` elements uncounted, and its recorded shape would stand for the real one).

A custom op (a namespace the caller allowed) is evaluated the same way at static sizes,
by its fake implementation (``st.register_fake``, torch's ``register_fake``) or its Meta
kernel: its recorded result is held against that and its bytes count (a fake that needs
a tracer, one making a size from data, is left unknown: checked at call).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta import TensorMeta
from safetrace.meta.active import ACTIVE
from safetrace.serialize.constant_sizes import UNKNOWN
from safetrace.trace.custom import fake_of

SYMBOLIC = object()  # (an operand's size varies with the inputs)
_CPU = torch.device("cpu")
_PLAIN = (int, float, bool, complex, str, type(None), torch.dtype, torch.layout,
          torch.memory_format)
_TENSOR_RETURNS = frozenset(("Tensor", "List[Tensor]"))


def result(op: Any, args: Any, kwargs: dict) -> Any:
    """``op``'s result metadata by its meta kernel (``UNKNOWN`` where it cannot be worked
    out: an operand not known, a kernel that needs data; ``SYMBOLIC`` as above)."""
    if not op._schema.returns or any(str(r.real_type) not in _TENSOR_RETURNS
                                     for r in op._schema.returns):
        return UNKNOWN  # (a number or a flag: read, not allocated)
    found: list = []

    def meta(v: Any) -> Any:
        if found:
            return v
        if isinstance(v, TensorMeta):
            if not all(type(x) is int for x in v.shape):
                found.append(SYMBOLIC)
                return v
            return torch.empty(v.shape, dtype=v.dtype, device="meta")
        if isinstance(v, (list, tuple)):
            return type(v)(meta(x) for x in v)
        if isinstance(v, torch.device):
            return torch.device("meta")
        if isinstance(v, _PLAIN):
            return v
        found.append(SYMBOLIC if hasattr(v, "expr") else UNKNOWN)  # (a size, or else)
        return v

    margs, mkwargs = meta(list(args)), {k: meta(v) for k, v in kwargs.items()}
    if found:
        return found[0]
    kernel = op if op.namespace == "aten" else (fake_of(op) or op)
    # (a fake asking for a size from data, st.new_dynamic_size, raises here: no environment
    # of the loader's takes its symbol)
    env, ACTIVE.env = ACTIVE.env, None
    try:
        with torch._C.DisableTorchFunction():
            out = kernel(*margs, **mkwargs)
    except Exception:  # noqa: BLE001 - a kernel that needs data, or refuses the call
        return UNKNOWN
    finally:
        ACTIVE.env = env
    return _back(out)


def _back(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        if not v.is_meta:  # (a custom op's fake computed on real data: not a meta result)
            return UNKNOWN
        return TensorMeta(tuple(int(x) for x in v.shape), v.dtype, _CPU)
    if isinstance(v, (list, tuple)):
        return type(v)(_back(x) for x in v)
    return UNKNOWN


__all__ = ["SYMBOLIC", "result"]
