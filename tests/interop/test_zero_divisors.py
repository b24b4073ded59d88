"""A contract condition that divides by an input size which may be 0 (canonical order
puts ``x % y == 0`` before ``y == 0``): ``ep.to_torch().module()`` answers as ``ep.module()``
does at 0, with torch's guard function and the graph's assert, never a ZeroDivisionError,
and after ``torch.export.save`` / ``load`` (which drop the guard code) too."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st


class _OrZero(torch.nn.Module):
    def forward(self, x, y):
        torch._check((y.shape[0] == 0) | (x.shape[0] % y.shape[0] == 0))
        return x + 1, y * 2


class _NonZeroAnd(torch.nn.Module):
    def forward(self, x, y):
        torch._check((y.shape[0] != 0) & (x.shape[0] // y.shape[0] == 3))
        return x + 1, y * 2


def _outcome(module, args):
    try:
        return [o.shape for o in module(*args)]
    except ZeroDivisionError:
        raise
    except Exception:  # noqa: BLE001 - any clean refusal
        return "refused"


@pytest.mark.parametrize("model", [_OrZero, _NonZeroAnd])
def test_a_zero_divisor_is_answered_not_divided_by(model):
    D = st.Dim.DYNAMIC
    ep = st.export(model(), (torch.randn(12), torch.randn(4)),
                   dynamic_shapes={"x": {0: D}, "y": {0: D}})
    text = str(ep.contract.conditions[0].cond)
    assert text.index("%" if model is _OrZero else "//") < text.index("0)")  # (the order)
    tep = ep.to_torch()
    buf = io.BytesIO()
    torch.export.save(tep, buf)
    buf.seek(0)
    loaded = torch.export.load(buf)
    cases = [(torch.randn(12), torch.randn(0)), (torch.randn(0), torch.randn(0)),
             (torch.randn(12), torch.randn(5)), (torch.randn(12), torch.randn(4)),
             (torch.randn(6), torch.randn(2))]
    outcomes = []
    for args in cases:
        ours = _outcome(ep.module(), args)
        assert _outcome(tep.module(), args) == ours, args
        assert _outcome(loaded.module(), args) == ours, args
        outcomes.append(ours)
    assert "refused" in outcomes and any(o != "refused" for o in outcomes)
