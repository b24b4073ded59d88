"""An export refused because an op would raise at the example sizes is a RuntimeError,
as eager's and torch.export's refusal of the same call (torch's own export tests write
``assertRaises(RuntimeError)`` around it), and still the catalogue's kind; a model that
catches eager's RuntimeError around such an op exports the except side, as eager runs."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import safetrace as st


class MatMul(nn.Module):
    def forward(self, a, b):
        return a @ b


class CheckRows(nn.Module):
    def forward(self, x):
        torch._check(x.shape[0] > 5)
        return x * 2


class ViewOrNot(nn.Module):
    """Takes the except side where ``view(2, -1)`` raises (an odd number of elements)."""

    def forward(self, x):
        try:
            y = x.view(2, -1)
        except RuntimeError:
            y = x.unsqueeze(0) * 10
        return y + 1


@pytest.mark.parametrize("model, args, kind", [
    (MatMul(), (torch.randn(2, 3), torch.randn(4, 5)), st.OpShapeError),
    (CheckRows(), (torch.randn(3),), st.errors.CheckNeverHolds),
], ids=["matmul", "check"])
def test_refusal_is_a_runtime_error_as_torch_export(model, args, kind):
    with pytest.raises(RuntimeError) as ours:
        st.export(model, args)
    assert isinstance(ours.value, kind) and isinstance(ours.value, st.ExportError)
    with pytest.raises(RuntimeError):
        torch.export.export(model, args)
    with pytest.raises(RuntimeError):  # eager too
        model(*args)


def test_subkinds_of_op_shape_are_runtime_errors():
    with pytest.raises(RuntimeError) as info:  # too many indices: eager's IndexError
        st.export(lambda x: x[0, 0, 0], (torch.randn(3, 4),))
    assert isinstance(info.value, st.errors.BadIndex)
    assert issubclass(st.errors.BranchMismatch, RuntimeError)


def test_except_runtime_error_in_the_model_catches_it_as_in_eager():
    m, x = ViewOrNot(), torch.randn(3)
    ep = st.export(m, (x,))
    assert torch.equal(ep.module()(x), m(x))  # (torch.export 2.13 raises the view's error)
    # dynamic: the other sizes take the other side, so which side is a run-time check
    ep = st.export(m, (x,), dynamic_shapes={"x": {0: st.Dim.DYNAMIC(min=0, max=64)}})
    for n in (0, 1, 5):
        t = torch.randn(n)
        if n % 2:
            assert torch.equal(ep.module()(t), m(t))
        else:
            with pytest.raises(st.InputMismatchError):
                ep.module()(t)
