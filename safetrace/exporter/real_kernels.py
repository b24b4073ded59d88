"""Custom ops checked against their kernels on the example inputs, on request.

torch.export under ``torch._functorch.config.fake_tensor_propagate_real_tensors`` runs every
kernel beside its fake one and refuses a custom op whose fake kernel says other sizes, an
other dtype or other aliasing than its kernel gives, or whose kernel writes an argument or
returns an input that its schema does not declare.  With that flag set, safetrace runs the
exported program once on copies of the example inputs and of its state, through an fx
Interpreter, and checks each custom op's call the same way (``errors.fake_mismatch``).
The flag is read where torch keeps it, when torch has loaded it: safetrace never imports it.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch.utils import _pytree as pytree

from safetrace import errors as E
from safetrace.trace.draft import requested as requested  # (the flag, read once)
from safetrace.trace.source import short

_BUILTIN_NAMESPACES = ("aten", "prims", "higher_order", "_c10d_functional", "c10d_functional",
                       "_c10d_functional_autograd", "profiler")




def check_custom_ops(ep: Any, args: tuple, kwargs: dict, env: Any) -> None:
    """Run `ep` on copies of (args, kwargs) and check every custom op call (see above)."""
    if not any(_custom(n.target) for n in ep.graph.nodes if n.op == "call_function"):
        return
    module = copy.deepcopy(ep.module())  # (its own copy of the state: nothing is written)
    checker = _Checker(ep.graph_module, env)
    module._graph_forward = checker.run
    args, kwargs = pytree.tree_map_only(torch.Tensor, lambda t: t.clone(), (args, kwargs))
    state = torch.default_generator.get_state()  # (this run's random draws are not the user's)
    try:
        with torch.no_grad():
            module(*args, **kwargs)
    except _Found:  # (raised past fx's Interpreter, which appends its node to the message)
        raise checker.found from None
    finally:
        torch.default_generator.set_state(state)


class _Found(Exception):
    pass


def _custom(target: Any) -> bool:
    return isinstance(target, torch._ops.OpOverload) and \
        target.namespace not in _BUILTIN_NAMESPACES


class _Checker(torch.fx.Interpreter):
    found: Exception | None = None

    def __init__(self, gm: torch.fx.GraphModule, env: Any) -> None:
        super().__init__(gm)
        self.sizes = env  # (fx.Interpreter keeps its values in self.env)

    def run_node(self, n: torch.fx.Node) -> Any:
        if n.op != "call_function" or not _custom(n.target):
            return super().run_node(n)
        try:
            return self._checked(n)
        except E.FakeKernelMismatch as exc:
            self.found = exc
            raise _Found() from None

    def _checked(self, n: torch.fx.Node) -> Any:
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        schema = n.target._schema
        bound = _by_name(schema, args, kwargs)
        before = [t.clone() for _, t in bound]
        where = short(n.meta["stack_trace"]) if n.meta.get("stack_trace") else n.name
        op = f"{n.target.namespace}::{n.target._opname}"
        try:
            out = n.target(*args, **kwargs)
        except RuntimeError as exc:  # (torch's own checks of a custom op's call)
            raise E.fake_mismatch(op, "kernel", f"its kernel raised on the example inputs: "
                                  f"{exc}", where) from None
        declared = {a.name for a in schema.arguments
                    if a.alias_info is not None and a.alias_info.is_write}
        for (name, t), old in zip(bound, before):
            if name not in declared and not _same(t, old):
                raise E.fake_mismatch(op, "mutation", f"its kernel wrote argument {name!r}, "
                                      f"which its schema does not mark mutable", where, name)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        vals = n.meta.get("val")
        vals = vals if isinstance(vals, (tuple, list)) else (vals,)
        returned = n.meta.get("fake_returns_input", ())
        for i, (real, fake) in enumerate(zip(outs, vals)):
            declared_alias = i < len(schema.returns) and schema.returns[i].alias_info is not None
            if not isinstance(real, torch.Tensor) or declared_alias:
                continue
            if i in returned and not any(_aliases(real, t) for _, t in bound):
                raise E.fake_mismatch(op, "output", f"its fake kernel returns an input as "
                                      f"output {i} (an alias) where its kernel returns a new "
                                      f"tensor", where)
            self._compare(op, where, i, real, fake, bound)
        return out

    def _compare(self, op: str, where: str, i: int, real: torch.Tensor, fake: Any,
                 bound: list) -> None:
        for name, t in bound:
            if _aliases(real, t):
                raise E.fake_mismatch(op, "alias", f"its kernel returns argument {name!r} "
                                      f"(output {i} may not alias an input)", where, name)
        if not isinstance(fake, torch.Tensor):
            return
        if fake.dtype != real.dtype:
            raise E.fake_mismatch(op, "output", f"output {i} is {real.dtype} but its fake "
                                  f"kernel says {fake.dtype}", where)
        shape = [self._hint(s) for s in fake.shape]
        if len(shape) != real.dim() or any(
                s is not None and s != r for s, r in zip(shape, real.shape)):
            raise E.fake_mismatch(op, "output", f"output {i} has shape {tuple(real.shape)} but "
                                  f"its fake kernel says {tuple(fake.shape)} "
                                  f"({tuple('?' if s is None else s for s in shape)} at the "
                                  f"example)", where)

    def _hint(self, size: Any) -> int | None:
        expr = getattr(size, "expr", None)
        if expr is None:
            return int(size)
        try:
            return int(self.sizes.hint(expr))
        except Exception:  # noqa: BLE001 - a size read from data: not known at the example
            return None


def _by_name(schema: Any, args: tuple, kwargs: dict) -> list[tuple[str, torch.Tensor]]:
    """The tensor arguments of one call with their schema names (each tensor of a list
    argument under the list's name)."""
    out: list[tuple[str, torch.Tensor]] = []
    for k, a in enumerate(schema.arguments):
        v = args[k] if k < len(args) else kwargs.get(a.name)
        for t in (v if isinstance(v, (list, tuple)) else (v,)):
            if isinstance(t, torch.Tensor):
                out.append((a.name, t))
    return out


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit for bit the same values (NaN equal to NaN)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return bool(torch.equal(a, b))


def _aliases(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() and \
            a.untyped_storage().nbytes() > 0
    except (RuntimeError, NotImplementedError):
        return False
