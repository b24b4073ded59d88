"""The ``safetrace`` logger: what an export decided about sizes, and why, as it happens.

At DEBUG level each decision is one line naming the user's sizes (``x.shape[0]``), not
only the engine's symbols:

- ``guard``: a condition the example's sizes decided (a branch, a broadcast, an op's
  precondition); every input must satisfy it, and the program checks it.
- ``specialized``: a size pinned to one value (compared with a static size, or with
  module state), so the program accepts only that value.
- ``unified``: two sizes found equal (an elementwise op, a matmul), so both must be equal.
- ``settled``: a question on data-dependent sizes answered size-obliviously (with a
  run-time assertion where the other answer would compute something else).

Turn it on with ``logging.basicConfig()`` and
``logging.getLogger("safetrace").setLevel(logging.DEBUG)``. When the level is above DEBUG
each hook costs one ``isEnabledFor`` call.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from safetrace.symbolic.expr import Expr

logger = logging.getLogger("safetrace")


_FRAME = re.compile(r'File "([^"]*)", line (\d+), in [^\n]*\n?(.*)', re.S)


def _where(origin: object) -> str:
    """A recorded origin on one line: ``model.py:12 `if x.shape[0] > 2:` ``."""
    text = str(origin or "").strip()
    m = _FRAME.match(text)
    if m is None:
        return " ".join(text.split()) or "(no source line)"
    path, line, code = m.group(1), m.group(2), " ".join(m.group(3).split())
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return f"{name}:{line}" + (f" `{code}`" if code else "")


def _names(env: Any, expr: Expr) -> str:
    """``s0 = x.shape[0], s1 = y.shape[1]`` for the symbols of ``expr`` that name inputs."""
    syms = getattr(env, "symbols", {})
    out = []
    for name in sorted(expr.free_symbols):
        info = syms.get(name)
        if info is not None and info.origin:
            out.append(f"{name} = {_where(info.origin)}")
    return "; ".join(out)


def _with_names(env: Any, expr: Expr) -> str:
    names = _names(env, expr)
    return f"{expr}" + (f" ({names})" if names else "")


def guarded(env: Any, cond: Expr, origin: object) -> None:
    """A guard was recorded: the example decided ``cond``; the program now requires it."""
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("guard %s at %s: decided by the example's sizes; every input must "
                     "satisfy it", _with_names(env, cond), _where(origin))


def replaced(env: Any, sym: Expr, value: Expr) -> None:
    """A symbol was replaced: by a constant (specialized) or by another expression."""
    if not logger.isEnabledFor(logging.DEBUG):
        return
    origin = env._origin(None) if hasattr(env, "_origin") else None
    if value.op == "const":
        logger.debug("specialized %s to %s at %s: an equality with a static size or with "
                     "module state; only that size is accepted", _with_names(env, sym),
                     value, _where(origin))
    else:
        logger.debug("unified %s with %s at %s: the program needs them equal",
                     _with_names(env, sym), _with_names(env, value), _where(origin))


def settled(env: Any, cond: Expr, kind: str, why: str, origin: object,
            asserted: bool) -> None:
    """A data-dependent question was answered without a user check."""
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("settled %s (%s) at %s: %s%s", _with_names(env, cond), kind,
                     _where(origin), why, "; asserted at run time" if asserted else "")
