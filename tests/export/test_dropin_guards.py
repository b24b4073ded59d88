"""A converted program refuses an input outside its contract as torch.export's program
does (issue 21): ``AssertionError("Guard failed: ...")`` from the module's guard function,
before the graph runs, for derived dims, relations our engine found and residual
conditions too (torch's own guards see only its placeholders); with
``prefer_deferred_runtime_asserts_over_guards=True`` a condition stays a run-time assert
(a RuntimeError), as in torch.  Each case against torch.export."""

from __future__ import annotations

import pytest
import torch
from torch.export import Dim

import safetrace as st


class OffByOne(torch.nn.Module):
    def forward(self, x, y):
        return x + y[1:]


class Strided(torch.nn.Module):
    def forward(self, x, y):
        return x[1::4] + y


class Reshape(torch.nn.Module):
    def forward(self, x):
        return x.view(x.shape[0] - 1, -1)


R = torch.randn
DX = Dim("dx", min=3, max=6)
CASES = [  # (name, module, example, spec, good inputs, bad inputs)
    ("derived dim", OffByOne, (R(5), R(6)), ({0: DX}, {0: DX + 1}),
     [(R(3), R(4)), (R(6), R(7))], [(R(4), R(6)), (R(7), R(8)), (R(2), R(3))]),
    ("relation found by tracing", Strided, (R(21), R(5)), ((Dim.AUTO,), (Dim.AUTO,)),
     [(R(33), R(8)), (R(30), R(8)), (R(2), R(1))], [(R(34), R(8)), (R(22), R(5))]),
    ("residual condition", Reshape, (R(3, 4),), {"x": (Dim.DYNAMIC, Dim.DYNAMIC)},
     [(R(5, 8),), (R(2, 0),)], [(R(4, 2),)]),
]


@pytest.mark.parametrize("name, cls, example, spec, good, bad", CASES,
                         ids=[c[0] for c in CASES])
def test_refused_with_torchs_guard_error(name, cls, example, spec, good, bad) -> None:
    theirs = torch.export.export(cls(), example, dynamic_shapes=spec).module()
    ours = st.export(cls(), example, dynamic_shapes=spec).to_torch().module()
    for args in good:
        torch.testing.assert_close(ours(*args), cls()(*args))
    for args in bad:
        with pytest.raises(AssertionError, match="Guard failed"):
            theirs(*args)
        with pytest.raises(AssertionError, match="Guard failed"):
            ours(*args)


def test_deferred_condition_stays_a_runtime_assert() -> None:
    spec = {"x": (Dim.DYNAMIC, Dim.DYNAMIC)}
    kw = {"prefer_deferred_runtime_asserts_over_guards": True}
    theirs = torch.export.export(Reshape(), (R(3, 4),), dynamic_shapes=spec, **kw).module()
    ours = st.export(Reshape(), (R(3, 4),), dynamic_shapes=spec, **kw).to_torch().module()
    for m in (theirs, ours):
        torch.testing.assert_close(m(R(5, 8)).shape, torch.Size([4, 10]))
        with pytest.raises(RuntimeError):
            m(R(4, 2))
