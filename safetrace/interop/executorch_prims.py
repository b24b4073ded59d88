"""ExecuTorch's scalar operators on sizes, kept symbolic while ``st.to_executorch`` lowers.

``to_executorch`` maps the size arithmetic of the graph (``operator.le``, ``torch.sym_max``,
``torch.sym_not``, ...) to its ``executorch_prim`` operators, then its passes run every
node again on fake tensors, calling each operator through torch's dispatcher.  The
comparisons' schemas return ``bool``, so the dispatcher turns the kernel's symbolic answer
into a Python bool, and the kernels of ``sym_max`` / ``sym_min`` / ``sym_not`` /
``sym_ite`` are ``max(a, b)``, ``min(a, b)``, ``not a``, ``t if b else f``.  Each decides
a condition on a symbolic size at the example and records it as a guard, which narrows the
dim's range in the program's ShapeEnv (a size split's predicate ``n <= 2`` became
``n < 3``; ``min(n, 1)`` became ``n > 1``).  ExecuTorch plans memory from those ranges: a
program exported with ``Dim("n", max=16)`` came out with an input capacity of 2 and its
kernels specialized (size 5 refused by ``set_inputs``, size 0 a kernel error), with no
warning.

``symbolic_prims``: while at least one lowering runs, a call of one of those operators
(ExecuTorch's ``EdgeOpOverload.__call__``) with a symbolic argument computes the Python
function the operator stands for (``operator.le``, ``torch.sym_max``: ExecuTorch's own
table) instead: a symbolic value, no guard; on the lowering's own thread only (another
thread lowering at the same time with ExecuTorch's API keeps ExecuTorch's behaviour).
Calls with plain numbers (and every other operator) go to ExecuTorch's method as before;
the ``.pte``'s C++ kernels are not involved.
Installed under a lock, depth-counted, removed by the last lowering.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

import torch

_SYMBOLIC = (torch.SymInt, torch.SymBool, torch.SymFloat)
_LOCK = threading.Lock()
_DEPTH = [0]
_HERE = threading.local()  # (this thread's lowerings: another thread's own ExecuTorch
# lowering, running while ours is, keeps ExecuTorch's behaviour)
_SAVED: list[Any] = []


def _table() -> dict[Any, Any]:
    """The Python function each of ExecuTorch's scalar operators stands for, by the torch
    operator it wraps (empty without ExecuTorch)."""
    try:
        from executorch.exir.passes.executorch_prim_ops_registry import (
            _PYTHON_SYM_OPS_TO_EXECUTORCH_SYM_OPS as table)
    except ImportError:
        return {}
    ours = {torch.sym_ite: _ite, torch.sym_max: _max, torch.sym_min: _min}
    return {getattr(op, "_op", op): ours.get(fn, fn) for fn, op in table.items()}


def _known(b: Any) -> bool:
    """`b` true whatever the sizes (a condition on an unbacked size its range decides:
    a symbolic answer there would leave a later bound check undecidable)."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    return statically_known_true(b)


def _max(a: Any, b: Any) -> Any:
    if _known(a >= b):
        return a
    return b if _known(b >= a) else torch.sym_max(a, b)


def _min(a: Any, b: Any) -> Any:
    if _known(a <= b):
        return a
    return b if _known(b <= a) else torch.sym_min(a, b)


def _ite(b: Any, t: Any, f: Any) -> Any:
    """``torch.sym_ite`` where `b` is not known (it wants `t` and `f` of one type)."""
    if _known(b):
        return t
    if _known(torch.sym_not(b)):
        return f
    if type(t) is type(f):
        return torch.sym_ite(b, t, f) if isinstance(b, torch.SymBool) else (t if b else f)
    if isinstance(t, (bool, torch.SymBool)) and isinstance(f, (bool, torch.SymBool)):
        return (b & t) | (torch.sym_not(b) & f)  # (a bool beside a symbolic one)
    return NotImplemented  # (a number beside a symbol: ExecuTorch's kernel decides)


def _symbolic_call(original: Any, table: dict[Any, Any]) -> Any:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        fn = table.get(getattr(self, "_op", None))
        if fn is not None and not kwargs and getattr(_HERE, "depth", 0) and \
                any(isinstance(a, _SYMBOLIC) for a in args):
            out = fn(*args)
            if out is not NotImplemented:
                return out
        return original(self, *args, **kwargs)

    return call


@contextlib.contextmanager
def symbolic_prims() -> Iterator[None]:
    """While inside, ExecuTorch's scalar operators called on symbolic sizes compute
    symbolically (no guard recorded)."""
    with _LOCK:
        if _DEPTH[0] == 0:
            try:
                from executorch.exir.dialects.edge._ops import EdgeOpOverload
            except ImportError:
                EdgeOpOverload = None  # noqa: N806
            table = _table()
            if EdgeOpOverload is not None and table:
                original = EdgeOpOverload.__dict__["__call__"]
                EdgeOpOverload.__call__ = _symbolic_call(original, table)
                _SAVED.append((EdgeOpOverload, original))
        _DEPTH[0] += 1
    _HERE.depth = getattr(_HERE, "depth", 0) + 1
    try:
        yield
    finally:
        _HERE.depth -= 1
        with _LOCK:
            _DEPTH[0] -= 1
            if _DEPTH[0] == 0:
                for cls, original in _SAVED:
                    cls.__call__ = original
                _SAVED.clear()
