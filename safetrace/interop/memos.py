"""A mask's count of true elements, one unbacked size per mask, as torch's fake kernels
make it.

torch's kernels remember the count on the mask's fake value (``FakeTensor.nonzero_memo``):
in ``x[mask]`` then ``mask.nonzero()`` both rows are one unbacked symbol, bound by the
first op only.  Our tracer numbers the two apart (the same value at run time).  A converted
program that binds both makes torch's retrace (``run_decompositions``, hence ONNX and
ExecuTorch) fail: the second op's kernel returns the first's symbol, which its binding
then renames a second time (``AssertionError: u3 -> u0`` in ``rebind_unbacked``).  Here the
second op's rows take the first's torch symbol and the op binds nothing, as in
torch.export's own program.

Only where the mask cannot change between the two reads: a fresh (non-view) value that no
op writes in place; elsewhere each op keeps a symbol of its own.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.symbolic import to_expr

_NONZERO, _INDEX = torch.ops.aten.nonzero.default, torch.ops.aten.index.Tensor
MASK_OPS = (_NONZERO, _INDEX)  # (the ops `shared_rows` looks at; a tuple: an OpOverload's
# hash is a Python method, its equality identity)


def _mask(target: Any, args: tuple) -> Any:
    """The boolean mask whose count `target(*args)` makes its rows (a graph node), or
    None."""
    if target is _NONZERO:
        mask = args[0] if args else None
    elif target is _INDEX and len(args) == 2 and isinstance(args[1], (list, tuple)) and \
            len(args[1]) == 1:
        mask = args[1][0]
    else:
        return None
    return mask if isinstance(mask, torch.fx.Node) else None


def _unchanging(ours: torch.fx.Node) -> bool:
    """The mask is made by an op returning a fresh tensor (not a view of another) and no
    op of our program writes it in place."""
    if ours.op != "call_function" or not isinstance(ours.target, torch._ops.OpOverload):
        return False
    if any(r.alias_info is not None for r in ours.target._schema.returns):
        return False
    for user in ours.users:
        t = user.target
        if not isinstance(t, torch._ops.OpOverload) or t._schema.is_mutable:
            return False
    return True


def shared_rows(conv: Any, target: Any, args: tuple, node: torch.fx.Node) -> Any:
    """Before `node`'s value is made: where its op's rows are a mask's count that an
    earlier op made already, our symbol for the rows is that torch symbol.  Returns the
    mask's fake value where the op may make the count (see `remember`), else None."""
    mask, ours = _mask(target, args), _mask(node.target, node.args)
    if mask is None or ours is None or conv.env.get(ours) is not mask or not any(
            u is not node and u.target in MASK_OPS for u in ours.users):
        return None  # (no other op counts this mask)
    fake = mask.meta.get("val")
    if not isinstance(fake, torch.Tensor) or fake.dtype != torch.bool:
        return None
    count = fake.nonzero_memo
    if count is None:
        return fake  # (the first count: a later op asks whether the mask changed since)
    rows = _rows(node.meta.get("val"))
    if rows is not None and rows.op == "sym" and rows.name not in conv.emitter.values \
            and _unchanging(ours):
        conv.emitter.values[rows.name] = count
    return None


def remember(fake: Any, val: Any) -> None:
    """After the op made the mask's count: it is the mask's (torch's memo)."""
    if fake is not None and isinstance(val, torch.Tensor) and val.dim() >= 1 and \
            isinstance(val.shape[0], torch.SymInt) and fake.nonzero_memo is None:
        fake.nonzero_memo = val.shape[0]


def _rows(ours: Any) -> Any:
    meta = getattr(ours, "st_meta", None)
    if meta is None or not meta.shape or meta.shape[0].__class__ is int:
        return None
    s = meta.shape[0]
    return to_expr(s.env.simplify(s.expr) if hasattr(s, "env") else s)
