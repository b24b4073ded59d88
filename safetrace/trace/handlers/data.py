"""Reads of tensor data: ``bool(t)``, ``int(t)``, ``.item()``, ``.tolist()``, ``.numpy()``.

Export never reads data (the graph must work for any).  An integer read with a known
value (``torch.tensor(n)`` of a size) gives that value; an integer ``.item()`` becomes an
unbacked size and a float one an unbacked float (``.item()``, ``.tolist()``); anything
else is a DataDependentError naming the line and a fix.
"""

from __future__ import annotations

import io
import tokenize
from typing import Any

import torch

from safetrace.errors import float_read, shape_error
from safetrace.trace import draft
from safetrace.trace.handlers.metadata import real
from safetrace.trace.hops.rewrite import cond_rewrite
from safetrace.trace.proxy import Proxy, annotation
from safetrace.trace.registry import Handler, handles
from safetrace.trace.source import parse, short, stack_trace, user_frame
from safetrace.trace.values import read_data
from safetrace.trace.recorder import Recorder
from safetrace.trace.versions import stamp

T = torch.Tensor
aten = torch.ops.aten

_INDEX = "using a tensor as an index (__index__)"
# what st.explain assumes a data read gave, to trace on past it
_ASSUMED: dict[str, Any] = {"bool()": True, "int()": 1, "float()": 1.0, _INDEX: 1}


def data_read(what: str) -> Handler:
    """A handler refusing the read `what` of a proxy (real tensors read their data)."""

    def handler(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
        if not isinstance(args[0], Proxy):
            traced = read_data(tr, args[0])
            if traced is None:
                return real(func, args, kwargs)  # a constant: its value is known
            args = (traced, *args[1:])
        value = args[0].st_value
        if value is not None and what in ("int()", _INDEX):
            # torch.tensor(n) of a size: its value is known; Python needs a real int here,
            # so a symbolic one is specialized (a guard), as int(size) is
            return value if isinstance(value, int) else int(value)
        if what == "bool()" and draft.requested():  # torch's real-value feedback
            decided = draft.decided_bool(tr, args[0])
            if decided is not None:
                return decided
        error = tr.data_read(f"{what} of a tensor {annotation(args[0].st_meta)}",
                             _cond_fix() if what == "bool()" else _number_fix(what, args[0]))
        if what in _ASSUMED and tr.on_data_read is not None:
            # st.explain: recorded, and tracing goes on with an assumed value (the True
            # branch; 1 for a number), so that the problems after this line are found too
            tr.on_data_read(error)
            return _ASSUMED[what]
        raise error

    return handler


def _cond_fix() -> str | None:
    """For ``if <tensor>:`` whose branches are simple: the paste-ready torch.cond rewrite,
    then the general advice."""
    rewrite = cond_rewrite(user_frame(3))  # the frame of the `if` on data
    if rewrite is None:
        return None
    return (f"use torch.cond, which keeps both branches in the graph:\n        {rewrite}\n"
            f"     or compute on tensors instead of Python values (e.g. torch.where(cond, a, "
            f"b) instead of `if`), or move the data-dependent decision out of the exported "
            f"code.")


def _number_fix(what: str, x: Proxy) -> str | None:
    """For int(t), float(t) and t as an index of a one-element tensor: the ``.item()``
    spelling, whose result the graph reads at run time (an unbacked size)."""
    if what not in ("int()", "float()", _INDEX) or not all(
            isinstance(s, int) and s == 1 for s in x.st_meta.shape):
        return None
    dtype = x.st_meta.dtype
    if dtype.is_complex:
        return None
    t = _operand_text(what[:-2]) or "t"
    if dtype.is_floating_point and what == "float()":
        return (f"keep the value a tensor: a 0-d tensor broadcasts in tensor ops (`y * {t}` "
                f"instead of `y * float({t})`), so the graph computes with it.")
    t = t if t.isidentifier() or t.endswith(")") and "(" in t and t[0].isalpha() else f"({t})"
    item = f"{t}.long().item()" if dtype.is_floating_point else f"{t}.item()"
    why = " (int() truncates toward zero, as .long() does)" if dtype.is_floating_point \
        else ""
    return (f"to use the value as a size or an index, read it with `{item}`{why}: a "
            f"data-dependent size (an unbacked symbol) that the graph reads at run time, "
            f"with checks for what export cannot prove (asserted at run time):\n"
            f"    n = {item}\n    st.check(n >= 0)\n"
            f"then `x[:n]`, `x.new_zeros(n)`, `torch.arange(n)`; for an index `x[n]` also "
            f"`st.check(n < x.shape[0])`.")


def _operand_text(fn: str) -> str | None:
    """The source text of the operand of the first ``fn(...)`` on the user's line, so the
    suggested fix names their own expression."""
    p = parse(stack_trace(4))
    toks: list = []
    try:  # one line of a statement may leave brackets open: keep the tokens before that
        for tok in tokenize.generate_tokens(io.StringIO(p[3] if p else "").readline):
            toks.append(tok)
    except (tokenize.TokenError, SyntaxError):
        pass
    for i in range(len(toks) - 2):
        if toks[i].string == fn and toks[i + 1].string == "(" and \
                (i == 0 or toks[i - 1].string != "."):
            depth = 0
            for j in range(i + 2, len(toks)):
                depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(
                    toks[j].string, 0)
                if depth < 0:
                    inner = p[3][toks[i + 1].end[1]:toks[j].start[1]].strip()  # type: ignore
                    return inner if inner and "," not in inner else None
    return None


for _func, _what in [
    (T.__bool__, "bool()"), (T.__int__, "int()"), (T.__float__, "float()"),
    (T.__complex__, "complex()"), (T.numpy, ".numpy()"),
    (T.__array__, "numpy conversion"), (T.__contains__, "`in`"),
]:
    handles(_func)(data_read(_what))


def _float_read(call: str, x: Proxy) -> Exception:
    """A float read from data (an unbacked size is an int or bool, never a float)."""
    return float_read(call, annotation(x.st_meta), short(stack_trace(3)))


@handles(T.item)
def item(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``.item()``: an unbacked int, bool or float (``aten.item`` in the graph)."""
    if not isinstance(args[0], Proxy):
        traced = read_data(tr, args[0])
        if traced is None:
            return real(func, args, kwargs)
        args = (traced, *args[1:])
    if (value := args[0].st_value) is not None:
        return value
    x = args[0]
    if x.st_meta.dtype.is_complex:
        raise _float_read(".item()", x)
    # a tensor read again before a write that may reach it: the same value (one unbacked size,
    # as torch's repeated item reads give; facts checked on the first hold for the second)
    last = getattr(x, "_st_item", None)
    if last is not None and last[0] == stamp(x, tr) and last[1] is tr.scope:
        return last[2]
    out = tr.emit(aten.item.default, (x,), {})  # a float: an unbacked SymFloat
    x._st_item = (stamp(x, tr), tr.scope, out)  # (in the same graph: not a branch)
    return out


@handles(T.tolist)
def tolist(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """Nested lists of unbacked values (ints, bools, floats), one ``.item()`` per element
    (static lengths only)."""
    x = args[0]
    if not isinstance(x, Proxy):
        x = read_data(tr, x)
        if x is None:
            return real(func, args, kwargs)
    if x.st_meta.dtype.is_complex:
        raise _float_read(".tolist()", x)
    shape = x.st_meta.shape
    if not shape:
        return tr.emit(aten.item.default, (x,), {})
    if not isinstance(shape[0], int):
        raise tr.data_read(f".tolist() of a tensor with a dynamic first dim {shape[0]}")
    return [tolist(tr, func, (tr.emit(aten.select.int, (x, 0, i), {}),), {})
            for i in range(shape[0])]


@handles(torch.is_nonzero, T.is_nonzero, aten.is_nonzero, aten.is_nonzero.default)
def is_nonzero(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``torch.is_nonzero``: the one element's truth, an unbacked bool read at run time
    (``aten.ne`` then ``aten.item``, as torch.export records it); deciding on it is a
    DataDependentError like any data read."""
    x = args[0] if args else next(iter(kwargs.values()))
    if not isinstance(x, Proxy):
        x = read_data(tr, x)
        if x is None:
            return real(func, args, kwargs)
    if x.st_meta.numel() != 1:  # eager's refusal (a guard where the size is a Dim)
        what = "no values" if x.st_meta.numel() == 0 else "more than one value"
        raise shape_error("aten.is_nonzero", f"Boolean value of Tensor with {what} is ambiguous")
    return tr.emit(aten.item.default, (tr.emit(aten.ne.Scalar, (x, 0), {}),), {})
