"""Calls of operator objects (``torch.ops.ns.op``) and custom ops with fake implementations.

ATen overloads called directly are recorded like any other call.  A custom op is recorded
as one node; its output metadata comes from a shape rule (``st.register_shape_rule``) or
from its fake implementation (``st.register_fake`` or torch's ``register_fake``), run on
the proxies without recording.  Data-dependent sizes the fake creates
(``st.new_dynamic_size`` / ``ctx.new_dynamic_size()``) and checks it makes become run-time
assertions right after the op: the real op could break them.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import torch
from torch.utils import _pytree as pytree

from safetrace.errors import ExportError, UnsupportedConstruct, UnsupportedOpError, missing_fake
from safetrace.rules import get_rule, rule
from safetrace.rules.collectives import NAMED_RULES as COLLECTIVES
from safetrace.rules.vision_ops import NAMED_RULES
from safetrace.rules.common import new_size
from safetrace.symbolic import ge, le
from safetrace.symbolic.expr import const, sym, to_expr
from safetrace.trace.arguments import (INT_SLOTS, numbers_as_tensors, resolve_normalized,
                                       tensors_as_ints)
from safetrace.trace import draft, torchbind
from safetrace.trace.asserts import emit_assert
from safetrace.trace.current import active_tracer
from safetrace.trace.proxy import Proxy
from safetrace.trace.schema import resolve
from safetrace.trace.source import short, stack_trace
from safetrace.trace.recorder import Recorder

try:  # torch's own fake-implementation registry (torch.library.register_fake)
    from torch._library import fake_impl, simple_registry
except ImportError:  # pragma: no cover - older torch
    fake_impl = simple_registry = None  # type: ignore[assignment]

FAKES: dict[str, Callable] = {}
_META = torch._C.DispatchKey.Meta


def _qualname(op: Any) -> str:
    if isinstance(op, str):
        return op
    if isinstance(op, torch._ops.OpOverload):
        return op._schema.name
    if isinstance(op, torch._ops.OpOverloadPacket):
        return op._qualified_op_name
    name = getattr(op, "_qualname", None)  # torch.library.custom_op's CustomOpDef
    if isinstance(name, str):
        return name
    raise TypeError(f"expected an operator or 'namespace::name', got {op!r}")


def custom_op(name: str, fn: Callable | None = None, *, mutates_args: Any = (),
              schema: str | None = None) -> Any:
    """Register a real PyTorch operator from a typed Python function (``"lib::name"``)."""

    def make(f: Callable) -> Any:
        return torch.library.custom_op(name, mutates_args=mutates_args, schema=schema)(f)

    return make(fn) if fn is not None else make


def register_fake(op: Any, fn: Callable | None = None) -> Any:
    """Register the fake implementation of a custom op: metadata in, metadata out."""
    qual = _qualname(op)

    def reg(f: Callable) -> Callable:
        FAKES[qual] = f
        return f

    return reg(fn) if fn is not None else reg


def new_dynamic_size(min: int = 0, max: int | None = None) -> Any:
    """Inside a fake implementation: a data-dependent size in [min, max]."""
    u = new_size(min, max, "a custom op's dynamic size")
    tr = active_tracer()
    if tr is not None:
        # a bound on other sizes (max=x.numel()) is a fact the trace relies on: the real
        # op must keep it, so it is asserted after the op (static bounds are its range)
        for bound, relation in ((min, ge), (max, le)):
            if bound is not None and not isinstance(bound, int):
                tr.pending_checks.append(
                    (relation(u.expr, to_expr(bound)), "the fake's declared range", None))
    return u


class _FakeCtx:
    """What ``torch.library.get_ctx()`` returns while safetrace runs a torch-style fake."""

    def new_dynamic_size(self, *, min: int = 0, max: int | None = None) -> Any:
        return new_dynamic_size(min, max)

    create_unbacked_symint = new_dynamic_size


@contextlib.contextmanager
def _torch_ctx() -> Iterator[None]:
    if fake_impl is None:  # pragma: no cover - older torch
        yield
        return
    with fake_impl.set_ctx_getter(lambda: _FakeCtx()):
        yield


def fake_of(op: torch._ops.OpOverload) -> Callable | None:
    """A custom op's fake implementation (safetrace's registry, then torch's), or None."""
    qual = op._schema.name
    fake = FAKES.get(qual)
    if fake is not None:
        return fake
    try:
        entry = simple_registry.singleton.find(qual)
        kernel = entry.fake_impl.kernel
    except Exception:
        return None
    return kernel


def call_packet(tr: Recorder, packet: Any, args: tuple, kwargs: dict) -> Any:
    """``torch.ops.ns.op(...)``: pick the overload, then record it."""
    if packet._qualified_op_name.startswith("aten::"):
        found = resolve(packet.__name__, args, kwargs) or resolve_normalized(
            tr, packet.__name__, args, kwargs)
        if found is not None:
            return tr.emit(found[0], *numbers_as_tensors(tr, *found))
    names = packet.overloads()
    op = getattr(packet, "default" if "default" in names else names[0])
    return call_overload(tr, op, args, kwargs)


def call_overload(tr: Recorder, op: Any, args: tuple, kwargs: dict) -> Any:
    """``torch.ops.ns.op.overload(...)``: record it; custom ops get their fake run."""
    if op.namespace in ("aten", "prims") or get_rule(op) is not None:
        if INT_SLOTS.get(id(op)) != ():  # (skipped for an op known to have none)
            args, kwargs = tensors_as_ints(tr, op, args, kwargs)
        return tr.emit(op, args, kwargs)
    named = NAMED_RULES.get(op._schema.name) or COLLECTIVES.get(op._schema.name)
    if named is not None:  # a library op safetrace has a rule for, met for the first time
        rule(op)(named)
        return tr.emit(op, args, kwargs)
    fake = fake_of(op)
    if fake is None and torch._C._dispatch_has_kernel_for_dispatch_key(
            op.name(), "CompositeImplicitAutograd"):
        return _decomposed(tr, op, args, kwargs)
    if fake is None:  # the op's Python Meta kernel (``op.py_impl(DispatchKey.Meta)``), which
        fake = op.py_kernels.get(_META)  # torch's fake mode runs, as export traces
    objects = torchbind.op_arguments(tr, op, args, kwargs)
    if objects is not None:  # (torchbind objects: fakes for the fake, placeholders in the node)
        if fake is None:
            raise _no_fake(op)
        fargs, fkwargs, args, kwargs, where = objects
    else:
        fargs, fkwargs = args, kwargs
    if fake is None and draft.requested():  # inferred from one run of its kernel
        return draft.infer(tr, op, args, kwargs, tr.real_feed)
    if fake is None:
        raise _no_fake(op)
    env = tr.env
    n_syms = len(env.symbols)
    saved = (tr.recording, tr.pending_checks)
    tr.recording, tr.pending_checks = False, []
    try:
        with _torch_ctx(), tr:
            try:
                result = fake(*fargs, **fkwargs)
            except ExportError:  # (an op of the fake refused by a rule: a RuntimeError too)
                raise
            except RuntimeError as exc:
                if "no fake impl" not in str(exc):
                    raise
                result = fake = None
        checks = tr.pending_checks
    finally:
        tr.recording, tr.pending_checks = saved
    if fake is None:  # (torch's placeholder fake of a custom_op that has none)
        if draft.requested():
            return draft.infer(tr, op, args, kwargs, tr.real_feed)
        raise _no_fake(op)
    if objects is not None:  # (a number would be fixed at its export value: the state
        torchbind.tensors_only(op, args, kwargs, result, where)  # of the object may differ)
    out = _metas(result)
    if result is None and not op._schema.returns:  # (recorded for its effect: no value)
        tr.emit(op, args, kwargs, out=(), n_syms=n_syms)
        _assert_fake_promises(tr, n_syms, checks)
        return None
    value = tr.emit(op, args, kwargs, out=out, n_syms=n_syms)
    if objects is not None:  # (the object at run time may not be the one the fake saw)
        torchbind.check_results(tr, op, value)
    inputs = [a for a in pytree.tree_leaves((args, kwargs)) if isinstance(a, Proxy)]
    returned = [i for i, r in enumerate(result if isinstance(result, (list, tuple)) else
                                        (result,)) if any(r is a for a in inputs)]
    if returned and isinstance(value, Proxy):  # the fake returned an input itself (an alias)
        value.st_node.meta["fake_returns_input"] = returned
    _assert_fake_promises(tr, n_syms, checks)
    return value


def _decomposed(tr: Recorder, op: Any, args: tuple, kwargs: dict) -> Any:
    """A custom op with a CompositeImplicitAutograd kernel and no fake: its kernel traced
    through, as torch's fake mode runs it.  The dispatcher is entered below torch-function
    handling (which would hand the op straight back to the tracer); the kernel's own calls
    reach the tracer."""
    if op in tr.tracing_through:
        raise _no_fake(op)
    tr.tracing_through.add(op)
    try:
        with tr:
            return torch._C._dispatch_call_boxed(op._handle, *args, **kwargs)
    except UnsupportedConstruct:  # a C++ kernel: its ops never reach the tracer
        raise _no_fake(op) from None
    except ExportError:  # (the kernel's own calls refused: as they are, RuntimeErrors too)
        raise
    except RuntimeError as exc:
        # a symbolic int or float (read from data) as a Scalar argument: the dispatcher
        # cannot box it for the kernel (torch.ops.ns.op(x.item()) with a composite kernel)
        if "Expected a value of type" in str(exc) and any(
                isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool))
                for a in pytree.tree_leaves((args, kwargs))):
            raise _no_fake(op) from None
        raise
    finally:
        tr.tracing_through.discard(op)


def _no_fake(op: Any) -> UnsupportedOpError:
    return missing_fake(op._schema.name, short(stack_trace(4)))


def _metas(v: Any) -> Any:
    if isinstance(v, Proxy):
        return v.st_meta
    if isinstance(v, (list, tuple)):
        return type(v)(_metas(x) for x in v)
    return v


def _assert_fake_promises(tr: Recorder, n_syms: int, checks: list) -> None:
    """The real op must honour what its fake promised: sizes in range, checks true."""
    env = tr.env
    origin = stack_trace(3)
    for name in list(env.symbols)[n_syms:]:
        info = env.symbols[name]
        if info.backed or name not in tr.sym_sources:
            continue
        lo, hi = info.range.lo, info.range.hi
        if lo != float("-inf"):
            emit_assert(tr, ge(sym(name), const(int(lo))), "the fake's declared range",
                        origin)
        if hi != float("inf"):
            emit_assert(tr, le(sym(name), const(int(hi))), "the fake's declared range",
                        origin)
    for expr, msg, where in checks:
        emit_assert(tr, expr, msg, where or origin)
