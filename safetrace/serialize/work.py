"""The work a loaded program's kernels do in one call, bounded like its memory.

A file can make a call slow without making it large: ``zeros(1).expand(2**20, 2**20)``
allocates one element and a ``sum`` of it scans 2**40; a ``max_pool2d`` of a 64 MiB image
with a 4096 x 4096 window, a ``linalg_cholesky`` of a 16384 x 16384 matrix, a matmul of two
views fit in memory and take hours.  The work of a kernel is counted in elements touched:
the elements of its tensor operands (a view counts what it spans: the kernel reads them
all) and of its results, plus the multiply-adds of a contraction (matmul, convolution,
pooling window, attention, decompositions, recurrent cells); a view op touches nothing.

``Tally`` sums it over a whole program, symbolically over the declared input sizes
(``memory.StaticMemory`` evaluates every node): over ``max_work`` at the smallest declared
sizes is refused at load, over it at some sizes only is checked at each call before the
program runs (``peak.CallCheck``).  A kernel whose sizes the loader cannot work out from
the input sizes (read from data, too complex, past the analysis' time) is preceded by
``check``: it works out the kernel's result and work from its operands' real shapes with
safetrace's own shape rules and refuses the call before the kernel allocates or runs.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch

from safetrace.errors.load import kernel_memory_at_call, kernel_unbounded, work_in_graph
from safetrace.meta import TensorMeta
from safetrace.rules.registry import RULES
from safetrace.trace.current import active_tracer
from safetrace.trace.custom import fake_of
from safetrace.trace.graph import run_time_check

aten = torch.ops.aten
_CPU = torch.device("cpu")
# ops whose schema says the result may alias the input but which copy when they must (a
# non-contiguous input, a dtype change): they allocate and touch what they copy
MAY_COPY = frozenset(("contiguous", "reshape", "reshape_as", "to", "type_as", "flatten",
                        "_reshape_alias", "clone", "expand_copy", "broadcast_to"))
_LEFT0 = frozenset(("mm", "bmm", "matmul", "linear", "mv", "_int_mm", "cdist",
                    "_cdist_forward", "pdist", "_pdist_forward"))
_LEFT1 = frozenset(("addmm", "addmv", "baddbmm", "addbmm", "_addmm_activation"))
_DECOMP = frozenset(("cholesky", "inverse", "det", "logdet", "slogdet", "triangular_solve",
                     "cholesky_solve", "cholesky_inverse", "matrix_power", "lu", "geqrf",
                     "orgqr", "ormqr", "pinverse", "svd", "qr", "lstsq", "matrix_exp",
                     "_lu_with_info", "lu_solve", "lu_unpack", "trace"))
_RNN = frozenset(("lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell",
                  "rnn_tanh_cell", "rnn_relu_cell"))


@functools.lru_cache(maxsize=None)
def is_view(op: Any) -> bool:
    """An op whose results alias its inputs and never copy: it touches no element."""
    returns = op._schema.returns
    return bool(returns) and all(r.alias_info is not None for r in returns) and \
        op._opname not in MAY_COPY and not op._opname.endswith("_")


def scalar_returns(op: Any) -> bool:
    """An op that returns numbers only (a count, a size): it allocates no tensor."""
    return bool(op._schema.returns) and all("Tensor" not in str(r.real_type)
                                            for r in op._schema.returns)


def touched(op: Any, args: Any, kwargs: dict, out: Any) -> Any:
    """Elements the kernel of ``op`` touches for these operands (TensorMeta, sizes ints or
    symbolic ints) and this result: an int or a symbolic int."""
    if is_view(op) or op._opname.startswith("sym_"):
        return 0  # (a view, or a size query: no element read)
    ins = [t for t in leaves((args, kwargs)) if isinstance(t, TensorMeta)]
    outs = [t for t in leaves(out) if isinstance(t, TensorMeta)]
    total: Any = 0
    for t in ins + outs:
        total = total + numel(t)
    return total + _contraction(op._opname, args, ins, outs)


def numel(t: TensorMeta) -> Any:
    """``prod(t.shape)``, once per shape a load evaluates (a node's result is its users'
    operand: the product of its symbolic sizes was made again for each, and the engine's
    products of ``r`` symbols cost ``r**2``)."""
    shape = t.shape
    known = _NUMELS.get(id(shape))
    if known is not None and known[0] is shape:
        return known[1]
    if len(_NUMELS) >= 4096:
        _NUMELS.clear()
    out = _NUMELS[id(shape)] = (shape, math.prod(shape))
    return out[1]


_NUMELS: dict = {}  # id of a shape -> (the shape, its product), for one load's analysis


def forget() -> None:
    """Drop the products ``numel`` keeps (at the end of a load's analysis: a refused
    file's expressions must not outlive it in the intern table)."""
    _NUMELS.clear()


def _contraction(name: str, args: Any, ins: list, outs: list) -> Any:
    """The multiply-adds (or window reads) beyond the operands and results."""
    out = sum((numel(t) for t in outs), 0) if outs else 0
    if name in _LEFT0 or name in _LEFT1:
        left = args[1] if name in _LEFT1 and len(args) > 1 else (args[0] if args else None)
        return out * left.shape[-1] if isinstance(left, TensorMeta) and left.shape else 0
    if name.startswith("conv") or name in ("_convolution", "convolution"):
        w = args[1] if len(args) > 1 else None
        if isinstance(w, TensorMeta) and len(w.shape) > 1 and ins:
            return (out + numel(ins[0])) * math.prod(w.shape[1:])
        return 0
    if "pool" in name and "adaptive" not in name and len(args) > 1 and \
            isinstance(args[1], (list, tuple)) and outs:
        return numel(outs[0]) * math.prod(args[1])
    if "scaled_dot_product" in name and len(ins) > 1 and ins[0].shape and \
            len(ins[1].shape) > 1:
        q, k = ins[0], ins[1]
        return 2 * math.prod(q.shape[:-1]) * k.shape[-2] * q.shape[-1]
    if name.startswith(("linalg_", "_linalg_")) or name in _DECOMP:
        return _decomposition(name, ins)
    if name in _RNN and ins and ins[0].shape:
        rows = math.prod(ins[0].shape[:-1])
        return sum((numel(t) for t in ins[1:] if len(t.shape) == 2), 0) * rows
    if name == "einsum" and args and isinstance(args[0], str):
        return _einsum(args[0], [t for t in leaves(args[1:]) if isinstance(t, TensorMeta)])
    if name == "tensordot" and len(args) > 2 and isinstance(args[0], TensorMeta) and \
            isinstance(args[2], (list, tuple)) and all(isinstance(d, int) for d in args[2]):
        a = args[0]
        return out * math.prod(a.shape[d] for d in args[2] if -len(a.shape) <= d < len(a.shape))
    if name == "bilinear" and len(ins) > 1 and ins[0].shape and ins[1].shape:
        return out * ins[0].shape[-1] * ins[1].shape[-1]
    if name in _PER_ELEMENT_LOOP and len(args) > 1:
        # a count the kernel loops over for each element (mvlgamma's p terms, a
        # polynomial's n-term recurrence): a file's constant could make a call of a few
        # elements run for hours (session 37, benchmarks/hostile_pages.py)
        return out * loop_count(args[1]) * LOOP_WEIGHT
    return 0


LOOP_WEIGHT = 16  # one iteration of such a loop (a recurrence step, an lgamma) costs about
# what 16 elements of an elementwise kernel do (laguerre: 10 ns an iteration, 2026-12-07)


def loop_bytes(op: Any, args: Any) -> Any:
    """mvlgamma's memory besides its result: its p terms for each element, as one tensor
    (lgamma'd in place, then summed)."""
    if op._opname not in ("mvlgamma", "mvlgamma_") or len(args) < 2 or \
            not isinstance(args[0], TensorMeta):
        return 0
    item = args[0].dtype.itemsize if args[0].dtype.is_floating_point else 4
    return numel(args[0]) * loop_count(args[1]) * item


# kernels that loop over their second argument (an int, or a number) for each element
_PER_ELEMENT_LOOP = frozenset(("mvlgamma", "mvlgamma_", *(
    f"special_{kind}_polynomial_{p}" for kind, ps in (
        ("chebyshev", "tuvw"), ("shifted_chebyshev", "tuvw"), ("hermite", ("h", "he")),
        ("laguerre", "l"), ("legendre", "p")) for p in ps)))


def loop_count(n: Any) -> Any:
    """The iterations a constant count ``n`` asks of a per-element loop: ``|n|`` (a float
    as the kernel's int64 cast; a tensor of counts is read as the program runs: 0 here)."""
    if isinstance(n, bool) or isinstance(n, TensorMeta) or n is None:
        return 0
    if isinstance(n, float):
        return int(min(abs(n), 2.0 ** 63)) if math.isfinite(n) else 1 << 63
    if isinstance(n, int):
        return abs(n)
    return n  # (a symbolic int: a size of the inputs, never negative)


def _decomposition(name: str, ins: list) -> Any:
    """A matrix decomposition (or inverse, solve, power ...) of [..., m, n]: m n min(m, n)
    per matrix (128 times that for a power or an exponential: their repeated products)."""
    a = next((t for t in ins if len(t.shape) >= 2), None)
    if a is None:
        return 0
    m, n = a.shape[-2], a.shape[-1]
    small = m if isinstance(m, int) and isinstance(n, int) and m < n else n
    times = 128 if "power" in name or "exp" in name else 1
    return math.prod(a.shape[:-2]) * m * n * small * times


def _einsum(equation: str, operands: list) -> Any:
    """The loop nest of an einsum: the product of every index's size (an ellipsis: the
    largest broadcast block), times the operands."""
    lhs = equation.replace(" ", "").split("->")[0].split(",")
    if len(lhs) != len(operands):
        return 0
    sizes: dict = {}
    block: Any = 1
    for spec, t in zip(lhs, operands):
        letters = spec.replace("...", "")
        if len(letters) > len(t.shape):
            return 0
        rest = len(t.shape) - len(letters)
        if "..." in spec:
            at = spec.index("...")
            block = block * math.prod(t.shape[at:at + rest])
            shape = t.shape[:at] + t.shape[at + rest:]
        else:
            shape = t.shape
        for c, s in zip(letters, shape):
            sizes.setdefault(c, s)
    return math.prod(sizes.values()) * block * len(operands)


def leaves(value: Any) -> list:
    """The leaves of nested lists, tuples and dicts (memory.py's walk too)."""
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


class Tally:
    """The work of a graph: an int, and symbolic terms (of the input sizes) grouped by
    expression; the node of the largest term of each, for the message."""

    def __init__(self) -> None:
        self.const = 0
        self.biggest: tuple = (0, None)
        self.terms: dict = {}  # expression -> [how many times, symbolic value, node]

    def add(self, value: Any, node: Any, times: int = 1) -> None:
        if isinstance(value, int):
            value = max(value, 0)  # (a node of a negative size runs nowhere: see bounds)
            self.const += value * times
            if value * times > self.biggest[0]:
                self.biggest = (value * times, node)
            return
        entry = self.terms.get(value.expr)
        if entry is None:
            self.terms[value.expr] = [times, value, node]
        else:
            entry[0] += times

    def merge(self, other: "Tally", times: Any = 1) -> None:
        """Add ``times`` x ``other`` (``times`` an int, or a symbolic int: a map's length)."""
        if isinstance(times, int):
            self.add(other.const, other.biggest[1], times)
            for count, value, node in other.terms.values():
                self.add(value, node, count * times)
            return
        if other.const:
            self.add(times * other.const, other.biggest[1])
        for count, value, node in other.terms.values():
            self.add(value * times, node, count)

    def bounds(self, env: Any) -> tuple:
        """(lowest, highest) over the declared sizes, and the open terms (count, expr,
        node, whether it is provably >= 0 there) that the call check evaluates.

        A term is negative only at sizes where its node does not run (a branch's ``s0 - 5``
        under ``s0 >= 5``, at ``s0 == 0``): it touches nothing there, so each term counts
        at least 0, never less, which would cancel the work of the nodes that do run."""
        lo, hi, opened = self.const, self.const, []
        for count, value, node in self.terms.values():
            try:
                r = env.bounds(value.expr)
                t_lo, t_hi, sure = max(r.lo, 0), max(r.hi, 0), r.lo >= 0
            except Exception:  # noqa: BLE001 - no bounds known: checked at call
                t_lo, t_hi, sure = 0, math.inf, False
            lo += count * t_lo
            hi += count * t_hi
            opened.append((count, value.expr, node, bool(sure)))
        return lo, hi, opened

    def worst(self, env: Any) -> Any:
        """The node of the largest term at the smallest declared sizes."""
        best, node = self.biggest
        for count, value, where in self.terms.values():
            try:
                lo = count * env.bounds(value.expr).lo
            except Exception:  # noqa: BLE001
                continue
            if lo > best:
                best, node = lo, where
        return node


# -- the check before a kernel whose sizes the loader could not bound -------------------

_OPS: dict[str, Any] = {}  # name -> overload, of the kernels checked (filled by ``guard``)


@run_time_check
def check(node: str, op: str, mem_limit: int, work_limit: int, args: tuple,
          kwargs: dict) -> None:
    """Run time: refuse the call if the kernel of ``node`` (overload ``op``) would allocate
    more than ``mem_limit`` bytes or touch more than ``work_limit`` elements for these
    operands (worked out from their shapes by safetrace's shape rules, before it runs)."""
    target = _OPS.get(op)
    if target is None or active_tracer() is not None:
        return  # (a loaded program's module traced by st.export: no values to check)
    try:
        key: Any = (op, _shapes(args), _shapes(kwargs))
        hash(key)
    except TypeError:
        key = None
    need, size = _SEEN.get(key) or _needs(target, args, kwargs)
    if key is not None:
        if len(_SEEN) > 4096:
            _SEEN.clear()
        _SEEN[key] = (need, size)
    if isinstance(need, int):
        need += _loop_work(target, args)  # (read from the values: never cached)
    if isinstance(need, int) and need > work_limit:
        raise work_in_graph(node, op, need, work_limit)
    if size is None:
        raise kernel_unbounded(node, op)
    if isinstance(size, int) and size > mem_limit:
        raise kernel_memory_at_call(node, op, size, mem_limit)


_SEEN: dict = {}  # (op, operand shapes) -> (elements touched, bytes allocated)


def has_loop_tensor(op: Any, args: Any) -> bool:
    """Whether ``op`` loops for each element over counts given as a tensor (their values,
    read as the program runs: ``check`` then counts them)."""
    return op._opname in _PER_ELEMENT_LOOP and len(args) > 1 and \
        isinstance(args[1], (TensorMeta, torch.Tensor))


def _loop_work(target: Any, args: tuple) -> int:
    """Run time: the iterations of a per-element loop whose counts are a tensor's values
    (the largest count, NaN none, for each element of the result)."""
    if not has_loop_tensor(target, args) or not args[1].numel():
        return 0
    n = args[1].detach()
    if n.dtype is torch.bool or n.is_complex():
        n = n.to(torch.int8 if n.dtype is torch.bool else torch.float64)
    top = (torch.where(n.isnan(), 0, n.abs()) if n.is_floating_point() else n.abs()).max()
    top = float(top) if n.is_floating_point() else int(top)
    count = top if isinstance(top, int) else (int(top) if math.isfinite(top) else 1 << 63)
    shapes = [a.shape for a in args[:2] if isinstance(a, torch.Tensor)]
    return math.prod(torch.broadcast_shapes(*shapes)) * count * LOOP_WEIGHT


def _needs(target: Any, args: tuple, kwargs: dict) -> tuple:
    margs, mkwargs = _metas(args), _metas(kwargs)
    rule = RULES.get(target)
    out = None
    try:
        # (an op without a rule: its meta kernel, as the tracer runs it)
        out = rule(*margs, **mkwargs) if rule is not None else _meta_run(target, args, kwargs)
    except Exception:  # noqa: BLE001 - the kernel refuses these, or sizes by values
        out = None
        if rule is None and not is_view(target) and target.namespace == "aten":
            return touched(target, margs, mkwargs, None), None  # (no bound known)
    size = 0
    if out is not None and not is_view(target):
        size = sum(numel(t) * t.dtype.itemsize for t in leaves(out)
                   if isinstance(t, TensorMeta)) + loop_bytes(target, margs)
    return touched(target, margs, mkwargs, out), size


def _meta_run(target: Any, args: tuple, kwargs: dict) -> Any:
    """The op's result shapes from its meta kernel (a custom op's fake, as the exporter
    ran it; operands as meta tensors of their shapes and strides), as TensorMeta."""
    def meta(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device="meta")
        if isinstance(v, (list, tuple)):
            return type(v)(meta(x) for x in v)
        return torch.device("meta") if isinstance(v, torch.device) else v

    kernel = target if target.namespace == "aten" else (fake_of(target) or target)
    with torch._C.DisableTorchFunction():
        out = kernel(*meta(args), **{k: meta(v) for k, v in kwargs.items()})
    return _metas(out)


def _shapes(value: Any) -> Any:
    """What of the operands decides the kernel's sizes: tensors' shapes and dtypes."""
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape), value.dtype)
    if isinstance(value, (list, tuple)):
        return tuple(_shapes(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _shapes(v)) for k, v in value.items())
    return value


def _metas(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return TensorMeta(tuple(value.shape), value.dtype, _CPU)
    if isinstance(value, (list, tuple)):
        return type(value)(_metas(v) for v in value)
    if isinstance(value, dict):
        return {k: _metas(v) for k, v in value.items()}
    return value


def guard(graph: torch.fx.Graph, bounded: dict, mem_limit: int, work_limit: int) -> None:
    """Put ``check`` before every kernel of ``graph`` that is not a view and whose sizes
    ``bounded`` (node -> whether the loader's evaluation bounds them by the input sizes)
    does not vouch for."""
    for node in list(graph.nodes):
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload) or \
                bounded.get(node, False) or is_view(target) or \
                target._opname.startswith("sym_"):  # (a size query reads no element)
            continue
        name = str(target)
        _OPS.setdefault(name, target)
        with graph.inserting_before(node):
            guard_node = graph.call_function(check, (node.name, name, mem_limit, work_limit,
                                                     tuple(node.args), dict(node.kwargs)))
        guard_node.meta["val"] = None
        guard_node.meta["stack_trace"] = node.meta.get("stack_trace", "")
