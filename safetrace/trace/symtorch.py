"""Symbolic ints that torch's C++ argument parser accepts as sizes and numbers.

torch's parser checks every size / number argument before any torch-function mode sees
the call.  A plain Python object with ``__index__`` passes that check only by having
``__index__`` called (which specializes a symbolic size to its example value), and is
refused outright where a Number is expected (``torch.arange(n)``).  Instances of
``torch.SymInt`` subclasses pass both checks untouched and reach the mode as they are,
so the tracer makes the engine's SymInt instances also derive from ``torch.SymInt``.
Every method a traced program uses is the engine's own (it comes first in the MRO);
the parser never converts them since the mode answers every call while tracing.
"""

from __future__ import annotations

import torch

from safetrace.symbolic.symvalues import SymInt


class TorchSymInt(SymInt, torch.SymInt):  # type: ignore[misc]
    __slots__ = ()

    __init__ = SymInt.__init__
    __index__ = SymInt.__int__

    def __sym_float__(self):  # torch.sym_float(n)
        return self / 1

    def __sym_max__(self, other):
        return _minmax("max", self, other)

    def __sym_min__(self, other):
        return _minmax("min", self, other)


def _minmax(kind, a, b):
    from safetrace.symbolic.canon import minmax
    from safetrace.symbolic.expr import to_expr
    from safetrace.symbolic.symvalues import _wrap_int

    eb = b.expr if isinstance(b, SymInt) else to_expr(b)
    return _wrap_int(minmax(kind, [a.expr, eb]), a.env)


SymInt.instance_class = TorchSymInt
