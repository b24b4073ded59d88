"""The edge cases' vocabulary: a ``@case`` registry, ``expect_error`` for refusals, and
``run_export`` (the conformance checker's core on hand-made inputs).

An edge case is a function; it returns (or raises :class:`Note` with) a remark when
everything behaved as promised, and raises :class:`Finding` when a promise broke:

  wrong      an accepted input computed something other than eager
  mutation   export (or ep.module()) changed the model or the inputs
  crash      a non-safetrace exception escaped from safetrace's own code
  unclear    a safetrace error without the input path / dim / fix / source line it needs
  silent     a mistake that should be refused was accepted
"""

from __future__ import annotations

import os

import torch
import torch.nn as nn

import safetrace as st
from tests.conformance import checker
from tests.conformance.checker import Problem, first_lines, roundtrip

__all__ = ["A", "CASES", "Finding", "Fn", "Lin", "Note", "R", "ST_ERRORS", "case", "check_model",
           "compare", "describe", "expect_error", "first_lines", "from_safetrace", "roundtrip",
           "run_export", "snap_model", "_where"]

ST_ERRORS = checker.ST_ERRORS
PKG = os.path.dirname(st.__file__)
TORCH_DIR = os.path.dirname(torch.__file__)
CASES: list = []


class Finding(Exception):
    def __init__(self, kind: str, msg: str):
        super().__init__(f"{kind}: {msg}")
        self.kind = kind
        self.msg = msg


class Note(Exception):
    """Behaviour worth knowing that breaks no promise."""


def case(cat: str):
    def deco(fn):
        CASES.append((cat, fn.__name__, fn))
        return fn
    return deco


def from_safetrace(exc: BaseException) -> bool:
    """True when the innermost frame outside torch itself is in the safetrace package (an
    exception torch raised on arguments safetrace built counts as safetrace's)."""
    tb, last = exc.__traceback__, None
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename
        if not f.startswith(TORCH_DIR) and not f.startswith("<"):
            last = f
        tb = tb.tb_next
    return last is not None and last.startswith(PKG)


def describe(exc: BaseException) -> str:
    return first_lines(exc, 3)


def _where(e: BaseException) -> str:
    tb, last = e.__traceback__, None
    while tb is not None:
        last, tb = tb, tb.tb_next
    if last is None:
        return "?"
    return f"{os.path.basename(last.tb_frame.f_code.co_filename)}:{last.tb_lineno}"


def expect_error(fn, cls=None, contains=(), any_of=(), what="", allow_ok=False, user_error_ok=False):
    """Run fn expecting a safetrace error whose message holds every ``contains`` substring and
    one of each ``any_of`` group (case-insensitive); returns the message (or the value when
    ``allow_ok`` and nothing was raised)."""
    try:
        value = fn()
    except ST_ERRORS as e:
        msg = str(e)
        if cls is not None and not isinstance(e, cls):
            raise Note(f"{what}: raised {type(e).__name__} (expected {cls.__name__}): "
                       f"{first_lines(msg)}")
        low = msg.lower()
        missing = [c for c in contains if c.lower() not in low]
        missing += ["/".join(g) for g in any_of if not any(a.lower() in low for a in g)]
        if missing:
            raise Finding("unclear", f"{what}: {type(e).__name__} lacks {missing}: "
                          f"{first_lines(msg)}")
        return msg
    except (Finding, Note):
        raise
    except Exception as e:  # noqa: BLE001
        if from_safetrace(e):
            raise Finding("crash", f"{what}: internal {describe(e)} at {_where(e)}")
        if user_error_ok:
            return f"{type(e).__name__} from user/torch code: {first_lines(str(e), 1)}"
        raise Finding("unclear", f"{what}: non-safetrace {describe(e)} (raised at {_where(e)})")
    if allow_ok:
        return value
    raise Finding("silent", f"{what}: no error was raised")


def compare(a, b, path="out", mode="exact", tol=1e-5):
    """None when equal (floats within ``tol``, the rest exactly), else the first difference."""
    return checker.compare(a, b, "shapes" if mode == "shape" else "values", tol, path)


def snap_model(model):
    return checker.snap_model(model)


def check_model(model, before, where):
    try:
        checker.check_model(model, before, where)
    except Problem as p:
        raise Finding("mutation", p.msg) from None


_KINDS = {"WRONG": "wrong", "mutation": "mutation", "lax": "silent", "roundtrip": "wrong",
          "narrow": "reject"}


def run_export(model, mk, ds=None, others=(), rejects=(), mode="exact", save=True, extra=None,
               auto_ok=False):
    """Export ``model`` on ``mk() -> (args, kwargs)`` and check it like every conformance case:
    eager on the example and ``others`` (zero-arg factories), each ``rejects`` factory refused,
    model and inputs unchanged, save/load identical. A refusal at export propagates as is."""
    torch.manual_seed(1000)
    try:
        ep = checker.check_program(
            model, ds, mk(), [f() for f in others], outside=[f() for f in rejects],
            mode="shapes" if mode == "shape" else "values", tol=1e-5,
            stateful=isinstance(model, nn.Module), save=save, generic=False)
    except Problem as p:
        if p.kind in ("refused", "crash") and p.__cause__ is not None:
            raise p.__cause__ from None
        if p.kind == "narrow" and auto_ok:
            raise Note(f"Dim.AUTO dim specialized by the program (documented): {p.msg}") from None
        raise Finding(_KINDS.get(p.kind, p.kind), p.msg) from None
    if extra:
        extra(ep, ep.module())
    return ep


def A(*args, **kwargs):
    """A factory of fresh inputs from callables (each called for a fresh tensor)."""
    def mk():
        return (tuple(a() if callable(a) else a for a in args),
                {k: (v() if callable(v) else v) for k, v in kwargs.items()})
    return mk


def R(*shape, dtype=torch.float32, seed=0):
    def f():
        g = torch.Generator().manual_seed(seed + 7 * sum(shape) + len(shape))
        if dtype.is_floating_point:
            return torch.randn(*shape, generator=g).to(dtype)
        if dtype.is_complex:
            return torch.randn(*shape, generator=g, dtype=dtype)
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=g).bool()
        return torch.randint(-5, 6, shape, generator=g).to(dtype)
    return f


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *a, **k):
        return self.fn(*a, **k)


class Lin(nn.Module):
    def __init__(self, i=3, o=2):
        super().__init__()
        self.lin = nn.Linear(i, o)

    def forward(self, x):
        return self.lin(x)
