"""Python's max()/min() of one-element tensors in forward (issue 21): torch.export records
torch.maximum / torch.minimum; safetrace records what the builtin computes (the later
argument replaces the result only where strictly larger, smaller), so ties and NaN give
eager's answer too.  Against torch.export where their answers agree, and against eager."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import safetrace as st

from tests.export.dropin_check import same


class MinMax(nn.Module):
    def forward(self, x, y):
        return max(x, y), min(y, x * 2)


NAN = float("nan")


@pytest.mark.parametrize("shape", [(), (1, 1)], ids=["0-d", "(1, 1)"])
def test_builtin_max_min_of_one_element_tensors(shape) -> None:
    args = (torch.tensor(1.0).reshape(shape), torch.tensor(2.0).reshape(shape))
    ref = torch.export.export(MinMax(), args)
    ours = st.export(MinMax(), args)
    conv = ours.to_torch()
    for a, b in [(3.0, -1.0), (-2.0, 5.0), (2.0, 2.0), (NAN, 1.0), (1.0, NAN)]:
        x, y = torch.tensor(a).reshape(shape), torch.tensor(b).reshape(shape)
        want = MinMax()(x, y)
        same(ours.module()(x, y), want)
        same(conv.module()(x, y), want)
        if a == a and b == b:  # (torch.maximum spreads NaN where the builtin keeps one)
            same(ref.module()(x, y), want)


def test_builtin_max_of_tensors_with_more_elements_is_refused() -> None:
    args = (torch.randn(3), torch.randn(3))
    with pytest.raises(RuntimeError):  # eager: the truth value of a 3-element tensor
        MinMax()(*args)
    with pytest.raises(st.DataDependentError):
        st.export(MinMax(), args)


class WritesPick(nn.Module):
    def forward(self, x, y):
        a, b = x.sum().reshape(1), y.sum().reshape(1)
        m = max(a, b)
        m.add_(10)  # eager: writes a or b, whichever m is
        return a + 0, b + 0, m


class WritesArgument(nn.Module):
    def forward(self, x, y):
        a, b = x.sum().reshape(1), y.sum().reshape(1)
        m = min(a, b)
        a.view(()).mul_(3)  # eager: m shows the write when it is a
        return m * 1


class WritesInputPicked(nn.Module):
    def forward(self, x, y):
        m = max(x, y)
        x.add_(1)  # eager: m is x when x >= y
        return m + 0


@pytest.mark.parametrize("model", [WritesPick, WritesArgument, WritesInputPicked])
def test_a_write_to_what_max_picked_or_picked_among_is_refused(model) -> None:
    """Python's max/min returns one of its arguments, so a later in-place write shows
    through the other name; the exported choice is a new tensor, so such writes are
    refused with the fix (a copy, or torch.maximum) instead of exporting eager's aliasing
    wrongly (before: a + 0 did not show m.add_(10), a wrong result)."""
    args = (torch.ones(3), torch.ones(2)) if model is not WritesInputPicked else \
        (torch.tensor([2.0]), torch.tensor([1.0]))
    with pytest.raises(st.UnsupportedOpError, match="max\\(\\)/min\\(\\) picked"):
        st.export(model(), args)


class WithNumbers(nn.Module):
    def forward(self, x, y):
        return max(x, 5), min(3, x), max([x, y, 4]), min(x, y, 2, 7)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32])
def test_builtin_max_min_of_tensors_and_numbers(dtype) -> None:
    """``max(x, 5)``: Python returns 5 or x depending on the data; exported as the 0-d
    tensor of x's dtype holding that value (torch records torch.clamp), the fold in
    Python's order (ties and NaN keep the earlier item)."""
    model = FloatNumbers() if dtype.is_floating_point else WithNumbers()
    args = (torch.tensor(4, dtype=dtype), torch.tensor(1, dtype=dtype))
    ours = st.export(model, args)
    ref = torch.export.export(TensorThenNumber(dtype), args)  # (torch: a tensor, then one number)
    conv = ours.to_torch()
    values = [(0, 0), (5, 9), (10, -3), (-7, 3), (2, 2)]
    if dtype.is_floating_point:
        values += [(NAN, 1.0), (1.0, NAN)]
    for a, b in values:
        x, y = torch.tensor(a, dtype=dtype), torch.tensor(b, dtype=dtype)
        want = [torch.as_tensor(v, dtype=dtype) for v in model(x, y)]
        for got in (ours.module()(x, y), conv.module()(x, y)):
            assert all(g.dtype == dtype and g.shape == () for g in got)
            same(list(got), want)
        if a == a:
            same(list(ref.module()(x, y)), [torch.as_tensor(v, dtype=dtype)
                                            for v in TensorThenNumber(dtype)(x, y)])
            same(list(st.export(TensorThenNumber(dtype), args).module()(x, y)),
                 list(ref.module()(x, y)))


class TensorThenNumber(nn.Module):
    def __init__(self, dtype) -> None:
        super().__init__()
        self.five, self.three = (5.0, 3.0) if dtype.is_floating_point else (5, 3)

    def forward(self, x, y):
        return max(x, self.five), min(x, self.three)


class FloatNumbers(nn.Module):
    def forward(self, x, y):
        return max(x, 5.0), min(3.5, x), max([x, y, 4.25]), min(x, y, 2.0, float("inf"))


class MaxOf(nn.Module):
    def __init__(self, number) -> None:
        super().__init__()
        self.number = number

    def forward(self, x):
        return max(x, self.number)


@pytest.mark.parametrize("x, number, why", [
    (torch.tensor(1.0), 0, "an int it may return"),
    (torch.tensor(1), 0.5, "not of the kind of torch.int64"),
    (torch.tensor(1, dtype=torch.int8), 300, "does not fit torch.int8"),
    (torch.tensor(1.0), 0.1, "not held exactly by torch.float32"),
    (torch.tensor([1.0]), 2.0, "not all 0-d"),
    (torch.tensor(True), False, "not of the kind of torch.bool"),
], ids=["int-for-float", "float-for-int", "int8-range", "inexact", "shape-(1,)", "bool"])
def test_builtin_max_of_tensor_and_number_refused_where_no_tensor_stands_for_it(
        x, number, why) -> None:
    """Eager's answer is the number or the tensor; where the two differ in kind, shape or
    value held, no single exported tensor behaves as both: refused with torch.clamp."""
    MaxOf(number)(x)  # eager runs it
    with pytest.raises(st.UnsupportedOpError, match=why) as info:
        st.export(MaxOf(number), (x,))
    assert "torch.clamp(x, min=n)" in info.value.fix
