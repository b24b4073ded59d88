"""Flattening inputs and outputs with named paths, on torch's shared pytree registry.

A class registered here is registered with ``torch.utils._pytree`` too, so a class
registered for torch.export works with safetrace and the other way round.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import inspect
import operator
import re
import weakref
from typing import Any, Callable

import torch
from torch.utils import _pytree as pytree

from safetrace.errors import unflattenable_input

# Leaves that are not containers and that safetrace knows how to specialize.
CONSTANT_LEAVES = (int, float, bool, str, complex, type(None), torch.dtype, torch.device,
                   torch.memory_format, torch.layout, type(Ellipsis))


def torchbind_object(value: Any) -> bool:
    """A TorchScript custom class object (``torch.classes.ns.Cls``): an input the program
    takes as it is, as torch.export does (it is never flattened)."""
    return type(value) is torch.ScriptObject and \
        value._type().qualified_name().startswith("__torch__.torch.classes.")


def register_dataclass(cls: type) -> type:
    """Let a dataclass appear in inputs and outputs (its fields are flattened)."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"register_dataclass expects a @dataclass class, got {cls!r}")
    if cls not in pytree.SUPPORTED_NODES:
        # a serialized name lets torch.export.save write a program taking the class
        # (ep.to_torch()); torch.export.load finds it again once the class is registered
        pytree.register_dataclass(cls, serialized_type_name=f"{cls.__module__}."
                                                            f"{cls.__qualname__}")
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


def flatten_inputs(fn: Callable, args: tuple, kwargs: dict,
                   params: list[str] | None = None) -> tuple[list[tuple[str, Any]], Any]:
    """Flatten ``(args, kwargs)`` as the program will be called: (user path, leaf) + spec.

    Paths start with the parameter name each argument binds to (``xs[1]``, ``d.xs[0]``;
    `params`: ``positional_names(fn, len(args))``, when the caller has it).
    """
    if params is None:
        params = positional_names(fn, len(args))
    # (by exact type in one pass in C first: plain tensors and constants)
    if _PLAIN_TYPES.issuperset(map(type, args)) and (
            not kwargs or _PLAIN_TYPES.issuperset(map(type, kwargs.values()))) or all(
            isinstance(a, _SIMPLE) for a in args) and all(
            isinstance(v, _SIMPLE) for v in kwargs.values()):
        # Common case, no containers: the paths are the argument names.
        spec = _plain_spec(args, kwargs)
        return [*zip(params, args), *kwargs.items()], spec
    leaves, spec = pytree.tree_flatten_with_path((args, kwargs))
    out = []
    for path, leaf in leaves:
        top, key, rest = path[0], path[1], path[2:]
        if top.idx == 0:
            root = params[key.idx]
        else:
            root = str(key.key)
        user = key_str(rest, root)
        if not isinstance(leaf, (torch.Tensor,) + CONSTANT_LEAVES) and not torchbind_object(leaf):
            raise unflattenable_input(user, leaf)
        out.append((user, leaf))
    return out, spec


# (argument types, keyword names, keyword types) -> the spec of plain arguments (tensors and
# constants only: their spec depends on nothing else); id(spec) -> (spec, number of
# positional ones, keyword names) where none is None (a leaf-less node in torch's pytree)
_PLAIN_SPECS: dict[tuple, Any] = {}
_PLAIN_LAYOUT: dict[int, tuple] = {}
_PLAIN_TYPES = frozenset(CONSTANT_LEAVES) | {torch.Tensor, torch.nn.Parameter}
_SIMPLE = (torch.Tensor, *CONSTANT_LEAVES)  # (flatten_inputs' leaves that need no flattening)


def _plain_spec(args: tuple, kwargs: dict) -> Any:
    key = (tuple(map(type, args)), tuple(kwargs), tuple(map(type, kwargs.values()))) \
        if kwargs else (tuple(map(type, args)), (), ())
    spec = _PLAIN_SPECS.get(key)
    if spec is None:
        spec = pytree.tree_flatten((args, kwargs))[1]
        if all(t in _PLAIN_TYPES for t in key[0] + key[2]) and len(_PLAIN_SPECS) < 10_000:
            _PLAIN_SPECS[key] = spec
            if type(None) not in key[0] + key[2]:
                _PLAIN_LAYOUT[id(spec)] = (spec, len(args), key[1])
    return spec


def unflatten_inputs(leaves: list, spec: Any) -> Any:
    """``tree_unflatten(leaves, spec)`` for a spec of ``flatten_inputs`` (directly when the
    inputs were plain tensors and constants)."""
    hit = _PLAIN_LAYOUT.get(id(spec))
    if hit is not None and hit[0] is spec and len(leaves) == hit[1] + len(hit[2]):
        n = hit[1]
        return tuple(leaves[:n]), dict(zip(hit[2], leaves[n:]))
    return pytree.tree_unflatten(leaves, spec)


# (id(function), bound) -> (function, its code, defaults and __wrapped__, its signature).
# Keyed by the function, not its code: every wrapper a decorator makes shares one code
# object, and inspect.signature follows each one's own __wrapped__.
_SIGNATURES: dict[tuple[int, bool], tuple] = {}


def signature(fn: Callable) -> inspect.Signature | None:
    f = getattr(fn, "__func__", None)
    bound = f is not None
    if f is None:
        f = fn
    code = getattr(f, "__code__", None)
    wrapped = getattr(f, "__dict__", {}).get("__wrapped__")
    defaults = getattr(f, "__defaults__", None)
    hit = _SIGNATURES.get((id(f), bound))
    if hit is not None and hit[0] is f and hit[1] is code and hit[2] is wrapped and \
            hit[3] is defaults and code is not None:
        return hit[4]
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    if code is not None:
        if len(_SIGNATURES) > 4096:
            _SIGNATURES.clear()
        _SIGNATURES[(id(f), bound)] = (f, code, wrapped, defaults, sig)
    return sig


def positional_names(fn: Callable, n: int, sig: Any = None) -> list[str]:
    """The names of the first `n` positional parameters of `fn` (`sig`: its
    ``signature(fn)``, when the caller has it)."""
    if sig is None:
        sig = signature(fn)
    if sig is None:
        return [f"args[{i}]" for i in range(n)]
    hit = _POSITIONAL.get((id(sig), n))  # (a function of the signature and n)
    if hit is not None and hit[0] is sig:
        return list(hit[1])
    names = _positional_names(sig, n)
    if len(_POSITIONAL) > 4096:
        _POSITIONAL.clear()
    _POSITIONAL[(id(sig), n)] = (sig, tuple(names))
    return names


# (id(signature), n) -> (the signature, its first n positional names)
_POSITIONAL: dict[tuple[int, int], tuple] = {}


def _positional_names(sig: inspect.Signature, n: int) -> list[str]:
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


def in_spec_order(value: Any, spec: Any) -> Any:
    """``value`` with every plain dict's keys put in the order of the matching dict in
    TreeSpec ``spec`` (as torch.export, keys matter and their order does not), or None when
    nothing needed reordering or the structures differ otherwise."""
    changed = [False]

    def walk(v: Any, s: Any) -> Any:
        if s.is_leaf():
            return v
        kids = _kids(s)
        if s.type is dict and type(v) is dict:
            keys = list(s.context)
            if v.keys() != set(keys):
                return v
            if list(v) != keys:
                changed[0] = True
            return {k: walk(v[k], c) for k, c in zip(keys, kids)}
        if type(v) is not s.type or s.type is dict:
            return v
        handler = pytree.SUPPORTED_NODES.get(s.type)
        if handler is None:
            return v
        children, context = handler.flatten_fn(v)
        if len(children) != len(kids):
            return v
        return handler.unflatten_fn([walk(c, k) for c, k in zip(children, kids)], context)

    out = walk(value, spec)
    return out if changed[0] else None


def describe_mismatch(expected: Any, got: Any, got_leaves: list,
                      leaf_paths: list[str]) -> tuple[str, str]:
    """Where a call's input structure (TreeSpec ``got`` of ``(args, kwargs)``) first differs
    from the exported one, in the user's words, and the call to make instead: ("expected 2
    positional inputs (x, y), got 3.", "call it as at export: module(x, y)"), ("input `xs`
    was a tuple of 2 at export, got a list of 3", ...)."""
    (exp_args, exp_kw), (got_args, got_kw) = _kids(expected), _kids(got)
    names, offset = [], 0
    for i, child in enumerate(_kids(exp_args)):
        n = child.num_leaves
        suffix = _first_suffix(child)
        path = leaf_paths[offset] if n and offset < len(leaf_paths) else None
        names.append(path[:len(path) - len(suffix)] if path is not None and
                     path.endswith(suffix) else f"args[{i}]")
        offset += n
    if exp_args.num_children != got_args.num_children:
        return (f"expected {_count(exp_args.num_children, 'positional input')} "
                f"({', '.join(names)}), got {got_args.num_children}.",
                f"call it as at export: module({', '.join(names)}"
                + "".join(f", {k}={k}" for k in exp_kw.context) + ")")
    if list(exp_kw.context) != list(got_kw.context):
        missing = [k for k in exp_kw.context if k not in got_kw.context]
        extra = [k for k in got_kw.context if k not in exp_kw.context]
        call = ", ".join(names + [f"{k}={k}" for k in exp_kw.context])
        return (f"expected keyword inputs {list(exp_kw.context)}, got {list(got_kw.context)}"
                + (f" (missing {missing})" if missing else "")
                + (f" (not exported: {extra})" if extra else "") + ".",
                f"call it as at export: module({call})")
    tops = list(zip(names, _kids(exp_args), _kids(got_args)))
    tops += [(k, e, g) for k, e, g in zip(exp_kw.context, _kids(exp_kw), _kids(got_kw))]
    start = 0
    for name, e, g in tops:
        found = _first_difference(e, g, name, got_leaves, start)
        if found is not None:
            return found, ("call with the same containers (lists/tuples/dicts/"
                           "dataclasses, same lengths and keys) as at export")
        start += g.num_leaves
    return "its containers differ.", ("call with the same containers (lists/tuples/dicts/"
                                       "dataclasses) and keyword names as at export")


def _kids(spec: Any) -> list:
    return [spec.child(i) for i in range(spec.num_children)]


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _first_suffix(spec: Any) -> str:
    """The key path from `spec`'s root to its first leaf (``[0]``, ``['a'][0]``)."""
    out = ""
    while not spec.is_leaf() and spec.num_children:
        out += _child_keys(spec)[0]
        spec = spec.child(0)
    return out


def _child_keys(spec: Any) -> list[str]:
    t, ctx = spec.type, spec.context
    if t in (dict, collections.OrderedDict, collections.defaultdict) and ctx is not None:
        return [f"[{k!r}]" for k in (ctx[1] if t is collections.defaultdict else ctx)]
    if t is collections.namedtuple and hasattr(ctx, "_fields"):
        return [f".{f}" for f in ctx._fields]
    if dataclasses.is_dataclass(t):
        return [f".{f.name}" for f in dataclasses.fields(t) if f.init][:spec.num_children]
    return [f"[{i}]" for i in range(spec.num_children)]


def _describe(spec: Any, leaf: Any = None) -> str:
    if spec.is_leaf():
        if isinstance(leaf, torch.Tensor):
            return f"a tensor of shape {list(leaf.shape)}"
        return f"a {type(leaf).__name__} ({leaf!r:.40})"
    t = spec.type
    if t in (dict, collections.OrderedDict):
        return f"a {t.__name__} with keys {list(spec.context)}"
    name = spec.context.__name__ if t is collections.namedtuple else t.__name__
    return f"a {name} of {spec.num_children}"


def _first_difference(e: Any, g: Any, path: str, got_leaves: list, start: int) -> str | None:
    if e.is_leaf() and g.is_leaf():
        return None
    same = (not e.is_leaf() and not g.is_leaf() and e.type == g.type
            and e.num_children == g.num_children and e.context == g.context)
    if not same:
        leaf = got_leaves[start] if g.is_leaf() and start < len(got_leaves) else None
        was = "a single value (tensor or constant)" if e.is_leaf() else _describe(e)
        return f"input `{path}` was {was} at export, got {_describe(g, leaf)}"
    for key, ec, gc in zip(_child_keys(e), _kids(e), _kids(g)):
        found = _first_difference(ec, gc, path + key, got_leaves, start)
        if found is not None:
            return found
        start += gc.num_leaves
    return None


tree_flatten = pytree.tree_flatten
tree_unflatten = pytree.tree_unflatten
tree_map = pytree.tree_map


class ModuleWalk(list):
    """``module_walk``'s list of (path, module), with ``facts``: a dict where the export's
    steps keep what they derive from the walk's paths, module identities and classes alone
    (``walk_of``: the same dict while those are the same), and ``held``: what its modules
    hold that may be the user's code (``usercode.held_in``: read once per walk)."""

    __slots__ = ("facts", "held")


def walk_of(model: Any) -> ModuleWalk:
    """``module_walk(model)`` with its facts: those of the model's last walk while every
    path, module and module class is the same (compared by identity: a module's ``id``
    is its own while the model is alive and the cached walk's ids were read from live
    modules of the same classes at the same paths), else a new, empty dict.  The cache
    holds no module: a weak reference to the model, the paths, ids, classes and each
    module's children's names, from which the walk is made again and checked in one pass
    (``_walk_again``: the paths are a function of the children's names)."""
    key = id(model)
    hit = _WALKS.get(key)
    if hit is not None and hit[0]() is model:
        mods = _walk_again(model, hit[2], hit[3], hit[4])
        if mods is not None:
            walk = ModuleWalk(zip(hit[1], mods))
            walk.held = None  # (not read yet: usercode.held_in)
            walk.facts = hit[5]
            return walk
    walk = ModuleWalk(module_walk(model))
    walk.held = None  # (not read yet: usercode.held_in; an unset slot raises, ~2k instructions)
    walk.facts = {}
    if len(_WALKS) > 1_000:
        _WALKS.clear()
    try:
        ref = weakref.ref(model, lambda _, key=key: _WALKS.pop(key, None))
    except TypeError:  # (no weak references: facts made again each export)
        return walk
    mods = list(map(_SECOND, walk))
    _WALKS[key] = (ref, tuple(map(_FIRST, walk)), tuple(map(id, mods)),
                   tuple(map(type, mods)), tuple(map(_child_names, mods)),
                   walk.facts)
    return walk


def _walk_again(model: Any, ids: tuple, classes: tuple, children: tuple) -> list | None:
    """The modules of ``module_walk(model)``, in its order, where that walk has at each
    place the module of id `ids[i]`, of class `classes[i]`, whose children's names are
    `children[i]` (then its paths are those of the walk these were read from); else None.
    (The same traversal as ``module_walk``, with no path made.)"""
    out: list = []
    todo = [model]
    pop, push, add = todo.pop, todo.extend, out.append
    try:
        for ident, cls, names in zip(ids, classes, children):
            mod = pop()
            while mod is None:  # (a child slot set to None: not walked)
                mod = pop()
            if id(mod) != ident or type(mod) is not cls:
                return None
            kids = mod._modules
            if kids:
                if type(kids) is not dict:  # (a TorchScript module's table: items() only)
                    kids = dict(kids.items())
                if tuple(kids) != names:
                    return None
                push(reversed(kids.values()))
            elif names:
                return None
            add(mod)
    except IndexError:  # (fewer modules than the walk had)
        return None
    todo = [m for m in todo if m is not None]
    return None if todo else out


def _child_names(mod: Any) -> tuple:
    kids = mod._modules  # (a TorchScript module's table iterates by index: items() only)
    return tuple(kids) if type(kids) is dict else tuple(k for k, _ in kids.items())


# id(model) -> (a weak reference to it, its walk's paths, module ids, module classes, each
# module's children's names, facts)
_WALKS: dict[int, tuple] = {}
_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)


def module_walk(model: Any) -> list[tuple[str, Any]]:
    """``list(model.named_modules(remove_duplicate=False))`` (a module reached twice is
    listed twice), walked without nested generators: one walk an export shares between the
    snapshot of the model, the module hierarchy and the user-code rewrite."""
    out: list[tuple[str, Any]] = []
    todo = [("", model)]
    while todo:
        name, mod = todo.pop()
        out.append((name, mod))
        children = mod._modules
        if children:
            prefix = name + "." if name else ""
            todo.extend([(prefix + k, m) for k, m in reversed(children.items())
                         if m is not None])
    return out
