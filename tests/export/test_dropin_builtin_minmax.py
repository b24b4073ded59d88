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
