"""torch.cond, while_loop, map and scan as torch's own higher-order operator nodes.

Each function argument is traced into a subgraph (``subgraph.py``) and called from one
``torch.ops.higher_order.*`` node through ``get_attr`` submodules, the structure
torch.export produces, so fx passes, ``ep.module()`` and torch.compile read it as theirs.
What the subgraphs read from outside becomes extra operands.  Output sizes the branches
agree on keep their symbolic form; sizes they do not agree on, and sizes computed inside,
become fresh data-dependent (unbacked) sizes read from the outputs at run time.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any, Callable

import torch

from safetrace import pytree
from safetrace import errors
from safetrace.errors import cond_output_kinds, cond_size_output
from safetrace.meta import TensorMeta
from safetrace.symbolic import Expr, SymInt, eq, make_int, to_expr
from safetrace.symbolic.branches import one_form
from safetrace.trace.hops.subgraph import (Traced, add_submodule, fn_location, input_metas,
                                           mark_returned_aliases,
                                           is_sym, trace_function)
from safetrace.trace.proxy import Proxy, annotation
from safetrace.trace.source import short, stack_trace, torch_fn
from safetrace.trace.recorder import Recorder

aten = torch.ops.aten
hop = torch.ops.higher_order


# -- shared ----------------------------------------------------------------------------------

def _flat_operands(operands: Any, what: str, where: str) -> tuple[list, Any]:
    leaves, spec = pytree.tree_flatten(operands)
    input_metas(leaves, what, where)  # tensors only
    return leaves, spec


def _type_name(v: Any) -> str:
    """The type as the user knows it (a traced tensor is a Tensor, not a Proxy)."""
    return "Tensor" if isinstance(v, torch.Tensor) else type(v).__name__


def _node_of(tr: Recorder, v: Any) -> Any:
    """The graph value of an operand (a proxy's node; a real tensor's placeholder)."""
    if isinstance(v, Proxy):
        return v.st_node
    return tr.lift(v)


def _lift_together(traced: list[Traced]) -> list[torch.fx.Node]:
    """One list of outside values for subgraphs that must share a signature."""
    union: dict[torch.fx.Node, None] = {}
    for t in traced:
        for n in t.foreign():
            union.setdefault(n, None)
    outer = list(union)
    for t in traced:
        t.lift(outer)
    return outer


def _get_attr(tr: Recorder, prefix: str, t: Traced) -> torch.fx.Node:
    name = add_submodule(tr.scope.graph, prefix, t)
    node = tr.scope.graph.get_attr(name)
    node.meta["stack_trace"] = ""
    return node


def _size_expr(s: Any) -> Expr:
    return to_expr(s)


def _same_size(env: Any, a: Any, b: Any) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return env is not None and env.decide(eq(_size_expr(a), _size_expr(b))) is True


def _inner(env: Any, s: Any, created: set[str]) -> bool:
    """A size computed inside a subgraph (unknown to the graph around it)."""
    return not isinstance(s, int) and bool(_size_expr(s).free_symbols & created)


def _fresh(env: Any, sizes: list, origin: str, lo: int | None = 0) -> Any:
    """A new unbacked size covering the value ranges of `sizes` (none: any value >= lo)."""
    if not sizes:
        return make_int(env.new_unbacked(lo=lo, hi=None, origin=origin), env)
    low, high = float("inf"), float("-inf")
    for s in sizes:
        r = env.bounds(_size_expr(s))
        low, high = min(low, r.lo), max(high, r.hi)
    lo_i = int(low) if low != float("-inf") else None
    hi_i = int(high) if high != float("inf") else None
    if lo_i is not None and lo_i == hi_i:  # (every branch's size is that one number:
        return lo_i                        # `torch._check(nz.shape[0] == 1)` in each)
    return make_int(env.new_unbacked(lo=lo_i, hi=hi_i, origin=origin), env)


def _emit_hop(tr: Recorder, op: Any, args: tuple, metas: list[TensorMeta], fresh: list,
              name: str) -> list[Proxy]:
    """The operator node, one getitem per output, and the sources of fresh sizes."""
    trace = stack_trace(4)
    node = tr.scope.record(op, args, {}, name, trace)
    called = node.meta["torch_fn"] = torch_fn(tr.fn_calls, op)  # (("cond_1", "CondOp.cond"))
    stack = tr.nn_stack  # (the module that called cond/while_loop/map/scan)
    if stack:
        node.meta["nn_module_stack"] = stack
    outs, items = [], []
    for i, meta in enumerate(metas):
        g = tr.scope.graph.call_function(operator.getitem, (node, i))
        g.meta["stack_trace"] = trace
        g.meta["torch_fn"] = called
        if stack:
            g.meta["nn_module_stack"] = stack
        p = Proxy(meta, g) if isinstance(meta, TensorMeta) else meta  # a carried int
        g.meta["val"] = p
        outs.append(p)
        items.append(g)
    node.meta["val"] = tuple(outs)
    for i, d, size in fresh:  # read at run time from the output it describes
        if isinstance(size, int):  # (a number every branch gives: no size to read)
            continue
        tr.sym_sources[str(_size_expr(size).name)] = items[i] if d is None else (items[i], d, 1, 0)
        tr.env.symbols[_size_expr(size).name].origin = (
            f"a size where the branches/iterations differ, at {short(trace)}")
    return outs


# -- cond --------------------------------------------------------------------------------

def cond(tr: Recorder, pred: Any, true_fn: Callable, false_fn: Callable, operands: Any = (),
         numbers: bool = False) -> Any:
    """``torch.cond`` while tracing: one branch when the predicate is known, else both.
    `numbers`: the operator itself, which takes numbers among the operands (torch.cond
    refuses them, as eager does)."""
    where = short(stack_trace(3))
    if not callable(true_fn) or not callable(false_fn):
        raise errors.cond_not_callable(where, f"{type(true_fn).__name__}, "
                                              f"{type(false_fn).__name__}")
    if not isinstance(operands, (tuple, list)):
        raise errors.operands_not_sequence("torch.cond", where, "operands",
                                           _type_name(operands),
                                           "torch.cond(pred, true_fn, false_fn, (x,))")
    known = _known_pred(tr, pred, where)
    if isinstance(pred, (bool, int, float)):  # (as torch.export warns: one branch kept)
        warnings.warn(f"Pred is a Python constant ({pred!r}) in torch.cond at {where}: the "
                      f"program keeps the {'true' if known else 'false'} branch only. For "
                      f"both branches, pass a boolean tensor or a size comparison.",
                      UserWarning, stacklevel=4)
    if known is not None:  # decided at export: the taken branch is traced inline
        return (true_fn if known else false_fn)(*operands)
    if numbers:
        true_fn, false_fn, operands = _numbers_closed_over(true_fn, false_fn, operands)
    leaves, spec = _flat_operands(operands, "torch.cond", where)
    metas = [v for v in leaves]
    branches = []
    for fn, what in ((true_fn, "the true branch"), (false_fn, "the false branch")):
        branches.append(trace_function(tr, fn, metas, spec, fn_location(fn),
                                       f"{what} of torch.cond", ints_ok=True))
    t, f = branches
    if t.out_spec != f.out_spec:
        raise errors.branch_structures(where, t.where, _describe(t.out_spec, t.out_leaves),
                                       f.where, _describe(f.out_spec, f.out_leaves))
    given = getattr(pred, "expr", None) if not isinstance(pred, torch.Tensor) else None
    out_metas, fresh = _merge(tr, [t, f], where, ("true branch", "false branch"), given)
    outer = _lift_together(branches)
    if isinstance(pred, Proxy):
        pred_node = pred.st_node
    elif isinstance(pred, torch.Tensor):  # a buffer or constant: an input of the program
        pred_node = tr.lift(pred)
    else:
        pred_node = tr.sym_node(pred)
    t_attr = _get_attr(tr, "true_graph", t)
    f_attr = _get_attr(tr, "false_graph", f)
    ops = tuple(_node_of(tr, v) for v in leaves) + tuple(outer)
    outs = _emit_hop(tr, hop.cond, (pred_node, t_attr, f_attr, ops), out_metas, fresh, "cond")
    mark_returned_aliases(branches, outs, ops)
    for o, *sides in zip(outs, t.out_leaves, f.out_leaves):  # (eager's cond returns what
        layouts = {getattr(v, "st_contig", True) for v in sides}  # the branch returned,
        if isinstance(o, Proxy) and layouts != {True}:  # a view of an operand's strides too)
            o.st_contig = None if None in layouts else layouts.pop()
    return pytree.tree_unflatten(outs, t.out_spec)


_NUMBERS = (int, float, torch.SymInt, torch.SymFloat, torch.SymBool)  # (bool is an int)


def _numbers_closed_over(true_fn: Callable, false_fn: Callable, operands: Any) -> tuple:
    """Number operands of the cond operator (a converted program passes a size its
    branches read as one) read by the branches from their closure instead, as a value of
    this trace; the tensors stay the operands."""
    leaves, spec = pytree.tree_flatten(operands)
    if not any(isinstance(v, _NUMBERS) and not isinstance(v, torch.Tensor) for v in leaves):
        return true_fn, false_fn, operands
    tensors = [i for i, v in enumerate(leaves) if not isinstance(v, _NUMBERS)]

    def closed(fn: Callable) -> Callable:
        def branch(*given: Any) -> Any:
            values = list(leaves)
            for i, v in zip(tensors, given):
                values[i] = v
            return fn(*pytree.tree_unflatten(values, spec))
        branch.__wrapped__ = fn  # type: ignore[attr-defined]  # (its location: fn_location)
        return branch

    return closed(true_fn), closed(false_fn), tuple(leaves[i] for i in tensors)


def _known_pred(tr: Recorder, pred: Any, where: str) -> bool | None:
    """The predicate's value when export knows it, else None (both branches traced)."""
    if isinstance(pred, (bool, int, float)):
        return bool(pred)
    if isinstance(pred, Proxy):
        m = pred.st_meta
        if m.dtype is not torch.bool or not _one_element(tr, m):
            raise errors.cond_predicate(where, annotation(m), tensor=True)
        return None
    if isinstance(pred, torch.Tensor):  # a real tensor: state is read at run time
        if id(pred) in tr.state:
            return None
        return bool(pred.item())
    expr = getattr(pred, "expr", None)
    if expr is not None and getattr(expr, "is_bool", False):
        return tr.env.decide(expr)
    raise errors.cond_predicate(where, type(pred).__name__, tensor=False)


def _one_element(tr: Recorder, m: TensorMeta) -> bool:
    n = m.numel()
    return n == 1 if isinstance(n, int) else tr.env.decide(eq(to_expr(n), 1)) is True


def _describe(spec: Any, leaves: list) -> str:
    try:
        shown = pytree.tree_unflatten([annotation(v.st_meta) if isinstance(v, Proxy) else v
                                       for v in leaves], spec)
    except Exception:  # noqa: BLE001 - a description must never fail
        shown = leaves
    return str(shown).replace("'", "")


def _merge(tr: Recorder, traced: list[Traced], where: str, names: tuple,
           given: Expr | None = None) -> tuple[list, list]:
    """The outputs' metadata both subgraphs agree on; differing sizes become unbacked,
    except one that a cond's size predicate (``given``) makes one form in both branches."""
    env = tr.env
    metas: list = []
    fresh: list = []
    created = set().union(*(t.new_symbols for t in traced))
    backed = set() if given is None else {n for n, s in env.symbols.items() if s.backed}
    for i, group in enumerate(zip(*(t.out_leaves for t in traced))):
        if not all(isinstance(p, Proxy) for p in group):
            metas.append(_merge_int(env, i, group, created, fresh, where, traced, names))
            continue
        ms = [p.st_meta for p in group]
        first = ms[0]
        for k, m in enumerate(ms[1:], start=1):
            why = None
            if m.dtype != first.dtype:
                why = "dtype"
            elif m.ndim != first.ndim:
                why = "number of dims"
            elif m.device != first.device:
                why = "device"
            if why is not None:
                raise errors.branch_output(
                    where, i, why, (names[0], traced[0].where, annotation(first)),
                    (names[k], traced[k].where, annotation(m)))
        shape = []
        for d in range(first.ndim):
            sizes = [m.shape[d] for m in ms]
            inner = any(_inner(env, s, created) for s in sizes)
            if all(_same_size(env, sizes[0], s) for s in sizes[1:]) and not inner:
                shape.append(sizes[0])
            elif given is not None and not inner and \
                    (one := _one_form(env, given, *sizes, backed)) is not None:
                shape.append(one)
            else:
                u = _fresh(env, sizes, "torch.cond output")
                fresh.append((i, d, u))
                shape.append(u)
        metas.append(TensorMeta(tuple(shape), first.dtype, first.device))
    return metas, fresh


def _one_form(env: Any, given: Expr, p: Any, q: Any, known: set[str]) -> Any:
    """The size a cond returns as ``p`` where ``given`` holds and ``q`` elsewhere, where
    one form is that size wherever it runs (``1`` where ``s0 >= 2`` and ``min(s0, 1)``
    elsewhere: ``min(s0, 1)``), else None; ``known``: the input sizes' symbols.  By the rule
    st.load's ``branch_facts.merged`` asks too (``symbolic.branches.one_form``), so that
    both write one form."""
    one = one_form(env, given, p, q, known)
    return None if one is None else make_int(one, env)


def _merge_int(env: Any, i: int, group: tuple, created: set[str], fresh: list, where: str,
               traced: list[Traced], names: tuple) -> Any:
    """A constant int output of the branches (what torch.cond takes): the value both
    give, else an unbacked int covering both, read from the cond's output at run time.
    A size is refused: eager's torch.cond refuses it once sizes are dynamic."""
    if not all(type(v) is int or isinstance(v, SymInt) for v in group):
        raise cond_output_kinds(where, i, [
            (n, t.where, annotation(v.st_meta) if isinstance(v, Proxy) else
             f"{type(v).__name__} {v}") for n, t, v in zip(names, traced, group)])
    sizes = [(n, t.where, str(v)) for n, t, v in zip(names, traced, group) if is_sym(v)]
    if sizes:
        raise cond_size_output(where, i, sizes)
    if all(v == group[0] for v in group[1:]):
        return group[0]
    u = _fresh(env, list(group), "torch.cond int output", lo=None)
    fresh.append((i, None, u))
    return u


# -- while_loop -------------------------------------------------------------------------

def while_loop(tr: Recorder, cond_fn: Callable, body_fn: Callable, carried: Any) -> Any:
    """``while_loop(cond_fn, body_fn, carried)``: carried sizes fixed, or unbacked where
    an iteration changes them; carried ints are data-dependent inside and after."""
    where = short(stack_trace(3))
    if not isinstance(carried, (tuple, list)):
        raise errors.operands_not_sequence("while_loop", where, "carried_inputs (tensors "
                                           "and ints)", _type_name(carried),
                                           "while_loop(cond_fn, body_fn, (x, i))")
    leaves, spec = pytree.tree_flatten(carried)
    ints = [isinstance(v, int) or is_sym(v) for v in leaves]
    env = tr.env
    metas: list = []
    for v, is_int in zip(leaves, ints):  # a carried int is unknown inside the loop
        metas.append(_fresh(env, [], "a while_loop carried int", lo=None) if is_int else
                     input_metas([v], "while_loop", where)[0])
    loop_syms: set[str] = {str(_size_expr(m).name) for m in metas if is_sym(m)}
    for _ in range(3):
        c = trace_function(tr, cond_fn, metas, spec, fn_location(cond_fn),
                           "the cond_fn of while_loop", single=True, ints_ok=True)
        _check_pred_out(tr, c, where)
        b = trace_function(tr, body_fn, metas, spec, fn_location(body_fn),
                           "the body_fn of while_loop", ints_ok=True)
        # (eager pairs body_fn's outputs with the carried values leaf by leaf, and returns
        # body_fn's structure: a list carried, a tuple returned is a tuple)
        if b.out_spec.num_leaves != spec.num_leaves:
            raise errors.body_structure(where, b.where, _describe(b.out_spec, b.out_leaves),
                                        _describe(spec, leaves))
        changed = False
        new_metas: list = []
        for i, (m, o) in enumerate(zip(metas, b.out_leaves)):
            if ints[i]:
                if not (isinstance(o, int) or is_sym(o)) or getattr(o, "st_meta", None):
                    got = annotation(o.st_meta) if isinstance(o, Proxy) else repr(o)
                    raise errors.carried_int(where, b.where, got, i)
                new_metas.append(m)
                continue
            contig = o.st_contig
            o = o.st_meta
            if o.dtype != m.dtype or o.ndim != m.ndim or o.device != m.device:
                raise errors.carried_change(where, b.where, i, annotation(m), annotation(o))
            v = leaves[i]  # eager compares strides: known contiguous both, inputs checked so
            if (isinstance(v, Proxy) and v.st_contig is None) or contig is None:
                raise errors.carried_layout(where, b.where, i)
            if tr.layout_queried is None:
                tr.layout_queried = stack_trace(3)
            shape = list(m.shape)
            for d in range(m.ndim):
                if not isinstance(m.shape[d], int) and \
                        _size_expr(m.shape[d]).free_symbols <= loop_syms:
                    continue  # already any size
                if not _same_size(env, m.shape[d], o.shape[d]) or \
                        _inner(env, o.shape[d], b.new_symbols):
                    shape[d] = _fresh(env, [], "a while_loop carried size")
                    loop_syms.add(str(_size_expr(shape[d]).name))
                    changed = True
            new_metas.append(TensorMeta(tuple(shape), m.dtype, m.device))
        if not changed:
            break
        metas = new_metas  # traced again with the changing sizes unknown
    else:
        raise errors.carried_unsettled(where, 3)
    outer = _lift_together([c, b])
    c_attr = _get_attr(tr, "while_loop_cond_graph", c)
    b_attr = _get_attr(tr, "while_loop_body_graph", b)
    ops = tuple(tr.sym_node(v) if i else _node_of(tr, v) for v, i in zip(leaves, ints))
    out_metas: list = []
    fresh: list = []
    for i, (v, m) in enumerate(zip(leaves, metas)):
        if ints[i]:
            u = _fresh(env, [], "while_loop output", lo=None)
            out_metas.append(u)
            fresh.append((i, None, u))
            continue
        start = v.st_meta if isinstance(v, Proxy) else TensorMeta(tuple(v.shape), v.dtype,
                                                                 v.device)
        shape = list(start.shape)
        for d in range(m.ndim):
            if not isinstance(m.shape[d], int) and not _same_size(env, m.shape[d],
                                                                   start.shape[d]):
                shape[d] = _fresh(env, [], "while_loop output")
                fresh.append((i, d, shape[d]))
        out_metas.append(TensorMeta(tuple(shape), m.dtype, m.device))
    outs = _emit_hop(tr, hop.while_loop, (c_attr, b_attr, ops, tuple(outer)), out_metas,
                     fresh, "while_loop")
    return pytree.tree_unflatten(outs, b.out_spec)


def _check_pred_out(tr: Recorder, c: Traced, where: str) -> None:
    out: Any = c.out_leaves[0] if len(c.out_leaves) == 1 else None
    if is_sym(out) and getattr(out.expr, "is_bool", False):
        return  # a condition on carried ints
    if not isinstance(out, Proxy) or out.st_meta.dtype is not torch.bool or \
            not _one_element(tr, out.st_meta):
        got = _describe(c.out_spec, c.out_leaves)
        raise errors.loop_condition(where, c.where, got)


# -- map ------------------------------------------------------------------------------------

def map_(tr: Recorder, f: Callable, xs: Any, *args: Any) -> Any:
    """``map(f, xs, *args)``: f on every slice of xs along dim 0, results stacked."""
    where = short(stack_trace(3))
    x_leaves, x_spec = _flat_operands(xs, "map", where)
    a_leaves, a_spec = _flat_operands(args, "map", where)
    if not x_leaves:
        raise errors.nothing_to_map(where)
    x_metas = input_metas(x_leaves, "map", where)
    n = _scan_length(x_metas, 0, "map", where)
    slices = [TensorMeta(tuple(m.shape[1:]), m.dtype, m.device) for m in x_metas]
    a_metas = input_metas(a_leaves, "map", where)
    n_x = len(slices)

    def body(*flat: Any) -> Any:
        return f(pytree.tree_unflatten(list(flat[:n_x]), x_spec),
                 *pytree.tree_unflatten(list(flat[n_x:]), a_spec))

    flat_spec = pytree.tree_flatten(tuple(range(n_x + len(a_metas))))[1]
    t = trace_function(tr, body, slices + a_metas, flat_spec, fn_location(f), "the body of map")
    out_metas = [
        _stacked(tr, t, p.st_meta, n, f"map at {where}: output {i} of f", "map")
        for i, p in enumerate(t.out_leaves)]
    outer = _lift_together([t])
    attr = _get_attr(tr, "body_graph", t)
    x_nodes = [_node_of(tr, v) for v in x_leaves]
    a_nodes = [_node_of(tr, v) for v in a_leaves] + outer
    outs = _emit_hop(tr, hop.map_impl, (attr, x_nodes, a_nodes), out_metas, [], "map_impl")
    return pytree.tree_unflatten(outs, t.out_spec)


def _stacked(tr: Recorder, t: Any, m: TensorMeta, n: Any, what: str, op: str) -> TensorMeta:
    """The metadata of `n` results of body `t` with metadata `m` stacked on a new dim 0
    (map's outputs, scan's ys); refused when a size of `m` is computed from data in the
    body, as the results could then differ in size."""
    if any(_inner(tr.env, s, t.new_symbols) for s in m.shape):
        raise errors.stacked_size_from_data(op, what, t.where, annotation(m))
    return TensorMeta((n, *m.shape), m.dtype, m.device)


def _scan_length(metas: list[TensorMeta], dim: int, what: str, where: str) -> Any:
    """The common length of the xs tensors (`metas`) along `dim`, at least 1 (as torch's
    eager op needs)."""
    for m in metas:
        if m.ndim <= dim:
            raise errors.xs_rank(what, where, dim, annotation(m))
    n = metas[0].shape[dim]
    for m in metas[1:]:
        if not bool(m.shape[dim] == n):  # a guard when symbolic
            raise errors.xs_lengths(what, where, dim, annotation(metas[0]), annotation(m))
    if not bool(n >= 1):
        raise errors.xs_empty(what, where, dim)
    return n


# -- scan -----------------------------------------------------------------------------------

def scan(tr: Recorder, combine_fn: Callable, init: Any, xs: Any, dim: int = 0,
         reverse: bool = False, additional_inputs: Any = None) -> Any:
    """``scan(combine_fn, init, xs, dim, reverse)`` -> (final carry, stacked outputs)."""
    where = short(stack_trace(3))
    i_leaves, i_spec = _flat_operands(init, "scan", where)
    x_leaves, x_spec = _flat_operands(xs, "scan", where)
    if not x_leaves:
        return init, []
    if not i_leaves:
        raise errors.scan_without_init(where)
    ndim = input_metas(x_leaves, "scan", where)[0].ndim
    d = dim + ndim if dim < 0 else dim
    if d != 0:
        x_leaves = [tr.emit(aten.movedim.int, (x, d, 0), {}) for x in x_leaves]
    if reverse:
        x_leaves = [tr.emit(aten.flip.default, (x, [0]), {}) for x in x_leaves]
    x_metas = input_metas(x_leaves, "scan", where)
    n = _scan_length(x_metas, 0, "scan", where)
    i_metas = input_metas(i_leaves, "scan", where)
    s_metas = [TensorMeta(tuple(m.shape[1:]), m.dtype, m.device) for m in x_metas]
    n_i, n_x = len(i_metas), len(s_metas)
    extra = list(additional_inputs or ())
    e_metas = input_metas(extra, "scan", where)
    out_spec: list = [None]

    def body(*flat: Any) -> Any:
        carry = pytree.tree_unflatten(list(flat[:n_i]), i_spec)
        x = pytree.tree_unflatten(list(flat[n_i:n_i + n_x]), x_spec)
        result = combine_fn(carry, x)
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise errors.scan_combine_return(where, fn_location(combine_fn))
        c_leaves, c_spec = pytree.tree_flatten(result[0])
        y_leaves, y_spec = pytree.tree_flatten(result[1])
        if c_spec != i_spec:
            raise errors.scan_carry_structure(where, fn_location(combine_fn))
        out_spec[0] = y_spec
        return [*c_leaves, *y_leaves]

    flat_spec = pytree.tree_flatten(tuple(range(n_i + n_x + len(e_metas))))[1]
    t = trace_function(tr, body, i_metas + s_metas + e_metas, flat_spec,
                       fn_location(combine_fn), "the combine_fn of scan")
    out_metas = []
    for i, p in enumerate(t.out_leaves):
        m = p.st_meta
        if i < n_i:
            c = i_metas[i]
            if m.dtype != c.dtype or m.ndim != c.ndim or not all(
                    _same_size(tr.env, a, b) for a, b in zip(m.shape, c.shape)):
                raise errors.scan_carry_change(where, t.where, i, annotation(c), annotation(m))
            out_metas.append(c)
        else:
            out_metas.append(_stacked(
                tr, t, m, n, f"scan at {where}: output y {i - n_i} of combine_fn", "scan"))
    outer = _lift_together([t])
    attr = _get_attr(tr, "scan_combine_graph", t)
    i_nodes = [_node_of(tr, v) for v in i_leaves]
    x_nodes = [_node_of(tr, v) for v in x_leaves]
    e_nodes = tuple(_node_of(tr, v) for v in extra) + tuple(outer)
    outs = _emit_hop(tr, hop.scan, (attr, i_nodes, x_nodes, e_nodes), out_metas, [], "scan")
    carry = pytree.tree_unflatten(outs[:n_i], i_spec)
    ys = list(outs[n_i:])
    if reverse:
        ys = [tr.emit(aten.flip.default, (y, [0]), {}) for y in ys]
    if d != 0:
        ys = [tr.emit(aten.movedim.int, (y, 0, d), {}) if d < y.st_meta.ndim else y
              for y in ys]
    return carry, pytree.tree_unflatten(ys, out_spec[0])


__all__ = ["cond", "while_loop", "map_", "scan"]
