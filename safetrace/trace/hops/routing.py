"""Where traced code reaches control flow: torch's Python entry points and its operators.

``torch.cond`` and ``torch._higher_order_ops.while_loop / map / scan`` are Python functions
that hand tensors to torch.compile unless dynamo is already tracing; they never reach a
TorchFunctionMode.  While exporting, the export session replaces them (and puts them back
afterwards, also on failure) by functions that trace with safetrace on the exporting thread
and call torch's own everywhere else; torch's entry points reached under another name are
recognized by the wrapper they hand to torch.compile.  The operators themselves
(``torch.ops.higher_order.cond`` ..., e.g. in a re-exported program's graph) do reach the
mode and get handlers.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import torch
import torch._higher_order_ops  # noqa: F401 - the entry points replaced while exporting

from safetrace.trace.current import active_tracer
from safetrace.trace.hops import ops
from safetrace.trace.registry import handles
from safetrace.trace.recorder import Recorder

hop = torch.ops.higher_order


def _tracing() -> Any:
    tr = active_tracer()
    return tr if tr is not None and tr.recording else None


def cond(pred: Any, true_fn: Callable, false_fn: Callable, operands: Any = ()) -> Any:
    """``torch.cond``: inside st.export both branches become subgraphs of one cond node
    (unless the predicate is known at export); elsewhere torch's own torch.cond."""
    tr = _tracing()
    if tr is None:
        return _ORIGINAL["cond"](pred, true_fn, false_fn, operands)
    return ops.cond(tr, pred, true_fn, false_fn, tuple(operands) if isinstance(
        operands, list) else operands)


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: Any) -> Any:
    """``torch._higher_order_ops.while_loop``, traced into one while_loop node."""
    tr = _tracing()
    if tr is None:
        return _ORIGINAL["while_loop"](cond_fn, body_fn, carried_inputs)
    return ops.while_loop(tr, cond_fn, body_fn, carried_inputs)


def map(f: Callable, xs: Any, *args: Any) -> Any:  # noqa: A001 - torch's name
    """``torch._higher_order_ops.map``, traced into one map_impl node."""
    tr = _tracing()
    if tr is None:
        return _ORIGINAL["map"](f, xs, *args)
    return ops.map_(tr, f, xs, *args)


def scan(combine_fn: Callable, init: Any, xs: Any, *, dim: int = 0, reverse: bool = False,
         **kwargs: Any) -> Any:
    """``torch._higher_order_ops.scan``, traced into one scan node."""
    tr = _tracing()
    if tr is None:
        return _ORIGINAL["scan"](combine_fn, init, xs, dim=dim, reverse=reverse, **kwargs)
    return ops.scan(tr, combine_fn, init, xs, dim, reverse, kwargs.get("additional_inputs"))


_ORIGINAL: dict[str, Callable] = {
    "cond": torch._higher_order_ops.cond,
    "while_loop": torch._higher_order_ops.while_loop,
    "map": torch._higher_order_ops.map,
    "scan": torch._higher_order_ops.scan,
}
_OURS = {"cond": cond, "while_loop": while_loop, "map": map, "scan": scan}

# (module name, attribute, entry point) of every spelling user code may call
_SPELLINGS = [("torch", "cond", "cond"),
              ("torch._higher_order_ops", "cond", "cond"),
              ("torch._higher_order_ops.cond", "cond", "cond"),
              ("torch._higher_order_ops", "while_loop", "while_loop"),
              ("torch._higher_order_ops.while_loop", "while_loop", "while_loop"),
              ("torch._higher_order_ops", "map", "map"),
              ("torch._higher_order_ops.map", "map", "map"),
              ("torch._higher_order_ops", "scan", "scan"),
              ("torch._higher_order_ops.scan", "scan", "scan"),
              ("functorch.experimental.control_flow", "cond", "cond"),
              ("functorch.experimental.control_flow", "map", "map")]


_HOP_UTILS = sys.modules["torch._higher_order_ops.utils"]
_COMPILE_AND_CALL = getattr(_HOP_UTILS, "_hop_compile_and_call", None)


def _wrapper_code(entry: Callable, name: str) -> Any:
    """The code of the op-calling wrapper a torch entry point defines inside itself
    (``cond``'s ``_cond_op_wrapper``): how it is recognized whatever name it was called by."""
    for c in getattr(getattr(entry, "__code__", None), "co_consts", ()):
        if getattr(c, "co_name", None) == name:
            return c
    return None


# torch's own entry points, called under any name (``from torch import cond as c``,
# functorch's cond) while tracing: the wrapper they hand to torch.compile -> ours
_BY_WRAPPER = {code: ours for code, ours in (
    (_wrapper_code(_ORIGINAL["cond"], "_cond_op_wrapper"),
     lambda pred, true_fn, false_fn, operands: cond(pred, true_fn, false_fn, operands)),
) if code is not None}


def _call_uncompiled(fn: Callable, args: tuple, kwargs: dict | None = None) -> Any:
    """torch's entry points bound before export (``from torch import cond as c``) hand the
    operator call to torch.compile; while tracing, a known entry point's wrapper is traced
    as the entry point itself, and any other runs as it is, so the operator reaches the
    tracer's handlers below."""
    if _tracing() is None:
        return _COMPILE_AND_CALL(fn, args, kwargs)  # type: ignore[misc]
    ours = _BY_WRAPPER.get(getattr(fn, "__code__", None))
    if ours is not None and not kwargs:
        return ours(*args)
    return fn(*args, **(kwargs or {}))


# what `patches` reads that may change: (module name, attribute) of each spelling (the
# export session keeps its table while these and the other providers' are the same)
WATCHED = tuple((module_name, attr) for module_name, attr, _ in _SPELLINGS)


def patches() -> list[tuple[Any, str, Any]]:
    """``(owner, attribute, replacement)`` for every control-flow spelling loaded now; the
    export session installs them for its duration.  Each replacement traces with safetrace
    on a thread that is exporting and is torch's own function everywhere else."""
    out: list[tuple[Any, str, Any]] = []
    if _COMPILE_AND_CALL is not None:  # (map/scan's _maybe_compile_and_run_fn calls it too)
        out.append((_HOP_UTILS, "_hop_compile_and_call", _call_uncompiled))
    for module_name, attr, key in _SPELLINGS:
        mod = sys.modules.get(module_name)
        current = getattr(mod, attr, None) if mod is not None else None
        if current is not _ORIGINAL[key] and current is not _OURS[key]:
            continue  # not loaded, or not the function (a submodule of the same name)
        out.append((mod, attr, _OURS[key]))  # (ours already: another export installed it)
    return out


# -- the operators reaching the mode ----------------------------------------------------------

@handles(hop.cond)
def _cond_op(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    pred, true_fn, false_fn, operands = (list(args) + [kwargs.get("operands", ())])[:4]
    with tr:  # the mode is off while it handles a call: the branches need it
        out = ops.cond(tr, pred, true_fn, false_fn, tuple(operands), numbers=True)
    return out if isinstance(out, (tuple, list)) else (out,)


@handles(hop.while_loop)
def _while_op(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    cond_fn, body_fn, carried, additional = (list(args) + [()])[:4]
    n = len(carried)
    extra = tuple(additional)

    def c(*v: Any) -> Any:
        return cond_fn(*v, *extra)

    def b(*v: Any) -> Any:
        return body_fn(*v, *extra)

    with tr:
        out = ops.while_loop(tr, _named(c, cond_fn), _named(b, body_fn), tuple(carried))
    # (body_fn's own structure, as eager's operator returns it: a list stays a list)
    return out if isinstance(out, list) and len(out) == n else tuple(out)[:n]


@handles(hop.map_impl)
def _map_op(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    body, xs, pos = args[:3]

    def f(x: Any, *rest: Any) -> Any:
        return body(*x, *rest)

    with tr:
        return ops.map_(tr, _named(f, body), list(xs), *pos)


@handles(hop.scan)
def _scan_op(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    combine, init, xs = args[:3]
    additional = tuple(args[3] if len(args) > 3 else kwargs.get("additional_inputs", ()))
    n_i = len(init)

    def f(carry: Any, x: Any) -> Any:
        out = combine(*carry, *x, *additional)
        return list(out[:n_i]), list(out[n_i:])

    with tr:
        carry, ys = ops.scan(tr, _named(f, combine), list(init), list(xs))
    return (*carry, *ys)


@handles(hop.hints_wrapper)
def _hints_op(tr: Recorder, func: Any, args: tuple, kwargs: dict) -> Any:
    """``hints_wrapper(body_fn, args, kwargs, hints=...)``: hints for a compiler, no value
    of their own; the body is traced in place (the graph computes what torch's does)."""
    body, operands, body_kwargs = (list(args) + [(), {}])[:3]
    with tr:
        return body(*operands, **(body_kwargs or {}))


_USER_FNS = ("cond_fn", "body_fn", "combine_fn", "f", "fn")


def _named(fn: Callable, source: Any) -> Callable:
    """A wrapper whose messages name the user's function: the graph module's, or the one
    torch's flattening wrapper (``flat_body_fn``) closes over."""
    source = getattr(source, "forward", source)
    code = getattr(source, "__code__", None)
    if code is not None and code.co_filename.startswith(_TORCH_DIR):
        cells = dict(zip(code.co_freevars, source.__closure__ or ()))
        for name in _USER_FNS:
            if name in cells and callable(cells[name].cell_contents):
                source = cells[name].cell_contents
                break
    fn.__wrapped__ = source  # type: ignore[attr-defined]
    return fn


_TORCH_DIR = torch.__file__.rsplit("/", 1)[0]
