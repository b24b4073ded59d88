"""A loaded program's call-time budget checks in torch's form, for ``to_torch()``.

``st.load`` puts a Python check before each kernel whose sizes are read from data as the
program runs (``serialize/work.py``: the bytes and elements a kernel of data-dependent
sizes allocates and touches; ``serialize/value_sizes.py``: the bytes a kernel sizes by
its operands' values: ``nonzero``, ``bincount``, ``repeat_interleave``, ``one_hot``,
``unique``, ``masked_select``, ``x[mask]``, ``x[:, mask]``, ``arange`` of numbers read from
data).  torch.export graphs hold no Python callable, so the conversion writes each check
as graph arithmetic with the same budget: sizes as ``aten.sym_size`` arithmetic (and the
numbers ``.item()`` read) checked by ``aten._assert_scalar`` (as the contract's checks), values as tensor reductions in float64 checked by
``aten._assert_async`` (a value's check needs no size symbol of its own).  The converted
program refuses a call before the kernel runs, where the loaded one does.

A check that has no such form here (a kind of value read not lowered below, an operand
that is no tensor of the graph, a budget exceeded at every size) is not lowered:
``lowered`` returns False and the conversion is refused as before, naming the check.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch

from safetrace.interop.contract import expr_node
from safetrace.meta import TensorMeta
from safetrace.symbolic import to_expr
from safetrace.symbolic.expr import sym

aten = torch.ops.aten
_WORK = "safetrace.serialize.work"
_VALUES = "safetrace.serialize.value_sizes"


def lowered(conv: Any, node: torch.fx.Node, target: Any, args: tuple) -> bool:
    """Append the graph form of `node`, one of the loader's checks (`args`: its arguments
    in the new graph); False where `target` is none or has no form here."""
    module, name = getattr(target, "__module__", ""), getattr(target, "__name__", "")
    if name != "check" or module not in (_WORK, _VALUES):
        return False
    try:
        if module == _WORK:
            return _work(conv, node, target)
        return _values(conv, node, args)
    except _NoForm:
        return False


class _NoForm(Exception):
    """This check has no graph form here (the conversion refuses it as before)."""


# -- work.check: bytes and elements from the operands' and results' sizes ----------------
def _work(conv: Any, node: torch.fx.Node, check: Any) -> bool:
    """The check's own count (``serialize/work.py``'s functions, read from the check's
    module: importing the loader here would import the exporter it builds on), made on
    our symbolic shapes instead of the call's real ones."""
    own = getattr(check, "__globals__", {})
    touched, is_view, leaves = (own.get(k) for k in ("touched", "is_view", "leaves"))
    if touched is None or is_view is None or leaves is None:
        raise _NoForm
    name, op, mem_limit, work_limit, args, kwargs = node.args
    kernel = _checked(node, name)
    target = kernel.target
    margs, mkwargs = _metas(args), _metas(kwargs)
    sizes = _SizeNodes(conv, node.graph, [a for a in leaves((args, kwargs))
                              if isinstance(a, torch.fx.Node)])
    out = _metas(kernel.meta.get("val"))
    if not all(sizes.readable(s) for t in leaves(out) if isinstance(t, TensorMeta)
               for s in t.shape):
        # sizes the kernel itself reads from data (a nonzero's rows): the loader's rule
        # cannot size them from the operands' shapes either, and counts the operands only
        # (the bytes are value_sizes' check)
        out = None
    need = touched(target, margs, mkwargs, out)
    size = 0 if is_view(target) else sum(
        (math.prod(t.shape) * t.dtype.itemsize for t in leaves(out)
         if isinstance(t, TensorMeta)), 0)
    checks = [(need, work_limit, (
        f"the converted loaded program's node {name!r} ({op}) would touch more than "
        f"{work_limit} elements at this call (sizes read from data), over the work budget "
        f"(max_work) it was loaded with; if you trust the file, st.load(path, budgets="
        f"{{'max_work': <larger>}})")),
        (size, mem_limit, (
            f"the converted loaded program's node {name!r} ({op}) would allocate more than "
            f"{mem_limit} bytes at this call (sizes read from data), over the budget "
            f"(16 * max_alloc_numel) it was loaded with; if you trust the file, st.load("
            f"path, budgets={{'max_alloc_numel': <larger>}})"))]
    for value, limit, message in checks:
        if isinstance(value, int):
            if value > limit:
                raise _NoForm  # (refused at every size: the conversion says which check)
            continue
        ok = conv.call(operator.le, (sizes.node(value), limit))
        conv.call(aten._assert_scalar.default, (ok, message), name="_assert_scalar")
    return True


def _checked(node: torch.fx.Node, name: str) -> torch.fx.Node:
    """The kernel node a check stands before (the loader inserts its checks right before
    it, the other loaders' checks between)."""
    at = node.next
    while at.op == "call_function":
        if at.name == name:
            return at
        at = at.next
    raise _NoForm


def _metas(value: Any) -> Any:
    """Our shapes of the operands (graph nodes' TensorMeta; numbers kept)."""
    if isinstance(value, torch.fx.Node):
        val = value.meta.get("val")
        meta = getattr(val, "st_meta", val)
        if meta is None:
            raise _NoForm
        return meta
    if isinstance(value, (list, tuple)):
        return type(value)(_metas(v) for v in value)
    if isinstance(value, dict):
        return {k: _metas(v) for k, v in value.items()}
    return getattr(value, "st_meta", value)


class _SizeNodes:
    """Graph nodes computing our size expressions at run time from the operands' sizes:
    an input symbol from the contract's size nodes, an operand's size (a symbol read from
    data, a nonzero's row count, or an expression, ``x[mask][:2]``'s ``min(u0, 2)``), or
    a size an earlier node of the same graph holds (a tensor's dim, a number read by
    ``.item()``)."""

    def __init__(self, conv: Any, graph: torch.fx.Graph, operands: list) -> None:
        self.conv = conv
        self.dims: dict = {}
        for ours in operands:
            meta = getattr(ours.meta.get("val"), "st_meta", None)
            for d, s in enumerate(getattr(meta, "shape", ())):
                e = getattr(s, "expr", None)
                if e is not None:
                    self.dims.setdefault(to_expr(e), (ours, d))
        self.held = _held(conv, graph)

    def _inputs(self) -> dict:
        """The contract's input size nodes: the main graph's (a subgraph reads the sizes
        its placeholders hold, ``_held``)."""
        return {} if getattr(self.conv, "branch_depth", 0) else self.conv.emitter.nodes

    def readable(self, size: Any) -> bool:
        """Whether `size` is an operand's, or every symbol of it is an input's, an
        operand's size or one an earlier node holds."""
        if isinstance(size, int):
            return True
        known = self._inputs()
        e = to_expr(size.expr)
        return self._at(e) is not None or all(
            x in known or self._at(x) is not None for x in map(sym, e.free_symbols))

    def _at(self, e: Any) -> Any:
        """(node, dim or None) of ours that holds `e` and is converted already (a node
        of the graph being converted, before the check), or None: a size the program
        reads later (``x[mask]``'s rows that a ``sym_size`` after the kernel reads) or in
        another graph (the main graph's, from a branch) is none the check can read."""
        for table in (self.dims, self.held):
            hit = table.get(e)
            if hit is not None and hit[0] in self.conv.env:
                return hit
        return None

    def node(self, value: Any) -> Any:
        nodes = dict(self._inputs())
        return expr_node(to_expr(value), nodes, self.conv.call, self._leaf)

    def _leaf(self, e: Any) -> Any:
        hit = self._at(e)
        if hit is None:
            return None
        ours, d = hit
        new = self.conv.env[ours]
        if d is None:
            return new
        return self.conv.call(aten.sym_size.int, (new, d), name="sym_size_int",
                              value=new.meta["val"].shape[d])


def _held(conv: Any, graph: torch.fx.Graph) -> dict:
    """Our symbol -> (the first node of `graph` that holds it, its dim; None for a number
    read from data, an ``.item()``), made once per graph and conversion."""
    tables = conv.__dict__.setdefault("_held_sizes", {})
    found = tables.get(graph)
    if found is None:
        found = tables[graph] = {}
        for n in graph.nodes:
            val = n.meta.get("val")
            meta = getattr(val, "st_meta", None)
            if meta is None:
                e = getattr(val, "expr", None)
                if e is not None and to_expr(e).op == "sym":
                    found.setdefault(to_expr(e), (n, None))
                continue
            for d, s in enumerate(getattr(meta, "shape", ())):
                e = getattr(s, "expr", None)
                if e is not None and to_expr(e).op == "sym":
                    found.setdefault(to_expr(e), (n, d))
    return found


# -- value_sizes.check: bytes a kernel reads from its operands' values -------------------
def _values(conv: Any, node: torch.fx.Node, args: tuple) -> bool:
    kind, name, limit = args[0], args[1], args[2]
    operands = args[3:]
    build = _NEEDS.get(kind)
    if build is None or isinstance(limit, bool) or not isinstance(limit, int):
        raise _NoForm
    need = build(_Values(conv), *operands)
    if need is None:
        return True  # (nothing allocated by values: the loader's check passes always)
    message = (f"the converted loaded program's node {name!r} would allocate more than "
               f"{limit} bytes at this call, a size its kernel reads from the values it is "
               f"given ({kind}), over the budget (16 * max_alloc_numel) it was loaded with; "
               f"if you trust the file, st.load(path, budgets={{'max_alloc_numel': "
               f"<larger>}})")
    ok = conv.call(aten.le.Scalar, (need, float(limit)))
    conv.call(aten._assert_async.msg, (ok, message), name="_assert_async")
    return True


class _Values:
    """Tensor arithmetic of the checks in the new graph, in float64 (a value read from
    data may be any int64: a product of them must not wrap)."""

    def __init__(self, conv: Any) -> None:
        self.conv = conv

    def call(self, target: Any, *args: Any, **kwargs: Any) -> Any:
        return self.conv.call(target, args, kwargs=kwargs)

    def tensor(self, x: Any) -> Any:
        if not isinstance(x, torch.fx.Node) or not isinstance(x.meta.get("val"),
                                                              torch.Tensor):
            raise _NoForm
        return x

    def compact(self, x: Any) -> tuple:
        """`x` less its broadcast dims (stride 0 in its value: one element stands for all
        of them, as the loader's ``_compact``), and the sizes each element repeats."""
        fake = x.meta["val"]
        times = []
        for d, (size, stride) in enumerate(zip(fake.shape, fake.stride())):
            if type(stride) is int and stride == 0 and not (type(size) is int and size <= 1):
                times.append(self.size(x, d))
                x = self.call(aten.slice.Tensor, x, d, 0, 1)
        return x, times

    def size(self, x: Any, d: int) -> Any:
        s = x.meta["val"].shape[d]
        return s if type(s) is int else self.conv.call(aten.sym_size.int, (x, d),
                                                       name="sym_size_int", value=s)

    def numel(self, x: Any) -> list:
        return [self.size(x, d) for d in range(x.meta["val"].dim())]

    def as_float(self, t: Any) -> Any:
        return self.call(aten._to_copy.default, t, dtype=torch.float64)

    def times(self, t: Any, factors: list) -> Any:
        """`t` (a 0-d float64 tensor) times each factor (ints or size nodes)."""
        for f in factors:
            if type(f) is int:
                if f != 1:
                    t = self.call(aten.mul.Scalar, t, float(f))
            else:
                t = self.call(aten.mul.Tensor, t, self.call(
                    aten.scalar_tensor.default, f, dtype=torch.float64))
        return t

    def count(self, x: Any) -> Any:
        compact, times = self.compact(self.tensor(x))
        return self.times(self.as_float(self.call(aten.count_nonzero.default, compact)),
                          times)

    def max_plus_one(self, x: Any) -> Any:
        """``max(x) + 1``, 0 for an empty `x` (a -1 appended before the maximum)."""
        compact, _ = self.compact(self.tensor(x))
        flat = self.call(aten.reshape.default, compact, [-1])
        padded = self.call(aten.constant_pad_nd.default, flat, [0, 1], -1)
        top = self.as_float(self.call(aten.max.default, padded))
        return self.call(aten.add.Scalar, top, 1.0)

    def total(self, x: Any) -> Any:
        compact, times = self.compact(self.tensor(x))
        return self.times(self.call(aten.sum.default, compact, dtype=torch.float64), times)


def _nonzero(v: _Values, x: Any) -> Any:
    return v.times(v.count(x), [max(v.tensor(x).meta["val"].dim(), 1), 8])


def _bincount(v: _Values, x: Any, weights: Any = None, minlength: Any = 0) -> Any:
    n = v.max_plus_one(x)
    if minlength:
        if not isinstance(minlength, int):
            raise _NoForm
        n = v.call(aten.clamp_min.default, n, float(minlength))
    return v.times(n, [8])


def _one_hot(v: _Values, x: Any, classes: Any = -1) -> Any:
    if not isinstance(classes, int):
        raise _NoForm
    x = v.tensor(x)
    if classes >= 0:
        return _sized(v, x, classes)
    return v.times(v.max_plus_one(x), v.numel(x) + [8])


def _sized(v: _Values, x: Any, classes: int) -> Any:
    """one_hot with a given class count: a size of the shapes, as a value to compare."""
    one = v.call(aten.scalar_tensor.default, 1.0, dtype=torch.float64)
    return v.times(one, v.numel(x) + [classes, 8])


def _repeats(v: _Values, repeats: Any, output_size: Any = None) -> Any:
    if output_size is not None:
        return None  # (a given size: held to the budget as any size argument)
    return v.times(v.total(repeats), [8])


def _repeat_self(v: _Values, x: Any, repeats: Any, dim: Any = None,
                 output_size: Any = None) -> Any:
    """``repeat_interleave(x, r, dim)``: ``sum(r)`` slices of `x` along `dim` (`x`
    flattened where no dim is given), ``r * x.shape[dim]`` where `r` holds one element
    (the loader's ``_repeat_self``)."""
    if output_size is not None:
        return None
    x = v.tensor(x)
    if not isinstance(repeats, torch.fx.Node) or not (dim is None or isinstance(dim, int)):
        raise _NoForm
    sizes = v.numel(x) or [1]
    d = 0 if dim is None else dim % len(sizes)
    along, rest = (sizes, []) if dim is None else ([sizes[d]], sizes[:d] + sizes[d + 1:])
    r = v.tensor(repeats)
    n = v.total(r)
    one = v.call(aten.scalar_tensor.default, 1.0, dtype=torch.float64)
    count = v.times(one, v.numel(r))  # (r's element count: one element is broadcast)
    n = v.call(aten.mul.Tensor, n, v.call(aten.where.self, v.call(
        aten.eq.Scalar, count, 1.0), v.times(one, along), one))
    return v.times(n, rest + [x.meta["val"].element_size()])


def _arange(v: _Values, start: Any, end: Any = None, step: Any = 1) -> Any:
    """``arange(end)``, ``arange(start, end[, step])`` of numbers read from data:
    ``max(0, ceil((end - start) / step))`` int64 values (the loader's ``_arange``; a zero
    step, which the kernel refuses, fails the check too)."""
    if end is None:
        start, end = 0, start
    a, b, c = (_number(v, x) for x in (start, end, 1 if step is None else step))
    n = v.call(aten.ceil.default, v.call(aten.div.Tensor, v.call(aten.sub.Tensor, b, a), c))
    return v.times(v.call(aten.clamp_min.default, n, 0.0), [8])


def _number(v: _Values, x: Any) -> Any:
    """A number of the graph (a SymInt or SymFloat node) or a constant as a 0-d float64
    tensor."""
    if isinstance(x, torch.fx.Node):
        if not isinstance(x.meta.get("val"), (torch.SymInt, torch.SymFloat, int, float)):
            raise _NoForm
    elif isinstance(x, bool) or not isinstance(x, (int, float)):
        raise _NoForm
    return v.call(aten.scalar_tensor.default, x, dtype=torch.float64)


def _unique(v: _Values, x: Any, *_: Any) -> Any:
    x = v.tensor(x)
    one = v.call(aten.scalar_tensor.default, 1.0, dtype=torch.float64)
    return v.times(one, v.numel(x) + [x.meta["val"].element_size() + 16])


def _masked_select(v: _Values, x: Any, mask: Any) -> Any:
    """One element of `x` per true element of the mask broadcast with it: here where the
    mask has the broadcast shape (`x`'s dims, right-aligned, 1 or the mask's own)."""
    x, mask = v.tensor(x), v.tensor(mask)
    xs, ms = x.meta["val"].shape, mask.meta["val"].shape
    if len(xs) > len(ms) or not all(_same(a, 1) or _same(a, b)
                                    for a, b in zip(reversed(xs), reversed(ms))):
        raise _NoForm
    return v.times(v.count(mask), [x.meta["val"].element_size()])


def _index(v: _Values, x: Any, indices: Any) -> Any:
    """``x[...]`` with boolean masks among its indices (the loader's ``_index``): a mask
    stands for its true elements' count, an integer index for its shape, the indices
    broadcast together; a dim without an index (None) and the dims after the indexed ones
    are kept whole."""
    x = v.tensor(x)
    if not isinstance(indices, (list, tuple)):
        raise _NoForm
    shapes, kept, d = [], [], 0
    for ix in indices:
        if ix is None:
            if d < x.meta["val"].dim():
                kept.append(v.size(x, d))
            d += 1
            continue
        fake = v.tensor(ix).meta["val"]
        if fake.dtype in (torch.bool, torch.uint8):
            shapes.append([v.count(ix)])
            d += fake.dim()
        elif fake.dtype in (torch.int64, torch.int32):
            shapes.append(v.numel(ix))
            d += 1
        else:
            raise _NoForm
    if d > x.meta["val"].dim():
        raise _NoForm
    rest = kept + [v.size(x, k) for k in range(d, x.meta["val"].dim())]
    return v.times(_broadcast(v, shapes), rest + [x.meta["val"].element_size()])


def _broadcast(v: _Values, shapes: list) -> Any:
    """The element count of `shapes` broadcast together (0-d float64 tensor); sizes are
    ints, size nodes or float64 tensors.  A dim is its sizes other than 1 (equal where the
    kernel runs: their maximum), or 1 where all are 1."""
    one = v.call(aten.scalar_tensor.default, 1.0, dtype=torch.float64)
    total = one
    for k in range(1, max(map(len, shapes)) + 1):
        sizes = [s[-k] for s in shapes if len(s) >= k]
        if all(type(s) is int for s in sizes):
            total = v.times(total, [max([s for s in sizes if s != 1], default=1)])
            continue
        top = None
        for s in sizes:
            t = s if isinstance(s, torch.fx.Node) and isinstance(
                s.meta.get("val"), torch.Tensor) else v.times(one, [s])
            t = v.call(aten.where.self, v.call(aten.eq.Scalar, t, 1.0), v.call(
                aten.scalar_tensor.default, -1.0, dtype=torch.float64), t)
            top = t if top is None else v.call(aten.maximum.default, top, t)
        total = v.call(aten.mul.Tensor, total, v.call(
            aten.where.self, v.call(aten.lt.Scalar, top, 0.0), one, top))
    return total


def _same(a: Any, b: Any) -> bool:
    """Whether two sizes are the same int or the same symbolic expression (no guard)."""
    if type(a) is int or type(b) is int:
        return type(a) is type(b) and a == b
    return a.node.expr == b.node.expr


_NEEDS = {"nonzero": _nonzero, "bincount": _bincount, "one_hot": _one_hot,
          "repeats": _repeats, "repeat_self": _repeat_self, "unique": _unique,
          "masked_select": _masked_select, "index": _index, "arange": _arange}
