"""Python-level torch functions (``F.layer_norm``, ``Tensor.split``, ...).

A composite whose ATen namesake accepts the same arguments is traced as one unit;
otherwise it is traced through: its body runs with the tracer active, so its inner
torch calls are recorded.  Tracing through needs the body's own "has a torch-function
override?" check switched off, or it would hand the call straight back to the tracer.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable

import torch

from safetrace.symbolic import SymBool, sym_not
from safetrace.trace.asserts import check
from safetrace.trace.current import active_tracer
from safetrace.trace.proxy import Proxy
from safetrace.trace.schema import schemas_of

_NO = object()


def _false(*args: Any, **kwargs: Any) -> bool:
    return False


_THROUGH: dict[Any, Callable] = {}
_MODULES: dict[int, dict] = {}
_PATCHED: set[int] = set()  # ids of the patched globals dicts (kept alive by _MODULES)
_CHECKS = ("has_torch_function", "has_torch_function_unary", "has_torch_function_variadic")


def _copy(func: types.FunctionType, g: dict) -> types.FunctionType:
    copy = types.FunctionType(func.__code__, g, func.__name__, func.__defaults__,
                              func.__closure__)
    copy.__kwdefaults__ = func.__kwdefaults__
    return copy


def _module_globals(g: dict) -> dict:
    """The globals of a module with its torch-function checks off, shared by its functions.

    Functions of the same module call each other (``unique`` -> ``_unique_impl``); their
    copies see the patched globals too, so none of them hands the call back to the tracer.
    """
    patched = _MODULES.get(id(g))
    if patched is None:
        patched = dict(g)
        for name in _CHECKS:
            patched[name] = _false
        _MODULES[id(g)] = patched
        _PATCHED.add(id(patched))
        for name, value in g.items():
            if isinstance(value, types.FunctionType) and value.__globals__ is g:
                patched[name] = _copy(value, patched)
    return patched


def through(func: Callable) -> Callable | None:
    """A copy of `func` whose torch-function checks are off (None if not a Python function)."""
    cached = _THROUGH.get(func)
    if cached is not None:
        return cached
    if not isinstance(func, types.FunctionType):
        return None
    if id(func.__globals__) in _PATCHED:
        return func  # already a copy with the checks off
    copy = _copy(func, _module_globals(func.__globals__))
    _THROUGH[func] = copy
    return copy


def boolean_dispatch_choice(func: Callable, args: tuple,
                            kwargs: dict) -> tuple[str, Callable] | None:
    """For F.max_pool2d-style dispatchers: (aten packet name, chosen Python function).

    Dispatchers nest (``torch.unique`` picks on return_inverse, then on return_counts).
    """
    code = getattr(func, "__code__", None)
    if code is None or "if_true" not in code.co_freevars:
        return None
    name = func.__name__
    while code is not None and "if_true" in code.co_freevars:
        cells = dict(zip(code.co_freevars, (c.cell_contents for c in func.__closure__)))
        flag = cells["default"]
        if cells["arg_name"] in kwargs:
            flag = kwargs[cells["arg_name"]]
        elif cells["arg_index"] < len(args):
            flag = args[cells["arg_index"]]
        func = cells["if_true"] if flag else cells["if_false"]
        if flag:
            name = func.__name__.lstrip("_")
        code = getattr(func, "__code__", None)
    return name, func


_SIGS: dict[Any, Any] = {}


_RECIPES: dict[tuple, Any] = {}

# Python parameter names an ATen namesake spells otherwise (``F.dropout(x, p, training)``
# is ``aten.dropout(input, p, train)``): bound under the schema's name when the schema has
# no parameter of the Python name
_RENAMED = {"training": "train"}


def _probability(named: dict) -> bool:
    p = named.get("p")
    return type(p) in (int, float) and 0 <= p <= 1


def _evaluation_batch_norm(named: dict) -> bool:
    """F.batch_norm: its body checks the batch size when training (a size guard) and the
    sign of ``eps``, then calls the op with ``torch.backends.cudnn.enabled``, which its
    own signature lacks: bound only in evaluation with ``eps >= 0``, the flag read here as
    the body reads it (and held in the memo's key, memo.py): a call traced through is never
    remembered by the memo (it was ~8% of a warm convnet export)."""
    eps = named.get("eps")
    if named.get("training") is not False or type(eps) not in (int, float) or eps < 0:
        return False
    named["cudnn_enabled"] = torch.backends.cudnn.enabled
    return True


def _ordered_bounds(named: dict) -> bool:
    """F.hardtanh: its body raises ValueError where ``min_val > max_val`` (aten.hardtanh
    clamps to max_val instead): bound only where the numbers are ordered (else traced
    through, and the body raises).  A 0-d tensor bound (``F.hardtanh(x, t, 1.0)``) is read
    as eager's parser reads it for the op (``.item()``), and the body's test on it is
    asserted at run time instead of read (a data question at export)."""
    lo, hi = named.get("min_val", -1.0), named.get("max_val", 1.0)
    if not any(isinstance(v, Proxy) and v.dim() == 0 for v in (lo, hi)):
        return type(lo) in (int, float) and type(hi) in (int, float) and not lo > hi
    tr = active_tracer()
    if tr is None or not all(type(v) in (int, float) or isinstance(v, Proxy) and v.dim() == 0
                             and not v.dtype.is_complex for v in (lo, hi)):
        return False
    lo, hi = (tr.redispatch(torch.Tensor.item, (v,), {}) if isinstance(v, Proxy) else v
              for v in (lo, hi))
    ordered = sym_not(lo > hi)  # (read lo <= hi: a NaN bound, which eager lets through, is
    # refused at run time)
    if not isinstance(ordered, SymBool):
        return bool(ordered)
    check(ordered, "min_val cannot be greater than max_val (F.hardtanh)")
    named["min_val"], named["max_val"] = lo, hi
    return True


# checks a composite's body makes that its ATen namesake's rule does not (F.dropout's
# ValueError for p outside [0, 1]): a call failing one is traced through, and its body
# raises as in eager (an accepted call may be completed with what the body adds)
_ACCEPTS = {"dropout": _probability, "alpha_dropout": _probability,
            "batch_norm": _evaluation_batch_norm,
            "feature_alpha_dropout": _probability,
            # (F.group_norm's ValueError where N*C/G * prod(spatial) == 1: a size guard)
            "group_norm": lambda named: False, "hardtanh": _ordered_bounds}


def bind_by_name(func: Callable, packet: str, args: tuple, kwargs: dict) -> dict | None:
    """Bind a Python composite's call by parameter name onto the ATen schema's names.

    Returns keyword arguments for the schema, or None when the Python function takes
    something the ATen op does not (then the caller traces through instead).  The binding
    is worked out once per call shape (argument count, keyword names) and replayed.
    """
    key = (func, packet, len(args), tuple(kwargs))
    recipe = _RECIPES.get(key)
    accepts = _ACCEPTS.get(packet)
    if recipe is not None:
        out = _replay(recipe, args, kwargs)
        if out is not _NO:
            return out if accepts is None or accepts(out) else None
    found = _bind_slow(func, packet, args, kwargs)
    if found is None:
        return None
    out, recipe = found
    _RECIPES[key] = recipe
    return out if accepts is None or accepts(out) else None


def _get(src: tuple, args: tuple, kwargs: dict) -> Any:
    return args[src[1]] if src[0] == "a" else kwargs[src[1]] if src[0] == "k" else src[1]


def _replay(recipe: tuple, args: tuple, kwargs: dict) -> Any:
    fields, drops, nones = recipe
    for src, default in drops:  # values that were left out because they were defaults
        if not _same(_get(src, args, kwargs), default):
            return _NO
    for src, was_none in nones:
        if (_get(src, args, kwargs) is None) != was_none:
            return _NO
    return {target: _get(src, args, kwargs) for target, src in fields}


def _bind_slow(func: Callable, packet: str, args: tuple, kwargs: dict) -> tuple | None:
    sig = _SIGS.get(func)
    if sig is None:
        try:
            sig = inspect.signature(func)
        except (TypeError, ValueError):
            sig = False
        _SIGS[func] = sig
    if sig is False:
        return None
    schemas = schemas_of(packet)
    if not schemas:
        return None
    names = {a.name for s in schemas for a in s.args}
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return None
    params = sig.parameters
    defaults = {a.name: a for s in schemas for a in s.args}
    given = bound.arguments
    positions = {n: i for i, n in enumerate(params)}
    out: dict = {}
    fields: list = []
    drops: list = []
    nones: list = []
    first = True
    for name, p in params.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            if name in given:
                return None
            continue
        if name in given:
            value = given[name]
            src: tuple = ("k", name) if name in kwargs else ("a", positions[name])
        elif p.default is inspect.Parameter.empty:
            continue
        else:
            value = p.default
            src = ("c", value)
        target = name
        if first and name not in names:
            target = "self" if "self" in names else "input" if "input" in names else name
        elif name not in names and _RENAMED.get(name) in names:
            target = _RENAMED[name]
        first = False
        if target not in names:
            if p.default is not inspect.Parameter.empty and _same(value, p.default):
                drops.append((src, p.default))
                continue
            return None
        spec = defaults[target]
        if name not in given and spec.has_default and _same(value, spec.default):
            continue  # the Python default is the ATen default: leave it implicit
        if spec.has_default and not spec.optional:
            nones.append((src, value is None))
            if value is None:
                continue  # None for a list argument with a default (stride=None): default
        out[target] = value
        fields.append((target, src))
    return out, (tuple(fields), tuple(drops), tuple(nones))


def _same(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(a == b)
    except Exception:
        return False
