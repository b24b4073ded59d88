"""Control flow (cond, while_loop, map, scan) in a converted program.

Our graphs already call torch's own higher-order operators on ``get_attr`` subgraphs, the
structure torch.export produces.  Each subgraph is converted like the program itself, node
for node over the same ShapeEnv (its placeholders get fake values of our shapes; a size
known only inside, such as a loop's changing length, a fresh unbacked torch symbol), into a
GraphModule the operator node names; the operator's own fake implementation then gives the
node's value, compared with ours like every other node's.
"""

from __future__ import annotations

import logging
import math
import os
import warnings
from typing import Any

import torch

from safetrace.errors import ConversionWarning, StructuredError
from safetrace.errors import interop as EI
from safetrace.interop.construct import root_of
from safetrace.interop.contract import evaluate
from safetrace.interop.hierarchy import Boundaries
from safetrace.interop.implication import implied
from safetrace.interop.node_checks import branch_symbols, split_headers, where
from safetrace.interop.piece_views import is_piece as _is_piece, is_view as _is_view, \
    pieces_as_views as _pieces_as_views
from safetrace.symbolic import canon, to_expr
from safetrace.symbolic.expr import const, sym
from safetrace.trace.hops import submodules


def convert_get_attr(conv: Any, node: torch.fx.Node, owner: torch.fx.Graph) -> torch.fx.Node:
    """The new graph's get_attr for our subgraph `node` names, its module converted."""
    sub = submodules(owner).get(node.target)
    if sub is None:
        raise EI.not_a_subgraph(node.name, str(node.target))
    paths = conv.__dict__.setdefault("paths", [])
    paths.append(branch_condition(node))
    try:
        gm = convert_subgraph(conv, sub.graph)
    finally:
        paths.pop()
    conv.attrs[node.target] = gm
    new = conv.graph.get_attr(node.target)
    conv.submodule_of[new] = gm
    return new


def branch_condition(node: torch.fx.Node) -> Any:
    """Where the subgraph `node` reads runs: its cond's predicate (our symbolic
    expression of the input sizes) for the true branch, its negation for the false one;
    None where it is not (only) a cond's branch on a size, or the subgraph of a loop."""
    users = list(node.users)
    if len(users) != 1 or users[0].target is not torch.ops.higher_order.cond:
        return None
    pred, t, f = users[0].args[:3]
    val = pred.meta.get("val") if isinstance(pred, torch.fx.Node) else pred
    if isinstance(val, bool):
        e = const(val)
    elif hasattr(val, "expr") and not isinstance(val, torch.Tensor):
        e = to_expr(val.expr)
    else:
        return None
    return e if node is t else canon.not_(e) if node is f else None


def holds_where_branch_runs(conv: Any, cond: Any) -> bool:
    """Whether our assertion `cond` (a symbolic bool of the input sizes), inside the cond
    branches being converted, holds wherever they run: implied by the program's contract
    (checked before anything runs) and the predicates that chose them. A size split's
    side asserts its sizes first (``d0 == 1``, exporter/relation_splits.py): torch's cond
    traces that branch at every side's sizes too, where such an assertion fails while
    tracing, though never where the branch runs."""
    paths = conv.__dict__.get("paths") or []
    if not paths or any(p is None for p in paths) or not hasattr(cond, "expr"):
        return False
    e = cond.expr if isinstance(cond, _Cond) else to_expr(cond.expr)
    return implied(conv.ep.contract, e, tuple(paths))


def identity_slice(conv: Any, node: torch.fx.Node, args: tuple) -> tuple | None:
    """The arguments of an ``as_strided`` for our ``slice`` `node` (converted `args`) in a
    cond branch where it takes a fixed number v of first rows (start 0, step 1, our size
    a number) of an input that has at least v wherever the branch runs: a point side's
    operand narrowed to its one size (``x[0:1]`` where ``d0 == 1``), ``x[:2]`` where
    ``d0 >= 4``. torch's cond traces the branch at every side's sizes too, where the
    slice is ``Min(2, s0)`` rows and later ops do not fit (``Min(3, s) must match
    Min(2, s)//2``); the view of those v rows at the input's strides is the same tensor
    where the branch runs, and torch's trace takes it without a guard. None where it
    does not apply."""
    x = args[0]
    dim, start, end, step = (*args[1:5], *(0, None, None, 1)[len(args) - 1:])
    ours_in = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    ours, theirs = node.meta.get("val"), x.meta.get("val") if isinstance(x, torch.fx.Node) \
        else None
    if start not in (None, 0) or step != 1 or not all(
            isinstance(t, torch.Tensor) for t in (ours_in, ours, theirs)) or \
            not isinstance(dim, int) or ours.dim() != theirs.dim():
        return None
    d = dim % ours.dim()
    v, e = ours.shape[d], ours_in.shape[d]
    if not isinstance(v, int) or isinstance(e, int) or not hasattr(e, "expr") or \
            isinstance(theirs.shape[d], int):
        return None
    # (only where torch's slice has v rows at the sizes its trace uses, the example's: a
    # side whose rows are fewer there, `x.flatten()[:1]` of 0 rows beside a side of 1,
    # traced fine as `Min(1, s0*s1)`, and a view of 0 rows would not fit it; fuzz 3402)
    rows = _hint(theirs.shape[d])
    upto = rows if end is None else _hint(end)
    if rows is None or upto is None or upto < 0 or min(rows, upto) != v:
        return None
    whole = _Cond(canon.ge(to_expr(e.expr), const(v)))
    if not holds_where_branch_runs(conv, whole):
        return None
    g = conv.graph

    def part(val: Any, op: Any, *rest: Any, read: bool = False) -> Any:
        if isinstance(val, int) and not read:
            return val
        n = g.call_function(op, (x, *rest))
        n.meta["val"] = val
        return n

    # (a size of ours that is symbolic is read from the input even where torch's fake has a
    # number: a guard torch made while merging another cond's outputs can pin a symbol to
    # its example value, `y.shape[1]` to 1, which the view must not keep; fuzz 35)
    sizes = [v if i == d else part(s, _aten.sym_size.int, i, read=not isinstance(o, int))
             for i, (s, o) in enumerate(zip(theirs.shape, ours_in.shape))]
    # (the strides and offset read from the input where it runs: the fake's are a
    # contiguous input's, a strided input's differ)
    strides = [part(s, _aten.sym_stride.int, i, read=True)
               for i, s in enumerate(theirs.stride())]
    return x, sizes, strides, part(theirs.storage_offset(), _aten.sym_storage_offset.default,
                                   read=True)


def _hint(v: Any) -> int | None:
    """The size (a converted node's value, a SymInt, an int) at the trace's sizes."""
    if isinstance(v, torch.fx.Node):
        v = v.meta.get("val")
    if isinstance(v, int):
        return v
    if isinstance(v, torch.SymInt) and v.node.has_hint():
        return int(v.node.hint)
    return None


class _Cond:
    """An expression where a symbolic bool is expected (``.expr``)."""

    def __init__(self, expr: Any) -> None:
        self.expr = expr


def convert_subgraph(conv: Any, graph: torch.fx.Graph) -> torch.fx.GraphModule:
    saved = (conv.graph, conv.env, conv.bounds, conv.stacks, conv.attrs)
    conv.graph, conv.env, conv.stacks, conv.attrs = torch.fx.Graph(), {}, {}, {}
    conv.bounds = Boundaries(conv, None, {})  # preserved calls never reach inside
    conv.branch_depth = getattr(conv, "branch_depth", 0) + 1
    scope = branch_symbols(conv, graph)  # (node_checks.py: the symbols of its own reads)
    scope.__enter__()
    try:
        for n in graph.nodes:
            if n.op == "placeholder":
                new = conv.graph.placeholder(n.name)
                val = n.meta.get("val")
                if val is None and n.name in conv.ep.lifted_constants:
                    # a lifted constant no side under this cond reads (a three-way size
                    # split's inner cond passes it on): its value's fake, not None, which
                    # torch's cond takes as no operand (fuzz seed 3404)
                    new.meta["val"] = conv.fakes.static(conv.ep.lifted_constants[n.name])
                else:
                    new.meta["val"] = fake_of(conv, val)
                conv.env[n] = new
            elif n.op == "get_attr":
                conv.env[n] = convert_get_attr(conv, n, graph)
            elif n.op == "call_function":
                conv.call_node(n)
            elif n.op == "output":
                conv.graph.output(torch.fx.node.map_arg(n.args[0], conv.env.__getitem__))
        functional_writes(conv.graph)
        # (its subgraphs, pytree specs of flat_apply)
        return torch.fx.GraphModule(root_of(conv.attrs), conv.graph)
    finally:
        scope.__exit__(None, None, None)
        conv.graph, conv.env, conv.bounds, conv.stacks, conv.attrs = saved
        conv.branch_depth -= 1


def quiet_symbol_logs(shape_env: Any) -> None:
    """`shape_env` logs each data-dependent symbol it creates only when someone listens:
    torch's log line walks the Python stack first (~3 ms a symbol; a conversion creates one
    per ``.item()``, ``nonzero`` and control-flow output)."""
    from torch.fx.experimental import symbolic_shapes

    loud = shape_env._log_create_unbacked_symbol

    def log_create_unbacked_symbol(*args: Any, **kwargs: Any) -> None:
        if symbolic_shapes.log.isEnabledFor(logging.INFO) or os.environ.get("TORCH_TRACE"):
            loud(*args, **kwargs)

    shape_env._log_create_unbacked_symbol = log_create_unbacked_symbol


def hop_value(conv: Any, op: Any, args: tuple, kwargs: dict) -> Any:
    """`op`'s value on fake values (`run_hop`); where torch's cond cannot run its sides at
    each other's sizes or merge their outputs (`merge_refused`), the value from ours
    (`cond_from_ours`), the failed try's sizes from data bound to nothing."""
    pending = conv.shape_env.pending_fresh_unbacked_symbols
    mark = len(pending)
    try:
        return run_hop(op, args, kwargs)
    except Exception as exc:  # noqa: BLE001 - reraised unless torch's merge refused
        if not merge_refused(op, exc):
            raise
    del pending[mark:]
    warnings.warn(merged_from_ours(where(conv.current)), ConversionWarning, stacklevel=7)
    made = next(reversed(conv.graph.nodes), None)  # (the cond node `conv.call` appended)
    if made is not None and made.target is op:  # (the deploy tools refuse it up front)
        made.meta[FROM_OURS] = (where(conv.current), split_headers(conv.ep.graph))
    return cond_from_ours(conv, conv.current)


FROM_OURS = "safetrace_cond_from_ours"  # node.meta key: a cond whose value is ours


def run_hop(op: Any, args: tuple, kwargs: dict) -> Any:
    """`op` on fake values; torch's cond takes branches that write their inputs in place
    (a StaticCache updated on a size split's sides) only without autograd, and branch
    outputs only dense in memory, laid out alike (a strided slice, an expanded or offset
    view returned on a size split's sides, fuzz seeds 34 and 3401: made contiguous, as
    torch's hint says, and run again)."""
    env = shape_env_of(args)
    mark = len(env.pending_fresh_unbacked_symbols) if env is not None else 0
    try:
        if op is torch.ops.higher_order.cond and env is not None:
            # (torch's merge of the branches' outputs orders their strides by comparing
            # sizes at the example's values, and such a comparison made a guard that pinned
            # a size to its example value, `y.shape[1] == 1`, for every later node: its
            # answers only order the strides, and the branches' own nodes were converted,
            # their guards recorded, already; fuzz 35)
            with env.suppress_guards():
                return op(*args, **kwargs)
        return op(*args, **kwargs)
    except StructuredError:  # (safetrace's own, a RuntimeError for some: as it is)
        raise
    except (RuntimeError, AssertionError) as exc:
        if op is torch.ops.higher_order.cond and _merging(exc) and dense_outputs(args[1:3]):
            if env is not None:  # (the failed try's sizes from data: bound to no output)
                del env.pending_fresh_unbacked_symbols[mark:]
            return run_hop(op, args, kwargs)
        if "in-place input or buffer mutations" not in str(exc):
            raise
    with torch.no_grad():
        return op(*args, **kwargs)


def merge_refused(op: Any, exc: BaseException) -> bool:
    """Whether `exc` is torch's fake cond failing to run its branches again at each
    other's sizes or to merge their outputs (``cond_fake_tensor_mode``): a size that is, or
    may be, 0 on one side (strides ``s*Max(1, u)`` against ``s*u``, ``Ne(u, 1)`` asked of
    a size read from data), a view that holds only at its own side's sizes (``False !=
    True``, ``cond must be a bool, but got SymInt`` of its own check), or tracing a side
    again for its schema under autograd. Our conversion of each branch node succeeded
    already."""
    if op is not torch.ops.higher_order.cond or isinstance(exc, StructuredError) or \
            not isinstance(exc, (RuntimeError, AssertionError, KeyError, TypeError)):
        return False
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name in _COND_TRACES:
            return True
        tb = tb.tb_next
    return False


# torch's fake cond, and its schema for autograd (operands that require grad: each branch
# traced again at the operands' sizes; fuzz seed 1)
_COND_TRACES = ("cond_fake_tensor_mode", "gen_schema")


def cond_from_ours(conv: Any, node: torch.fx.Node) -> Any:
    """The value of our cond `node` made from our outputs' shapes (one form for every side,
    proven for the whole input space, the form the nodes after it were converted with), as
    torch's merge makes its value: a size torch does not know yet (one the sides make
    differently, or from data) a fresh data-dependent symbol with our range, which the
    cond node binds (its ``unbacked_bindings``). Only metadata: at run time the cond runs
    the branch its predicate picks."""
    ours = node.meta["val"]
    parts = ours if isinstance(ours, (tuple, list)) else (ours,)
    bare = {e.name for p in parts for s in (p.shape if isinstance(p, torch.Tensor) else (p,))
            if hasattr(s, "env") and (e := to_expr(s.env.simplify(s.expr))).op == "sym"}
    made = [fake_of(conv, o, lambda c, s: _merged_size(c, s, bare)) for o in parts]
    return tuple(made) if isinstance(ours, (tuple, list)) else made[0]


def _merged_size(conv: Any, s: Any, bare: set) -> Any:
    if isinstance(s, int):
        return s
    e = to_expr(s.env.simplify(s.expr))
    em = conv.emitter
    if e.op != "sym" and not e.free_symbols <= em.values.keys() | bare:
        # a size from data that no output holds bare (`u % 9`): one fresh symbol for the
        # whole size, as torch's merge makes for a size its sides make differently; the
        # cond node binds it (a symbol inside `Mod(u, 9)` is bound by nothing, and
        # torch.export.load refuses such a program: "expected no unbacked symbols")
        hit = conv.fakes.exprs.get(e)
        if hit is None:
            hit = _fresh(conv, s.env.bounds(e))
            conv.fakes.seed(e, hit)
            em.symbol_names[hit.node.expr] = e
        return hit
    for name in sorted(e.free_symbols):
        if name not in em.values:  # (held bare by an output: that output binds it)
            em.values[name] = u = _fresh(conv, s.env.bounds(sym(name)))
            em.symbol_names[u.node.expr] = sym(name)
    return evaluate(e, em.values)


def _fresh(conv: Any, r: Any) -> Any:
    """A fresh data-dependent size with our range `r` (pending: the cond node binds it)."""
    u = conv.shape_env.create_unbacked_symint()
    lo = int(r.lo) if r.lo != -math.inf else 0
    hi = int_oo() if r.hi == math.inf else int(r.hi)
    conv.shape_env.constrain_symbol_range(u.node.expr, max(lo, 0), hi)
    return u


def int_oo() -> Any:
    from torch.utils._sympy.numbers import int_oo as inf

    return inf


def shape_env_of(args: Any) -> Any:
    """The ShapeEnv of the fake values among `args` (a flat list, or any pytree; None
    without one)."""
    for leaf in args if type(args) is list else torch.utils._pytree.tree_leaves(args):
        mode = getattr(leaf, "fake_mode", None)
        if mode is not None:
            return mode.shape_env
    return None


def _merging(exc: BaseException) -> bool:
    """Whether `exc` is torch's cond refusing to merge its branches' outputs' strides or
    storage offsets (``_merge_output``: a strided slice, an expanded or offset view, outputs
    laid out differently on the two sides)."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "_merge_output":
            return any(w in str(exc) for w in ("stride", "storage_offset", "b_val"))
        tb = tb.tb_next
    return False



def dense_outputs(branches: tuple) -> bool:
    """Each tensor output of the `branches` (GraphModules) made contiguous by a
    ``clone(memory_format=torch.contiguous_format)`` (same values; a cond's outputs are new
    tensors anyway), in place; False where there was none left to make."""
    changed = False
    for gm in branches:
        if not isinstance(gm, torch.fx.GraphModule):
            return False
        out = next(n for n in reversed(gm.graph.nodes) if n.op == "output")

        def dense(n: Any) -> Any:
            nonlocal changed
            val = n.meta.get("val") if isinstance(n, torch.fx.Node) else None
            if not isinstance(val, torch.Tensor) or _is_dense_clone(n):
                return n
            with gm.graph.inserting_before(out):
                new = gm.graph.call_function(torch.ops.aten.clone.default, (n,),
                                             {"memory_format": torch.contiguous_format})
            new.meta["val"] = torch.ops.aten.clone.default(
                val, memory_format=torch.contiguous_format)
            if "stack_trace" in n.meta:
                new.meta["stack_trace"] = n.meta["stack_trace"]
            changed = True
            return new

        out.args = (torch.fx.node.map_aggregate(out.args[0], dense),)
        gm.recompile()
    return changed


def _is_dense_clone(n: torch.fx.Node) -> bool:
    return n.target is torch.ops.aten.clone.default and \
        n.kwargs.get("memory_format") is torch.contiguous_format


def fake_of(conv: Any, val: Any, size: Any = None) -> Any:
    """A fake value of our value `val` (a traced tensor, a symbolic or plain int), each
    size made by `size(conv, s)` (``torch_size`` unless given: ``_merged_size`` for a
    cond's value from ours)."""
    size = torch_size if size is None else size
    if isinstance(val, torch.Tensor):
        sizes = [size(conv, s) for s in val.shape]
        return torch.empty(sizes, dtype=val.dtype, device=val.device)
    if hasattr(val, "expr") and hasattr(val, "env"):
        return size(conv, val)
    return val


def torch_size(conv: Any, s: Any) -> Any:
    """Our size as a torch SymInt (or int); a symbol torch does not know yet, one born
    inside a subgraph, becomes a fresh unbacked one."""
    if isinstance(s, int):
        return s
    e = to_expr(s.env.simplify(s.expr) if hasattr(s, "env") else s)
    em = conv.emitter
    for name in sorted(e.free_symbols):
        if name not in em.values:
            with conv.shape_env.ignore_fresh_unbacked_symbols():
                u = conv.shape_env.create_unbacked_symint()
            em.values[name] = u
            em.symbol_names[u.node.expr] = sym(name)
            if e != sym(name):  # (`u % 9`: no output holds the symbol bare, nothing binds
                # it; an unbound size from data, fuzz seed 3601)
                conv.shape_env.ignorable_fresh_unbacked_symbols.append(u.node.expr)
    return evaluate(e, em.values)


def functional_writes(graph: torch.fx.Graph) -> bool:
    """A subgraph's in-place writes as functional operators (``index_copy_`` ->
    ``index_copy``; every later read of the written tensor reads the new value), in place;
    False (the graph untouched) unless every write can be: no view of a written tensor
    exists, and each written input's last value is among the outputs (torch's cond
    requires functional branches, which ExecuTorch and ONNX then lower; a size split's
    branches write a StaticCache and return it)."""
    plan = []
    latest: dict[torch.fx.Node, torch.fx.Node] = {}
    order = {n: i for i, n in enumerate(graph.nodes)}
    for node in graph.nodes:
        t = node.target
        if node.op != "call_function" or not isinstance(t, torch._ops.OpOverload) or \
                not t._schema.is_mutable:
            continue
        functional = functional_of(t)
        base = node.args[0] if node.args else None
        if functional is None or not isinstance(base, torch.fx.Node):
            return False
        if _pieces_as_views(graph, base):  # (a piece of a split: now its slice)
            base = node.args[0]
            order = {n: i for i, n in enumerate(graph.nodes)}
        chain = _view_chain(base)
        if chain is None:
            # a write through a view torch has no scatter operator for (a transpose, a
            # piece of a split `as_single_view` does not know): it stays, as eager makes it
            return False
        whole = chain[-1].args[0] if chain else base
        if reads_written(node, memory_of(whole)):
            # an operand aliasing the written tensor (``v.index_add_(0, i, v[:1].expand(..))``):
            # eager reads it while writing, the functional form before (fuzz typed seed 3)
            return False
        if any(v is not base and _read_across(v, order, order[node])
               for v in _views_of(whole, order, node)):
            return False  # a view taken before the write and read after it
        root = next((k for k, v in latest.items() if v is whole), whole)
        latest[root] = whole if chain else node
        plan.append((node, functional, chain))
    if not plan:
        return False
    out = next(n for n in reversed(graph.nodes) if n.op == "output")
    returned = set(out.all_input_nodes)
    if any(root.op == "placeholder" and last not in returned and root not in returned
           for root, last in latest.items()):
        return False  # a write the branch does not hand back: it would be lost
    for node, functional, chain in plan:
        base = node.args[0]
        with graph.inserting_before(node):
            new = graph.call_function(functional, node.args, dict(node.kwargs))
            new.meta = dict(node.meta)
            order[new] = order[node]
            # a write through views (out[i] = v): the new value scattered back into each
            # tensor the view was taken of, innermost first (select -> select_scatter)
            written, value = base, new
            for view in chain:
                parent = view.args[0]
                value = graph.call_function(_SCATTER[view.target],
                                            (parent, value, *view.args[1:]), dict(view.kwargs))
                value.meta = {k: v for k, v in parent.meta.items() if k in ("val", "stack_trace")}
                order[value] = order[node]
                written = parent
            _read_later(written, value, order, order[node])
        if chain:
            _read_later(base, new, order, order[node])
        node.replace_all_uses_with(new)
        graph.erase_node(node)
    return True


def written_after(node: torch.fx.Node) -> bool:
    """Whether an op after `node` in its graph writes a tensor in place (whether a copy in
    place of `node`'s alias of its input could be seen: ``y.contiguous()``, then
    ``y.mul_(3)``, changes eager's result too)."""
    n = node.next
    while n.op != "root":
        t = n.target
        if n.op == "call_function" and isinstance(t, torch._ops.OpOverload) and \
                t._schema.is_mutable:
            return True
        n = n.next
    return False


def memory_of(node: Any) -> Any:
    """The node whose memory `node` is: the tensor its views (and in-place writes, and
    the pieces of a ``split``) were taken of."""
    while isinstance(node, torch.fx.Node) and node.args and isinstance(node.args[0],
                                                                        torch.fx.Node):
        if not (_is_view(node) or _is_piece(node) or _writes_first(node)):
            break
        node = node.args[0]
    return node


def _writes_first(node: torch.fx.Node) -> bool:
    t = node.target
    return isinstance(t, torch._ops.OpOverload) and t._schema.is_mutable and \
        functional_of(t) is not None


def reads_written(write: torch.fx.Node, memory: torch.fx.Node) -> bool:
    """Whether a tensor operand of `write` other than the written one is `memory`."""
    return any(memory_of(a) is memory for a in _flat_nodes((write.args[1:], write.kwargs)))


def _flat_nodes(args: Any) -> list:
    out: list = []
    torch.fx.node.map_arg(args, out.append)
    return out


def _read_later(old: torch.fx.Node, new: torch.fx.Node, order: dict, at: int) -> None:
    """Every read of `old` after position `at` reads `new` instead."""
    for user in list(old.users):
        if user is not new and order[user] > at:
            user.replace_input_with(old, new)


def _view_chain(node: torch.fx.Node) -> list | None:
    """The views `node` was taken through, innermost first ([] for a tensor that is no
    view); None where one of them has no scatter operator."""
    chain = []
    while isinstance(node, torch.fx.Node) and (_is_view(node) or _is_piece(node)):
        if node.target not in _SCATTER:
            return None
        chain.append(node)
        node = node.args[0]
    return chain


_aten = torch.ops.aten
# view -> its scatter: scatter(base, src, *the view's arguments after its tensor)
_SCATTER = {_aten.select.int: _aten.select_scatter.default,
            _aten.slice.Tensor: _aten.slice_scatter.default,
            _aten.diagonal.default: _aten.diagonal_scatter.default,
            _aten.as_strided.default: _aten.as_strided_scatter.default}


def functional_of(op: torch._ops.OpOverload) -> Any:
    """``aten.add_.Tensor`` -> ``aten.add.Tensor``: the functional overload of an in-place
    aten operator that writes its first argument only; else None."""
    args = op._schema.arguments
    if not args or args[0].alias_info is None or not args[0].alias_info.is_write or any(
            a.alias_info is not None and a.alias_info.is_write for a in args[1:]):
        return None
    name = op._opname
    if not name.endswith("_") or name.startswith("_"):
        return None
    packet = getattr(torch.ops.aten, name[:-1], None)
    functional = getattr(packet, op._overloadname, None) if packet is not None else None
    return None if functional is None or functional._schema.is_mutable else functional


def _views_of(base: torch.fx.Node, order: dict, write: torch.fx.Node) -> list:
    """The views of `base` (and views of those) taken before `write`."""
    out, todo = [], [base]
    while todo:
        for u in todo.pop().users:
            if (_is_view(u) or _is_piece(u)) and order[u] < order[write] and u not in out:
                out.append(u)
                todo.append(u)
    return out


def _read_across(view: torch.fx.Node, order: dict, at: int) -> bool:
    return any(order[u] > at for u in view.users)


MAP_IMPL = torch.ops.higher_order.map_impl


def without_empty_regions(root: torch.fx.GraphModule) -> torch.fx.Graph:
    """`root`'s graph without the ``wrap_with_set_grad_enabled`` calls of regions left
    empty (a ``no_grad`` block whose work was all size arithmetic, computed outside it):
    they run nothing, and torch's serializer drops their empty value, so ``torch.export.load``
    refused the file ("missing val field")."""
    graph = root.graph
    for node in graph.find_nodes(op="call_function", target=_GRAD_REGION):
        sub = node.args[1] if len(node.args) > 1 else None
        body = getattr(root, sub.target, None) if isinstance(sub, torch.fx.Node) else None
        if node.users or not isinstance(body, torch.fx.GraphModule) or any(
                n.op not in ("placeholder", "output") for n in body.graph.nodes):
            continue
        graph.erase_node(node)
        if not sub.users:
            graph.erase_node(sub)
            delattr(root, sub.target)
    return graph


_GRAD_REGION = getattr(torch.ops.higher_order, "wrap_with_set_grad_enabled", None)


def sizes_from_data(body: Any) -> bool:
    """Whether a converted subgraph (or one nested in it) makes a size from data: a node
    torch gave data-dependent symbols (``nonzero``, ``.item()``)."""
    return isinstance(body, torch.fx.GraphModule) and any(
        "unbacked_bindings" in n.meta for m in body.modules()
        if isinstance(m, torch.fx.GraphModule) for n in m.graph.nodes)


def map_under_grad(where: str) -> str:
    """The warning ``ep.to_torch()`` gives for a map whose body makes a size from data
    (the converted program then runs only without grad: torch's limit, not the program's)."""
    return (f"ep.to_torch(): the map{where} makes a size from data in its body. torch's map, "
            f"called with grad enabled and an input that requires grad (the weights), first "
            f"traces its body for autograd and stops on such a size (`SymIntArrayRef expected "
            f"to contain only concrete integers`): run the converted program under "
            f"torch.no_grad() or torch.inference_mode(). ep.module() runs it with grad, as "
            f"eager (docs/deploying.md#batched-detectors)")


def merged_from_ours(where: str) -> str:
    """The warning ``ep.to_torch()`` gives for a cond whose value it made from safetrace's
    shapes (torch's cond could not merge its sides: `hop_value`)."""
    return (f"ep.to_torch(): torch's cond cannot run the branches of the cond{where} at each "
            f"other's sizes and merge their outputs (a size that is, or may be, 0 on one "
            f"side): its value in the converted program is made from safetrace's shapes, "
            f"which hold for every input the program accepts. The converted program runs "
            f"(.module(), torch.export.save); tools that trace it again "
            f"(run_decompositions, AOTInductor, st.to_onnx, ExecuTorch) run torch's cond "
            f"and stop there: declare the split Dim's range to one side of the split, or "
            f"deploy with st.save / st.load (docs/deploying.md#conds-torch-cannot-merge)")
