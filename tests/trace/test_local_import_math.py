"""``import math`` inside the user's function (a local or cell name, not the module's
global) is routed like a module-level ``import math``: ``math.sqrt(n)`` / ``math.floor``
of a size stay symbolic, also in a nested function and under another name; a relative
``from .math import ...`` is left alone."""

from __future__ import annotations

import torch

import safetrace as st
from tests.helpers import matches_eager, rejects
from safetrace.trace.rewrite import rewrite


class _Nested(torch.nn.Module):
    def forward(self, x):
        import math
        n = x.shape[0]

        def inner():
            return torch.ones(int(math.sqrt(n)))
        return inner(), torch.ones(math.floor(n * 0.5)) + x.sum()


class _Aliased(torch.nn.Module):
    def forward(self, x):
        import math as m
        from math import sqrt
        return torch.ones(int(m.sqrt(x.shape[0]))), torch.ones(int(sqrt(x.shape[0] + 1)))


def _export(model):
    x = torch.randn(9, 2)
    return st.export(model, (x,), dynamic_shapes={"x": {0: st.Dim("n", min=0, max=100)}})


def test_function_local_import_math_keeps_the_size_symbolic() -> None:
    for model in (_Nested(), _Aliased()):
        ep = _export(model)
        # one graph for the whole range (no specialization to 9, no split)
        assert "VR[0, 100]" in str(ep.range_constraints)
        for n in (0, 1, 2, 4, 10, 17, 100):
            matches_eager(ep, model, (torch.randn(n, 2),))
        rejects(ep, (torch.randn(101, 2),))


def test_relative_import_of_a_math_module_is_not_rerouted() -> None:
    src = "def f():\n    from .math import sqrt\n    return sqrt\n"
    ns: dict = {}
    exec(compile(src, "<user>", "exec"), ns)
    code = ns["f"].__code__
    assert rewrite(code) is code
    src = "def g():\n    import math\n    return math\n"
    exec(compile(src, "<user>", "exec"), ns)
    assert "__safetrace_math__" in rewrite(ns["g"].__code__).co_names
