"""torch's run-time assertion ops, met when the traced code is itself an exported
program (``st.export(ep.to_torch().module(), ...)``, or a torch.export program's
module): ``aten._assert_scalar(cond, msg)`` and the range ops ``torch._check_is_size``
and ``torch._constrain_as_size`` leave (``aten.sym_constrain_range_for_size``,
``aten.sym_constrain_range``).  Each is the check it was written from, made again here:
a fact the engine uses, asserted at run time where it reads data (``trace/asserts.py``);
an assertion on input sizes only is a condition of the input contract (``required``)."""

from __future__ import annotations

from typing import Any

import torch

from safetrace.rules.kernel_checks import checked_again
from safetrace.symbolic import SymBool
from safetrace.trace.asserts import ASSERT_HEAD, check, required
from safetrace.trace.registry import handles
from safetrace.trace.recorder import Recorder

aten = torch.ops.aten


def _message(msg: Any) -> Any:
    # an assertion node's own text repeats the condition: ours names it again
    return None if isinstance(msg, str) and msg.startswith(ASSERT_HEAD) else msg


@handles(aten._assert_scalar.default)
def assert_scalar(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    bound = dict(zip(("self", "assert_msg"), args), **kwargs)
    cond, msg = bound["self"], _message(bound.get("assert_msg"))
    if isinstance(cond, SymBool):  # (on input sizes: a run-time check, nothing assumed)
        if not checked_again(cond, msg):  # (a kernel's own check keeps its kind)
            required(cond, msg, RuntimeError)
    else:
        check(cond, msg)
    return None


def _bounds(args: tuple, kwargs: dict) -> tuple:
    bound = dict(zip(("size", "min", "max"), args), **kwargs)
    return bound["size"], bound.get("min"), bound.get("max")


@handles(aten.sym_constrain_range_for_size.default)
def constrain_range_for_size(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    size, lo, hi = _bounds(args, kwargs)
    check(size >= (0 if lo is None else max(lo, 0)))
    if hi is not None:
        check(size <= hi)
    return None


@handles(aten.sym_constrain_range.default)
def constrain_range(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    size, lo, hi = _bounds(args, kwargs)
    if lo is not None:
        check(size >= lo)
    if hi is not None:
        check(size <= hi)
    return None
