"""Sizes of a converted program's values that torch's engine folds at a Dim's 0.

torch's size symbols are positive in sympy, so torch's value of one of our size
expressions can be simplified into another value at a size of 0 the Dim admits
(``x[:1]``'s rows ``min(n, 1)`` made 1).  A tensor's size has no size node for
``positivity.folded_at_zero`` to find, yet a tool that retraces the program sizes the value
by torch's (AOTInductor's package of ``cat([z, z[:1]])`` crashed at n == 0, session 38).
`note_fold` records such a size where the conversion makes torch's value of it (the fake
values, or torch's kernels compared with ours); ``positivity.faithful_at_zero`` then
converts again with that symbol non-positive, and ``st.to_aoti`` checks it (``aoti.py``).
"""

from __future__ import annotations

from typing import Any

import sympy
import torch

from safetrace.symbolic.expr import dag_nodes

# our ops torch's engine may simplify on positive symbols into another value at 0
FOLDING = frozenset(("min", "max", "mod", "eq", "ne", "lt", "le", "ge", "gt", "and", "or",
                     "not", "ite"))


def note_fold(conv: Any, ours: Any, theirs: Any) -> None:
    """Record in `conv.zero_folds` the first symbol at whose 0 torch's value `theirs` of our
    size `ours` differs from ours (`expr_folds_at_zero`; a conversion whose symbols are
    all positive in torch's engine, and `ours` with an op that may fold), and `ours` among
    that symbol's sizes in `conv.zero_sizes`."""
    if conv.from_zero or not any(e.op in FOLDING for e in dag_nodes(ours)):
        return
    zero = expr_folds_at_zero(ours, theirs, conv.emitter.values)
    if zero is not None:
        conv.zero_folds.setdefault(zero, ours)
        every = conv.zero_sizes.setdefault(zero, [])
        if ours not in every:
            every.append(ours)


def expr_folds_at_zero(ours: Any, theirs: Any, values: dict) -> str | None:
    """The first of our symbols in `ours` (an expression of ours, `theirs` torch's value of
    it made over `values`, our symbol -> torch SymInt) whose range holds 0 and at whose 0
    (the others at torch's hints) torch's value differs from ours; None where none does.
    A tensor's size torch simplified on positive symbols (``x[:1]``'s rows ``Min(1, n)``
    made 1) has no size node for `folded_at_zero` to find: a retrace then sizes the value
    by torch's (AOTInductor's package of ``cat([z, z[:1]])`` crashed at n == 0)."""
    env, syms = None, {}
    for name in sorted(ours.free_symbols):
        v = values.get(name)
        if isinstance(v, torch.SymInt):
            env, syms[name] = v.node.shape_env, v.node.expr
    hints = getattr(env, "backed_var_to_val", None) if env is not None else None
    if not hints or any(s not in hints for s in syms.values()):
        return None  # (a size from data: no hint, and torch keeps it non-negative)
    for name, s in syms.items():
        vr = env.var_to_range.get(s)
        if vr is None or not vr.lower <= 0 <= vr.upper:
            continue
        binding = {n: (0 if n == name else int(hints[t])) for n, t in syms.items()}
        try:
            want = ours.evaluate(binding)
        except (ArithmeticError, TypeError, ValueError):
            continue
        got = evaluated(theirs, {t: binding[n] for n, t in syms.items()})
        if got is not None and got != want:
            return name
    return None


UNDEFINED = object()   # (torch's value at a binding divides by 0)


def evaluated(val: Any, binding: dict) -> Any:
    """A torch SymInt / SymBool (or int / bool) at `binding`; None where not a number,
    ``UNDEFINED`` where it divides by 0 there."""
    if isinstance(val, (bool, int)):
        return val
    if not isinstance(val, (torch.SymInt, torch.SymBool)):
        return None
    try:
        out = val.node.expr.xreplace(binding)
    except ArithmeticError:
        return UNDEFINED  # (Mod(m, n) at n == 0: sympy raises)
    except (TypeError, ValueError, AttributeError):
        return None
    if isinstance(out, sympy.Basic) and out.has(sympy.zoo, sympy.nan):
        return UNDEFINED
    try:
        return bool(out) if isinstance(val, torch.SymBool) else int(out)
    except (TypeError, ValueError, AttributeError, ArithmeticError):
        return None
