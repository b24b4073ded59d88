"""``operator.index(t)`` of a one-element integer tensor: an unbacked size, as ``.item()``.

Eager reads such a tensor through ``__index__`` wherever Python wants an int: a size
(``torch.ones(b, n)``, ``x.new_zeros(n)``, OPT's ``torch.ones(batch, seq_length)`` with a
0-d ``seq_length``), a slice bound (``x[:n]``), ``range(n)``.  The value is data, so it
becomes what ``t.item()`` gives: an unbacked symbol with the dtype's range, read by the
graph at run time (``aten.item``), the checks export cannot prove asserted there.  A
known value (``torch.tensor(n)`` of a size) is that value.  Anything else eager refuses
(a float tensor, more than one element) stays a DataRead refusal with its fix.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.trace.handlers.data import data_read
from safetrace.trace.handlers.metadata import real
from safetrace.trace.proxy import Proxy
from safetrace.trace.registry import handles
from safetrace.trace.values import integral, read_data, read_value
from safetrace.trace.recorder import Recorder
from safetrace.trace.versions import stamp

T = torch.Tensor
_REFUSE = data_read("using a tensor as an index (__index__)")


@handles(T.__index__)
def index_value(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``t.__index__()``: the known value, else ``t.item()`` for a one-element integer
    tensor (an unbacked size)."""
    x = args[0]
    if not isinstance(x, Proxy):
        # a parameter or buffer (a cache's length, written between calls) or a constant
        # written in place: data, read by the graph at run time, never its export value
        x = read_data(tr, x)
        if x is None:
            return real(func, args, kwargs)  # a constant: its value (eager's errors too)
        args = (x, *args[1:])
    meta = x.st_meta
    if x.st_value is not None or not integral(meta.dtype) or \
            not all(isinstance(s, int) and s == 1 for s in meta.shape):
        return _REFUSE(tr, func, args, kwargs)  # known value, or refused as eager would be
    return read_int(tr, x)


def read_int(tr: Recorder, x: Proxy) -> Any:
    """The value of the 0-d integer tensor `x`, read once per tensor value: `torch.ones(n)`
    then `x[:n]` see one symbol, as eager sees one number (a write that may reach it
    starts a new data version, versions.py: read again).  A sum or product of such
    tensors (``cache_len + n``) is the sum of their reads (``read_value``), so the sizes
    it makes stay related."""
    seen = getattr(x, "st_index_value", None)
    if seen is not None and seen[0] == stamp(x, tr):
        return seen[1]
    value = read_value(tr, x, read_int)
    if value is None:
        value = tr.redispatch(T.item, (x,), {})
    setattr(x, "st_index_value", (stamp(x, tr), value))  # (a proxy's own note)
    return value
