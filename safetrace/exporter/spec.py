"""Matching a ``dynamic_shapes`` spec tree against the inputs, with errors that point.

The result is one entry per flattened input leaf (in the order the program flattens its
inputs): for a tensor a list with one spec entry per dim, for anything else None.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch.utils import _pytree as pytree

from safetrace import pytree as st_pytree
from safetrace.dims import DerivedDim, Dim, DimHint
from safetrace.exporter.shapes import AdditionalInputs, ShapesCollection, from_torch_export
from safetrace import errors
from safetrace.errors import spec_entry

Entry = Any  # None | int | DimHint | Dim | DerivedDim


class Omitted:
    """The spec of a tensor in an input left out of a ``dynamic_shapes`` dict: static, like
    None, but remembered, so that a declared dim specialized against it names the missing
    key (torch.export refuses the dict; safetrace reads the input as static)."""

    def __repr__(self) -> str:
        return "None"


OMITTED = Omitted()


class ScalarSpec(list):
    """The one entry of an int input declared dynamic (Dim.DYNAMIC / AUTO / a named Dim):
    the int is a symbolic size, as if it were a dim of its own."""


def _torch_collection(spec: Any) -> bool:
    """torch.export's own ShapesCollection / AdditionalInputs (recognized without importing
    torch.export): both turn into the spec tree through ``dynamic_shapes(m, args,
    kwargs)``, as in torch."""
    cls = type(spec)
    return cls.__name__ in ("ShapesCollection", "AdditionalInputs") and \
        cls.__module__.startswith("torch.export") and callable(getattr(spec, "dynamic_shapes",
                                                                        None))


def _in_signature_order(fn: Any, kwargs: dict) -> list[tuple[str, Any]]:
    """Keyword inputs in the order of the signature's parameters (then the rest as given):
    a tuple spec's entries follow the signature, as torch binds them, not the order the
    kwargs dict was written in."""
    sig = st_pytree.signature(fn)
    order = {name: i for i, name in enumerate(sig.parameters)} if sig is not None else {}
    return sorted(kwargs.items(), key=lambda kv: order.get(kv[0], len(order)))


def unwrap_int_keys(model: Any, args: tuple, kwargs: dict, spec: Any) -> tuple:
    """torch.export's ``_IntWrapper`` inputs (an int given as its wrapper, so that a
    ShapesCollection can key it, ``sc[wrapped] = Dim.DYNAMIC``): the collection turns into
    the spec tree while the wrappers are the inputs, then each wrapper is its int."""
    def wrapped(v: Any) -> bool:
        return type(v).__name__ == "_IntWrapper" and \
            type(v).__module__.startswith("torch.export") and isinstance(v.val, int)

    tensor = torch.Tensor
    for v in args:  # (plain tensors only, the usual case: no leaf is a wrapper)
        if type(v) is not tensor:
            break
    else:
        if not kwargs:
            return args, kwargs, spec
    leaves = pytree.tree_leaves((args, kwargs))
    if not any(wrapped(v) for v in leaves):
        return args, kwargs, spec
    if hasattr(spec, "dynamic_shapes") and callable(spec.dynamic_shapes):
        spec = spec.dynamic_shapes(model, args, kwargs)
    args, kwargs = pytree.tree_map(lambda v: v.val if wrapped(v) else v, (args, kwargs))
    return tuple(args), kwargs, spec


def match_spec(fn: Any, args: tuple, kwargs: dict, spec: Any,
               names: list[str]) -> list[list[Entry] | None]:
    """Per-leaf dim specs for ``spec`` over ``(args, kwargs)``; ``names`` name positionals."""
    out: list[list[Entry] | None] = []
    if isinstance(spec, (ShapesCollection, AdditionalInputs)):
        spec = spec.dynamic_shapes(fn, args, kwargs)  # to the tree, as torch does
    elif _torch_collection(spec):
        try:
            spec = spec.dynamic_shapes(fn, args, kwargs)
        except (ValueError, TypeError, KeyError, AssertionError) as exc:
            raise errors.torch_collection_refused(type(spec).__name__, exc) from exc
    tops = list(zip(names, args)) + list(kwargs.items())  # the order of the leaves
    if isinstance(spec, (tuple, list)):
        spec = _torch_tuple_form(fn, spec, args, kwargs) or spec
    if isinstance(spec, dict):
        spec = _expand_var_params(fn, spec, names, kwargs)
        valid = [n for n, _ in tops]
        unknown = [k for k in spec if k not in valid]
        if unknown:
            raise errors.spec_keys(unknown, valid, _var_hint(fn))
        per_top = [spec.get(n, OMITTED) for n, _ in tops]
    elif isinstance(spec, (tuple, list)):
        if len(spec) != len(tops):
            raise errors.spec_count(len(spec), [n for n, _ in tops],
                                    side_by_side(tuple(v for _, v in tops), spec))
        # entries follow the signature (torch binds them so), leaves the kwargs' order
        by_name = dict(zip([n for n, _ in tops[:len(args)]] +
                           [k for k, _ in _in_signature_order(fn, kwargs)], spec))
        per_top = [by_name[n] for n, _ in tops]
    else:
        raise errors.spec_form(type(spec).__name__)
    for (name, value), s in zip(tops, per_top):
        _walk(value, s, f"dynamic_shapes[{name!r}]", name, out)
    return out


def _torch_tuple_form(fn: Any, spec: tuple | list, args: tuple, kwargs: dict) -> dict | None:
    """torch.export's tuple form for a forward with ``*args`` / ``**kwargs``: one entry per
    parameter of the signature, ``*args``' a tuple of per-input specs (``**kwargs``' a
    dict), as the dict form; None when `spec` is not written that way (safetrace's own
    form, one entry per input, is matched as it is)."""
    sig = st_pytree.signature(fn)
    if sig is None:
        return None
    kinds = {p.name: p.kind for p in sig.parameters.values()}
    var = [n for n, k in kinds.items() if k in (inspect.Parameter.VAR_POSITIONAL,
                                                  inspect.Parameter.VAR_KEYWORD)]
    if not var:
        return None
    try:
        bound = list(sig.bind(*args, **kwargs).arguments)
    except TypeError:
        return None
    if len(bound) != len(spec) or not any(n in var for n in bound):
        return None
    for name, entry in zip(bound, spec):
        kind = kinds[name]
        if kind is inspect.Parameter.VAR_POSITIONAL and not (
                entry is None or isinstance(entry, (tuple, list))):
            return None
        if kind is inspect.Parameter.VAR_KEYWORD and not (entry is None or
                                                          isinstance(entry, dict)):
            return None
    return dict(zip(bound, spec))


def _expand_var_params(fn: Any, spec: dict, names: list[str], kwargs: dict) -> dict:
    """torch.export's keys for ``*xs`` / ``**kw`` (a tuple / a dict of specs under the
    parameter's name) as safetrace's per-input keys (``xs[0]``, the keyword names)."""
    sig = st_pytree.signature(fn)
    if sig is None:
        return spec
    params = sig.parameters.values()
    var_pos = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
    var_kw = next((p.name for p in params if p.kind is p.VAR_KEYWORD), None)
    if var_pos not in spec and var_kw not in spec:
        return spec
    out = {k: v for k, v in spec.items() if k not in (var_pos, var_kw)}

    def put(key: str, value: Any, holder: str) -> None:
        if key in out:
            raise errors.spec_given_twice(key, holder)
        out[key] = value

    if var_pos in spec:
        given = [n for n in names if n.startswith(f"{var_pos}[")]
        entry = spec[var_pos]
        if entry is not None:
            if not isinstance(entry, (tuple, list)) or len(entry) != len(given):
                n = len(entry) if isinstance(entry, (tuple, list)) else type(entry).__name__
                raise errors.spec_var_positional(var_pos, len(given), n)
            for name, e in zip(given, entry):
                put(name, e, var_pos)
    if var_kw in spec:
        named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        extra = [k for k in kwargs if k not in named]
        entry = spec[var_kw]
        if entry is not None:
            unknown = [k for k in entry] if not isinstance(entry, dict) else [
                k for k in entry if k not in extra]
            if not isinstance(entry, dict) or unknown:
                raise errors.spec_var_keyword(var_kw, extra, entry)
            for k, e in entry.items():
                put(k, e, var_kw)
    return out


def _var_hint(fn: Any) -> str:
    sig = st_pytree.signature(fn)
    params = sig.parameters.values() if sig is not None else ()
    hints = [f"{{{p.name!r}: (spec0, spec1, ...)}} for *{p.name}" for p in params
             if p.kind is p.VAR_POSITIONAL]
    hints += [f"{{{p.name!r}: {{'name': spec, ...}}}} for **{p.name}" for p in params
              if p.kind is p.VAR_KEYWORD]
    return f" (or {' and '.join(hints)})" if hints else ""


def _walk(value: Any, spec: Any, where: str, path: str, out: list) -> None:
    if isinstance(value, torch.Tensor):
        out.append(OMITTED if spec is OMITTED else _tensor_spec(value, spec, where))
        return
    node_type = type(value)
    handler = pytree.SUPPORTED_NODES.get(node_type) if not pytree.is_namedtuple_class(
        node_type) else pytree.SUPPORTED_NODES.get(tuple)
    if handler is None:  # a constant leaf
        if type(value) is int and spec is not None and spec is not OMITTED:
            e = _entry(spec, where)  # an int input declared dynamic: a symbolic int
            if isinstance(e, (Dim, DerivedDim)) or (isinstance(e, DimHint) and
                                                    e.kind != "static"):
                out.append(ScalarSpec([e]))
                return
        if spec is not None and spec is not OMITTED and spec != Dim.STATIC:
            raise errors.spec_on_constant(where, path, value, spec)
        out.append(None)
        return
    children, context = handler.flatten_fn(value)
    if spec is None or spec is OMITTED:
        for i, c in enumerate(children):
            _walk(c, spec, where, f"{path}[{i}]", out)
        return
    specs = _spec_children(value, children, context, spec, where, path)
    keys = _child_keys(value, children, context)
    for k, c, s in zip(keys, children, specs):
        _walk(c, s, f"{where}{k}", f"{path}{k}", out)


def _child_keys(value: Any, children: list, context: Any) -> list[str]:
    if isinstance(value, dict):
        return [f"[{k!r}]" for k in context]
    if hasattr(value, "__dataclass_fields__"):
        return [f".{f}" for f in value.__dataclass_fields__]
    return [f"[{i}]" for i in range(len(children))]


def _spec_children(value: Any, children: list, context: Any, spec: Any, where: str,
                   path: str) -> list:
    if isinstance(value, dict):
        if not isinstance(spec, dict):
            raise _mismatch(value, spec, where, path, "a dict keyed like the input")
        extra = [k for k in spec if k not in value]
        if extra:
            raise _mismatch(value, spec, where, path, f"keys among {list(value)}")
        return [spec.get(k) for k in context]
    if hasattr(value, "__dataclass_fields__") and isinstance(spec, dict):
        fields = list(value.__dataclass_fields__)
        extra = [k for k in spec if k not in fields]
        if extra:
            raise _mismatch(value, spec, where, path, f"fields among {fields}")
        return [spec.get(f) for f in fields]
    if type(spec) is type(value) and hasattr(value, "__dataclass_fields__"):
        return [getattr(spec, f) for f in value.__dataclass_fields__]
    if isinstance(spec, (list, tuple)):
        if len(spec) != len(children):
            raise _mismatch(value, spec, where, path, f"{len(children)} entries")
        return list(spec)
    raise _mismatch(value, spec, where, path, f"a {type(value).__name__} of specs")


def _mismatch(value: Any, spec: Any, where: str, path: str, expected: str) -> Exception:
    return errors.spec_shape(where, path, expected, side_by_side(value, spec))


def _tensor_spec(t: torch.Tensor, spec: Any, where: str) -> list[Entry] | None:
    ndim = t.dim()
    if spec is None:
        return None
    if isinstance(spec, dict):
        entries: list[Entry] = [None] * ndim
        for d, e in spec.items():
            if not isinstance(d, int) or not -ndim <= d < ndim:
                raise errors.spec_dim_out_of_range(where, d, list(t.shape))
            entries[d % ndim] = _entry(e, f"{where}[{d}]")
        return entries
    if isinstance(spec, (tuple, list)):
        if len(spec) != ndim:
            raise errors.spec_rank(where, len(spec), list(t.shape),
                                   repr(tuple([Dim.STATIC] * ndim)))
        return [_entry(e, f"{where}[{i}]") for i, e in enumerate(spec)]
    raise errors.spec_tensor_form(where, spec)


def _entry(e: Any, where: str) -> Entry:
    if e is None or isinstance(e, (DimHint, Dim, DerivedDim)):
        return e
    if type(e).__module__.startswith("torch.export"):
        return from_torch_export(e, where)
    if isinstance(e, int) and not isinstance(e, bool):
        return e
    raise spec_entry(where, e)


def tree_text(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        return f"Tensor{list(v.shape)}"
    if isinstance(v, (list, tuple)):
        inner = ", ".join(tree_text(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' * (len(v) == 1)})"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {tree_text(x)}" for k, x in v.items()) + "}"
    if hasattr(v, "__dataclass_fields__"):
        return f"{type(v).__name__}(" + ", ".join(
            f"{f}={tree_text(getattr(v, f))}" for f in v.__dataclass_fields__) + ")"
    return repr(v)


def side_by_side(inputs: Any, spec: Any) -> str:
    """The input tree and the spec tree, one above the other for comparison."""
    return f"  inputs: {tree_text(inputs)}\n  spec:   {tree_text(spec)}"


def check_additional(ep: Any, spec: Any) -> None:
    """Every example of an AdditionalInputs spec (ours or torch's) passes the program's
    input checks, as torch.export checks them: the examples declare calls that must work."""
    if type(spec).__name__ != "AdditionalInputs":
        return
    for i, (a, k) in enumerate(getattr(spec, "_examples", ()), start=1):
        try:
            ep.check_inputs(tuple(a), dict(k or {}))
        except errors.InputMismatchError as exc:
            raise errors.additional_refused(i, exc) from None
