"""Flattening inputs and outputs with named paths, on torch's shared pytree registry.

A class registered here is registered with ``torch.utils._pytree`` too, so a class
registered for torch.export works with safetrace and the other way round.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from typing import Any, Callable

import torch
from torch.utils import _pytree as pytree

from safetrace.errors import UnsupportedInputError

# Leaves that are not containers and that safetrace knows how to specialize.
CONSTANT_LEAVES = (int, float, bool, str, complex, type(None), torch.dtype, torch.device,
                   torch.memory_format, torch.layout, type(Ellipsis))


def register_dataclass(cls: type) -> type:
    """Let a dataclass appear in inputs and outputs (its fields are flattened)."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"register_dataclass expects a @dataclass class, got {cls!r}")
    if cls not in pytree.SUPPORTED_NODES:
        pytree.register_dataclass(cls)
    return cls


def register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable,
                         **kwargs: Any) -> None:
    """General registration of a container class (same arguments as torch's pytree)."""
    if cls not in pytree.SUPPORTED_NODES:
        pytree.register_pytree_node(cls, flatten_fn, unflatten_fn, **kwargs)


class SizeOutput(tuple):
    """Marks a ``torch.Size`` among a program's outputs: flattened like a tuple (its sizes
    may be symbolic while tracing), rebuilt as a ``torch.Size`` when the program runs, as
    eager returns it.  (torch.Size's own registration rebuilds a plain tuple.)"""


if SizeOutput not in pytree.SUPPORTED_NODES:
    pytree.register_pytree_node(
        SizeOutput, lambda s: (list(s), None), lambda xs, _: torch.Size(xs),
        flatten_with_keys_fn=lambda s: ([(pytree.SequenceKey(i), v)
                                         for i, v in enumerate(s)], None))


def key_str(path: tuple, root: str) -> str:
    """A user-facing path: ``xs[1]``, ``d.xs[0]``, ``inputs['mask']``."""
    out = root
    for k in path:
        if isinstance(k, pytree.SequenceKey):
            out += f"[{k.idx}]"
        elif isinstance(k, pytree.MappingKey):
            out += f"[{k.key!r}]"
        elif isinstance(k, pytree.GetAttrKey):
            out += f".{k.name}"
        else:
            out += str(k)
    return out


_NON_IDENT = re.compile(r"[^0-9a-zA-Z_]+")


@functools.lru_cache(maxsize=4096)
def placeholder_name(user_path: str) -> str:
    """``d.xs[1]`` -> ``d_xs_1``: a valid, readable graph input name."""
    name = _NON_IDENT.sub("_", user_path).strip("_")
    if not name or name[0].isdigit():
        name = "arg_" + name
    return name


def flatten_inputs(fn: Callable, args: tuple, kwargs: dict) -> tuple[list[tuple[str, Any]], Any]:
    """Flatten ``(args, kwargs)`` as the program will be called: (user path, leaf) + spec.

    Paths start with the parameter name each argument binds to (``xs[1]``, ``d.xs[0]``).
    """
    params = _positional_names(fn, len(args))
    simple = CONSTANT_LEAVES + (torch.Tensor,)
    if all(isinstance(a, simple) for a in args) and all(
            isinstance(v, simple) for v in kwargs.values()):
        # Common case, no containers: the paths are the argument names.
        spec = pytree.tree_flatten((args, kwargs))[1]
        return list(zip(params, args)) + list(kwargs.items()), spec
    leaves, spec = pytree.tree_flatten_with_path((args, kwargs))
    out = []
    for path, leaf in leaves:
        top, key, rest = path[0], path[1], path[2:]
        if top.idx == 0:
            root = params[key.idx]
        else:
            root = str(key.key)
        user = key_str(rest, root)
        if not isinstance(leaf, (torch.Tensor,) + CONSTANT_LEAVES):
            raise unsupported_leaf(user, leaf)
        out.append((user, leaf))
    return out, spec


_SIGNATURES: dict = {}


def _signature(fn: Callable) -> inspect.Signature | None:
    key = getattr(fn, "__func__", fn)
    key = getattr(key, "__code__", key)
    try:
        sig = _SIGNATURES.get(key)
    except TypeError:  # unhashable callable
        sig = None
    if sig is None:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return None
        try:
            _SIGNATURES[key] = sig
        except TypeError:
            pass
    return sig


def _positional_names(fn: Callable, n: int) -> list[str]:
    sig = _signature(fn)
    if sig is None:
        return [f"args[{i}]" for i in range(n)]
    names: list[str] = []
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            names.extend(f"{p.name}[{i}]" for i in range(n - len(names)))
            break
    while len(names) < n:
        names.append(f"args[{len(names)}]")
    return names[:n]


def unsupported_leaf(user_path: str, leaf: Any) -> UnsupportedInputError:
    cls = type(leaf)
    qual = f"{cls.__module__}.{cls.__qualname__}"
    if dataclasses.is_dataclass(leaf):
        fix = f"st.register_dataclass({cls.__name__})"
    else:
        fix = (f"st.register_pytree_node({cls.__name__}, flatten_fn, unflatten_fn)  "
               f"# flatten_fn(obj) -> (children, context)")
    return UnsupportedInputError(
        f"input {user_path} has type {qual}, which safetrace does not know how to flatten "
        f"into tensors and constants.\nFix: register the class once before exporting:\n"
        f"    import safetrace as st\n    {fix}")


tree_flatten = pytree.tree_flatten
tree_unflatten = pytree.tree_unflatten
tree_map = pytree.tree_map
