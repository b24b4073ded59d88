"""The call checked before tracing: ``model(*args, **kwargs)`` must fit the signature of
what is exported (a CallMismatch naming the parameters and the call to paste, not an
exception from inside forward)."""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from safetrace import errors as E
from safetrace import pytree
from safetrace.exporter.spec import tree_text


def check_call(model: Any, fn: Callable, args: tuple, kwargs: dict) -> Any:
    """Refuse, before tracing, a call that does not fit the signature of what is exported;
    gives that signature (``pytree.signature(fn)``, for the caller's next steps)."""
    sig = pytree.signature(fn)
    if sig is None:
        return None
    if not kwargs:  # positional inputs only: their count decides (sig.bind is ~5 us)
        arity = _ARITY.get(id(sig))
        if arity is None or arity[0] is not sig:
            arity = _ARITY[id(sig)] = (sig, _positional_arity(sig))
        if arity[1] is not None and arity[1][0] <= len(args) <= arity[1][1]:
            return sig
    try:
        sig.bind(*args, **kwargs)
        return sig
    except TypeError as exc:
        why = str(exc)
    if hasattr(getattr(fn, "__func__", fn), "__wrapped__"):
        return sig  # a decorator may accept (and rename) more than the wrapped signature says
    params = list(sig.parameters.values())
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                       p.POSITIONAL_OR_KEYWORD)]
    var_pos = any(p.kind is p.VAR_POSITIONAL for p in params)
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    keywords = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    given = set(positional[:len(args)]) | set(kwargs)
    if not var_pos and len(args) > len(positional):
        why = (f"{len(args)} positional inputs, but it takes {len(positional)}"
               f" ({', '.join(positional) or 'none'})")
    elif twice := [k for k in kwargs if k in positional[:len(args)]]:
        why = f"{twice[0]!r} both in args (position {positional.index(twice[0])}) and in kwargs"
    elif unknown := [k for k in kwargs if k not in keywords and not var_kw]:
        why = (f"keyword input(s) {', '.join(map(repr, unknown))}, which it has no "
               f"parameter for")
    elif missing := [p.name for p in params if p.default is p.empty and p.kind not in (
            p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in given]:
        why = f"no value for its required input(s) {', '.join(map(repr, missing))}"
    owner = "model" if isinstance(model, torch.nn.Module) else getattr(fn, "__name__", "fn")
    pos = [p.name for p in params if p.default is p.empty and p.kind in (
        p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if var_pos:
        pos += [f"*{p.name}" for p in params if p.kind is p.VAR_POSITIONAL]
    kw = [p.name for p in params if p.default is p.empty and p.kind is p.KEYWORD_ONLY]
    fix = f"st.export({owner}, ({', '.join(pos)}{',' if len(pos) == 1 else ''})"
    fix += f", kwargs={{{', '.join(f'{k!r}: {k}' for k in kw)}}})" if kw else ")"
    qual = getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))
    got = f"args={tree_text(args)}" + (f", kwargs={tree_text(kwargs)}" if kwargs else "")
    raise E.call_mismatch(qual, str(sig), why, got, fix)


_ARITY: dict[int, tuple] = {}  # id(signature) -> (it, _positional_arity(it))


def _positional_arity(sig: Any) -> tuple[int, float] | None:
    """(required, most) positional inputs a call with no keywords may pass, or None when
    a keyword-only parameter is required (then no such call fits)."""
    required, most = 0, 0.0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            most += 1
            required += p.default is p.empty  # (none without a default follows one with)
        elif p.kind is p.VAR_POSITIONAL:
            most = math.inf
        elif p.kind is p.KEYWORD_ONLY and p.default is p.empty:
            return None
    return required, most
