"""JSON forms of the values a saved program holds: constants, node references, tensor
metadata, symbolic expressions and pytree specs.  Decoding validates every field and
bounds recursion; it never imports or calls anything named by the file.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import dataclasses
import inspect
import math
import re
import sys
import types
import typing
from typing import Any, Callable

import torch
from torch.utils import _pytree as pytree

from safetrace.errors import LoadError, load_error
from safetrace.symbolic.expr import Expr, const, fconst, fsym, make_node, sym
from safetrace.symbolic.semantics import BOOL_OPS
from safetrace.meta import TensorMeta
from safetrace.meta.symtypes import torch_env
from safetrace.symbolic import SymBool, SymFloat, SymInt
from safetrace.trace.proxy import Proxy, current

MAX_DEPTH = 64          # nesting of arguments, values and pytree specs
MAX_EXPR_DEPTH = 100    # nesting of a symbolic expression
MAX_EXPR_NODES = 20_000  # nodes of one symbolic expression
MAX_RANK = 64
MAX_STR = 1 << 20

SYMBOL_RE = re.compile(r"^[su][0-9]{1,9}\Z")
IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,199}\Z")

DTYPES: dict[str, torch.dtype] = {}
for _v in vars(torch).values():
    if isinstance(_v, torch.dtype):
        DTYPES.setdefault(str(_v).removeprefix("torch."), _v)
LAYOUTS = {str(v).removeprefix("torch."): v for v in vars(torch).values()
           if isinstance(v, torch.layout)}
MEMORY_FORMATS = {str(v).removeprefix("torch."): v for v in vars(torch).values()
                  if isinstance(v, torch.memory_format)}
# the devices a loaded graph may name, in a call or a recorded value: another kind makes
# torch import or initialise that device's backend (``x.to("hpu")`` imports ``torch.hpu``;
# to_torch() makes fake tensors on a recorded one), whatever the program computes
DEVICE_TYPES = frozenset(("cpu", "cuda", "meta"))
_DEVICE_RE = re.compile(r"^[a-z_]{1,16}(:[0-9]{1,4})?\Z")
_FLOAT_RE = re.compile(r"^-?(inf|nan|[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]{1,4})?)\Z")

_EXPR_ARITY = {"floordiv": 2, "mod": 2, "eq": 2, "ne": 2, "lt": 2, "le": 2, "ge": 2, "not": 1,
               # floats on sizes, in the user's order of operations (symbolic/floats.py)
               "fadd": 2, "fsub": 2, "fmul": 2, "fdiv": 2, "ffloordiv": 2, "fpow": 2,
               "fmin": 2, "fmax": 2,
               "flt": 2, "fle": 2, "fgt": 2, "fge": 2, "feq": 2, "fne": 2,
               "float": 1, "fneg": 1, "trunc": 1, "round": 1,
               "fsqrt": 1, "fexp": 1, "flog": 1, "flog2": 1, "flog10": 1}
_EXPR_VARIADIC = frozenset(("add", "mul", "min", "max", "and", "or"))


def fail(where: str, what: str, fix: str = "") -> LoadError:
    return load_error(where, what, fix)


def expect(value: Any, kind: type | tuple, where: str) -> Any:
    """``value`` if it has the JSON type ``kind`` (bools are not ints), else a LoadError."""
    ok = isinstance(value, kind)
    if ok and isinstance(value, bool) and kind in (int, (int,), float):
        ok = False
    if not ok:
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise fail(where, f"expected {names}, got {type(value).__name__} {_short(value)}")
    if isinstance(value, str) and len(value) > MAX_STR:
        raise fail(where, f"string of {len(value)} characters is too long")
    return value


def expect_keys(obj: Any, required: set, where: str, optional: set = frozenset()) -> dict:
    expect(obj, dict, where)
    missing = required - obj.keys()
    if missing:
        raise fail(where, f"missing field(s) {sorted(missing)}")
    extra = obj.keys() - required - optional
    if extra:
        raise fail(where, f"unknown field(s) {sorted(extra)[:5]}")
    return obj


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) < 60 else text[:57] + "..."


def undeclared(unknown: Any) -> str:
    """The message for symbols a file uses and does not declare: the first five names,
    each cut short, and how many more (a file can name thousands of long ones)."""
    names = sorted(unknown)
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return f"undeclared symbol(s) {', '.join(map(_short, names[:5]))}{more}"


# --- symbolic expressions ---------------------------------------------------------------
def encode_expr(e: Expr) -> Any:
    """``s0`` -> "s0", ``7`` -> 7, ``s0 + 1`` -> ["add", "s0", 1]."""
    if e.op == "const":
        return e.value
    if e.op == "sym":
        return e.name
    if e.op == "fconst":  # exact, and JSON has no inf or nan
        return ["fconst", float(e.value).hex()]
    if e.op == "fsym":  # a float read from data
        return ["fsym", e.name]
    return [e.op] + [encode_expr(a) for a in e.args]


# [nodes left for the whole file, nodes allowed per expression] while a load runs
_BUDGET: contextvars.ContextVar = contextvars.ContextVar("expr_budget", default=None)


@contextlib.contextmanager
def expr_budget(per_file: int, each: int) -> Any:
    """Bound the expression nodes decoded inside the block (the whole file, and each)."""
    token = _BUDGET.set([per_file, each])
    try:
        yield
    finally:
        _BUDGET.reset(token)


def decode_expr(obj: Any, where: str) -> Expr:
    """Rebuild an expression node by node (no re-canonicalization, so no blow-up)."""
    budget = _BUDGET.get()
    count = [0, budget[1] if budget else MAX_EXPR_NODES]
    e = _dexpr(obj, where, 0, count)
    if budget is not None:
        budget[0] -= count[0]
        if budget[0] < 0:
            raise fail(where, "the file's symbolic expressions exceed the budget of nodes "
                              "(max_expr_nodes)")
    return e


def _dexpr(obj: Any, where: str, depth: int, count: list) -> Expr:
    count[0] += 1
    if count[0] > count[1]:
        raise fail(where, f"symbolic expression has more than {count[1]} nodes "
                          "(max_expr_nodes_each)")
    if depth > MAX_EXPR_DEPTH:
        raise fail(where, f"symbolic expression nested deeper than {MAX_EXPR_DEPTH}")
    if isinstance(obj, bool):
        return const(obj)
    if isinstance(obj, int):
        if abs(obj) >= 1 << 62:
            raise fail(where, f"integer {_short(obj)} out of range")
        return const(obj)
    if isinstance(obj, str):
        if not SYMBOL_RE.fullmatch(obj):
            raise fail(where, f"bad symbol name {_short(obj)} (expected s<N> or u<N>)")
        return sym(obj)
    if not isinstance(obj, list) or not obj or not isinstance(obj[0], str):
        raise fail(where, f"bad symbolic expression {_short(obj)}")
    op, raw = obj[0], obj[1:]
    if op == "fconst":
        if len(raw) != 1 or not isinstance(raw[0], str):
            raise fail(where, f"bad float constant {_short(obj)}")
        try:
            return fconst(float.fromhex(raw[0]))
        except (ValueError, OverflowError):
            raise fail(where, f"bad float constant {_short(obj)}") from None
    if op == "fsym":
        if len(raw) != 1 or not isinstance(raw[0], str) or not SYMBOL_RE.fullmatch(raw[0]):
            raise fail(where, f"bad float symbol {_short(obj)}")
        return fsym(raw[0])
    n = _EXPR_ARITY.get(op)
    if n is None and op not in _EXPR_VARIADIC:
        raise fail(where, f"unknown expression operator {_short(op)}")
    if (n is not None and len(raw) != n) or (n is None and len(raw) < 2):
        raise fail(where, f"operator {op} has {len(raw)} operand(s)")
    args = tuple(_dexpr(a, where, depth + 1, count) for a in raw)
    _check_canonical(op, args, where)
    return make_node(op, args)


def _check_canonical(op: str, args: tuple, where: str) -> None:
    """Reject shapes the engine never produces (and that could blow up when expanded)."""
    is_bool = [a.is_bool for a in args]
    if op in ("and", "or", "not"):
        ok = all(is_bool)
    elif op in BOOL_OPS:
        ok = not any(is_bool)
    else:
        ok = not any(is_bool)
    if op == "add":  # (and no monomial twice: the engine's sums keep one of them, the
        # evaluation both, so ``A + A`` would be A to one reader and 2*A to another)
        monos = [a.args[a.args[0].op == "const":] if a.op == "mul" else (a,) for a in args
                 if a.op != "const"]  # (as ``expr.terms`` reads them, cached nowhere)
        ok = ok and all(a.op != "add" for a in args) and all(
            a.op != "const" for a in args[:-1]) and len(set(monos)) == len(monos)
    elif op == "mul":
        ok = ok and all(a.op not in ("add", "mul") for a in args) and all(
            a.op != "const" for a in args[1:]) and (args[0].op != "const" or
                                                   args[0].value not in (0, 1))
    if op in ("floordiv", "mod") and args[1].op == "const" and args[1].value == 0:
        ok = False
    if not ok:
        raise fail(where, f"malformed symbolic expression (operator {op}): not in the "
                          "engine's canonical form")


# --- plain values and graph arguments -----------------------------------------------------
def encode_value(v: Any, node_ref: Callable[[Any], Any] | None = None) -> Any:
    """Tagged JSON for constants, containers, node references and symbolic values."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return {"float": repr(v)}
    if isinstance(v, torch.fx.Node):
        if node_ref is None:
            raise ValueError("a graph node where a constant was expected")
        return {"node": node_ref(v)}
    if isinstance(v, list):
        return {"list": [encode_value(x, node_ref) for x in v]}
    if isinstance(v, tuple):
        return {"tuple": [encode_value(x, node_ref) for x in v]}
    if isinstance(v, dict):
        return {"dict": [[encode_value(k), encode_value(x, node_ref)] for k, x in v.items()]}
    if isinstance(v, torch.dtype):
        return {"dtype": str(v).removeprefix("torch.")}
    if isinstance(v, torch.device):
        return {"device": str(v)}
    if isinstance(v, torch.layout):
        return {"layout": str(v).removeprefix("torch.")}
    if isinstance(v, torch.memory_format):
        return {"memory_format": str(v).removeprefix("torch.")}
    if isinstance(v, complex):
        return {"complex": [repr(v.real), repr(v.imag)]}
    if v is Ellipsis:
        return {"ellipsis": True}

    if isinstance(v, Proxy):
        m = v.st_meta
        return {"tensor": {"shape": [encode_size(current(s)) for s in m.shape],
                           "dtype": str(m.dtype).removeprefix("torch."),
                           "device": str(m.device)}}
    if isinstance(v, Expr):
        return {"expr": encode_expr(v)}

    if isinstance(v, SymFloat):  # an exact ratio of two int expressions
        return {"symfloat": encode_expr(v.env.simplify(v.expr))}
    if isinstance(v, SymInt):
        return {"symint": encode_expr(v.env.simplify(v.expr))}
    if isinstance(v, SymBool):
        return {"symbool": encode_expr(v.env.simplify(v.expr))}
    raise ValueError(f"cannot save a value of type {type(v).__qualname__}: {_short(v)}")


def encode_size(s: Any) -> Any:
    return s if isinstance(s, int) else encode_expr(s.env.simplify(s.expr))


class ValueDecoder:
    """Decodes tagged values; ``nodes`` resolves node references, ``env`` builds SymInts."""

    def __init__(self, nodes: dict | None = None, env: Any = None) -> None:
        self.nodes = nodes
        self.env = env

    def decode(self, obj: Any, where: str, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise fail(where, f"value nested deeper than {MAX_DEPTH}")
        if obj is None or isinstance(obj, (bool, str)):
            return expect(obj, (type(None), bool, str), where)
        if isinstance(obj, int):
            if abs(obj) > 1 << 64:
                raise fail(where, f"integer {_short(obj)} out of range")
            return obj
        if not isinstance(obj, dict) or len(obj) != 1:
            raise fail(where, f"bad value {_short(obj)}")
        (tag, x), = obj.items()
        d = depth + 1
        if tag == "float":
            return decode_float(x, where)
        if tag == "node":
            if self.nodes is None:
                raise fail(where, "a node reference is not allowed here")
            node = self.nodes.get(expect(x, str, where))
            if node is None:
                raise fail(where, f"reference to node {_short(x)}, which is not defined "
                                  "before this point (unknown name, forward reference or cycle)")
            return node
        if tag in ("list", "tuple"):
            items = [self.decode(v, where, d) for v in expect(x, list, where)]
            return items if tag == "list" else tuple(items)
        if tag == "dict":
            out = {}
            for pair in expect(x, list, where):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise fail(where, "dict items must be [key, value] pairs")
                k = self.decode(pair[0], where, d)
                if not isinstance(k, (str, int, float, bool, type(None))) or k in out:
                    raise fail(where, f"bad or duplicate dict key {_short(k)}")
                out[k] = self.decode(pair[1], where, d)
            return out
        if tag == "dtype":
            return lookup(DTYPES, x, where, "dtype")
        if tag == "layout":
            return lookup(LAYOUTS, x, where, "layout")
        if tag == "memory_format":
            return lookup(MEMORY_FORMATS, x, where, "memory format")
        if tag == "device":
            return decode_device(x, where)
        if tag == "complex":
            if not isinstance(x, list) or len(x) != 2:
                raise fail(where, "complex must be [real, imag]")
            return complex(decode_float(x[0], where), decode_float(x[1], where))
        if tag == "ellipsis" and x is True:
            return Ellipsis
        if tag == "expr":
            return decode_expr(x, where)
        if tag in ("symint", "symbool"):
            return self.symbolic(tag, decode_expr(x, where), where)
        if tag == "symfloat":
            return self.symfloat(x, where)
        if tag == "tensor":
            return self.tensor(x, where)
        raise fail(where, f"unknown value tag {_short(tag)}")

    def symbolic(self, tag: str, e: Expr, where: str) -> Any:
        if self.env is None:
            raise fail(where, "a symbolic value is not allowed here")
        unknown = e.free_symbols - self.env.symbols.keys()
        if unknown:
            raise fail(where, undeclared(unknown))
        if (tag == "symbool") != e.is_bool:
            raise fail(where, f"{tag} holds a {'condition' if e.is_bool else 'number'}")
        return new_symbolic(e, self.env)

    def symfloat(self, x: Any, where: str) -> Any:

        if self.env is None:
            raise fail(where, "a symbolic value is not allowed here")
        if isinstance(x, list) and len(x) == 2 and not (isinstance(x[0], str) and (
                x[0] in _EXPR_ARITY or x[0] in ("fconst", "fsym"))):
            x = ["fdiv", *x]  # files from before float expressions: num / den
        e = decode_expr(x, where)
        if e.op not in SymFloat.FLOAT_OPS:
            raise fail(where, "symfloat holds no float expression")
        unknown = e.free_symbols - self.env.symbols.keys()
        if unknown:
            raise fail(where, undeclared(unknown))
        return SymFloat._make(e, self.env)

    def tensor(self, x: Any, where: str) -> Any:

        expect_keys(x, {"shape", "dtype", "device"}, where)
        shape = expect(x["shape"], list, where)
        if len(shape) > MAX_RANK:
            raise fail(where, f"rank {len(shape)} exceeds {MAX_RANK}")
        device = decode_device(x["device"], where)
        if device.type not in DEVICE_TYPES:
            raise fail(where, f"a value recorded on the device {device}: loaded programs "
                              f"hold values on {', '.join(sorted(DEVICE_TYPES))} devices only "
                              "(another makes torch import or initialise its backend)")
        return TensorMeta(tuple(self.size(s, where) for s in shape),
                          lookup(DTYPES, x["dtype"], where, "dtype"), device)

    def size(self, s: Any, where: str) -> Any:
        if isinstance(s, int) and not isinstance(s, bool):
            if not 0 <= s < 1 << 62:
                raise fail(where, f"size {s} out of range")
            return s
        return self.symbolic("symint", decode_expr(s, where), where)


def new_env() -> Any:
    """An Env like the exporter's (its symbolic values pass torch's argument parser)."""
    return torch_env()


def new_symbolic(e: Expr, env: Any) -> Any:
    if e.op == "const":
        return e.value
    if e.is_bool:
        return getattr(env, "bool_cls", SymBool)(e, env)
    return getattr(env, "int_cls", SymInt)(e, env)


def decode_float(x: Any, where: str) -> float:
    expect(x, str, where)
    if len(x) > 40 or not _FLOAT_RE.fullmatch(x):
        raise fail(where, f"bad float {_short(x)}")
    return float(x)


def decode_device(x: Any, where: str) -> torch.device:
    expect(x, str, where)
    if not _DEVICE_RE.fullmatch(x):
        raise fail(where, f"bad device {_short(x)}")
    try:
        device = torch.device(x)
    except (RuntimeError, ValueError) as err:
        raise fail(where, f"bad device {_short(x)}: {err}") from None
    if str(device) != x:  # (torch keeps an index in 8 bits: cuda:9999 is cuda:15)
        raise fail(where, f"bad device {_short(x)}: its index is out of the range torch "
                          f"holds (0 to 127), which would read it as the device {device}",
                   "the file was modified or written by another program; re-export the "
                   "program on the device it names and save it again")
    return device


def lookup(table: dict, x: Any, where: str, what: str) -> Any:
    expect(x, str, where)
    if x not in table:
        raise fail(where, f"unknown {what} {_short(x)}")
    return table[x]


# --- pytree specs -------------------------------------------------------------------------
_BUILTIN_TYPES = {"tuple": tuple, "list": list, "dict": dict,
                  "OrderedDict": collections.OrderedDict}


def type_name(cls: Any) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def encode_spec(spec: Any) -> Any:
    """A TreeSpec as {"type", "context", "children"}; a leaf as null."""
    if spec.is_leaf():
        return None
    t = spec.type
    children = [encode_spec(spec.child(i)) for i in range(spec.num_children)]
    if t is None:
        return None
    if t in (tuple, list, dict, collections.OrderedDict):
        ctx = encode_value(spec.context)
        return {"type": t.__name__, "context": ctx, "children": children}
    if t is collections.namedtuple:
        return {"type": "namedtuple", "context": type_name(spec.context), "children": children}
    if t not in pytree.SUPPORTED_NODES:
        raise ValueError(f"cannot save a pytree node of type {t!r}")
    try:
        ctx = encode_value(spec.context)
    except ValueError:
        raise ValueError(f"cannot save the pytree context of {t.__qualname__} "
                         f"({_short(spec.context)}): only plain values are supported") from None
    return {"type": type_name(t), "context": ctx, "children": children}


def decode_spec(obj: Any, where: str, depth: int = 0) -> Any:
    """Rebuild a TreeSpec; classes are found only among those already registered."""
    if depth > MAX_DEPTH:
        raise fail(where, f"pytree spec nested deeper than {MAX_DEPTH}")
    if obj is None:
        return pytree.treespec_leaf()
    expect_keys(obj, {"type", "context", "children"}, where)
    name = expect(obj["type"], str, where)
    children = [decode_spec(c, where, depth + 1) for c in expect(obj["children"], list, where)]
    values = ValueDecoder()
    if name in _BUILTIN_TYPES:
        cls = _BUILTIN_TYPES[name]
        ctx = values.decode(obj["context"], where)
        if cls is tuple or cls is list:
            ok = ctx is None
        else:
            ok = isinstance(ctx, list) and len(ctx) == len(children)
        if not ok:
            raise fail(where, f"bad context for a {name} pytree node")
    elif name == "namedtuple":
        cls = collections.namedtuple
        ctx = _loaded_class(expect(obj["context"], str, where), where)
        if not (isinstance(ctx, type) and issubclass(ctx, tuple) and hasattr(ctx, "_fields")
                and len(ctx._fields) == len(children)):
            raise fail(where, f"{obj['context']} is not a namedtuple of {len(children)} fields")
    else:
        cls = _loaded_class(name, where)
        if cls not in pytree.SUPPORTED_NODES:
            raise fail(where, f"class {name} is not registered as a pytree node",
                              f"import the module defining it and call "
                              f"st.register_dataclass(...) before st.load (the safetrace "
                              f"command: --import MODULE)")
        ctx = values.decode(obj["context"], where)
    try:
        return pytree.TreeSpec(cls, ctx, children)
    except Exception as err:  # noqa: BLE001 - any inconsistency is a bad file
        raise fail(where, f"bad pytree spec for {name}: {err}") from None


def _loaded_class(name: str, where: str) -> Any:
    """A class by "module:qualname", only from modules that are already imported."""
    mod_name, _, qual = name.partition(":")
    parts = qual.split(".")
    if not mod_name or not all(IDENT_RE.fullmatch(p) for p in parts + mod_name.split(".")):
        raise fail(where, f"bad class name {_short(name)}")
    obj = sys.modules.get(mod_name)
    if obj is None:
        raise fail(where, f"class {name}: module {mod_name} is not imported",
                          f"import {mod_name} (and register the class) before st.load (the "
                          f"safetrace command: --import {mod_name})")
    for p in parts:
        if p.startswith("__"):
            raise fail(where, f"bad class name {_short(name)}")
        # (what is defined there, no module __getattr__: torch's imports torch._dynamo for
        # "torch:_dynamo.X", 800 modules a file chose to import; session 31)
        obj = inspect.getattr_static(obj, p, None)
    if not isinstance(obj, type):
        raise fail(where, f"class {name} not found in the imported module {mod_name}")
    return obj


def finite_or_none(x: float | int) -> int | None:
    return None if isinstance(x, float) and math.isinf(x) else int(x)


# --- typed records (the input contract): a generic dataclass <-> JSON codec ---------------
# A dataclass is a JSON object of its fields; each field is encoded by its declared type:
# int, bool, str, float, None, Expr, torch.dtype, nested dataclasses, tuple[X, ...], unions
# of these (tried in declared order, each strictly), and Any (a plain constant, as in
# graph arguments).  Decoding is strict: unknown or missing fields and wrong types raise a
# LoadError naming the field's path, and the class's own __post_init__ validates the rest.
def encode_record(obj: Any) -> Any:
    """A dataclass instance as JSON, field by field according to its declared types."""
    return _enc(obj, type(obj))


def decode_record(cls: type, obj: Any, where: str) -> Any:
    """An instance of dataclass ``cls`` from JSON written by ``encode_record``."""
    return _dec(cls, obj, where)


_HINTS: dict[type, dict[str, Any]] = {}


def _fields(cls: type) -> list[tuple[dataclasses.Field, Any]]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return [(f, hints[f.name]) for f in dataclasses.fields(cls) if f.init]


def _union_args(tp: Any) -> tuple | None:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return None


def _matches(value: Any, tp: Any) -> bool:
    """Whether ``value`` is of declared type ``tp`` (to pick a union member to encode)."""
    if tp is Any:
        return True
    if tp is type(None):
        return value is None
    if dataclasses.is_dataclass(tp):
        return type(value) is tp
    if typing.get_origin(tp) is tuple:
        return isinstance(value, tuple)
    if tp is int:
        return type(value) is int
    return isinstance(value, tp)


def _enc(value: Any, tp: Any) -> Any:
    members = _union_args(tp)
    if members is not None:
        for m in members:
            if _matches(value, m):
                return _enc(value, m)
        raise ValueError(f"cannot save {_short(value)} as {tp}")
    if dataclasses.is_dataclass(tp):
        return {f.name: _enc(getattr(value, f.name), ftp) for f, ftp in _fields(tp)}
    if typing.get_origin(tp) is tuple:  # tuple[X, ...]
        return [_enc(v, typing.get_args(tp)[0]) for v in value]
    if tp is Expr:
        return encode_expr(value)
    if tp is torch.dtype:
        return str(value).removeprefix("torch.")
    if tp is float:
        return repr(float(value))
    if tp is Any:
        return encode_value(value)
    if tp in (int, bool, str, type(None)):
        return value
    raise TypeError(f"no JSON form for a field of type {tp}")


def _dec(tp: Any, obj: Any, where: str) -> Any:
    members = _union_args(tp)
    if members is not None:
        errors = []
        for m in members:
            try:
                return _dec(m, obj, where)
            except LoadError as err:
                errors.append(str(err).removeprefix(f"{where}: "))
        raise fail(where, " or ".join(dict.fromkeys(errors)))
    if dataclasses.is_dataclass(tp):
        fields = _fields(tp)
        required = {f.name for f, _ in fields if f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING}
        expect_keys(obj, required, where, {f.name for f, _ in fields} - required)
        kwargs = {f.name: _dec(ftp, obj[f.name], f"{where}.{f.name}")
                  for f, ftp in fields if f.name in obj}
        try:
            return tp(**kwargs)
        except (ValueError, TypeError) as err:
            raise fail(where, f"invalid {tp.__name__}: {err}") from None
    if typing.get_origin(tp) is tuple:
        item = typing.get_args(tp)[0]
        return tuple(_dec(item, v, f"{where}[{i}]")
                     for i, v in enumerate(expect(obj, list, where)))
    if tp is Expr:
        return decode_expr(obj, where)
    if tp is torch.dtype:
        return lookup(DTYPES, obj, where, "dtype")
    if tp is float:
        return decode_float(obj, where)
    if tp is Any:
        return ValueDecoder().decode(obj, where)
    if tp is type(None):
        if obj is not None:
            raise fail(where, f"expected null, got {type(obj).__name__} {_short(obj)}")
        return None
    if tp is int:
        expect(obj, int, where)
        if abs(obj) > 1 << 63:
            raise fail(where, f"integer {_short(obj)} out of range")
        return obj
    if tp in (bool, str):
        return expect(obj, tp, where)
    raise fail(where, f"no JSON form for a field of type {tp}")

