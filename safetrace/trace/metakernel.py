"""An op without a shape rule: PyTorch's meta kernel computes its result's metadata."""

from __future__ import annotations

from typing import Any

import torch

from safetrace import errors
from safetrace.meta import TensorMeta
from safetrace.trace.recorder import Recorder
from safetrace.trace.source import stack_trace


def meta_kernel(tr: Recorder, op: Any, margs: list, mkwargs: dict) -> Any:
    """No rule: run the meta kernel (slow path).  Symbolic sizes are specialized to
    their example values (recorded: a dim declared dynamic then fails to export with
    an UnsupportedOpError that says how to register a rule)."""
    device = [tr.device]

    def concrete(size: Any) -> int:
        if isinstance(size, int):
            return size
        names = [n for n in size.expr.free_symbols]
        value = int(size)  # a guard: size == its example value
        tr.specialized_by_op.append((op, stack_trace(5), names))
        return value

    def to_meta(v: Any) -> Any:
        if isinstance(v, TensorMeta):
            shape = [concrete(s) for s in v.shape]
            device[0] = v.device
            return torch.empty(shape, dtype=v.dtype, device="meta")
        if isinstance(v, torch.device):
            device[0] = v
            return torch.device("meta")
        if isinstance(v, (list, tuple)):
            return type(v)(to_meta(x) for x in v)
        if hasattr(v, "expr") and not isinstance(v, torch.Tensor):
            return concrete(v)
        return v

    margs2 = [to_meta(a) for a in margs]
    mkwargs2 = {k: to_meta(v) for k, v in mkwargs.items()}
    if isinstance(mkwargs2.get("device"), (str, int)):
        device[0] = torch.device(mkwargs2["device"])
        mkwargs2["device"] = "meta"
    try:
        with torch._C.DisableTorchFunction():
            out = op(*margs2, **mkwargs2)
    except NotImplementedError:
        raise errors.missing_shape_rule(str(op), "") from None
    except errors.ExportError:  # (safetrace's own, a RuntimeError for some: never re-read)
        raise
    except RuntimeError as exc:
        if "meta" in str(exc).lower():  # the kernel needs data or a real device
            raise errors.kernel_needs_data(str(op), str(exc).splitlines()[0]) from None
        raise errors.kernel_rejects(str(op), str(exc)) from None

    def back(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return TensorMeta(tuple(v.shape), v.dtype, device[0])
        if isinstance(v, (list, tuple)):
            return type(v)(back(x) for x in v)
        return v

    return back(out)
