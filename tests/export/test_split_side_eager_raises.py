"""A size split's side below 2 whose trace an op's shape check refuses (eager raises there at
the sizes traced: `x[0]` of no rows, `view(-1, 0)` of no elements) is refused by the
program, its range starting above it, instead of failing the whole split
(exporter/splits.py ``_eager_raises``).  Before, the split failed and the program kept a
run-time check refusing size 1 too, where eager computes another branch."""

import pytest
import torch

import safetrace as st
from safetrace import Dim


class RowThenBranch(torch.nn.Module):
    def forward(self, x):
        y = x[0]
        if x.shape[0] > 1:  # at size 1 eager computes `y`, another rank than y + x[1]
            return y + x[1]
        return y


MODEL = RowThenBranch()


@pytest.fixture(scope="module")
def program():
    return st.export(MODEL, (torch.randn(6, 2),), dynamic_shapes=({0: Dim("b")},))


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_size_one_and_others_match_eager(program, n):
    x = torch.randn(n, 2)
    torch.testing.assert_close(program.module()(x), MODEL(x))


def test_size_zero_where_eager_raises_is_refused_naming_it(program):
    with pytest.raises(IndexError):
        MODEL(torch.randn(0, 2))
    with pytest.raises(st.InputMismatchError, match="eager raises at b == 0"):
        program.module()(torch.randn(0, 2))
    assert not program.deferred_checks and not program.contract.conditions


@pytest.mark.parametrize("x", [torch.randn(3, 3), torch.randn(3, 2, 1)])
def test_outside_the_space_is_refused_before_running(program, x):
    with pytest.raises(st.InputMismatchError):
        program.module()(x)
