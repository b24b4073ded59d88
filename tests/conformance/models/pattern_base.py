"""The ``@case`` registry of the API-pattern tables and their input factories."""

from __future__ import annotations

import torch

from safetrace import Dim
from tests.conformance.checker import Case

CASES: list[tuple[str, Case]] = []
_CALLS = [0]   # inputs are seeded by their shape and their order within one make() call


def case(name, make, ex, others, dyn=None, model=None, below=None, rtol=1e-4, atol=1e-4, bad=None,
         grad=False):
    """Register a case: ``make(**sizes) -> (args, kwargs)``; ``model`` defaults to the decorated
    function; ``below`` overrides example sizes with an out-of-range one; ``bad(args, kwargs)``
    lists more (label, args, kwargs) inputs every export must refuse; ``grad``: run with grad
    enabled (the case reads the grad mode, which export specializes). Each case is exported
    without a spec too."""
    def seeded(**sizes):
        _CALLS[0] = 0
        return make(**sizes)

    def reg(fn):
        CASES.append((name, Case(model if model is not None else fn, seeded, ex, dyn,
                                 others=list(others),
                                 outside=[{**ex, **below}] if below else [],
                                 tol=max(rtol, atol), static=True, bad=bad, grad=grad)))
        return fn
    return reg


def _gen(*key):
    _CALLS[0] += 1
    return torch.Generator().manual_seed(_CALLS[0] * 7919 + sum(key) * 31 + len(key))


def R(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=_gen(*shape)).to(dtype)


def I(hi, *shape, dtype=torch.long):  # noqa: E743
    return torch.randint(0, hi, shape, generator=_gen(hi, *shape), dtype=dtype)


def B(n="b", lo=1, hi=64):
    return Dim(n, min=lo, max=hi)
