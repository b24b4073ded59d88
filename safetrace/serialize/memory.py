"""The memory a loaded program's tensors computed from its own constants and state take.

A small file can describe large tensors without declaring them: an outer broadcast of two
64 KB constants (1 GiB), a reduction of a zero-byte ``[0, 2**20, 2**20]`` constant over
dim 0 (4 TiB), a repeat of a weight, or sizes read from a constant's values (``bincount``,
``one_hot``, ``item`` then ``zeros``, ``repeat_interleave``).  The graph's own metadata is
the file's word, so it is not used: every node whose tensor inputs are all the program's
state and constants (or results computed from them) is evaluated at load by safetrace's
own shape rules, and a size read from data is read from the constant itself, unless the
program writes that tensor in place.
The bytes of every such result are summed (an upper bound of what is alive at once) and
held to the program's allocation budget (``16 * max_alloc_numel`` bytes).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch

from safetrace.errors.load import over_budget
from safetrace.meta import TensorMeta
from safetrace.rules.registry import RULES
from safetrace.serialize.allowlist import ALLOCATING, CALLABLES, NUMERIC, SIZE_ARGS
from safetrace.trace.asserts import assert_sym
from safetrace.trace.mutation import written_inputs

_UNKNOWN = object()
aten = torch.ops.aten
# sizes read from a tensor's values: op -> how (see _from_data)
_ITEM = frozenset((aten.item.default, aten._local_scalar_dense.default))


class StaticMemory:
    """Evaluate the state-and-constant part of a graph, summing its results' bytes."""

    def __init__(self, limit: int, max_ops: int) -> None:
        self.limit, self.max_ops = limit, max_ops
        self.total = 0
        self.ops = 0
        self.over: torch.fx.Node | None = None  # where the sum first passed the limit

    def graph(self, graph: torch.fx.Graph, tensors: dict[str, tuple]) -> None:
        """``tensors``: placeholder name -> (the state or constant tensor it is bound to,
        whether the program updates it: its values then change from call to call)."""
        written = written_inputs(graph)
        meta: dict = {}   # node -> TensorMeta(s), or the Python value it always computes
        data: dict = {}   # node -> the real tensor, for placeholders never written
        for node in graph.nodes:
            if node.op == "placeholder":
                entry = tensors.get(node.name)
                if entry is not None:
                    t, updated = entry
                    meta[node] = TensorMeta(tuple(t.shape), t.dtype, _CPU)
                    if node.name not in written and not updated:
                        data[node] = t
            elif node.op == "call_function":
                out = self._node(node, meta, data)
                if out is not _UNKNOWN:
                    meta[node] = out
        self.check()

    def _node(self, node: torch.fx.Node, meta: dict, data: dict) -> Any:
        target = node.target
        try:
            args = _sub(node.args, meta)
            kwargs = _sub(node.kwargs, meta)
        except KeyError:
            return _UNKNOWN  # an input of the program (or an unknown value) is involved
        if not isinstance(target, torch._ops.OpOverload):
            return _python(target, args)
        self.ops += 1
        if self.ops > self.max_ops:
            raise over_budget(f"node {node.name!r}", f"the program applies more than "
                              f"{self.max_ops} operators to its own state and constants (their "
                              "memory is evaluated at load)", "max_static_ops", 2 * self.max_ops)
        out = _from_data(target, node, args, kwargs, data)
        if out is _UNKNOWN:
            out = _evaluate(target, args, kwargs)
        if out is _UNKNOWN:
            return _UNKNOWN
        self.total += _bytes(target, out, args, kwargs)
        if self.total > self.limit and self.over is None:
            self.over = node  # (the sum goes on: the fix names what admits the program)
        return out

    def check(self) -> None:
        if self.over is not None:
            raise over_budget(
                f"node {self.over.name!r} ({self.over.target})", f"the tensors the program "
                f"computes from its own state and constants take {self.total} bytes, "
                f"{self.limit} allowed (16 * max_alloc_numel bytes)", "max_alloc_numel",
                -(-self.total // 16))


_CPU = torch.device("cpu")
_MAX_RESULTS = 4096  # results of one op whose count a size picks (unbind, split, chunk)
_STRIDED = frozenset(("empty_strided", "new_empty_strided", "as_strided"))


def _evaluate(op: Any, args: Any, kwargs: dict) -> Any:
    """The op's result metadata by safetrace's own shape rule (torch's meta kernels are
    slow and import its symbolic-shapes machinery): unknown without one."""
    rule = RULES.get(op)
    if rule is None:
        return _UNKNOWN
    if any(str(r.real_type) != "Tensor" for r in op._schema.returns) and any(
            isinstance(t, TensorMeta) and max(t.shape, default=0) > _MAX_RESULTS
            for t in _leaves((args, kwargs))):
        return _UNKNOWN
    try:
        return rule(*args, **kwargs)
    except Exception:  # noqa: BLE001 - the call is invalid, or needs a trace: not known
        return _UNKNOWN


def _bytes(op: Any, out: Any, args: Any, kwargs: dict) -> int:
    """What the op allocates for its results: views of inputs (a schema alias) nothing,
    a strided result the storage its strides span."""
    returns = op._schema.returns
    if returns and all(r.alias_info is not None for r in returns):
        return 0
    if op._opname in _STRIDED and isinstance(out, TensorMeta):
        size = args[1] if len(args) > 1 else kwargs.get("size")
        stride = args[2] if len(args) > 2 else kwargs.get("stride")
        if op._opname == "empty_strided":
            size, stride = args[0] if args else kwargs.get("size"), size
        return _extent(size, stride) * out.dtype.itemsize
    return sum(math.prod(t.shape) * t.dtype.itemsize for t in _leaves(out)
               if isinstance(t, TensorMeta) and all(isinstance(x, int) for x in t.shape))


def _extent(size: Any, stride: Any) -> int:
    if not isinstance(size, (list, tuple)) or not isinstance(stride, (list, tuple)) or \
            not all(isinstance(x, int) for x in (*size, *stride)):
        return 0
    if any(x == 0 for x in size):
        return 0
    return 1 + sum((x - 1) * abs(st) for x, st in zip(size, stride))


def _sub(value: Any, meta: dict) -> Any:
    """``value`` with graph nodes replaced by what they are known to be (KeyError: one
    is not known)."""
    if isinstance(value, torch.fx.Node):
        return meta[value]
    if isinstance(value, (list, tuple)):
        return type(value)(_sub(v, meta) for v in value)
    if isinstance(value, dict):
        return {k: _sub(v, meta) for k, v in value.items()}
    return value


def _leaves(value: Any) -> list:
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        else:
            out.append(v)
    return out


def _python(fn: Any, args: Any) -> Any:
    """Arithmetic of known numbers (a size computed from a constant's value), and an
    element of a known result."""
    if fn is operator.getitem and isinstance(args[0], (list, tuple)) and \
            isinstance(args[1], int) and -len(args[0]) <= args[1] < len(args[0]):
        return args[0][args[1]]
    name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__name__', '')}"
    rule = CALLABLES.get(name.replace("_operator.", "operator."))
    if rule is None or rule[2] != NUMERIC or not all(
            isinstance(a, (int, float)) and not isinstance(a, bool) and abs(a) < 1 << 64
            for a in args):
        return _UNKNOWN
    try:
        out = fn(*args)
    except (ArithmeticError, ValueError, TypeError):
        return _UNKNOWN
    return out if isinstance(out, (int, float)) and not isinstance(out, bool) else _UNKNOWN


def _from_data(op: Any, node: torch.fx.Node, args: Any, kwargs: dict, data: dict) -> Any:
    """The result (a number, or a meta tensor of the size) of an op whose size is read
    from the values of a constant the program never writes."""
    src = node.args[0] if node.args else None
    t = data.get(src) if isinstance(src, torch.fx.Node) else None
    if t is None:
        return _UNKNOWN
    name = op._opname
    if op in _ITEM:
        return t.item() if t.numel() == 1 and not t.is_complex() else _UNKNOWN
    if name == "bincount" and t.dim() == 1 and not t.is_floating_point():
        minlength = args[2] if len(args) > 2 else kwargs.get("minlength", 0)
        n = max(int(t.max()) + 1 if t.numel() else 0, minlength if isinstance(minlength, int)
                else 0)
        return TensorMeta((max(n, 0),), torch.float64, _CPU)
    if name == "one_hot" and not t.is_floating_point():
        classes = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
        if not isinstance(classes, int):
            return _UNKNOWN
        if classes < 0:
            classes = int(t.max()) + 1 if t.numel() else 0
        return TensorMeta((*t.shape, max(classes, 0)), torch.int64, _CPU)
    if name == "repeat_interleave" and op._overloadname == "Tensor" and t.dim() <= 1 and \
            not t.is_floating_point():
        return TensorMeta((int(t.sum()) if t.numel() else 0,), torch.int64, _CPU)
    if name == "repeat_interleave" and op._overloadname == "self_Tensor":
        return _repeated(node, args, kwargs, data)
    if name == "nonzero":
        return TensorMeta((int(torch.count_nonzero(t)), t.dim()), torch.int64, _CPU)
    return _UNKNOWN


def _repeated(node: torch.fx.Node, args: Any, kwargs: dict, data: dict) -> Any:
    """``repeat_interleave(self, repeats)`` with ``repeats`` a constant's values."""
    src = node.args[1] if len(node.args) > 1 else node.kwargs.get("repeats")
    r = data.get(src) if isinstance(src, torch.fx.Node) else None
    this = args[0]
    dim = args[2] if len(args) > 2 else kwargs.get("dim")
    if r is None or r.is_floating_point() or r.dim() > 1 or not isinstance(this, TensorMeta):
        return _UNKNOWN
    size = list(this.shape) if dim is not None else [math.prod(this.shape)]
    dim = 0 if dim is None else dim
    if not isinstance(dim, int) or not -len(size) <= dim < max(len(size), 1):
        return _UNKNOWN
    size = size or [1]
    n = int(r.sum()) if r.numel() != 1 else int(r.reshape(())) * size[dim]
    size[dim] = max(n, 0)
    return TensorMeta(tuple(size), this.dtype, _CPU)


def state_of(inputs: list, state: dict, constants: dict, outputs: list) -> dict:
    """placeholder name -> (the state or constant tensor it is bound to, whether the
    program updates it: a buffer an output of the program is written back to)."""
    updated = {s.target for s in outputs if s.kind == "buffer_mutation"}
    out = {}
    for s in inputs:
        if s.kind in ("parameter", "buffer"):
            out[s.name] = (state[s.target], s.target in updated)
        elif s.kind == "constant":
            out[s.name] = (constants[s.target], False)
    return out


__all__ = ["StaticMemory", "state_of", "guard_sizes"]


def guard_sizes(graph: torch.fx.Graph, max_numel: int) -> None:
    """Before each allocation of a size read from data as the program runs
    (``zeros(n.item())``), a check that it asks for at most ``4 * max_numel`` elements: the
    call is refused (a RuntimeAssertionError naming the budget) before allocating."""
    limit = 4 * max_numel
    for node in list(graph.nodes):
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload) or \
                target._opname not in ALLOCATING:
            continue
        names = [a.name for a in target._schema.arguments if not a.kwarg_only]
        ints = {a.name for a in target._schema.arguments
                if "int" in str(a.real_type).lower() and "Tensor" not in str(a.real_type)}
        given = {**dict(zip(names, node.args)), **node.kwargs}
        sizes = _leaves([v for k, v in given.items() if k in SIZE_ARGS and k in ints])
        if not any(isinstance(s, torch.fx.Node) and _from_data_read(s) for s in sizes):
            continue  # constant sizes are held to the budget at load (allowlist.AllocBudget),
            # sizes of the inputs' shapes to the ranges the caller declared
        with graph.inserting_before(node):
            total: Any = 1
            for s in sizes:
                if isinstance(s, torch.fx.Node):
                    s = _call(graph, operator.abs, (s,))
                elif not isinstance(s, int) or s == 1:
                    continue
                total = _call(graph, operator.mul, (total, s))
            ok = _call(graph, operator.le, (total, limit))
            check = graph.call_function(assert_sym, (ok, (
                f"node {node.name!r} ({target}): a size computed as the program runs asks "
                f"for more than {limit} elements, over the budget (max_alloc_numel = "
                f"{max_numel}); if you trust the file, st.load(path, budgets="
                f"{{'max_alloc_numel': <larger>}})")))
            check.meta["val"] = None
            check.meta["stack_trace"] = node.meta.get("stack_trace", "")


def _from_data_read(node: torch.fx.Node) -> bool:
    """Whether a size node may hold a value read from data (an unbacked symbol ``u0``, or
    no recorded value at all)."""
    expr = getattr(node.meta.get("val"), "expr", None)
    if expr is None:
        return not isinstance(node.meta.get("val"), int)
    return any(str(x).startswith("u") for x in expr.free_symbols)


def _call(graph: torch.fx.Graph, fn: Any, args: tuple) -> torch.fx.Node:
    """A node of Python arithmetic, its value (a symbolic int or bool) computed from its
    arguments' as the tracer would have recorded it."""
    node = graph.call_function(fn, args)
    vals = [a.meta.get("val") if isinstance(a, torch.fx.Node) else a for a in args]
    try:
        node.meta["val"] = fn(*vals) if all(v is not None for v in vals) else None
    except Exception:  # noqa: BLE001 - a value that cannot be computed here: unknown
        node.meta["val"] = None
    return node
