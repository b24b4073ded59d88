"""A named Dim whose program cannot take sizes 0 or 1 (issue 21).

torch.export traces a dynamic size as if it were at least 2: a condition that only sizes
below 2 break (``x.squeeze()`` keeps a dim that is not 1, ``if n > 0:`` picks a branch)
is never a constraint violation there, and its program runs those sizes unchecked (right
where the op is generic, as squeeze; the other branch's answer where the trace chose
one).  safetrace first traces such a size as a side of its own (small_splits.py,
splits.py: eager's answer there); where no side can join the program (another rank,
``max_splits=0``) it exports like torch and its input check refuses those sizes before
computing, naming the line.  Each row is compared with torch.export's program and with
eager at other sizes; a requirement or branch past 2 stays refused
(test_dropin_eager_raises.py, test_fewer_guards.py)."""

from __future__ import annotations

from typing import Callable

import pytest
import torch
from torch import nn
from torch.export import Dim

import safetrace as st

from tests.helpers import matches_eager, rejects


class Fn(nn.Module):
    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _squeeze(x):
    return x.squeeze(0) * 2


def _branch_on_size(x):
    if x.shape[0] > 0:
        return x.sum()
    return x


def _row_then_branch(x):
    y = x[0]
    if x.shape[0] > 1:  # at size 1 eager computes `y`, another rank than y + x[1]
        return y + x[1]
    return y


def _nonzero_static_squeezed(x, count):
    index = torch.nonzero_static(x > 0, size=count.shape[0])
    return x[index.chunk(1, dim=1)].squeeze() * 2


# fn, example shape, the refused sizes, sizes eager computes, torch's answer at the first
# refused size is eager's (True) or the other branch's (False)
ROWS = {
    "squeeze": (_squeeze, (4, 3), [1], [0, 2, 9], True),
    "branch": (_branch_on_size, (6,), [0], [1, 2, 7], False),
}
# (`x[0]` then `if x.shape[0] > 1:`, refused at 1 with a run-time check, is split since
# session 34: tests/export/test_split_side_eager_raises.py)


@pytest.mark.parametrize("name", list(ROWS))
def test_a_condition_only_sizes_below_two_break_is_checked_at_run_time(name: str) -> None:
    fn, shape, refused, sizes, torch_right = ROWS[name]
    model, spec = Fn(fn), ({0: Dim("b")},)
    ours = st.export(model, (torch.randn(*shape),), dynamic_shapes=spec)
    theirs = torch.export.export(model, (torch.randn(*shape),), dynamic_shapes=spec)
    assert ours.deferred_checks  # (what the input check refuses beyond the declaration)
    for n in sizes:
        x = torch.randn(n, *shape[1:])
        matches_eager(ours, model, (x,))
        torch.testing.assert_close(theirs.module()(x), model(x))
    for n in refused:
        x = torch.randn(n, *shape[1:])
        message = rejects(ours, (x,))
        assert "test_dropin_sizes_below_two.py" in message, message
        with pytest.raises((AssertionError, RuntimeError)):  # (a guard or a run-time
            ours.to_torch().module()(x)  # assert of torch's program; torch's runs it)
        if torch_right is None:
            continue
        try:
            same = torch.equal(theirs.module()(x), model(x))
        except RuntimeError:
            same = False
        assert same is torch_right


def test_a_size_below_two_that_a_split_keeps_gives_eagers_answer() -> None:
    # (the same condition where both sides have one output form: no run-time check)
    def f(x):
        return x * 3 if x.shape[0] == 1 else x + 1

    ep = st.export(Fn(f), (torch.randn(5, 2),), dynamic_shapes=({0: Dim("b")},))
    assert not ep.deferred_checks
    for n in (0, 1, 2, 6):
        matches_eager(ep, f, (torch.randn(n, 2),))


def test_a_declared_min_of_two_still_refuses_one_and_says_why() -> None:
    # torch's input check leaves out a lower bound of 2 or less, so torch's program runs
    # size 1 for Dim(min=2), traced for 2 and more: the wrong branch here
    def f(x):
        return x + 100 if x.shape[0] == 1 else x * 2

    spec = ({0: Dim("b", min=2, max=64)},)
    ours = st.export(Fn(f), (torch.randn(5, 3),), dynamic_shapes=spec)
    theirs = torch.export.export(Fn(f), (torch.randn(5, 3),), dynamic_shapes=spec)
    one = torch.randn(1, 3)
    assert not torch.equal(theirs.module()(one), f(one))
    message = rejects(ours, (one,))
    assert "torch.export's program runs sizes 0 and 1 unchecked" in message, message
    assert "min=1" in message
    for n in (2, 64):
        matches_eager(ours, f, (torch.randn(n, 3),))


def test_nonzero_static_squeezed_over_a_named_dim_exports_as_torchs() -> None:
    # the output's first dim is count's named Dim; squeeze() drops it at 1
    model = Fn(lambda x: x)
    model.forward = _nonzero_static_squeezed
    spec = {"x": (Dim("n"),), "count": (Dim("k", max=100),)}
    args = (torch.ones(6), torch.randn(4))
    ours = st.export(model, args, dynamic_shapes=spec)
    theirs = torch.export.export(model, args, dynamic_shapes=spec)
    for n, k in ((6, 4), (9, 9), (5, 2), (3, 0)):
        inputs = (torch.randn(n), torch.randn(k))
        matches_eager(ours, model, inputs)
        torch.testing.assert_close(theirs.module()(*inputs), model(*inputs))
    rejects(ours, (torch.randn(6), torch.randn(1)))
