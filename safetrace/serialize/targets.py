"""Names of call targets: operator overloads by name from ``torch.ops``, Python callables
only from an explicit registry.  Nothing is ever imported because a file names it.
"""

from __future__ import annotations

import builtins
import math
import operator
import re
from typing import Any, Callable

import torch

from safetrace.errors.load import bad_file
from safetrace.serialize import value_sizes
from safetrace.trace import asserts

_CALLABLES: dict[str, Callable] = {}
_NAMES: dict[int, str] = {}
_PART = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}\Z")


def register_callable(name: str, fn: Callable) -> Callable:
    """Allow graphs that call ``fn`` to be saved and loaded; ``name`` is its name in files."""
    if not isinstance(name, str) or not all(_PART.fullmatch(p) for p in name.split(".")):
        raise ValueError(f"bad callable name {name!r}: use dotted identifiers")
    if name.startswith("torch.ops."):
        raise ValueError("torch.ops names are resolved automatically; do not register them")
    old = _CALLABLES.get(name)
    if old is not None and old is not fn:
        raise ValueError(f"{name!r} is already registered for {old!r}")
    _CALLABLES[name] = fn
    _NAMES.setdefault(id(fn), name)
    return fn


for _n in ("add", "sub", "mul", "floordiv", "mod", "truediv", "pow", "neg", "pos", "abs",
           "eq", "ne", "lt", "le", "gt", "ge", "and_", "or_", "xor", "not_", "invert",
           "getitem", "lshift", "rshift"):
    register_callable(f"operator.{_n}", getattr(operator, _n))
for _n in ("min", "max", "abs", "int", "float", "bool", "round"):
    register_callable(f"builtins.{_n}", getattr(builtins, _n))
for _n in ("ceil", "floor", "trunc", "sqrt", "exp", "log", "log2", "log10"):
    register_callable(f"math.{_n}", getattr(math, _n))
for _n in ("sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_ite", "sym_sqrt"):
    if hasattr(torch, _n):
        register_callable(f"torch.{_n}", getattr(torch, _n))

register_callable("torch.is_grad_enabled", torch.is_grad_enabled)  # no_grad blocks
register_callable("torch._C._set_grad_enabled", torch._C._set_grad_enabled)


def target_to_name(target: Any) -> str:
    """``torch.ops.aten.add.Tensor``, ``operator.add``, or a registered name."""
    if isinstance(target, torch._ops.OpOverload):
        ns = target.namespace
        op = target._schema.name.split("::", 1)[1]
        return f"torch.ops.{ns}.{op}.{target._overloadname}"
    if isinstance(target, torch._ops.HigherOrderOperator):  # control flow (checked on load)
        return f"torch.ops.higher_order.{target.name()}"
    name = _NAMES.get(id(target))
    if name is not None and _CALLABLES.get(name) is target:
        return name
    label = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', target)}"
    raise ValueError(
        f"cannot save a graph that calls {label}: it is neither a torch.ops operator nor a "
        f"registered callable.\nFix: safetrace.serialize.register_callable({label!r}, fn) in "
        f"a module imported before both st.save and st.load")


class _Unknown(Exception):
    """A name that does not resolve: (what, fix) or the message alone, without the node it
    came from."""


# operator overloads found by name (what torch.ops itself keeps once looked up)
_OPS: dict[str, torch._ops.OpOverload] = {}
_MEMO_MAX = 4096


def name_to_target(name: Any, where: str, memo: dict | None = None) -> Any:
    """Resolve a target name; unknown names are a LoadError that says how to register them.

    ``memo`` (one per load) remembers every name's answer, a failure too: a file that
    repeats a name pays its lookup once.  Failures are not kept across loads (a custom op
    may be registered in between).
    """
    if not isinstance(name, str) or len(name) > 400:
        raise bad_file(where, f"bad call target {str(name)[:60]!r}")
    hit = _OPS.get(name) if memo is None else memo.get(name)
    if hit is None:
        try:
            hit = _resolve(name)
        except _Unknown as err:
            hit = err.args if len(err.args) == 2 else (str(err), "")
        if memo is not None and len(memo) < _MEMO_MAX:
            memo[name] = hit
    if isinstance(hit, tuple):  # (what, fix)
        raise bad_file(where, *hit)
    return hit


def _resolve(name: str) -> Any:
    if name.startswith("torch.ops.higher_order.") and name.count(".") == 3:
        hop = getattr(torch.ops.higher_order, name.rsplit(".", 1)[1], None) \
            if _PART.fullmatch(name.rsplit(".", 1)[1]) else None
        if not isinstance(hop, torch._ops.HigherOrderOperator):
            raise _Unknown(f"unknown higher-order operator {name[:80]!r}")
        return hop
    if name.startswith("torch.ops."):
        return _op(name)
    fn = _CALLABLES.get(name)
    if fn is None:
        raise _Unknown(
            f"unknown callable {name!r}. Only torch.ops operators and registered "
            f"callables can be loaded", f"call safetrace.serialize.register_callable"
            f"({name!r}, fn) before st.load (the safetrace command: --import MODULE, "
            f"a module that registers it)")
    return fn


def _op(name: str) -> torch._ops.OpOverload:
    hit = _OPS.get(name)
    if hit is not None:
        return hit
    parts = name.split(".")[2:]
    if len(parts) != 3 or not all(_PART.fullmatch(p) for p in parts):
        raise _Unknown(f"bad operator name {name!r} "
                       "(expected torch.ops.<namespace>.<op>.<overload>)")
    ns, op, overload = parts
    if ns.startswith("_") or overload.startswith("_") or op.startswith("__"):
        raise _Unknown(f"bad operator name {name!r}")
    packet = None
    if torch._C._jit_get_schemas_for_operator(f"{ns}::{op}"):
        space = getattr(torch.ops, ns, None)
        if isinstance(space, torch._ops._OpNamespace):
            try:
                packet = getattr(space, op)
            except (AttributeError, RuntimeError):
                packet = None
    overload_obj = None
    if isinstance(packet, torch._ops.OpOverloadPacket):
        try:
            overload_obj = getattr(packet, overload)
        except (AttributeError, RuntimeError):
            overload_obj = None
    if not isinstance(overload_obj, torch._ops.OpOverload):
        raise _Unknown(
            f"unknown operator {name}: no such operator is registered in this "
            f"process", f"if it is a custom op, import the module that defines it "
            f"(st.custom_op / torch.library) before st.load (the safetrace command: "
            f"--import MODULE --allow-ops NS::OP); if it is an ATen op, this "
            f"PyTorch version ({torch.__version__}) lacks it")
    if ns == "aten":  # never deregistered; a custom op's library may be destroyed
        _OPS[name] = overload_obj
    return overload_obj


def _register_safetrace_callables() -> None:
    """Run-time assertion nodes call safetrace's own functions."""
    register_callable("safetrace.assert_sym", asserts.assert_sym)
    register_callable("safetrace.value_size_check", value_sizes.check)


_register_safetrace_callables()
