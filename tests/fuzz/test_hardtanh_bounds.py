"""``F.hardtanh`` bounds (fuzz35): its Python body raises ValueError where ``min_val >
max_val``, a check aten.hardtanh lacks.  Numbers out of order were bound straight to the
aten op, which clamps (a result where eager raises); a 0-d tensor bound
(``F.hardtanh(x, t, 1.0)``) was refused at export (the body's ``if`` reads data).  The
tensor's value is now read as eager's parser reads it, and the order asserted at run time."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import safetrace as st


def test_numbers_out_of_order_raise_as_in_eager():
    def f(x):
        return F.hardtanh(x, 2.0, 1.0)

    with pytest.raises(ValueError, match="min_val cannot be greater"):
        f(torch.randn(3))
    with pytest.raises(ValueError, match="min_val cannot be greater"):
        st.export(f, (torch.randn(3),))


@pytest.mark.parametrize("tdtype", [torch.float32, torch.float16, torch.int64])
def test_a_0d_tensor_bound(tdtype):
    def f(x, t):
        return F.hardtanh(x, t, 1.0), F.hardtanh(x, -5.0, t)

    ep = st.export(f, (torch.randn(4), torch.tensor(-0.5).to(tdtype) if tdtype.is_floating_point
                       else torch.tensor(0)), dynamic_shapes=({0: st.Dim("n")}, {}))
    for n, a in ((0, 0.0), (1, 0.5), (6, -3.0), (3, 1.0)):
        x, t = torch.linspace(-4, 4, n), torch.tensor(a).to(tdtype)
        for want, got in zip(f(x, t), ep.module()(x, t)):
            assert got.dtype == want.dtype
            assert torch.equal(got, want)
    with pytest.raises(ValueError):  # eager: the body's check
        f(torch.randn(2), torch.tensor(3).to(tdtype))
    with pytest.raises(st.RuntimeAssertionError, match="min_val cannot be greater"):
        ep.module()(torch.randn(2), torch.tensor(3).to(tdtype))  # asserted in the program
    with pytest.raises(st.InputMismatchError):  # a 2-d x, out of the exported space
        ep.module()(torch.randn(2, 2), torch.tensor(0).to(tdtype))


def test_a_nan_bound_is_refused_not_computed_otherwise():
    """Eager's ``if nan > 1.0`` lets a NaN bound through; the engine's float conditions read
    ``not u0 > 1.0`` as ``u0 <= 1.0``, so a NaN is refused at run time (never a result)."""
    def f(x, t):
        return F.hardtanh(x, t, 1.0)

    ep = st.export(f, (torch.randn(4), torch.tensor(-0.5)))
    x, t = torch.randn(4), torch.tensor(math.nan)
    f(x, t)
    with pytest.raises(st.RuntimeAssertionError):
        ep.module()(x, t)
