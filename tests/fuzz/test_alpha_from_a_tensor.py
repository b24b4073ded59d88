"""``x.add(y, alpha=t)`` with a traced 0-d ``t`` (fuzz35, typed kinds): eager's parser reads
``t``'s value for the Scalar ``alpha``; the trace then asked ``alpha != 1`` of that value
(to know a 0-d integer sum's value) and refused the export as a data-dependent decision.
The value is now simply not known to be 1. Eager's dtype checks still hold: a float
``alpha`` for integer tensors is refused as eager refuses it."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


def forms(x, y, t):
    return x.add(y, alpha=t), torch.sub(x, y, alpha=t), torch.add(x, 3, alpha=t), \
        x[0].add(y[0], alpha=t)


@pytest.mark.parametrize("xdtype,tdtype", [
    (torch.float32, torch.float32), (torch.float32, torch.int64), (torch.int32, torch.int64),
    (torch.float16, torch.float64), (torch.int64, torch.int8)])
def test_alpha_read_from_a_0d_tensor(xdtype, tdtype):
    def f(x, y, t):
        return forms(x, y, t)

    x, y = torch.arange(4).to(xdtype), torch.arange(4).flip(0).to(xdtype)
    ep = st.export(f, (x, y, torch.tensor(2).to(tdtype)),
                   dynamic_shapes=({0: st.Dim("n", min=1)}, {0: st.Dim("n", min=1)}, {}))
    for n, a in ((1, 1), (5, -3), (2, 0), (7, 1)):
        x, y, t = torch.arange(n).to(xdtype), torch.arange(n).to(xdtype) * 2, torch.tensor(a)
        t = t.to(tdtype)
        for want, got in zip(f(x, y, t), ep.module()(x, y, t)):
            assert got.dtype == want.dtype
            assert torch.equal(got, want)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.zeros(0, dtype=xdtype), torch.zeros(0, dtype=xdtype),
                    torch.tensor(1).to(tdtype))


def test_a_float_alpha_for_integer_tensors_is_refused_as_eager_refuses_it():
    def f(x, t):
        return x.add(x, alpha=t)

    x, t = torch.arange(3), torch.tensor(0.5)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        f(x, t)
    with pytest.raises(st.ExportError, match="alpha must not be a floating point"):
        st.export(f, (x, t))


@pytest.mark.parametrize("xdtype", [torch.float32, torch.int64])
def test_a_bool_alpha_for_other_tensors_is_refused_as_eager_refuses_it(xdtype):
    def f(x, t):
        return x.add(x, alpha=t)

    x, t = torch.arange(3).to(xdtype), torch.tensor(True)
    with pytest.raises(RuntimeError, match="Boolean alpha"):
        f(x, t)
    with pytest.raises(st.ExportError, match="Boolean alpha"):
        st.export(f, (x, t))
