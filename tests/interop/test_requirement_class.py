"""What a converted program raises for an input that breaks an op's own requirement (eager's
kernel raises RuntimeError there): RuntimeError too, as torch.export's program does (its
kernel raises), still before anything is computed; a condition a branch of the trace chose
stays torch's guard (AssertionError)."""

from __future__ import annotations

import pytest
import torch

import safetrace as st

DYNAMIC = torch.export.Dim.DYNAMIC


class Sample(torch.nn.Module):
    def forward(self, x, y):
        return torch.multinomial(x, y.shape[0])


class Branch(torch.nn.Module):
    def forward(self, x, y):
        if y.shape[0] <= x.shape[0]:
            return x[: y.shape[0]] * 2
        return x.sum() + y


def _programs(model, args):
    shapes = tuple((DYNAMIC,) for _ in args)
    return (st.export(model, args, dynamic_shapes=shapes).to_torch().module(),
            torch.export.export(model, args, dynamic_shapes=shapes).module())


def test_op_requirement_raises_eagers_class():
    args = (torch.tensor([0.0, 10, 3, 0]), torch.ones(2, dtype=torch.int64))
    ours, theirs = _programs(Sample(), args)
    torch.manual_seed(0)
    assert ours(*args).shape == theirs(*args).shape == (2,)
    bad = (torch.tensor([0.0, 10, 3, 0]), torch.ones(5, dtype=torch.int64))
    for fn in (Sample(), ours, theirs):
        with pytest.raises(RuntimeError):
            fn(*bad)
    with pytest.raises(st.InputMismatchError):  # our own program names the condition
        st.export(Sample(), args, dynamic_shapes=((DYNAMIC,), (DYNAMIC,))).module()(*bad)


def test_branch_condition_stays_a_guard():
    args = (torch.randn(4), torch.randn(2))
    ours = st.export(Branch(), args, dynamic_shapes=((DYNAMIC,), (DYNAMIC,)))
    module = ours.to_torch().module()
    x = (torch.randn(6), torch.randn(3))
    torch.testing.assert_close(module(*x), Branch()(*x))
    with pytest.raises(AssertionError, match="Guard failed"):
        module(torch.randn(2), torch.randn(3))
