"""AOTInductor packages that keep the program's input checks: ``st.to_aoti(ep, path)``.

``ep.to_torch()`` carries the contract as ``aten._assert_scalar`` nodes, and inductor
compiles every one it cannot prove.  But inductor proves them in its own model of the
sizes, in which every dynamic input size is at least 2 (torch's 0/1 specialization): a
declared ``min=1`` or ``min=2``, or a residual condition such as ``h // 2 >= 1``, is "true"
there and its check is dropped, so the package would run a batch of 0 that the program
refuses (and torch's optional input checks, ``AOTI_RUNTIME_CHECK_INPUTS=1``, refuse a batch
of 1 the program accepts).  Before compiling, each such check is added again as tensor
arithmetic on the input sizes (``scalar_tensor(x.shape[0]) >= 1`` then
``aten._assert_async``): values inductor computes at run time and cannot assume away.
The conditions are lowered with the engine's ``lower`` over a tensor algebra.
"""

from __future__ import annotations

import copy
import os
import tempfile
from typing import Any

import torch
from torch.utils import _pytree as pytree

from safetrace.errors.deploy import (compiled_specialized, compiled_without_zero,
                                     package_unchecked)
from safetrace.interop.retrace_guards import refuse_decisions
from safetrace.interop.retrace_pins import guard_count, refuse_pins
from safetrace.interop.retrace_refusals import refuse_for_retrace
from safetrace.interop.aoti_checks import PackageChecks, checking_inputs
from safetrace.interop.slice_ends import explicit_slice_ends
from safetrace.exporter.contract import TensorInput
from safetrace.symbolic import canon
from safetrace.symbolic.expr import dag_nodes, sym
from safetrace.symbolic.semantics import Algebra, lower
from safetrace.trace.graph import one_line

_aten = torch.ops.aten
# our expression ops as aten ops on 0-d tensors (int64 sizes, float64 for float sizes)
_TENSOR_OPS: dict[str, Any] = {
    "add": _aten.add.Tensor, "mul": _aten.mul.Tensor, "floordiv": _aten.floor_divide.default,
    "mod": _aten.remainder.Tensor, "min": _aten.minimum.default, "max": _aten.maximum.default,
    "eq": _aten.eq.Tensor, "ne": _aten.ne.Tensor, "lt": _aten.lt.Tensor, "le": _aten.le.Tensor,
    "ge": _aten.ge.Tensor, "and": _aten.logical_and.default, "or": _aten.logical_or.default,
    "not": _aten.logical_not.default}
_CHECKS = (_aten._assert_async.msg, _aten._assert_scalar.default)


def to_aoti(ep: Any, package_path: Any = None, *, inductor_configs: dict | None = None,
            verify: bool = True) -> str:
    """Compile a safetrace program with AOTInductor into a ``.pt2`` package whose input checks
    hold where torch's compile would drop them (see the module doc); returns the path.
    Load it with ``torch._inductor.aoti_load_package(path)``.

    ``verify``: run the package and the program side by side at other sizes inside the
    declared space (a few calls on random data) and refuse a package that differs
    (``CompiledSpecialized``): inductor decomposes some ops (LSTM, GRU) into loops over a
    dim and specializes it silently, and the other sizes pass the package's input checks."""
    tep = ep.to_torch()
    refuse_for_retrace(tep, "AOTInductor (st.to_aoti)")
    clamped = frozenset(explicit_slice_ends(tep))  # (z[:1] of z admitting 0: slice_ends.py)
    harden_checks(tep, ep.contract, clamped)
    _messages_in_one_line(tep)
    if package_path is None:
        fd, package_path = tempfile.mkstemp(suffix=".pt2")
        os.close(fd)
    checks = PackageChecks(ep.contract, _written_inputs(tep))
    since = guard_count(tep)  # (the decisions inductor's retrace takes: those after)
    with checking_inputs(checks):
        path = str(torch._inductor.aoti_compile_and_package(
            tep, package_path=os.fspath(package_path), inductor_configs=inductor_configs))
    # (inductor's retrace ran torch's meta kernels at the example and pinned an input size
    # in the ShapeEnv the program shares: the package holds for that size only, and its
    # input checks, the contract's, let the others through; merge_pins_no_size_values'
    # `d2` gave empty outputs of another shape)
    refuse_pins(tep, "AOTInductor (st.to_aoti)", exact=True)
    refuse_decisions(tep, ep.contract, since, "AOTInductor (st.to_aoti)")
    if not checks.emitted:
        raise package_unchecked("st.to_aoti", checks.problem or "inductor did not generate "
                                "the package's input checks")
    if verify:
        devices = [getattr(t, "device", None) for t in pytree.tree_leaves(tep.example_inputs)]
        verify_package(ep, torch._inductor.aoti_load_package(path), "AOTInductor",
                       devices=devices)
    return path


def _messages_in_one_line(tep: Any) -> None:
    """Each check's message as inductor can paste it into C++ (``graph.one_line``): a
    program loaded from an older file, or a contract's source line with a quote; in the
    program's graph and in every subgraph (a ``torch.cond`` branch's checks)."""
    for gm in tep.graph_module.modules():
        if not isinstance(gm, torch.fx.GraphModule):
            continue
        changed = False
        for n in gm.graph.nodes:
            if n.op == "call_function" and n.target in _CHECKS and len(n.args) == 2 and \
                    isinstance(n.args[1], str) and one_line(n.args[1]) != n.args[1]:
                n.args = (n.args[0], one_line(n.args[1]))
                changed = True
        if changed:
            gm.recompile()


def _written_inputs(tep: Any) -> frozenset[int]:
    """Indices (among the user inputs) of the inputs the program writes into: a mutation
    in the signature, or an in-place op on the input or on a view of it."""
    sig = tep.graph_signature
    written = set(sig.user_inputs_to_mutate.values())
    index = {name: i for i, name in enumerate(sig.user_inputs)}
    aliases: dict[torch.fx.Node, str] = {}  # node -> the user input it is a view of
    for n in tep.graph.nodes:
        if n.op == "placeholder" and n.name in index:
            aliases[n] = n.name
            continue
        schema = getattr(n.target, "_schema", None)
        if n.op != "call_function" or schema is None:
            continue
        for arg, value in zip(schema.arguments, n.args):
            base = aliases.get(value) if isinstance(value, torch.fx.Node) else None
            if base is None or arg.alias_info is None:
                continue
            if arg.alias_info.is_write:
                written.add(base)
            elif any(r.alias_info is not None for r in schema.returns):
                aliases[n] = base  # a view of the input
    return frozenset(index[name] for name in written if name in index)


def verify_package(ep: Any, runner: Any, tool: str, tries: int = 3,
                   devices: list | None = None) -> int:
    """Call `runner` and ``ep.module()`` on inputs at other sizes inside the declared space
    (each input leaf on ``devices[i]`` where given: a CUDA package takes CUDA inputs);
    raise ``CompiledSpecialized`` on a different output.  Returns how many sizes were run."""
    ran = 0
    module = copy.deepcopy(ep.module())  # the program's own state stays as it is
    for binding in _other_bindings(ep)[:tries]:
        args, kwargs = _inputs_at(ep, binding, devices)
        try:
            ep.check_inputs(args, kwargs)
        except Exception:  # noqa: BLE001 - a binding the contract refuses: try another
            continue
        with torch.no_grad():
            try:
                want = module(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            except Exception:  # noqa: BLE001 - random data the model itself refuses
                continue
            got = runner(*args, **kwargs)
        ran += 1
        w, g = _leaves(want), _leaves(got)
        if len(w) != len(g) or any(not _same(a, b) for a, b in zip(g, w)):
            shapes = [tuple(t.shape) for t in _leaves((args, kwargs))]
            raise compiled_specialized(tool, str(shapes), _shapes(g), _shapes(w))
    return ran


def _leaves(tree: Any) -> list:
    return [t for t in pytree.tree_leaves(tree) if isinstance(t, torch.Tensor)]


def _same(got: torch.Tensor, want: torch.Tensor) -> bool:
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if not want.dtype.is_floating_point and not want.dtype.is_complex:
        return bool(torch.equal(got, want))
    return bool(torch.allclose(got, want, rtol=1e-3, atol=1e-3, equal_nan=True))


def _shapes(ts: list) -> str:
    return str([tuple(t.shape) for t in ts])


def _example_binding(ep: Any) -> dict[str, int]:
    """Each bound symbol's value at the export's example (or a small value in range)."""
    out: dict[str, int] = {}
    example = ep.example_inputs
    leaves = pytree.tree_leaves(example) if example is not None else None
    for i, inp in enumerate(ep.contract.inputs):
        if not isinstance(inp, TensorInput):
            continue
        for d, dim in enumerate(inp.dims):
            if dim.kind in ("bind", "derived") and dim.symbol not in out:
                if leaves is not None and isinstance(leaves[i], torch.Tensor):
                    out[dim.symbol] = (int(leaves[i].shape[d]) - dim.offset) // dim.coef
                else:
                    s = ep.contract.symbol(dim.symbol)
                    out[dim.symbol] = max(s.checked_lo, 2) if s.hi is None else \
                        min(max(s.checked_lo, 2), s.hi)
    return out


def _other_bindings(ep: Any) -> list[dict[str, int]]:
    """Bindings that move every symbol away from the example at once (up, then down)."""
    base = _example_binding(ep)
    out = []
    for step in (3, -1, 1):
        moved = {}
        for name, v in base.items():
            s = ep.contract.symbol(name)
            lo, hi = s.checked_lo, s.hi
            moved[name] = min(max(v + step, lo), hi if hi is not None else v + step)
        if moved != base and moved not in out:
            out.append(moved)
    return out


def _inputs_at(ep: Any, binding: dict[str, int],
               devices: list | None = None) -> tuple[tuple, dict]:
    leaves = []
    for i, inp in enumerate(ep.contract.inputs):
        if not isinstance(inp, TensorInput):
            leaves.append(inp.value)
            continue
        shape = [dim.size if dim.kind == "static" else int(dim.size.evaluate(binding))
                 for dim in inp.dims]
        if inp.dtype.is_floating_point:
            leaves.append(torch.randn(shape).to(inp.dtype))
        elif inp.dtype is torch.bool:
            leaves.append(torch.rand(shape) > 0.5)
        else:  # zeros: a valid index into anything non-empty
            leaves.append(torch.zeros(shape, dtype=inp.dtype))
        if devices is not None and devices[i] is not None:
            leaves[-1] = leaves[-1].to(devices[i])
    args, kwargs = pytree.tree_unflatten(leaves, ep.in_spec)
    return tuple(args), dict(kwargs)


def harden_checks(tep: Any, contract: Any, clamped: frozenset = frozenset()) -> int:
    """Add tensor-level copies of the checks a compile that assumes sizes >= 2 would drop:
    lower bounds of 1 and 2, every residual condition on input sizes, and a Dim's 0 where a
    size torch folds there is not among `clamped` (``slice_ends``' (torch symbol, bound)
    pairs).  Returns how many were added."""
    graph = tep.graph
    users = [n for n in graph.nodes if n.op == "placeholder"
             and n.name in set(tep.graph_signature.user_inputs)]
    if len(users) != len(contract.inputs):
        return 0  # not the layout this module knows: the symbolic checks stand alone
    fake_mode = next((n.meta["val"].fake_mode for n in users
                      if isinstance(n.meta.get("val"), torch.Tensor)), None)
    if fake_mode is None:
        return 0
    anchor = _first_op(graph)
    builder = _Builder(graph, fake_mode, anchor)
    reads: dict[str, tuple] = {}  # our symbol -> (placeholder, dim, coef, offset)
    for inp, node in zip(contract.inputs, users):
        if isinstance(inp, TensorInput):
            for d, dim in enumerate(inp.dims):
                if dim.kind in ("bind", "derived") and dim.symbol not in reads:
                    reads[dim.symbol] = (node, d, dim.coef, dim.offset)
    added = 0
    for s in contract.symbols:
        if s.name in reads and 1 <= s.checked_lo <= 2:
            added += builder.check(canon.ge(sym(s.name), s.checked_lo), reads,
                                   f"{s.where} must be >= {s.checked_lo}{s.origin}")
    # a size torch's engine folds at a Dim's 0 (``x[:1]``'s rows ``min(n, 1)`` as 1):
    # inductor sizes that value by it still (sizes >= 1), and its package read the row of
    # an empty input (a crash at n == 0); refused there instead
    # (not where the values keep it, converted with that symbol non-positive: a `max(n,
    # 1)` the package computes, measured; and a slice's `min(n, 1)` written as the
    # program's own arithmetic, `slice_ends`)
    for name, (theirs, sizes, folded) in (tep.graph_module.meta.get("safetrace_zero_sized")
                                          or {}).items():
        left = [e for e in sizes if folded or not _clamped(e, name, theirs, clamped)]
        if name in reads and left:
            where = contract.symbol(name).where
            added += builder.check(canon.ne(sym(name), 0), reads, str(compiled_without_zero(
                where, contract.where_text(left[0]), "AOTInductor")))
    for c in contract.conditions:
        if c.cond.free_symbols and c.cond.free_symbols <= set(reads):
            added += builder.check(c.cond, reads, f"the inputs must satisfy "
                                                  f"{contract.where_text(c.cond)}{c.origin}")
    if added:
        graph.lint()
        tep.graph_module.recompile()
    return added


def _clamped(e: Any, ours: str, theirs: str, clamped: frozenset) -> bool:
    """Whether every op of `e` torch may fold is a ``max`` (kept by torch's values of a
    non-positive symbol, and computed by the package) or a ``min(<ours>, c)`` that
    ``slice_ends`` wrote as the program's own arithmetic (its torch symbol `theirs` and c in
    `clamped`)."""
    for part in dag_nodes(e):
        if part.op in ("add", "mul", "const", "sym", "max"):
            continue
        if part.op != "min" or len(part.args) != 2:
            return False
        a, b = part.args
        if a.op == "const":
            a, b = b, a
        if a.op != "sym" or a.name != ours or b.op != "const" or (theirs, b.value) not in clamped:
            return False
    return True


def _first_op(graph: torch.fx.Graph) -> torch.fx.Node:
    for n in graph.nodes:
        if n.op != "placeholder":
            return n
    raise ValueError("a graph without an output")  # pragma: no cover - fx always has one


class _Builder:
    """Nodes of tensor arithmetic on input sizes, inserted before the first op."""

    def __init__(self, graph: torch.fx.Graph, fake_mode: Any, anchor: torch.fx.Node) -> None:
        self.graph = graph
        self.fake_mode = fake_mode
        self.anchor = anchor
        self.leaves: dict[str, torch.fx.Node] = {}

    def node(self, target: Any, args: tuple, kwargs: dict | None = None) -> torch.fx.Node:
        with self.graph.inserting_before(self.anchor):
            n = self.graph.call_function(target, args, kwargs or {})
        vals = tuple(a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args)
        with self.fake_mode:
            n.meta["val"] = target(*vals, **(kwargs or {}))
        return n

    def scalar(self, v: Any) -> torch.fx.Node:
        dtype = torch.bool if isinstance(v, bool) else torch.int64
        return self.node(_aten.scalar_tensor.default, (v,), {"dtype": dtype})

    def symbol(self, name: str, reads: dict) -> torch.fx.Node:
        hit = self.leaves.get(name)
        if hit is None:
            ph, d, coef, offset = reads[name]
            size = self.node(_aten.sym_size.int, (ph, d))
            hit = self.scalar(size)
            if (coef, offset) != (1, 0):  # a derived dim: recover the symbol, as checks do
                hit = self.node(_aten.floor_divide.default,
                                (self.node(_aten.sub.Tensor, (hit, self.scalar(offset))),
                                 self.scalar(coef)))
            self.leaves[name] = hit
        return hit

    def check(self, cond: Any, reads: dict, message: str) -> int:
        """1 when `cond` became an ``_assert_async`` of tensor arithmetic, else 0 (an op
        with no tensor form here, such as float sizes: the symbolic check stands alone)."""
        def leaf(e: Any) -> Any:
            if e.op == "const":
                return e.value
            if e.op == "sym":
                return self.symbol(e.name, reads)
            raise LookupError(e.op)

        def call(fn: Any, args: tuple, e: Any) -> Any:
            return self.node(fn, tuple(a if isinstance(a, torch.fx.Node) else self.scalar(a)
                                       for a in args))
        try:
            ok = lower(cond, Algebra(leaf, call, _TENSOR_OPS))
        except (KeyError, LookupError):
            return 0
        if not isinstance(ok, torch.fx.Node):
            return 0  # a constant condition: nothing to check
        with self.graph.inserting_before(self.anchor):
            done = self.graph.call_function(_aten._assert_async.msg, (ok, message))
        done.meta["val"] = None
        return 1
