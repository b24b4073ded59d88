"""Size arithmetic a retrace would fold wrongly at a size of 0.

torch's size symbols are positive in sympy (its convention; the conversion's are too), and
torch's symbolic value of each size node in a converted graph is simplified with that
assumption, also where the Dim's range holds 0: ``max(n, 1)`` has the value ``n``.  The
converted program computes the node at run time (1 at n == 0, as eager), but a tool that
retraces it (ExecuTorch's ``to_edge``, AOTInductor, torch's ``run_decompositions``) keeps
the symbolic value instead of the node: measured, the ``.pte`` and the AOTI package of
``x.new_ones(max(n, 1))`` returned 0 elements at n == 0, eager 1.

`folded_at_zero` finds such a node: each size node of the graph is computed at sizes where
one symbol whose range holds 0 is 0 (the others at their example values) and compared with
torch's symbolic value there, where something other than size arithmetic reads it (a
tensor operator, an assert, a cond's predicate).  A value that differs is reported, but a
condition only asserted that torch's value makes false where it holds (the retrace then
refuses an input the program accepts) narrows only, and is left.

`faithful_at_zero` keeps such nodes out of ``ep.to_torch()``'s program itself: where the
first conversion has one (a wrong value or a narrowed condition), the program is converted
again with those Dims' symbols non-positive in sympy (only an integer, with our range:
``Max(1, n)`` stays, and so does ``Eq(n, 0)``), so that torch's own ``run_decompositions``,
``torch.export.save``/``load``, AOTInductor, ExecuTorch and ONNX keep eager's values at 0.
Only those symbols: a non-positive symbol's contiguous strides are ``Max(1, n)`` to torch,
and a size split's branch traced at other sizes then no longer fits ours (fuzz 3401's
``x[0:1]`` of a point side is ``Min(1, s)`` rows).  Where that second conversion fails and
the first's value was wrong, ``ep.to_torch()`` refuses (naming the Dim, the fix
``min=1``); where it only narrowed, the first conversion is returned."""

from __future__ import annotations

import operator
from typing import Any, Callable

import torch

from safetrace.errors import interop as EI
from safetrace.interop.hops import shape_env_of
from safetrace.interop.node_checks import Respecialize
from safetrace.interop.zero_folds import UNDEFINED as _UNDEFINED
from safetrace.interop.zero_folds import evaluated as _evaluated
from safetrace.interop.plan import plan_of

_aten = torch.ops.aten
_SIZE_OPS = {operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
             operator.neg, operator.eq, operator.ne, operator.lt, operator.le, operator.gt,
             operator.ge, operator.and_, operator.or_, operator.not_, torch.sym_max,
             torch.sym_min, torch.sym_not, torch.sym_ite}


def converted(ep: Any, key: tuple, converter: Callable[[frozenset], Any]) -> Any:
    """`ep` converted (``converter(names).run()``: our symbols `names` non-positive), its
    size nodes faithful at 0 (`faithful_at_zero`), and the sizes of values torch folds at
    a Dim's 0 (`zero_folds.note_fold`) kept on its graph module's meta as
    ``safetrace_zero_sized`` (our symbol -> (torch's name, those sizes, whether the first
    conversion was kept): aoti.py checks them).  Both are kept with the program's plan
    under `key` once found (a conversion of one program makes the same values in the same
    order): a later conversion is made once, with those symbols, and its size nodes are
    not walked again.  A conversion with no input symbol whose range holds 0 (every static
    program) has nothing to fold."""
    memo = plan_of(ep)[6]
    known = memo.get(key)
    if known is not None:
        names, sized = known
        tep = converter(names).run()
        if sized:
            tep.graph_module.meta["safetrace_zero_sized"] = dict(sized)
        return tep
    first = converter(frozenset())
    made = tep = first.run()
    chosen = frozenset()
    if first.zero_symbols:
        def again(names: frozenset) -> Any:
            nonlocal chosen
            other = converter(names).run()
            chosen = names
            return other
        tep = faithful_at_zero(made, first.ours_of(), again, first.zero_folds)
    sized = None
    if first.zero_sizes:  # (compilers may size such values at 1 still: aoti.py)
        theirs = {ours: name for name, ours in first.ours_of().items()}
        sized = {ours: (theirs.get(ours, ours), sizes, tep is made)
                 for ours, sizes in first.zero_sizes.items()}
        tep.graph_module.meta["safetrace_zero_sized"] = dict(sized)
    memo[key] = (chosen if tep is not made else frozenset(), sized)
    return tep


def faithful_at_zero(tep: Any, ours_of: dict[str, str],
                     again: Callable[[frozenset], Any], sized: dict | None = None) -> Any:
    """`tep` (a conversion whose torch symbol names map to ours by `ours_of`), or, where a
    size node of it folds at a Dim's 0, or a value's size does (`sized`: our symbol -> our
    size expression, from `expr_folds_at_zero`), `again` (the conversion) with those of
    our symbols non-positive (see the module docstring).  Where `again` fails for a
    value's size only, `tep` is returned (its deploy tools handle that size)."""
    graphs = [m.graph for m in tep.graph_module.modules() if isinstance(m, torch.fx.GraphModule)]
    folds = _folds(graphs, narrowing=True)
    sized = sized or {}
    if not folds and not sized:
        return tep
    names = frozenset(ours_of.get(s, s) for s in folds) | frozenset(sized)
    try:
        other = again(names)
    except Respecialize:  # (an op's kernel pinned a Dim: converted again from the start)
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of it (sympy's Mod(n, m) at a
        # divisor that may be 0 raises ZeroDivisionError): the first conversion's verdict
        labels = tep.graph_module.meta.get("safetrace_dim_labels") or {}
        wrong = [(s, node) for s, (node, narrows) in folds.items() if not narrows]
        if not wrong:
            # (torch's tools refuse inputs the program accepts: narrower only; or only a
            # value's size folds, which the deploy tools rewrite or check: slice_ends.py,
            # aoti.py; the first conversion, as before this check)
            return tep
        symbol, node = wrong[0]
        raise EI.zero_sizes_not_convertible(node.name, node_where(node),
                                            labels.get(symbol, symbol), exc) from exc
    return other


def folded_at_zero(graph: torch.fx.Graph) -> tuple[torch.fx.Node, str] | None:
    """The first size node of `graph` whose torch value differs from what it computes at a
    size of 0 in its range, with that symbol's name (see the module docstring); None where
    there is none.  A binding the graph's own asserts refuse is out of its space: left."""
    for symbol, (node, _) in _folds([graph], narrowing=False, first=True).items():
        return node, symbol
    return None


def _folds(graphs: list, narrowing: bool, first: bool = False) -> dict:
    """Symbol name -> (its first size node torch folds at its 0 in `graphs` (the root's
    first; a cond's branches and loop bodies are judged at the root's symbols), whether
    the fold only narrows a condition); with `narrowing`, those that only narrow too; with
    `first`, only the first found."""
    out: dict[str, tuple[torch.fx.Node, bool]] = {}
    for zero, binding in _zero_bindings(graphs[0]):
        found = [f for f in (_fold(g, binding, narrowing) for g in graphs) if f is not None]
        if found:  # (a wrong value before a narrowed condition)
            out[zero] = min(found, key=lambda f: f[1])
            if first:
                break
    return out


def _fold(graph: torch.fx.Graph, binding: dict, narrowing: bool) -> tuple | None:
    """The first size node of `graph` whose torch value differs from its value at
    `binding`, and whether that only narrows (with `narrowing`: where no node differs
    otherwise); None."""
    values: dict[torch.fx.Node, Any] = {}
    narrowed = None
    for node in graph.nodes:
        if node.target is _aten._assert_scalar.default and \
                values.get(node.args[0]) is False:
            break  # (the program refuses these sizes)
        value = _computed(node, values, binding)
        if value is None:
            continue
        values[node] = value
        if node.target is _aten.sym_size.int:
            continue
        theirs = _evaluated(node.meta.get("val"), binding)
        if theirs is _UNDEFINED:
            # (torch's value divides by the 0 it assumed away: ``(2*n - 1)//n`` for
            # ``chunk``'s count, an assert the retrace's guards then cannot evaluate
            # (ZeroDivisionError at n == 0, where this computes): a wrong value)
            return node, False
        if theirs is None or theirs == value:
            continue
        read = [u for u in node.users if u.target not in _SIZE_OPS]
        if not read:
            continue  # (only more size arithmetic reads it: judged where that is read)
        if isinstance(value, bool) and value and not theirs and \
                all(u.target is _aten._assert_scalar.default for u in read):
            if narrowing and narrowed is None:  # (narrowing only: the retrace refuses
                narrowed = (node, True)           # where this accepts)
            continue
        return node, False
    return narrowed


def _zero_bindings(graph: torch.fx.Graph) -> list[tuple[str, dict]]:
    """One binding per input symbol whose range holds 0: it at 0, the others at their
    example values."""
    env = shape_env_of([n.meta.get("val") for n in graph.find_nodes(op="placeholder")])
    if env is None:
        return []
    hints = dict(env.backed_var_to_val)
    out = []
    for s in hints:
        vr = env.var_to_range.get(s)
        if vr is not None and vr.lower <= 0 <= vr.upper:  # (the example at 0 too)
            out.append((str(s), {**hints, s: 0}))
    return out


def _computed(node: torch.fx.Node, values: dict, binding: dict) -> Any:
    """`node`'s value at `binding` (an int or bool) where it is a size node; else None."""
    if node.op != "call_function":
        return None
    if node.target is _aten.sym_size.int:
        x, d = node.args[0], node.args[1]
        val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
        if not isinstance(val, torch.Tensor) or not isinstance(d, int):
            return None
        return _evaluated(val.shape[d], binding)
    if node.target not in _SIZE_OPS:
        return None
    args = []
    for a in node.args:
        if isinstance(a, torch.fx.Node):
            if a not in values:
                return None
            a = values[a]
        elif not isinstance(a, (int, bool)):
            return None
        args.append(a)
    try:
        return node.target(*args)
    except (ArithmeticError, TypeError, ValueError):
        return None


def node_where(node: torch.fx.Node) -> str:
    """`` (at <file line> `<source line>`)`` of `node`'s stack trace, or ''."""
    trace = (node.meta.get("stack_trace") or "").strip().splitlines()
    return f" (at {trace[-2].strip()} `{trace[-1].strip()}`)" if len(trace) >= 2 else ""
