"""Choosing the ATen overload of a call and binding its arguments to the schema.

Given a packet (``aten.add``) and the arguments of a Python call, pick the overload
whose schema accepts them (as PyTorch's own argument parser would) and return the
arguments in schema form: positional ones in order, keyword-only ones as keywords.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.symbolic import SymBool, SymFloat, SymInt

_SKIP_OVERLOAD_SUFFIXES = ("out", "Dimname", "names", "_out", "dimname")
# Where eager PyTorch wraps a Python number into a tensor: prefer the `.Tensor` overload.
_PREFER_TENSOR = frozenset({"add", "sub", "mul", "div", "true_divide", "add_", "sub_", "mul_",
                            "div_"})
# Python keyword spellings accepted by torch's parser for schema argument names.
_KW_ALIASES = {"input": "self", "axis": "dim", "keepdims": "keepdim", "other": "other"}


class ArgSpec:
    """One schema argument: name, type kind and whether it is optional/list/kw-only."""

    __slots__ = ("name", "kind", "elem", "optional", "kwarg_only", "has_default", "default",
                 "fixed_len")

    def __init__(self, arg: Any) -> None:
        self.name = arg.name
        t = arg.real_type
        self.optional = False
        if isinstance(t, torch.OptionalType):
            self.optional = True
            t = t.getElementType()
        self.elem = None
        self.fixed_len = None
        if isinstance(t, torch.ListType):
            self.kind = "list"
            e = t.getElementType()
            if isinstance(e, torch.OptionalType):
                e = e.getElementType()
            self.elem = "int" if isinstance(e, torch.SymIntType) else str(e)
            self.fixed_len = arg.N
        elif isinstance(t, torch.SymIntType):
            self.kind = "int"
        else:
            self.kind = str(t)
        self.kwarg_only = arg.kwarg_only
        self.has_default = arg.has_default_value()
        self.default = arg.default_value if self.has_default else None


class Schema:
    """The parts of an overload's schema that binding needs."""

    __slots__ = ("op", "name", "args", "by_name", "positional", "has_lists", "none_lists",
                 "plain", "n_positional")

    def __init__(self, op: Any) -> None:
        self.op = op
        schema = op._schema
        self.name = schema.overload_name
        self.args = [ArgSpec(a) for a in schema.arguments]
        self.by_name = {a.name: i for i, a in enumerate(self.args)}
        self.positional = [a for a in self.args if not a.kwarg_only]
        self.has_lists = any(a.kind == "list" for a in self.args)
        # an int list defaulting to [] that the parser lets None stand for (see bind)
        self.none_lists = any(a.kind == "list" and a.has_default and not a.optional and
                              a.default == [] for a in self.positional)
        # no list argument: positional arguments of fitting types bind as they are
        self.plain = not self.has_lists and not self.none_lists
        self.n_positional = len(self.positional)


_SCHEMAS: dict[str, list[Schema]] = {}


def schemas_of(packet_name: str) -> list[Schema]:
    """The usable overloads of ``aten.<packet_name>`` (no out= or named-tensor variants)."""
    found = _SCHEMAS.get(packet_name)
    if found is not None:
        return found
    packet = getattr(torch.ops.aten, packet_name, None)
    found = []
    if packet is not None:
        for ov in packet.overloads():
            if ov.endswith(_SKIP_OVERLOAD_SUFFIXES):
                continue
            op = getattr(packet, ov)
            if any(a.name == "out" or "Dimname" in str(a.type) for a in op._schema.arguments):
                continue
            found.append(Schema(op))
        # `default` first, then `Tensor`-taking overloads before `Scalar`, as the parser does.
        found.sort(key=lambda s: (s.name != "default", "Scalar" in s.name, s.name))
    _SCHEMAS[packet_name] = found
    return found


def _is_tensor(v: Any) -> bool:
    return isinstance(v, torch.Tensor)


def _is_int(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or isinstance(v, SymInt)


def is_number(v: Any) -> bool:
    """A Python or symbolic number (not a tensor): what a ``Scalar`` argument accepts."""
    return (isinstance(v, (int, float, complex, SymInt, SymFloat, SymBool))
            or getattr(v, "opaque", False)) and not _is_tensor(v)


def matches(spec: ArgSpec, v: Any, loose: bool) -> bool:
    """Does value `v` fit schema argument `spec`?  `loose` lets numbers stand for tensors."""
    if v is None:
        return spec.optional or spec.kind in ("Tensor",) and False
    k = spec.kind
    if k == "Tensor":
        # a number may stand for a Tensor: aten wraps it; for a `Tensor?` aten refuses, so
        # the tracer turns it into a scalar tensor first (arguments.numbers_as_tensors)
        return _is_tensor(v) or (loose and is_number(v))
    if k == "int" or k == "SymInt":
        return _is_int(v) or (isinstance(v, bool) and False)
    if k == "float":
        return is_number(v) and not isinstance(v, complex)
    if k in ("Scalar", "number"):
        return is_number(v)
    if k == "bool":
        return isinstance(v, bool) or (_is_int(v) and not _is_tensor(v) and False)
    if k == "str":
        return isinstance(v, str)
    if k == "ScalarType":
        return isinstance(v, torch.dtype)
    if k == "Device":
        return isinstance(v, (torch.device, str, int))
    if k == "Layout":
        return isinstance(v, torch.layout)
    if k == "MemoryFormat":
        return isinstance(v, torch.memory_format)
    if k == "Generator":
        return isinstance(v, torch.Generator)
    if k == "list":
        e = spec.elem
        if e in ("int", "SymInt"):
            if _is_int(v):
                return spec.fixed_len is not None
            return isinstance(v, (list, tuple)) and all(_is_int(x) for x in v)
        if e == "Tensor":
            return isinstance(v, (list, tuple)) and all(x is None or _is_tensor(x) for x in v)
        if e == "float":
            return (isinstance(v, (list, tuple)) and all(is_number(x) for x in v)) or (
                spec.fixed_len is not None and is_number(v))
        if e == "bool":
            return isinstance(v, (list, tuple)) and all(isinstance(x, bool) for x in v)
        if e == "Scalar":
            return isinstance(v, (list, tuple)) and all(is_number(x) for x in v)
        return False
    return False


def _pack_varargs(schema: Schema, args: tuple, start: int) -> tuple:
    """``x.view(3, 4)`` / ``torch.zeros(2, 3)``: gather trailing ints into the list argument."""
    pos = schema.positional
    if start < len(pos) and pos[start].kind == "list" and pos[start].elem in ("int", "SymInt"):
        if len(args) > start and _is_int(args[start]) and (
            len(args) > start + 1 or pos[start].fixed_len is None
        ):
            rest = args[start:]
            for a in rest:
                if not _is_int(a):
                    return args
            return args[:start] + (list(rest),)
    return args


def _as_list(spec: ArgSpec, v: Any) -> Any:
    """A single int given for an ``int[N]`` argument means N copies (as torch's parser)."""
    if spec.kind == "list" and _is_int(v):
        return [v] * (spec.fixed_len or 1)
    return v


def bind(schema: Schema, args: tuple, kwargs: dict, loose: bool,
         pack: bool = False, trusted: bool = False) -> tuple[tuple, dict] | None:
    """Bind a call to one schema; None when it does not fit.

    `trusted`: the argument types are known to fit (a cached choice): skip type checks.
    """
    pos = schema.positional
    if pack:
        for start in (0, 1):
            packed = _pack_varargs(schema, args, start)
            if packed is not args:
                args = packed
                break
        else:
            return None
    if len(args) > len(pos):
        return None
    if schema.none_lists and any(v is None for v in args):
        # torch's argument parser takes None for an int list whose default is [] (the
        # `stride=None` of the pooling functions): the default
        args = tuple([] if v is None and spec.kind == "list" and spec.has_default and
                     not spec.optional and spec.default == [] else v
                     for spec, v in zip(pos, args))
    if not trusted:
        for spec, v in zip(pos, args):
            if not matches(spec, v, loose and spec.name != "self"):
                return None
    if trusted and not kwargs and not schema.has_lists:
        return args, {}
    for spec, v in zip(pos, args):  # (loops, not generators: fewer calls per op)
        if spec.kind == "list" and _is_int(v):
            args = tuple([_as_list(spec, v) for spec, v in zip(pos, args)])
            break
    given = set()
    for a in pos[: len(args)]:
        given.add(a.name)
    out_kwargs: dict = {}
    extra_pos: dict[int, Any] = {}
    for key, v in kwargs.items():
        name = key if key in schema.by_name else _KW_ALIASES.get(key, key)
        idx = schema.by_name.get(name)
        if idx is None or name in given:
            return None
        spec = schema.args[idx]
        if not trusted and not matches(spec, v, loose and name != "self"):
            return None
        given.add(name)
        v = _as_list(spec, v)
        if spec.kwarg_only:
            out_kwargs[name] = v
        else:
            extra_pos[pos.index(spec)] = v
    for spec in schema.args:
        if spec.name not in given and not spec.has_default and not spec.optional:
            return None
        if spec.name not in given and not spec.has_default and spec.optional:
            # Optional without default (e.g. `Tensor? weight`): torch passes None.
            pass
    if extra_pos:
        # Keyword arguments that fill positional slots: fill gaps with defaults.
        full = list(args)
        last = max(extra_pos)
        for i in range(len(args), last + 1):
            if i in extra_pos:
                full.append(extra_pos[i])
            else:
                spec = pos[i]
                full.append(spec.default if spec.has_default else None)
        args = tuple(full)
    return tuple(args), out_kwargs


def _code(v: Any) -> Any:
    """A hashable summary of an argument's type: what overload choice depends on."""
    code: Any
    if isinstance(v, torch.Tensor):
        code = "T"
    elif isinstance(v, (list, tuple)):
        return tuple(_code(x) for x in v)
    else:
        code = type(v)
    _CODES[type(v)] = code  # (the key of each argument of resolve(), by its type)
    return code


_CODES: dict[type, Any] = {}  # type -> its _code, for every type that is not a sequence


_RESOLVED: dict[tuple, tuple] = {}
_NO_FIT = ()  # cached: no overload accepts arguments of these types
_KWARGS = "**"  # in a key: the keyword arguments' codes follow


def resolve(packet_name: str, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict] | None:
    """Find the overload of ``aten.<packet_name>`` for this call: (op, args, kwargs).

    The choice depends only on the argument types, so it is cached on them.
    """
    codes = _CODES
    parts: list[Any] = [packet_name]  # (a loop, not a comprehension: one Python call less per op)
    for a in args:
        parts.append(codes.get(type(a)) or _code(a))
    if kwargs:
        parts.append(_KWARGS)
        for k, v in kwargs.items():
            parts.append((k, codes.get(type(v)) or _code(v)))
    key = tuple(parts)
    hit = _RESOLVED.get(key)
    if hit is not None:
        if hit is _NO_FIT:  # no overload fits these argument types (searched before)
            return None
        schema, loose, pack = hit
        # (bind's trusted answers, without the call: a plain schema's arguments as they
        # are; trailing ints packed from the start found before, ``x.view(3, 4)``)
        if pack is False:
            if schema.plain and not kwargs and len(args) <= schema.n_positional:
                return schema.op, args, {}
        elif pack is not True:
            return schema.op, args[:pack] + (list(args[pack:]),), {}
        bound = bind(schema, args, kwargs, loose, bool(pack), trusted=True)
        if bound is not None:
            return schema.op, bound[0], bound[1]
    found = None if _numpy_number_in(args, kwargs) else _search(packet_name, args, kwargs)
    if found is None:
        if hit is None:
            _RESOLVED[key] = _NO_FIT
        return None
    schema, loose, pack, bound = found
    _RESOLVED[key] = (schema, loose, _packed_from(schema, args, kwargs, bound[0]) if pack
                      else False)
    return schema.op, bound[0], bound[1]


def _numpy_number_in(args: tuple, kwargs: dict) -> bool:
    """A numpy scalar among the arguments: no overload takes it as written (np.float64 is
    a float, yet the graph must hold the Python number: arguments.py converts it)."""
    return any(type(v).__module__ == "numpy" or isinstance(v, (list, tuple)) and
               any(type(a).__module__ == "numpy" for a in v) for v in (*args, *kwargs.values()))


def _packed_from(schema: Schema, args: tuple, kwargs: dict, bound: tuple) -> int | bool:
    """Where bind packed trailing ints into a list (``x.view(3, 4)``: 1) when that is all
    it did (no keywords, nothing else changed), else True (bind packs each time)."""
    start = len(bound) - 1
    if kwargs or schema.none_lists or start < 0 or not isinstance(bound[start], list) or \
            len(bound[start]) != len(args) - start or \
            any(x is not y for x, y in zip(args, (*bound[:start], *bound[start]))):
        return True
    return start


def _search(packet_name: str, args: tuple, kwargs: dict) -> tuple | None:
    candidates = schemas_of(packet_name)
    passes: tuple[tuple[bool, bool], ...] = ((False, False), (True, False), (False, True),
                                             (True, True))
    if packet_name in _PREFER_TENSOR:
        passes = ((True, False),) + passes
    for loose, pack in passes:
        for schema in candidates:
            bound = bind(schema, args, kwargs, loose, pack)
            if bound is not None and not (loose and _number_beside_tensor(schema, bound)):
                return schema, loose, pack, bound
    return None


def _number_beside_tensor(schema: Schema, bound: tuple) -> bool:
    """A number bound to a ``Tensor?`` argument while another one holds a tensor
    (``torch.clamp(x, t, 2.5)``): eager's parser takes no such mix for the Tensor overload;
    it calls the Scalar one with the 0-d tensor's value, or refuses a tensor of more dims."""
    args, kwargs = bound
    number = tensor = False
    for i, spec in enumerate(schema.args):
        if not (spec.optional and spec.kind == "Tensor"):
            continue
        v = kwargs.get(spec.name) if spec.kwarg_only else (args[i] if i < len(args) else None)
        number = number or is_number(v)
        tensor = tensor or _is_tensor(v)
    return number and tensor
