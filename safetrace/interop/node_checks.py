"""Checks on each converted node: torch's shape of a value against ours, torch's
data-dependent symbols matched with ours, and the guards torch's propagation recorded
beyond our contract (reported, never shipped as checks)."""

from __future__ import annotations

import warnings
from typing import Any

import torch

from safetrace import symbolic as S
from safetrace.errors import ConversionError, ConversionWarning
from safetrace.errors import interop as EI
from safetrace.interop.contract import from_sympy
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
            theirs = from_sympy(b.node.expr if isinstance(b, torch.SymInt) else b, names)
            if theirs is not None and (theirs is mine or
                                       conv.emitter.implied(S.eq(mine, theirs))):
                continue
            if conv.emitter.same_in_torch(mine, b) or (
                    theirs is not None and conv.emitter.agree(mine, theirs)) or (
                    theirs is None and conv.emitter.agree_sympy(mine, b)):
                continue
        raise EI.dim_differs(node.name, where(node), d, a, b)


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


def why_failed(node: torch.fx.Node, target: Any, exc: Exception) -> ConversionError:
    """The refusal when torch's kernel for `node` raised `exc`."""
    name = getattr(target, "_schema", None)
    op = name.name if name is not None else getattr(target, "__qualname__", str(target))
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(target, torch._ops.HigherOrderOperator):
        op, kind = target.__name__, "control-flow"
    elif isinstance(target, torch._ops.OpOverload) and target.namespace not in ("aten", "prims"):
        kind = "custom"
    else:
        kind = "aten"
    return EI.kernel_failed(node.name, op, where(node), f"{type(exc).__name__}: {first}", kind)
