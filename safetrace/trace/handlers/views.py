"""Views spelled in Python: indexing, the computing properties (``x.T``, ``x.mT``,
``x.real``, ``x.data``), ``x.data = v`` and ``x.contiguous()``.

Indexing is lowered to the ATen ops eager PyTorch uses (``indexing.py``).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.errors import data_assignment
from safetrace.trace import indexing, memo
from safetrace.trace.mutation import input_itself
from safetrace.trace.proxy import Proxy
from safetrace.trace.registry import handles
from safetrace.trace.source import short, stack_trace
from safetrace.trace.strides import fixed_layout
from safetrace.trace.recorder import Recorder

T: Any = torch.Tensor  # (its properties as descriptors: typed Any)
aten = torch.ops.aten


@handles(T.__getitem__)
def getitem(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``x[index]``: replayed when the same tensor metas and index were met before and
    gave one op (``x[:, 0]``, ``x[..., None]``, ``x[:, :n]``; memo.py keys the index's
    ints, slices, None and Ellipsis by value), else lowered by ``indexing.getitem``."""
    if tr.recording and not tr.unsourced_settled and not kwargs:
        return memo.call(tr, func, _getitem, args, kwargs)
    return indexing.getitem(tr, args[0], args[1])


def _getitem(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    return indexing.getitem(tr, args[0], args[1])


@handles(T.__setitem__)
def setitem(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    return indexing.setitem(tr, args[0], args[1], args[2])


def _ndim(x: Any) -> int:
    return x.st_meta.ndim if isinstance(x, Proxy) else x.dim()


@handles(T.T.__get__)
def transpose_all(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    x = args[0]
    return tr.emit(aten.permute.default, (x, list(range(_ndim(x)))[::-1]), {})


@handles(T.H.__get__)
def adjoint_all(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    x = args[0]
    y = tr.emit(aten.permute.default, (x, list(range(_ndim(x)))[::-1]), {})
    return tr.emit(aten.conj.default, (y,), {})


@handles(T.mT.__get__)
def matrix_transpose(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    return tr.emit(aten.transpose.int, (args[0], -2, -1), {})


@handles(T.mH.__get__)
def matrix_adjoint(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    y = tr.emit(aten.transpose.int, (args[0], -2, -1), {})
    return tr.emit(aten.conj.default, (y,), {})


@handles(T.real.__get__)
def real_part(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    return tr.emit(aten.real.default, (args[0],), {})


@handles(T.imag.__get__)
def imag_part(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    return tr.emit(aten.imag.default, (args[0],), {})


@handles(T.data.__get__)
def data(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    return tr.emit(aten.detach.default, (args[0],), {})


@handles(T.data.__set__)
def set_data(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> None:
    """``w.data = v``: `w` shares `v`'s memory from now on.  A traced `w` becomes an alias
    of `v` (later writes to either show in both; views of `w` taken before keep the old
    memory, as in eager).  Module state (masked or pruned weights updated in forward): an
    in-place copy into the tensor's storage, recorded like any write to module state."""
    target, value = args[0], args[1]
    t_meta = target.st_meta if isinstance(target, Proxy) else target
    v_meta = value.st_meta if isinstance(value, Proxy) else value
    if not isinstance(value, torch.Tensor) or t_meta.dtype != v_meta.dtype or \
            len(t_meta.shape) != len(v_meta.shape) or \
            not all(a is b or a == b for a, b in zip(t_meta.shape, v_meta.shape)):
        raise data_assignment(short(stack_trace(3)))
    if isinstance(target, Proxy):
        base = input_itself(target.st_node)
        if base is not None and base not in tr.state.values() and \
                base not in tr.const_nodes.values():
            # the caller's tensor (an input, or a subgraph's operand) would share the
            # value's memory after the call: no graph output gives that back
            raise data_assignment(short(stack_trace(3)), base.name)
        shared = tr.emit(aten.alias.default, (value,), {})
        target.st_meta, target.st_node = shared.st_meta, shared.st_node
        target.st_contig, target.st_layout = shared.st_contig, shared.st_layout
        return
    tr.emit(aten.copy_.default, (target, value), {})


@handles(T.contiguous)
def contiguous(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``x.contiguous()`` is `x` itself where x is contiguous (eager returns self; torch's
    graphs hold no node for it): where that holds for every size and every run (its
    layout depends on no input's: ``strides.fixed_layout``), nothing is recorded."""
    x = args[0]
    fmt = kwargs.get("memory_format", args[1] if len(args) > 1 else torch.contiguous_format)
    if type(x) is Proxy and x.st_contig is not None and fmt is torch.contiguous_format and \
            x.st_node is not None and fixed_layout(x.st_node):
        return x
    return memo.emit(tr, aten.contiguous.default, (x,), kwargs)  # (replayed when known)
