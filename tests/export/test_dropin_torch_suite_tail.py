"""More behaviours pinned by torch's own export tests (the last part of test_export.py and
the second half of test_unflatten.py), met by a user who replaces
``torch.export.export(...)`` with ``st.export(...).to_torch()`` (issue 21).  Each case runs
the same model through torch.export in the same test.  Our own cases."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn
from torch.export import Dim

import safetrace as st

from tests.export.dropin_check import same


# -- torch.fx's is_fx_tracing() is True under export (torch's test_is_fx_tracing) ----------
class AsksFxTracing(nn.Module):
    def forward(self, x, y):
        if torch.fx._symbolic_trace.is_fx_tracing():
            return x + y
        return x * y


class AsksFxSymbolicTracing(nn.Module):
    def forward(self, x, y):
        if torch.fx._symbolic_trace.is_fx_symbolic_tracing():
            return x + y
        return x * y


@pytest.mark.parametrize("model, traced", [(AsksFxTracing, torch.add),
                                           (AsksFxSymbolicTracing, torch.mul)],
                         ids=["is_fx_tracing", "is_fx_symbolic_tracing"])
def test_fx_tracing_flags_read_as_under_torch_export(model, traced) -> None:
    args = (torch.randn(3), torch.randn(3))
    spec = ({0: Dim("n")}, {0: Dim("n")})
    ref = torch.export.export(model(), args, dynamic_shapes=spec)
    ours = st.export(model(), args, dynamic_shapes=spec)
    for prog in (ours, ours.to_torch(), ref):
        for n in (0, 1, 5):
            x, y = torch.randn(n), torch.randn(n)
            same(prog.module()(x, y), traced(x, y))
    with pytest.raises(st.InputMismatchError):
        ours.module()(torch.randn(2), torch.randn(3))
    # outside an export, the flags are torch's own (eager runs the other branch)
    assert not torch.fx._symbolic_trace.is_fx_tracing()
    x, y = torch.randn(2), torch.randn(2)
    same(model()(x, y), x * y)
