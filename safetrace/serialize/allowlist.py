"""What a loaded graph may call, and with which arguments: the allowlist, as tables.

A call target of a loaded graph is accepted only if it is

* an ATen overload on the list of what safetrace's exporter records (``load_ops.OPS``:
  the overloads of its shape rules, core ATen, the namesakes of torch's public functions;
  generated and reviewed by ``tools/gen_load_ops.py``) or with a shape rule registered in
  this process (``st.register_shape_rule``), and not in ``DENIED`` (files, unchecked
  aliasing, process-global state, printing, devices);
* an overload of another namespace the caller named (``st.load(path, allow_ops=
  ["mylib::op"])``) that is registered in this process;
* a Python callable of ``CALLABLES`` (the arithmetic the tracer emits on sizes) or one the
  program's author registered with ``register_callable``;
* a higher-order operator of ``HIGHER_ORDER`` (torch.cond, while_loop, map, scan: an entry
  names the arguments that are subgraphs, which the loader then resolves among the file's
  own graphs, see ``subgraphs.py``).

Every accepted call is then bound to its schema (positional count, keyword names, one
value kind per argument) and its constants are held to budgets: sizes an allocation asks
for, string lengths, list lengths, exponents and shift amounts.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Callable

import torch

from safetrace.errors.load import (bad_file, cuda_device, meta_device, over_budget,
                                   refused_call, unlisted_op)
from safetrace.rules.registry import RULES
from safetrace.serialize.budgets import Budgets
from safetrace.serialize.codec import DEVICE_TYPES
from safetrace.serialize.load_ops import OPS
from safetrace.serialize.value_sizes import NEEDS

# aten operators refused whatever else says, with the reason given in the LoadError.
DENIED: dict[str, str] = {
    "from_file": "reads, creates or maps files",
    "_reshape_alias": "makes a view that is not checked against its storage",
    "_reshape_alias_copy": "makes a view that is not checked against its storage",
    "set_": "rebinds a tensor to other memory",
    "as_strided_": "restrides a tensor in place",
    "resize_": "resizes storage in place (an unbudgeted allocation)",
    "resize_as_": "resizes storage in place",
    "resize": "resizes storage (an unbudgeted allocation)",
    "resize_as": "resizes storage",
    "_resize_output_": "resizes storage in place",
    "set_grad_enabled": "changes process-global state",
    "manual_seed": "changes process-global state",
    "seed": "changes process-global state",
    "_set_deterministic_algorithms": "changes process-global state",
    "_print": "writes to the terminal",
    "record_stream": "changes allocator state",
    "_unsafe_view": "makes a view that is not checked",
    "lift_fresh": "a tracing-time marker",
    "_nested_view_from_buffer": "makes a view that is not checked against its storage",
    "_make_dep_token": "a tracing-time marker",
    # devices: a file must not initialise a device's runtime (CUDA's, by pinning memory)
    # nor query one
    "pin_memory": "pins memory, which initialises the CUDA runtime",
    "_pin_memory": "pins memory, which initialises the CUDA runtime",
    "is_pinned": "asks the CUDA runtime about memory (which initialises it)",
    "cuda": "moves a tensor to a device the caller did not give it",
    "get_device": "queries a device",
}

# Python callables and what their arguments may be: (min args, max args, check).
# "numbers": every argument a number, bool, or a graph value (no strings, lists or tensors
# built from constants: `operator.mul("ab", 2**29)` is refused); "pow"/"shift": the second
# argument a constant within max_exponent; "getitem": a graph value and a small index.
NUMERIC = "numbers"
CALLABLES: dict[str, tuple[int, int, str]] = {
    **{f"operator.{n}": (2, 2, NUMERIC) for n in (
        "add", "sub", "mul", "floordiv", "mod", "truediv", "eq", "ne", "lt", "le", "gt", "ge",
        "and_", "or_", "xor")},
    **{f"operator.{n}": (1, 1, NUMERIC) for n in ("neg", "pos", "abs", "not_", "invert")},
    "operator.pow": (2, 2, "pow"), "operator.lshift": (2, 2, "shift"),
    "operator.rshift": (2, 2, "shift"), "operator.getitem": (2, 2, "getitem"),
    **{f"builtins.{n}": (1, 1, NUMERIC) for n in ("abs", "int", "float", "bool")},
    "builtins.round": (1, 2, "round"), "builtins.min": (2, 8, NUMERIC),
    "builtins.max": (2, 8, NUMERIC),
    **{f"math.{n}": (1, 1, NUMERIC) for n in ("ceil", "floor", "trunc", "sqrt", "exp", "log",
                                              "log2", "log10")},
    **{f"torch.{n}": (1, 1, NUMERIC) for n in ("sym_int", "sym_float", "sym_not", "sym_sqrt")},
    "torch.sym_max": (2, 2, NUMERIC), "torch.sym_min": (2, 2, NUMERIC),
    "torch.sym_ite": (3, 3, NUMERIC), "safetrace.assert_sym": (2, 2, "assert"),
    # a check before a kernel that sizes its result by its operands' values (value_sizes.py)
    "safetrace.value_size_check": (3, 7, "value-size"),
    # a no_grad block (trace/handlers/grad.py): never run while loading (not NUMERIC)
    "torch.is_grad_enabled": (0, 0, "grad"), "torch._C._set_grad_enabled": (1, 1, "grad"),
}


@dataclasses.dataclass(frozen=True)
class HigherOrder:
    """A higher-order operator: which positional arguments are subgraphs (graph names)."""

    subgraph_args: tuple[int, ...]
    operand_args: tuple[int, ...] = ()
    other_args: int = 0  # e.g. cond's predicate


# torch's control-flow operators, as safetrace's tracer emits them (trace/hops/)
HIGHER_ORDER: dict[str, HigherOrder] = {
    "cond": HigherOrder((1, 2), (3,), 1),          # (pred, true, false, operands)
    "while_loop": HigherOrder((0, 1), (2, 3)),     # (cond, body, carried, additional)
    "map_impl": HigherOrder((0,), (1, 2)),         # (body, xs, args)
    "scan": HigherOrder((0,), (1, 2, 3)),          # (combine, init, xs, additional)
}

# Arguments whose constants size an allocation (their product is budgeted).
SIZE_ARGS = frozenset((
    "size", "sizes", "shape", "repeats", "output_size", "num_classes", "steps", "bins",
    "minlength", "n", "m", "num_samples", "r", "row", "col", "length", "pad", "padding",
    "new_size", "window_length", "dims", "upscale_factor", "output_padding"))
_NUMBER = (int, float, bool)


class AllocBudget:
    """Allocations of constant size in a whole program, in bytes.

    Sizes are read through the values the loader can work out (``fold``: arithmetic of
    constants in the graph, ``operator.mul(65536, 65536)``), counted in bytes (the dtype
    asked for; 4 for the default float), strides included (``empty_strided``), a repeat
    times what it repeats (a state tensor of known shape); each call is held to
    ``4 * max_numel`` bytes, the program's sum to four times that.
    """

    def __init__(self, max_numel: int) -> None:
        self.each = 4 * max_numel
        self.limit = 4 * self.each
        self.total = 0
        self.known: dict = {}  # graph node -> the int it always computes

    def fold(self, node: torch.fx.Node, name: str, fn: Any, args: tuple) -> None:
        """Remember the value of an arithmetic node of constants."""
        if CALLABLES.get(name, (0, 0, ""))[2] != NUMERIC:
            return
        vals = [self.known.get(a, a) if isinstance(a, torch.fx.Node) else a for a in args]
        if not all(_is_int(v) and abs(v) < 1 << 64 for v in vals):
            return
        try:
            out = fn(*vals)
        except (ArithmeticError, ValueError, TypeError):
            return
        if _is_int(out) and abs(out) < 1 << 126:
            self.known[node] = out

    def resolve(self, v: Any) -> Any:
        if isinstance(v, torch.fx.Node):
            return self.known.get(v, v)
        if isinstance(v, (list, tuple)):
            return [self.resolve(x) for x in v]
        return v

    def check(self, op: Any, given: dict, where: str) -> None:
        packet = op._schema.name.split("::", 1)[1]
        if packet not in ALLOCATING:
            return  # (views, pads, permutations: their size arguments allocate nothing)
        sizes = [self.resolve(v) for k, v in given.items() if k in SIZE_ARGS]
        if not sizes:
            return
        numel = 1
        for v in sizes:
            for x in (v if isinstance(v, list) else [v]):
                if _is_int(x):
                    numel *= max(x, 0) if packet not in ("repeat", "repeat_interleave") \
                        else max(abs(x), 1)
        if packet in ("empty_strided", "new_empty_strided"):
            numel = _extent(self.resolve(given.get("size")), self.resolve(given.get("stride")))
        if packet in ("repeat", "repeat_interleave"):
            numel *= _static_numel(given.get("self"))
        nbytes = numel * _itemsize(given)
        if nbytes > self.each:
            raise over_budget(where, f"constant sizes asking for {nbytes} bytes in one call, "
                              f"{self.each} allowed (4 * max_alloc_numel bytes)",
                              "max_alloc_numel", -(-nbytes // 4))
        self.total += nbytes
        if self.total > self.limit:
            raise over_budget(where, f"the program's constant-size allocations ask for "
                              f"{self.total} bytes in all, {self.limit} allowed (16 * "
                              "max_alloc_numel bytes)", "max_alloc_numel", -(-self.total // 16))


    def again(self, nbytes: int, where: str) -> None:
        """Count once more the allocations of a graph that is used twice."""
        self.total += nbytes
        if self.total > self.limit:
            raise over_budget(where, f"the program's constant-size allocations ask for "
                              f"{self.total} bytes in all, {self.limit} allowed (16 * "
                              "max_alloc_numel bytes)", "max_alloc_numel", -(-self.total // 16))


# operators whose size arguments are what they allocate
ALLOCATING = frozenset((
    "empty", "empty_strided", "new_empty", "new_empty_strided", "zeros", "new_zeros", "ones",
    "new_ones", "full", "new_full", "rand", "randn", "randint", "randperm", "repeat",
    "repeat_interleave", "tile", "eye", "linspace", "logspace", "scalar_tensor"))


def _extent(size: Any, stride: Any) -> int:
    """Elements of storage a strided tensor spans (0 when a size is 0)."""
    if not isinstance(size, list) or not isinstance(stride, list):
        return 1
    if any(_is_int(x) and x == 0 for x in size):
        return 0
    span = 1
    for x, st in zip(size, stride):
        if _is_int(x) and _is_int(st):
            span += (x - 1) * abs(st)
    return span


def _static_numel(v: Any) -> int:
    shape = getattr(getattr(v, "meta", {}).get("val"), "shape", None)
    if shape is None or not all(type(x) is int for x in shape):
        return 1
    return math.prod(shape)


def _itemsize(given: dict) -> int:
    dtype = given.get("dtype")
    if isinstance(dtype, torch.dtype):
        return dtype.itemsize
    self_val = getattr(given.get("self"), "meta", {}).get("val") \
        if isinstance(given.get("self"), torch.fx.Node) else None
    if isinstance(getattr(self_val, "dtype", None), torch.dtype):
        return self_val.dtype.itemsize
    return 4 if given.get("self") is None else 16  # (a tensor of unknown dtype: the widest)


def check_op(op: Any, name: str, args: tuple, kwargs: dict, where: str,
             allow_ops: frozenset, budgets: Budgets, max_numel: int,
             alloc: AllocBudget | None = None, cuda: bool = False) -> None:
    """Refuse an operator overload that is not allowed, or a call that misuses it (a CUDA
    device argument unless ``cuda``: the caller's ``st.load(..., allow_cuda=True)``)."""
    ns, packet = op.namespace, op._schema.name.split("::", 1)[1]
    if ns == "aten":
        why = _ATEN_REFUSALS.get(op, _UNSEEN)
        if why is _UNSEEN:  # a property of the operator: decided once per process
            why = _aten_refusal(op, packet)
            if why is not UNLISTED:  # (a rule may be registered later)
                _ATEN_REFUSALS[op] = why
        if why is UNLISTED:
            raise unlisted_op(where, name)
        if why is not None:
            raise refused_call(where, f"calls {name}, {why}")
    elif f"{ns}::{packet}" not in allow_ops and ns not in allow_ops:
        raise refused_call(where, f"calls {name} of namespace {ns!r}, which is not allowed by "
                           "default", f"if you trust that operator, st.load(path, allow_ops="
                           f"[{f'{ns}::{packet}'!r}]) (its implementation must be registered "
                           "in this process)")
    given = bind(op, name, args, kwargs, where, budgets, max_numel)
    _placement_args(given, name, where, cuda)
    if alloc is not None:
        alloc.check(op, given, where)


_UNSEEN = object()
UNLISTED = object()  # (an overload not on the list)
_ATEN_REFUSALS: dict = {}  # aten overload -> why it is refused (None: allowed)


def _aten_refusal(op: Any, packet: str) -> Any:
    if packet in DENIED:
        return f"which is refused in loaded graphs: it {DENIED[packet]}"
    if f"{packet}.{op._overloadname}" not in OPS and op not in RULES:
        return UNLISTED  # (a rule registered in this process: st.register_shape_rule)
    return structural_refusal(op)


# (a call's device argument may not name meta either: its tensors have no data)
# quantized dtypes: no loaded kernel computes them (the format stores none; the allowlist
# excludes quantized operators), torch.zeros(n, dtype=torch.qint8) fails at every call
QUANTIZED = frozenset((torch.qint8, torch.quint8, torch.qint32, torch.quint4x2,
                       torch.quint2x4))


def _placement_args(given: dict, name: str, where: str, cuda: bool) -> None:
    """Refuse arguments that reach beyond dense tensors in this process's memory: a device
    of another kind, a CUDA device unless the caller allows it (calling the program would
    initialise CUDA, or use a GPU the caller did not give it), the meta device (tensors
    without data), a layout other than strided (sparse and mkldnn tensors, which the
    loader's rules do not describe), pinned memory (which initialises the CUDA runtime)."""
    for arg, v in given.items():
        if isinstance(v, torch.device) and v.type not in DEVICE_TYPES:
            raise refused_call(f"{where}: {name} argument {arg!r}", f"names the device {v}: "
                               f"loaded graphs may name {', '.join(sorted(DEVICE_TYPES))} "
                               f"devices only (another makes torch import or initialise "
                               f"its backend)")
        if isinstance(v, torch.device) and v.type == "cuda" and not cuda:
            raise cuda_device(f"{where}: {name} argument {arg!r}", str(v))
        if isinstance(v, torch.device) and v.type == "meta":  # (a file's recorded metadata
            raise meta_device(f"{where}: {name} argument {arg!r}")  # may name it: an export
            # on meta, whose weights st.load is given)
        if isinstance(v, torch.dtype) and v in QUANTIZED:
            raise refused_call(f"{where}: {name} argument {arg!r}", f"asks for the quantized "
                               f"dtype {v}: loaded graphs compute unquantized tensors only "
                               "(torch has no kernel making one from sizes)")
        if isinstance(v, torch.layout) and v is not torch.strided:
            raise refused_call(f"{where}: {name} argument {arg!r}", f"asks for the layout "
                               f"{v}: loaded graphs compute strided (dense) tensors only")
        if arg == "pin_memory" and v is True:
            raise refused_call(f"{where}: {name} argument 'pin_memory'", "asks for pinned "
                               "memory, which initialises the CUDA runtime (a loaded graph "
                               "may not touch a device it is not given)")


def structural_refusal(op: Any) -> str | None:
    """Why an overload's schema keeps it out of loaded graphs whatever lists it: its out=
    variant, or a write of an argument other than the first (None: neither)."""
    if any(a.name == "out" for a in op._schema.arguments):
        return "the out= variant, which loaded graphs may not call"
    for i, a in enumerate(op._schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write and i != 0:
            return f"which writes its argument {a.name!r} (in-place operators may write " \
                   "their first argument only)"
    return None


def bind(op: Any, name: str, args: tuple, kwargs: dict, where: str, budgets: Budgets,
         max_numel: int) -> dict:
    """Match a call to the schema: counts, names and the kind of every value; returns
    the arguments by name."""
    positional, kinds = _signature(op)
    if len(args) > len(positional):
        raise bad_file(where, f"{name} takes at most {len(positional)} positional "
                              f"arguments, got {len(args)}")
    given = dict(zip(positional, args))
    for k, v in kwargs.items():
        if k not in kinds or k in given:
            raise bad_file(where, f"{name} has no keyword argument {k[:40]!r} (or it is "
                                  "given twice)")
        given[k] = v
    for arg, (kind, required) in kinds.items():
        if arg not in given:
            if required:
                raise bad_file(where, f"{name} lacks its argument {arg!r}")
            continue
        _value(kind, given[arg], f"{where}: {name} argument {arg!r}", budgets,
               takes_numbers(op), arg in one_int_lists(op))
        if arg == "dtype" and kind in ("int", "Optional[int]") and \
                not isinstance(given[arg], (torch.dtype, type(None))):
            # a dtype the schema types as an int (``to.prim_dtype``): a code torch does not
            # check (-1 crashes the process)
            raise bad_file(where, f"{name} argument 'dtype': expected a dtype, got "
                                  f"{_kind(given[arg])}")
    for k, v in given.items():
        if k in SIZE_ARGS:
            _alloc(v, f"{where}: {name} argument {k!r}", max_numel)
    if op._schema.name == "aten::arange":
        _arange(given, where, name, max_numel)
    count = next((given[k] for k in _COUNTS if k in given), None)
    if _is_int(count) and count > budgets.max_repeat:  # (its pieces, one tensor each)
        raise over_budget(f"{where}: {name}", f"a count of {count} pieces, one tensor each, "
                          f"{budgets.max_repeat} allowed", "max_repeat", count)
    return given


# the arguments that count the pieces of a split (``chunk(x, 2**30)`` of a zero-size dim
# makes 2**30 tensors; a piece count at call is checked by operand_checks.py)
_COUNTS = ("chunks", "sections")


_SIGNATURES: dict = {}


def takes_numbers(op: Any) -> bool:
    """Whether ``op`` takes a number where its schema says Tensor (``add(2, x)``)."""
    return op.namespace != "aten" or op._schema.name[6:] in _NUMBERS_AS_TENSORS


def signature(op: Any) -> tuple[list, dict]:
    """(positional argument names, {name: (type, required)}) of ``op``."""
    return _signature(op)


def _signature(op: Any) -> tuple[list, dict]:
    """(positional argument names, {name: (type, required)}) of ``op``, read once."""
    sig = _SIGNATURES.get(op)
    if sig is None:
        schema = op._schema.arguments
        # (an Optional argument without a default is required too: torch refuses a call
        # without it, "missing value for argument 'dim'")
        kinds = {a.name: (str(a.real_type), not a.has_default_value()) for a in schema}
        sig = _SIGNATURES[op] = ([a.name for a in schema if not a.kwarg_only], kinds)
    return sig


def one_int_lists(op: Any) -> frozenset:
    """The list arguments of ``op`` that torch takes one int for: ``int[N]`` ones
    (``int[1] dim``, ``int[2] stride``); a ``SymInt[N]`` or one of no fixed length raises
    "Expected a value of type 'List[int]'" (``view(x, 2)``, ``roll(x, 1)``)."""
    fixed = _FIXED.get(op)
    if fixed is None:
        fixed = _FIXED[op] = frozenset(re.findall(r"\bint\[\d+\]\?? (\w+)", str(op._schema)))
    return fixed


_FIXED: dict = {}


# aten operators whose Tensor arguments torch also takes as numbers (``add(2, x)``); any
# other refuses one at call ("Expected a value of type 'Tensor'")
_NUMBERS_AS_TENSORS = frozenset(
    f"{base}{suffix}" for base in ("add", "sub", "subtract", "mul", "multiply", "div",
                                   "divide", "true_divide", "floor_divide")
    for suffix in ("", "_")) | {"to", "_to_copy", "copy_", "_conj"}


def _value(kind: str, v: Any, where: str, budgets: Budgets, numbers: bool = True,
           one_int: bool = True) -> None:
    optional = kind.startswith("Optional[")
    if optional:
        kind = kind[len("Optional["):-1]
        if v is None:
            return
    node = isinstance(v, torch.fx.Node)
    if node and kind in _SCALARS and _tensor_valued(v):
        raise bad_file(where, f"expected {kind}, got the tensor {v.name}")
    if _is_int(v) and not -2**63 <= v < 2**63:
        raise bad_file(where, f"the integer {_kind(v)} is outside int64")
    if kind.startswith("List["):
        inner = kind[5:-1]
        if node and inner in ("int", "float", "bool"):
            if _tensor_valued(v):
                raise bad_file(where, f"expected {kind}, got the tensor {v.name}")
            if not one_int and _number_valued(v):
                raise bad_file(where, f"expected {kind}, got the number {v.name} (only a "
                                      "list of a fixed length takes one int)")
            return  # a size list computed in the graph
        if inner == "int" and _is_int(v) and one_int:
            return  # int[1] given as one int
        if not isinstance(v, (list, tuple)):
            raise bad_file(where, f"expected a list, got {_kind(v)}")
        if len(v) > budgets.max_repeat:
            raise over_budget(where, f"list of {len(v)} items, {budgets.max_repeat} allowed",
                              "max_repeat", len(v))
        for x in v:
            _value(inner, x, where, budgets, numbers)
        return
    if kind == "Tensor" and not numbers and (
            isinstance(v, (*_NUMBER, complex)) or node and _number_valued(v)):
        raise bad_file(where, f"expected Tensor, got {_kind(v)} (this operator takes no "
                              "number for a tensor)")
    ok = {
        "Tensor": lambda: node or isinstance(v, (*_NUMBER, complex)),  # a wrapped number
        "int": lambda: node or _is_int(v),
        "float": lambda: node or isinstance(v, _NUMBER),
        "number": lambda: node or isinstance(v, (*_NUMBER, complex)),
        "bool": lambda: node or isinstance(v, bool),
        "str": lambda: isinstance(v, str) and len(v) <= budgets.max_string,
        "ScalarType": lambda: isinstance(v, torch.dtype),
        "Layout": lambda: isinstance(v, torch.layout),
        "Device": lambda: isinstance(v, torch.device),
        "MemoryFormat": lambda: isinstance(v, torch.memory_format),
    }.get(kind)
    if ok is None:
        raise bad_file(where, f"arguments of type {kind} are not supported in loaded graphs")
    if not ok():
        raise bad_file(where, f"expected {kind}, got {_kind(v)}")


_SCALARS = frozenset(("int", "float", "bool", "SymInt"))


def _tensor_valued(v: torch.fx.Node) -> bool:
    """Whether ``v`` is a call of an operator that returns exactly one Tensor (the kind of
    value by its schema, not the file's metadata)."""
    target = v.target
    if v.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return False
    returns = target._schema.returns
    return len(returns) == 1 and str(returns[0].real_type) == "Tensor"


def _number_valued(v: torch.fx.Node) -> bool:
    """Whether ``v`` is an operator call that returns one number (``sym_size``), by its
    schema, not the file's metadata."""
    target = v.target
    if v.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return False
    returns = target._schema.returns
    return len(returns) == 1 and str(returns[0].real_type) in (
        "int", "float", "bool", "number", "SymInt", "Scalar")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _kind(v: Any) -> str:
    if isinstance(v, torch.fx.Node):
        return f"graph value {v.name}"
    text = repr(v)
    return f"{type(v).__name__} {text if len(text) < 40 else text[:37] + '...'}"


def _alloc(v: Any, where: str, max_numel: int) -> None:
    items = v if isinstance(v, (list, tuple)) else [v]
    total = 1
    for x in items:
        if _is_int(x):
            total *= max(abs(x), 1)
            if total > max_numel:
                raise over_budget(where, f"constant sizes asking for {total} or more "
                                  f"elements, {max_numel} allowed", "max_alloc_numel", total)


def _arange(given: dict, where: str, name: str, max_numel: int) -> None:
    start, end, step = given.get("start", 0), given.get("end"), given.get("step", 1)
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool)
               for x in (start, end, step)):
        return  # sizes from the graph: bounded by the inputs
    if step == 0 or not all(math.isfinite(x) for x in (start, end, step)):
        raise bad_file(where, f"{name} with step {step!r} or a non-finite bound")
    if (end - start) / step > max_numel:
        raise over_budget(where, f"{name} asks for {(end - start) / step:.0f} elements, "
                          f"{max_numel} allowed", "max_alloc_numel")


def check_callable(name: str, fn: Callable, args: tuple, kwargs: dict, where: str,
                   budgets: Budgets) -> None:
    """Refuse a Python callable call whose arguments could cost without bound."""
    rule = CALLABLES.get(name)
    if rule is None:  # registered by the program's author: generic limits only
        for v in (*args, *kwargs.values()):
            _plain(v, where, budgets)
        return
    lo, hi, kind = rule
    if kwargs or not lo <= len(args) <= hi:
        raise bad_file(where, f"{name} takes {lo}..{hi} positional arguments, got "
                              f"{len(args)} and keywords {sorted(kwargs)[:3]}")
    if kind == "getitem":
        if not isinstance(args[0], torch.fx.Node) or not (
                _is_int(args[1]) and abs(args[1]) <= budgets.max_repeat):
            raise bad_file(where, f"{name} needs a graph value and a small int index")
        if _tensor_valued(args[0]):  # (a tensor is indexed by aten ops, never by getitem)
            raise bad_file(where, f"{name} takes a result of an operator returning several "
                                  f"values, not the tensor {args[0].name}")
        return
    if kind in (NUMERIC, "assert", "pow", "shift", "round"):
        # (Python arithmetic of sizes: a tensor there is a tensor's elementwise op whose
        # result later asks bool() of many elements, or an int of many)
        bad = next((v for v in args if isinstance(v, torch.fx.Node) and _tensor_valued(v)),
                   None)
        if bad is not None:
            raise bad_file(where, f"{name} computes with numbers (sizes), but it is given "
                                  f"the tensor {bad.name}")
    if kind == "assert":
        if not isinstance(args[0], (torch.fx.Node, bool)) or not (
                isinstance(args[1], str) and len(args[1]) <= budgets.max_string):
            raise bad_file(where, f"{name} needs a condition and a message string "
                                  f"(<= {budgets.max_string} characters)")
        return
    if kind == "value-size":
        _value_size_args(name, args, where, budgets)
        return
    for v in args:
        if not (isinstance(v, torch.fx.Node) or isinstance(v, _NUMBER)):
            raise bad_file(where, f"{name} on {_kind(v)}: only numbers and graph values")
        if _is_int(v) and abs(v) > 1 << 64:
            raise bad_file(where, f"{name} on an int of {v.bit_length()} bits")
    if kind in ("pow", "shift"):
        e = args[1]
        if kind == "pow" and (_floatish(e) or _floatish(args[0])):
            return  # float powers cost a float operation, whatever the exponent
        if not _is_int(e) or abs(e) > budgets.max_exponent:
            raise over_budget(where, f"{name} with {'exponent' if kind == 'pow' else 'shift'} "
                              f"{_kind(e)}: it must be a constant int within "
                              f"+-{budgets.max_exponent}", "max_exponent")
    if kind == "round" and len(args) == 2 and not (_is_int(args[1]) and abs(args[1]) <= 400):
        raise bad_file(where, f"{name} with ndigits {_kind(args[1])}")


def _value_size_args(name: str, args: tuple, where: str, budgets: Budgets) -> None:
    """(kind, node name, limit in bytes, operands: graph values, ints, None or lists of
    them)"""
    kind, node, limit, operands = args[0], args[1], args[2], args[3:]
    if not (isinstance(kind, str) and kind in NEEDS and isinstance(node, str)
            and len(node) <= budgets.max_string and _is_int(limit) and limit >= 0):
        raise bad_file(where, f"{name} needs a kind ({', '.join(sorted(NEEDS))}), a node "
                              "name and a byte limit")
    for v in operands:
        items = v if isinstance(v, (list, tuple)) and len(v) <= 64 else [v]
        if not all(x is None or isinstance(x, torch.fx.Node) or _is_int(x) for x in items):
            raise bad_file(where, f"{name} on {_kind(v)}: only graph values, ints and None")


def _floatish(v: Any) -> bool:
    """A float constant, or a graph value whose recorded value is a float."""
    if isinstance(v, torch.fx.Node):
        v = v.meta.get("val")
        return isinstance(v, float) or hasattr(v, "den") or getattr(v, "opaque", False)
    return isinstance(v, float)


def _plain(v: Any, where: str, budgets: Budgets) -> None:
    if isinstance(v, str) and len(v) > budgets.max_string:
        raise over_budget(where, f"string of {len(v)} characters", "max_string", len(v))
    if isinstance(v, (list, tuple)):
        if len(v) > budgets.max_repeat:
            raise over_budget(where, f"list of {len(v)} items", "max_repeat", len(v))
        for x in v:
            _plain(x, where, budgets)
    if isinstance(v, dict):
        for x in v.values():
            _plain(x, where, budgets)

