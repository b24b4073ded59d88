"""``to_torch()`` of a loaded program whose call-time budget checks guard sizes read from
data (``interop/load_checks.py``): the checks become graph arithmetic with the load's
budget, so the conversion works and the converted program refuses, before the kernel runs,
the calls the loaded program refuses."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from tests.serialize.test_value_sizes import KINDS, ValueSized

LOWERED = ("bincount", "repeat_interleave", "repeat_self", "nonzero", "unique", "masked_select",
           "index")
SMALL = {"max_alloc_numel": 1024}  # 16 KiB


def _loaded(kind: str, budgets: dict) -> st.ExportedProgram:
    ep = st.export(ValueSized(kind), (torch.tensor([1, 2, 3]),),
                   dynamic_shapes={"x": {0: st.Dim("n", min=1, max=64)}})
    buf = io.BytesIO()
    st.save(ep, buf)
    return st.load(buf.getvalue(), budgets=budgets)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_loaded_programs_budget_checks_travel_into_the_converted_program(kind):
    loaded = _loaded(kind, SMALL)
    if kind not in LOWERED:  # (no graph form here yet: refused, naming the check)
        with pytest.raises(st.ConversionError, match="a loaded program's call-time budget "
                                                     "check"):
            loaded.to_torch()
        return
    mod = loaded.to_torch(verify=True).module()
    # within the budget: the views' kinds select up to 15 x 8 elements at 3 inputs
    for v in ([1], [2, 0, 5], [0], [40]):
        x = torch.tensor(v)
        torch.testing.assert_close(mod(x), ValueSized(kind)(x))
    over = torch.tensor([2000] * 64)  # (bincount: 6001 counts; the views: 320 x 8 values)
    with pytest.raises(st.RuntimeAssertionError, match="over the budget"):
        loaded.module()(over)
    with pytest.raises(RuntimeError, match=r"node '\w+' would allocate more than 16384 bytes"
                                           r".*max_alloc_numel"):
        mod(over)
    for bad in (torch.ones(2, 2, dtype=torch.long), torch.tensor([], dtype=torch.long),
                torch.ones(65, dtype=torch.long)):  # out of the contract: rank, n >= 1, n <= 64
        with pytest.raises(Exception):
            mod(bad)


def test_a_work_budget_on_sizes_read_from_data_is_checked_in_the_converted_graph():
    """The loader's work check before a kernel of data-dependent sizes (the sum over
    nonzero's rows) is size arithmetic on the rows the program read: the converted
    program refuses where the loaded one does, and runs where it runs."""
    loaded = _loaded("nonzero", {"max_work": 3000})
    mod = loaded.to_torch(verify=True).module()
    small, big = torch.tensor([1, 2]), torch.tensor([1] * 40)  # 10 x 8 rows; 200 x 8
    torch.testing.assert_close(mod(small), ValueSized("nonzero")(small))
    torch.testing.assert_close(loaded.module()(small), ValueSized("nonzero")(small))
    with pytest.raises(st.RuntimeAssertionError, match="max_work"):
        loaded.module()(big)
    with pytest.raises(RuntimeError, match=r"would touch more than 3000 elements.*max_work"):
        mod(big)


class _Picked(torch.nn.Module):
    """A mask after a whole dim (``x[:, mask]``: indices ``[None, mask]``) and
    ``repeat_interleave(x, r, dim)`` with one repeat count (broadcast along the dim)."""

    def forward(self, x, r):
        return x[:, x[0] > 0].sum(0), torch.repeat_interleave(x, r[:1] * 3, dim=1).sum(1)


@pytest.mark.slow
def test_several_indices_and_repeats_along_a_dim_are_checked_in_the_converted_graph():
    ep = st.export(_Picked(), (torch.randn(4, 5, 6), torch.tensor([1, 2])),
                   dynamic_shapes={"x": {0: st.Dim("n", min=1, max=64)}, "r": None})
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(buf.getvalue(), budgets={"max_alloc_numel": 256})  # 4 KiB
    mod = loaded.to_torch().module()
    torch.manual_seed(0)
    for n, r in [(1, 1), (4, 2), (2, 0), (10, 1)]:  # (at most 10 x 15 x 6 x 4 bytes)
        x = torch.randn(n, 5, 6)
        want = _Picked()(x, torch.tensor([r, 9]))
        for got in (mod(x, torch.tensor([r, 9])), loaded.module()(x, torch.tensor([r, 9]))):
            torch.testing.assert_close(got, want)
    for n, r in [(40, 0), (4, 20)]:  # x[:, mask]: 40 x 30 x 4 bytes; 4 x 300 x 6 x 4
        x, rr = torch.randn(n, 5, 6).abs(), torch.tensor([r, 1])
        with pytest.raises(st.RuntimeAssertionError, match="over the budget"):
            loaded.module()(x, rr)
        with pytest.raises(RuntimeError, match="over the budget"):
            mod(x, rr)
    for bad in (torch.randn(65, 5, 6), torch.randn(4, 5, 7), torch.randn(4, 30)):
        with pytest.raises(Exception):  # noqa: B017, PT011 - torch's own error classes
            mod(bad, torch.tensor([1, 2]))


class _Stepped(torch.nn.Module):
    """``arange`` of numbers read from data (``.item()``), with a start and a step."""

    def forward(self, x):
        n = x.sum().item()
        torch._check(n >= 0)
        return torch.arange(n).sum() + torch.arange(n, 2 * n + 1, 3).sum() + x.shape[0]


@pytest.mark.slow
def test_a_range_of_numbers_read_from_data_is_checked_in_the_converted_graph():
    ep = st.export(_Stepped(), (torch.tensor([1, 2]),),
                   dynamic_shapes={"x": {0: st.Dim("k", min=1, max=8)}})
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(buf.getvalue(), budgets={"max_alloc_numel": 1024})  # 16 KiB
    mod = loaded.to_torch().module()
    for v in ([0], [1], [3, 4], [1000, 1]):
        x = torch.tensor(v)
        torch.testing.assert_close(mod(x), _Stepped()(x))
    over = torch.tensor([3000])  # 3000 + 1001 values of 8 bytes
    with pytest.raises(st.RuntimeAssertionError, match="over the budget"):
        loaded.module()(over)
    with pytest.raises(RuntimeError, match=r"node 'arange\w*' would allocate more than 16384"):
        mod(over)
    for bad in (torch.tensor([[1]]), torch.ones(9, dtype=torch.long)):  # rank; k <= 8
        with pytest.raises(Exception):  # noqa: B017, PT011 - torch's own error classes
            mod(bad)
