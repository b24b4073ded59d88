"""Checks on each converted node: torch's shape of a value against ours, torch's
data-dependent symbols matched with ours, and the guards torch's propagation recorded
beyond our contract (reported, never shipped as checks)."""

from __future__ import annotations

import contextlib
import itertools
import warnings
from typing import Any, Iterator

import torch

from safetrace import symbolic as S
from safetrace.errors import ConversionError, ConversionWarning
from safetrace.errors import interop as EI
from safetrace.interop.contract import from_sympy
from safetrace.interop.lazy import symbolic_shapes
from safetrace.interop.zero_folds import note_fold
from safetrace.interop.unbacked import follow, known_unbacked
from safetrace.symbolic import to_expr


def bind_unbacked(conv: Any, node: torch.fx.Node, val: Any, bindings: dict) -> None:
    """Each data-dependent symbol torch's kernel created is ours at the same place in
    our node's value (``.item()``'s result, ``nonzero``'s row count): torch numbers
    them its own way, and a later size compares by meaning only once they are
    matched."""
    names = conv.emitter.symbol_names
    for sym, path in bindings.items():
        if sym in names:
            continue
        mine = follow(node.meta.get("val"), path)
        if mine is None or isinstance(mine, bool):
            continue
        mine = to_expr(mine.expr if hasattr(mine, "expr") else mine)
        names[sym] = mine
        theirs = follow(val, path)
        if mine.op == "sym" and isinstance(theirs, torch.SymInt):
            conv.emitter.values.setdefault(mine.name, theirs)


@contextlib.contextmanager
def branch_symbols(conv: Any, graph: torch.fx.Graph) -> Iterator[None]:
    """Converting a subgraph: the sizes read from data outside it that its placeholders do
    not hold are not its (a data split's branch reads ``x[mask]`` again and its trace
    names that count as the main graph's read, ``exporter/data_splits.py``; each side of
    the split then names its own read alike).  Matched with the outer torch symbol, the
    branch's run-time check (``min(u0, 2) >= 2``) became a fact of torch's ShapeEnv for
    the whole program: the main graph's read and the other branch's took its range
    (``range_constraints`` ``u0: [2, oo]``, an AOTI package refusing ``u0 = 0``, the
    other branch's ``x[mask][:2]`` as ``f32[2]``).  Here such a symbol is hidden while the
    subgraph converts, so its read makes a torch symbol of its own; on the way out, the
    symbols born inside are dropped and the outer ones restored."""
    values = conv.emitter.values
    fakes = conv.fakes  # (its memos of our sizes as torch values: the same holds there)
    memos = (values, fakes.sizes, fakes.exprs, fakes.by_ours)
    saved = [dict(m) for m in memos]
    held: set = set()
    for n in graph.nodes:
        if n.op == "placeholder":
            held |= _our_names(n.meta.get("val"))
    unbacked = symbolic_shapes().free_unbacked_symbols
    hidden: set = set()
    for name, v in saved[0].items():
        if name not in held and isinstance(v, torch.SymInt) and unbacked(v):
            hidden |= unbacked(v)
            del values[name]
    if hidden:
        for memo in memos[1:]:
            for key in [k for k, v in memo.items() if _mentions(v, hidden, unbacked)]:
                del memo[key]
    try:
        yield
    finally:
        for memo, kept in zip(memos, saved):
            memo.clear()
            memo.update(kept)


def _mentions(v: Any, hidden: set, unbacked: Any) -> bool:
    """Whether a torch value (a size, a tensor's sizes) holds one of the `hidden`
    symbols."""
    if isinstance(v, torch.Tensor):
        return any(_mentions(s, hidden, unbacked) for s in v.shape)
    return isinstance(v, torch.SymInt) and bool(unbacked(v) & hidden)


def _our_names(val: Any) -> set:
    """Our symbols in a value (a tensor's sizes, a size, in lists)."""
    if isinstance(val, (list, tuple)):
        return set().union(*(_our_names(v) for v in val))
    dims = val.shape if isinstance(val, torch.Tensor) else (val,)
    out: set = set()
    for d in dims:
        e = getattr(d, "expr", None)
        if e is not None:
            out |= {str(x) for x in to_expr(e).free_symbols}
    return out


def same_shape(conv: Any, node: torch.fx.Node, val: Any) -> None:
    """torch's shape of a tensor node must be ours (a difference would be a narrower or
    a wrong program); unbacked symbols are matched up as they appear."""
    ours = node.meta.get("val")
    if not isinstance(ours, torch.Tensor) or not isinstance(val, torch.Tensor):
        return
    if len(ours.shape) != len(val.shape):
        raise EI.rank_differs(node.name, where(node), val.dim(), len(ours.shape))
    names = conv.emitter.symbol_names
    for d, (a, b) in enumerate(zip(ours.shape, val.shape)):
        if isinstance(a, int) and isinstance(b, int):
            if a == b:
                continue
            mine = theirs = None
        else:
            mine = to_expr(a.expr if hasattr(a, "expr") else a)
            if isinstance(b, torch.SymInt) and b.node.expr not in names and \
                    mine.op == "sym" and b.node.expr.is_symbol:
                names[b.node.expr] = mine  # an unbacked size born here
                conv.emitter.values.setdefault(mine.name, b)
            elif known_unbacked(b, names) and mine.op == "sym" and \
                    mine.name not in conv.emitter.values:
                # our fresh data-dependent size is one torch already has: its kernel
                # remembers a count made from the same tensor (nonzero of a mask that
                # x[mask] counted), which ours numbers anew; the same value, so ours is
                # torch's from here on
                conv.emitter.values[mine.name] = b
                continue
            note_fold(conv, mine, b)  # (torch's size folded at a Dim's 0: zero_folds.py)
            theirs = from_sympy(b.node.expr if isinstance(b, torch.SymInt) else b, names)
            if theirs is not None and (theirs is mine or
                                       conv.emitter.implied(S.eq(mine, theirs))):
                continue
            if conv.emitter.same_in_torch(mine, b) or (
                    theirs is not None and conv.emitter.agree(mine, theirs)) or (
                    theirs is None and conv.emitter.agree_sympy(mine, b)):
                continue
        raise EI.dim_differs(node.name, where(node), d, a, b)


class Respecialize(Exception):
    """A torch kernel pinned a declared Dim: the conversion starts again, that op's values
    taken from ours (``_Converter.own``).  Caught by ``torch_export.convert`` only."""


def kernel_pinned(conv: Any, node: torch.fx.Node, target: Any, mark: int) -> None:
    """After torch's kernel for `node` ran and its ShapeEnv's replacements grew past
    `mark` (their count before; new ones come last): where one of our input symbols was
    replaced by a constant or another size our contract does not imply.

    Such a replacement cannot be undone, and every later value and comparison in that
    ShapeEnv sees the pinned size (max_pool1d's composite kernel reads sizes as ints: with
    ``verify=True`` it made ``Dim('l')`` the example's 7, the converted program's
    ``range_constraints`` lost it and its decomposition computed ``x + 7`` at every size).
    The conversion is made again with `target`'s values built from our shapes, proven for
    the whole input space, as for ``plan.SPECIALIZING``'s ops (a warning says so when
    verifying: those nodes are not checked against torch's kernel); an op that pins again
    from ours, or one that is no ATen overload, is refused."""
    pinned = pinned_dims(conv, itertools.islice(conv.shape_env.replacements.items(), mark,
                                                None))
    if not pinned:
        return
    op = str(target)
    if not isinstance(target, torch._ops.OpOverload) or target in conv.own:
        raise EI.kernel_pinned(node.name, op, where(node), pinned)
    conv.own.add(target)
    if conv.verify:
        warnings.warn(f"ep.to_torch(verify=True): torch's fake kernel for {op}{where(node)} "
                      f"specializes {pinned}; the values of its nodes are safetrace's, not "
                      f"checked against torch's kernel (the converted program keeps the "
                      f"dynamic dim)", ConversionWarning, stacklevel=2)
    raise Respecialize(op)


def pinned_dims(conv: Any, replacements: Any) -> str:
    """Of (torch symbol, its replacement) pairs, those of our input symbols our contract
    does not imply, as the user reads them ('' where none)."""
    import sympy

    out = []
    for sym_, target in replacements:
        if sym_ not in conv.ours:
            continue
        cond = from_sympy(sympy.Eq(sym_, target), conv.emitter.symbol_names)
        if cond is None:
            out.append(f"`{sym_} == {target}`")
        elif not conv.emitter.implied(cond):
            out.append(user_text(conv, cond))
    return "; ".join(out)


def dims_kept(conv: Any) -> None:
    """The end of a conversion: no dynamic Dim of ours was made a constant (or another
    size) in torch's ShapeEnv, which would leave it out of ``range_constraints`` and make
    the converted program a static one; refused rather than returned."""
    pinned = pinned_dims(conv, conv.shape_env.replacements.items())
    if pinned:
        raise EI.dims_lost(pinned)


def check_narrowing(conv: Any) -> None:
    """Guards torch's propagation recorded beyond our contract.

    Each such guard is a decision inside one op's fake kernel (a memory format, a fast
    path; or a control-flow operator's, which decides on its subgraphs' shapes); the op's
    output shape was compared with ours on the whole input space, and the converted
    program's checks come from our contract only (range constraints included), so nothing
    here narrows what it accepts.  A compiler trusting torch's ShapeEnv could still specialize on them:
    they are reported (a warning, ``strict=True`` refuses) rather than shipped
    silently."""
    extra = []
    for guard in conv.shape_env.guards[conv.contract_guards:]:
        ours = from_sympy(guard.expr, conv.emitter.symbol_names)
        if ours is not None and conv.emitter.implied(ours):
            continue
        extra.append(user_text(conv, ours) if ours is not None else f"`{guard.expr}`")
    conv.torch_guards = list(dict.fromkeys(extra))
    if not extra:
        return
    text = "; ".join(conv.torch_guards)
    if conv.strict:
        raise EI.torch_assumed(text)
    warnings.warn(f"ep.to_torch(): torch's shape propagation assumed {text} inside op "
                  f"kernels (not required of the inputs: the converted program's checks "
                  f"are safetrace's, and it accepts every input the safetrace program "
                  f"accepts)", ConversionWarning, stacklevel=4)


def user_text(conv: Any, cond: Any) -> str:
    """`` `x.shape[0] <= 15` (s0: Dim 'batch') ``: the condition on the input dims, with
    the user's Dim name of each symbol in it."""
    names = getattr(conv.ep, "dim_names", None) or {}
    syms = sorted(cond.free_symbols)
    dims = ", ".join(f"{s}: Dim {names[s]!r}" if s in names else s for s in syms)
    return f"`{conv.ep.contract.where_text(cond)}`" + (f" ({dims})" if dims else "")


def where(node: torch.fx.Node) -> str:
    """`` (from <the user's line>)`` for a message about `node`, or nothing."""
    trace = node.meta.get("stack_trace") or ""
    last = [line.strip() for line in str(trace).strip().splitlines() if line.strip()]
    return f" (from {last[-1]})" if last else ""


def why_failed(node: torch.fx.Node, target: Any, exc: Exception,
               root: torch.fx.Graph | None = None) -> ConversionError:
    """The refusal when torch's kernel for `node` raised `exc` (`root`: the program's
    graph, whose split lines name a cond the export made for a size split)."""
    name = getattr(target, "_schema", None)
    op = name.name if name is not None else getattr(target, "__qualname__", str(target))
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if target is torch.ops.higher_order.cond and not node.meta.get("stack_trace"):
        splits = split_headers(root)
        if splits:  # (a cond of the user's own has the user's line as its trace)
            return EI.split_cond_failed(node.name, where(node),
                                        f"{type(exc).__name__}: {first}", splits)
    if isinstance(target, torch._ops.HigherOrderOperator):
        op, kind = target.__name__, "control-flow"
    elif isinstance(target, torch._ops.OpOverload) and target.namespace not in ("aten", "prims"):
        kind = "custom"
    else:
        kind = "aten"
    return EI.kernel_failed(node.name, op, where(node), f"{type(exc).__name__}: {first}", kind)


def split_headers(root: torch.fx.Graph | None) -> str:
    """The program's size splits as ``print(ep)`` heads them (``size split on `x_shape_0
    >= 1` (from ...)``), joined; '' where the export made none."""
    lines = root.__dict__.get("st_splits", ()) if root is not None else ()
    return "; ".join(line for line in lines if line and not line.startswith(" "))
