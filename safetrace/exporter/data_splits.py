"""A size test on a size read from data whose two answers trace different graphs: one
program that asks it where the graph runs.

A Python decision on a data-dependent size that differs only at 0 or 1 (``if
y[y > 0].shape[0] == 1:``) is answered as for every size >= 2 and asserted at run time
(``rules/oblivious.py``); ``size_tests.same_either_way`` traces its other answer, and
drops the assert where both give the same graph.  Where they do not, the assert refused
the data that takes the other branch, which eager computes.  Here both traces become one
program, as a size split on a declared Dim does (``splits.py``), with the predicate read
mid-graph instead of from the input sizes:

- the top graph computes what the test reads (the ops it depends on, copied from the
  general side's graph: the data read, its size) and the test itself;
- ``torch.cond`` on it runs the general side's whole graph where it holds, the other
  side's where it does not, each taking every input (their values are recomputed inside:
  a tensor of a data-dependent size is no operand torch's cond takes, ``hoist.py``).

Sound because each side is a complete export, sound where its own checks hold, and the
branch taken is the side whose answer the test gives: the top's ops compute what that
side's graph computes before its assert (the same ops on the same inputs, no random op
among them; a write before the assert only to a tensor those ops made, no view, copied
with them in order).  Where the other answer's trace
narrowed an input size (it was traced again for the narrower range: ``u0 == 1`` of a
read from ``n`` rows needs ``n >= 1``), the top asserts the test or that range, so its
graph never runs outside the sizes it was traced for.  Anything else (several tests,
sides with other signatures or contracts, outputs of another rank) keeps the assert.
"""

from __future__ import annotations

import builtins
import dataclasses
import math
import operator
from typing import Callable

import torch

from safetrace.exporter.branches import (
    Side, Unsplittable, both_sides, cond_outputs, constant_names, env_of, input_nodes,
    output_vals,
    placeholders,
)
from safetrace.exporter.compare import is_size_fn, note
from safetrace.exporter.split_report import header, two_sides, where_of_trace
from safetrace.exporter.program import ExportedProgram
from safetrace.symbolic import make_bool, make_int
from safetrace.symbolic.canon import (and_, eq, ge, gt, le, lt, max_, min_, ne, not_, or_,
                                      substitute)
from safetrace.symbolic.expr import TRUE, Expr, sym, to_expr
from safetrace.trace.asserts import assert_sym, asserts_condition
from safetrace.trace.hops.subgraph import Subgraph, add_submodule
from safetrace.trace.proxy import Proxy
from safetrace.trace.mutation import mutates, written_placeholders

_KINDS = ("user_output", "buffer_mutation")


def join_on_data(ep: ExportedProgram, other: ExportedProgram, test: str,
                 check: torch.fx.Node, ranges: dict | None = None,
                 own: dict | None = None) -> ExportedProgram | None:
    """One program running `ep` where its size test `test` holds (its assert: `check`)
    and `other` (the test's other answer, traced) where it does not; None where the two
    cannot be joined soundly (the caller keeps `ep` with its assert).  `ranges`: {input
    size symbol: (lo, hi)} where `other` was traced for part of `ep`'s ranges only (its
    answer narrowed an input size: ``u0 == 1`` of a read from ``n`` rows needs n >= 1);
    asserted before the cond for the inputs that take `other`.  `own`: likewise where
    `ep` was traced for part of `other`'s ranges (``x[mask][:2].select(0, 1)`` needs a
    row where the test holds, none where it fails and an ``except`` takes the
    IndexError): asserted for the inputs that take `ep`, and the program's ranges are
    `other`'s there."""
    try:
        return _join(ep, other, test, check, ranges or {}, own or {})
    except Unsplittable:
        return None


def _join(ep: ExportedProgram, other: ExportedProgram, test: str,
          check: torch.fx.Node, ranges: dict, own: dict) -> ExportedProgram:
    sides = [Side({}, ep), Side({}, other)]
    for s in sides:
        if any(o.kind not in _KINDS for o in s.ep.graph_signature.output_specs):
            raise Unsplittable("a side writes an input in place")
        params = {x.name for x in s.ep.graph_signature.input_specs if x.kind == "parameter"}
        if written_placeholders(s.ep.graph) & params:
            raise Unsplittable("a side writes a parameter in place")
    reads = _reads(ep.graph, check)
    consts, const_names, inputs, outputs, mutated, branches, metas = both_sides(ep, sides)
    env = env_of(ep.graph)
    g = torch.fx.Graph()
    phs = placeholders(g, inputs, metas)
    by_name = input_nodes(sides[0], const_names[0])
    env_map = {by_name[spec.name]: ph for spec, ph in zip(inputs, phs) if spec.name in by_name}
    for n in reads:
        env_map[n] = g.node_copy(n, env_map.__getitem__)
    other_env = env_of(other.graph)
    _unsettled_reads([env_map[n] for n in reads], g, env, other_env)
    pred = env_map[check.args[0]]
    if ranges:
        _assert_ranges(g, ep, inputs, phs, pred, ranges, test)
    if own:
        _assert_ranges(g, ep, inputs, phs, pred, own, test, holds=True)
    t_attr = g.get_attr(add_submodule(g, "true_graph", Subgraph(branches[0])))
    f_attr = g.get_attr(add_submodule(g, "false_graph", Subgraph(branches[1])))
    t_attr.meta["stack_trace"] = f_attr.meta["stack_trace"] = ""
    node = g.call_function(torch.ops.higher_order.cond, (pred, t_attr, f_attr, tuple(phs)))
    node.meta["stack_trace"] = check.meta.get("stack_trace", "")
    keep = frozenset().union(*(_symbols(n.meta.get("val")) for n in reads))
    vals = _own_sizes(output_vals(sides, sides[0], {}, env, keep), ep.graph, reads, env,
                      other_env)
    cond_outputs(g, node, inputs, phs, mutated, vals)
    note(g, [header("data", test, where_of_trace(check.meta.get("stack_trace", "")),
                    ep.dim_names),
             *two_sides(test, ep, other)])
    wider = {x.name: x for x in other.contract.symbols if x.name in own}
    contract = dataclasses.replace(ep.contract, symbols=tuple(
        wider.get(x.name, x) for x in ep.contract.symbols)) if own else ep.contract
    out = ExportedProgram(g, inputs, outputs, ep.in_spec, ep.out_spec,
                          state=dict(ep._state), constants=consts, contract=contract)
    for attr in ("dim_names", "exported_training", "module_tree", "retrace"):
        setattr(out, attr, getattr(ep, attr))
    constant_names(out, sides, const_names)
    out.size_tests = out.size_checks = ()
    return out


def _own_sizes(vals: list, graph: torch.fx.Graph, reads: list, env: object,
               other_env: object = None) -> list:
    """The cond's output values with each size the top graph reads from data (`reads`'
    symbols, ``u0`` of ``x[mask]``) renamed to a new size, one per symbol (outputs of one
    size stay one).  Each branch computes that read again, the same number; but what reads
    the program (``st.load``'s evaluation, ``to_torch()``) gives each branch's read a
    symbol of its own, and sees the cond's output as a new size, as torch.cond's outputs
    are: the top's ``u0`` there is a size it cannot prove (fuzz seed 1).  Each new size
    spans both sides' ranges of the symbol (``_hull``), not the general side's alone."""
    inputs = set().union(*(_symbols(n.meta.get("val")) for n in graph.nodes
                           if n.op == "placeholder"))
    top = set().union(*(_symbols(n.meta.get("val")) for n in reads)) - inputs
    if not top:
        return vals
    new: dict = {}

    def renamed(v: object) -> object:
        e = getattr(v, "expr", None)
        if e is None or not {str(s) for s in to_expr(e).free_symbols} & top:
            return v
        for name in sorted(str(s) for s in to_expr(e).free_symbols):
            if name in top and name not in new:
                lo, hi = _hull(name, env, other_env)
                new[name] = env.new_unbacked(
                    lo=None if lo == -math.inf else int(lo),
                    hi=None if hi == math.inf else int(hi),
                    origin="a data split's output")
        return make_int(substitute(to_expr(e), lambda s: new.get(s.name)), env)

    out = []
    for v in vals:
        if isinstance(v, Proxy):
            m = v.st_meta
            shape = tuple(renamed(d) for d in m.shape)
            if any(a is not b for a, b in zip(shape, m.shape)):
                v = Proxy(type(m)(shape, m.dtype, m.device), v.st_node)
        else:
            v = renamed(v)
        out.append(v)
    return out


def _hull(name: str, env: object, other_env: object) -> tuple:
    """(lo, hi) of the size read from data `name` over both sides: the general side's
    trace knows its own answer of the test (``min(u0, 2) >= 2`` makes ``u0 >= 2``), the
    other side's the other answer; the top graph's read takes either."""
    r = env.bounds(sym(name))
    if other_env is None or name not in other_env.symbols:
        return r.lo, r.hi
    o = other_env.bounds(sym(name))
    return min(r.lo, o.lo), max(r.hi, o.hi)


def _unsettled_reads(copies: list, g: torch.fx.Graph, env: object, other_env: object) -> None:
    """The top graph's copies of the ops the test reads, with each size read from data
    whose range the general side's trace narrowed (its answer of the test: ``u0 >= 2``
    of ``min(u0, 2) >= 2``) as a new size over both sides' ranges (``_hull``).  The
    general side's metadata holds its own answer: a settled value (``u0 >= 2``, and at
    most 2 rows of ``torch.unique`` of two values: ``f32[2]``, a size query ``2``, the
    test ``True``; saved, the top graph recorded them and the loaded program refused the
    data taking the other side, the example's too, fuzz seed 3308), or a range (the
    size-oblivious ``min(u0, 2)`` recorded ``2``; the file's symbol table wrote ``u0 >=
    2``, ``to_torch()`` took the branch's check as a fact of the main graph's read, and
    the AOTI package refused ``u0 = 0``, session 33).  Sizes, size queries, Python size
    arithmetic and comparisons of them are given their values again; another op reading
    a renamed size keeps its metadata renamed where the range was narrowed only (its
    form was made before the test), and keeps the assert where a value was settled
    (``Unsplittable``).  The sides keep their own symbols: each branch's checks narrow
    its own read only."""
    inputs = set().union(*(_symbols(n.meta.get("val")) for n in g.nodes
                           if n.op == "placeholder"))
    new: dict = {}
    settled: set = set()
    for n in copies:
        for name in _symbols(n.meta.get("val")) - inputs:
            r = env.bounds(sym(name))
            if name in new:
                continue
            lo, hi = _hull(name, env, other_env)
            if lo == hi or (lo, hi) == (r.lo, r.hi):
                continue
            if r.lo == r.hi:
                settled.add(name)
            new[name] = env.new_unbacked(lo=None if lo == -math.inf else int(lo),
                                         hi=None if hi == math.inf else int(hi),
                                         origin="a size read from data, before a data split")
    if not new:
        return
    touched: set = set()

    def renamed(v: object) -> object:
        if isinstance(v, (tuple, list)):
            return type(v)(renamed(x) for x in v)
        if isinstance(v, Proxy):
            m = v.st_meta
            shape = tuple(renamed(d) for d in m.shape)
            return v if all(a is b for a, b in zip(shape, m.shape)) else \
                Proxy(type(m)(shape, m.dtype, m.device), v.st_node)
        e = getattr(v, "expr", None)
        if e is None or not {str(x) for x in to_expr(e).free_symbols} & set(new):
            return v
        return make_int(substitute(to_expr(e), lambda x: new.get(x.name)), env)

    def operands(n: torch.fx.Node) -> list:
        ops = [a.meta.get("val") if isinstance(a, torch.fx.Node) else a for a in n.args]
        ops = [getattr(v, "expr", v) for v in ops]
        if n.kwargs or not all(isinstance(v, (int, Expr)) and not isinstance(v, bool)
                               for v in ops):
            if not settled:
                raise _Kept(n.name)
            raise Unsplittable("the size test computes on something other than sizes")
        return ops

    was = {n: n.meta.get("val") for n in copies}
    try:
        for n in copies:
            val = _again(n, touched, operands, renamed, env, bool(settled))
            if val is not n.meta.get("val"):
                touched.add(n)
                n.meta["val"] = val
    except _Kept:  # (a range only, and an op not worked out again: as traced)
        for n, v in was.items():
            n.meta["val"] = v


class _Kept(Exception):
    """A copy whose value is not worked out again for a renamed size of a narrowed
    range: the copies keep the general side's metadata (a narrower range, no settled
    value; the program runs as before)."""


def _again(n: torch.fx.Node, touched: set, operands: Callable, renamed: Callable,
           env: object, settled: bool) -> object:
    """`n`'s value with the renamed sizes (`_unsettled_reads`)."""
    val = n.meta.get("val")
    if not any(a in touched for a in n.all_input_nodes):
        out = renamed(val)
    elif n.target is torch.ops.aten.sym_size.int or n.target is torch.ops.aten.sym_numel.default:
        src = n.args[0].meta["val"]
        shape = src.st_meta.shape if isinstance(src, Proxy) else None
        if shape is None:
            out = None
        elif n.target is torch.ops.aten.sym_numel.default:
            out = make_int(to_expr(math.prod(getattr(d, "expr", d) for d in shape)), env)
        else:
            out = shape[n.args[1]]
    elif n.target in _COMPARE:
        ops = operands(n)
        if len(ops) != 2:
            raise Unsplittable("the size test compares something other than sizes")
        out = make_bool(_COMPARE[n.target](*ops), env)
    elif n.target in _ARITHMETIC:
        out = make_int(to_expr(_ARITHMETIC[n.target](*operands(n))), env)
    elif n.target is operator.getitem or (isinstance(val, (Proxy, tuple, list)) and
                                          not is_size_fn(n) and not settled):
        out = renamed(val)  # (a tensor op's form, made before the test: renamed)
    elif settled:
        raise Unsplittable(f"{n.name} reads a size the general side settled")
    else:
        raise _Kept(n.name)
    if out is None:
        raise Unsplittable(f"{n.name}'s size is not a tensor's")
    return out


def _symbols(val: object) -> set:
    """The names of the symbols in a node's value (a tensor's sizes, a size)."""
    dims = val.st_meta.shape if isinstance(val, Proxy) else (val,)
    return {str(s) for d in dims if getattr(d, "expr", None) is not None
            for s in to_expr(d.expr).free_symbols}


def _assert_ranges(g: torch.fx.Graph, ep: ExportedProgram, inputs: list, phs: list,
                   pred: torch.fx.Node, ranges: dict, test: str, holds: bool = False) -> None:
    """Assert `pred` or each input size within the range the other side was traced for:
    the facts of the trace imply it where `pred` fails (a read's size is at most the
    rows it reads), and where they do not, the input is refused, not computed.  `holds`:
    the same for the side that runs where `pred` holds (``not pred`` or its ranges)."""
    env = env_of(ep.graph)
    user = {spec.leaf: ph for spec, ph in zip(inputs, phs) if spec.kind == "user_input"}
    ok_node, ok = None, TRUE
    for name, (lo, hi) in sorted(ranges.items()):
        size = _size_of(g, ep, user, name, env)
        for fn, op, bound in ((operator.ge, ge, lo), (operator.le, le, hi)):
            if bound is None:
                continue
            c = g.call_function(fn, (size, int(bound)))
            ok = and_(ok, op(sym(name), int(bound)))
            c.meta.update(val=make_bool(op(sym(name), int(bound)), env), stack_trace="")
            if ok_node is not None:
                c = g.call_function(operator.and_, (ok_node, c))
                c.meta.update(val=make_bool(ok, env), stack_trace="")
            ok_node = c
    if ok_node is None:
        return
    test_expr = _expr_of(pred)
    if holds:
        pred = g.call_function(torch.sym_not, (pred,))
        test_expr = not_(test_expr)
        pred.meta.update(val=make_bool(test_expr, env), stack_trace="")
    expr = or_(test_expr, ok)
    node = g.call_function(operator.or_, (pred, ok_node))
    node.meta.update(val=make_bool(expr, env), stack_trace="")
    message = (f"Runtime assertion failed for expression {expr}: where `{test}` (a size "
               f"read from data) {'holds' if holds else 'fails'}, the program runs the "
               f"graph traced for {'it' if holds else 'its other answer'}, which holds "
               f"where {ok} only")
    a = g.call_function(assert_sym, (node, message))
    a.meta.update(val=None, stack_trace="")


_COMPARE = {operator.ge: ge, operator.gt: gt, operator.le: le, operator.lt: lt,
            operator.eq: eq, operator.ne: ne}
# Python size arithmetic the top graph computes again on a renamed size (an int result)
_ARITHMETIC = {builtins.min: lambda *xs: min_(*xs), builtins.max: lambda *xs: max_(*xs),
               operator.add: operator.add, operator.sub: operator.sub,
               operator.mul: operator.mul, operator.floordiv: operator.floordiv,
               operator.mod: operator.mod, operator.neg: operator.neg}


def _expr_of(pred: torch.fx.Node) -> Expr:
    """The condition node `pred` computes (its value, or where its trace settled it to a
    constant under its own answer, the comparison of its operands' values)."""
    e = getattr(pred.meta.get("val"), "expr", None)
    if e is not None and e.op != "const":
        return e
    build = _COMPARE.get(pred.target)
    if build is None or len(pred.args) != 2 or pred.kwargs:
        raise Unsplittable("the size test's condition is not a comparison of sizes")
    operands = []
    for a in pred.args:
        v = a.meta.get("val") if isinstance(a, torch.fx.Node) else a
        v = getattr(v, "expr", v)
        if not isinstance(v, (int, Expr)) or isinstance(v, bool):
            raise Unsplittable("the size test compares something other than sizes")
        operands.append(v)
    return build(*operands)


def _size_of(g: torch.fx.Graph, ep: ExportedProgram, user: dict, name: str,
             env: object) -> torch.fx.Node:
    """A node reading input size symbol `name` from the dim the contract binds it to."""
    for i, inp in enumerate(ep.contract.inputs):
        for d, dim in enumerate(getattr(inp, "dims", ())):
            if dim.kind == "bind" and dim.symbol == name and i in user:
                node = g.call_function(torch.ops.aten.sym_size.int, (user[i], d))
                node.meta.update(val=make_int(sym(name), env), stack_trace="")
                return node
    raise Unsplittable(f"no input dim binds {name}")


def _reads(graph: torch.fx.Graph, check: torch.fx.Node) -> list[torch.fx.Node]:
    """The ops `check`'s condition depends on (graph order, placeholders aside), when the
    top graph may compute them again: plain operators and size arithmetic, no random op.
    An in-place write before the check is copied with them where it writes a tensor they
    read that an op of the graph made (``y = x.clone(); y.add_(1)``: a new tensor, no view
    of another, written in its first argument only); any other write refuses."""
    order = {n: i for i, n in enumerate(graph.nodes)}
    writes: dict = {}  # written tensor -> the writes, in graph order
    for n in graph.nodes:
        if n is check:
            break
        if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload) and \
                mutates(n.target):
            if not _writes_a_new_tensor(n):
                raise Unsplittable("an op writes in place before the size test")
            writes.setdefault(n.args[0], []).append(n)
    seen: set = set()
    todo = [a for a in check.args[:1] if isinstance(a, torch.fx.Node)]
    if not todo:
        raise Unsplittable("the size test's assert reads no value")
    while todo:
        n = todo.pop()
        if n in seen or n.op == "placeholder":
            continue
        if n.op != "call_function" or not (
                is_size_fn(n) or n.target is operator.getitem or
                (isinstance(n.target, torch._ops.OpOverload) and not
                 (torch.Tag.nondeterministic_seeded in n.target.tags))):
            raise Unsplittable(f"the size test reads {n.name}, which the top graph cannot "
                               f"compute again")
        seen.add(n)
        todo.extend(n.all_input_nodes)
        todo.extend(w for w in writes.get(n, ()) if order[w] < order[check])
    return sorted(seen, key=order.__getitem__)


def _writes_a_new_tensor(node: torch.fx.Node) -> bool:
    """An in-place op writing its first argument only, a tensor a non-view op made."""
    args = node.target._schema.arguments
    written = [a.alias_info is not None and a.alias_info.is_write for a in args]
    target = node.args[0] if node.args else None
    return bool(written) and written[0] and not any(written[1:]) and \
        isinstance(target, torch.fx.Node) and target.op == "call_function" and \
        isinstance(target.target, torch._ops.OpOverload) and \
        not target.target.is_view and not mutates(target.target)


def checks_of(tests: tuple[str, ...]) -> Callable[[torch.fx.Node], bool]:
    """Whether a node is the run-time check of one of `tests` (conditions as text)."""
    def check(node: torch.fx.Node) -> bool:
        return node.op == "call_function" and node.target is assert_sym and \
            len(node.args) > 1 and isinstance(node.args[1], str) and \
            any(asserts_condition(node.args[1], t) for t in tests)
    return check


def erase_with_inputs(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    """Erase `node` and the size arithmetic that only it used."""
    inputs = [a for a in node.all_input_nodes]
    graph.erase_node(node)
    for a in inputs:
        if not a.users and a.op == "call_function" and is_size_fn(a):
            erase_with_inputs(graph, a)
