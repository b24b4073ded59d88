"""A named Dim whose range holds sizes where eager itself raises (issue 21).

torch.export traces a dynamic size as if it were at least 2, so an op's requirement that
fails only at 0 or 1 (``x.max()`` of nothing, ``x[0]``, batch norm of one row in training,
``assert n > 1``) is no guard there: torch exports and its program raises in the op.
safetrace exports the same programs, and its input check refuses those sizes before any op
runs, naming the line.  A requirement failing at a size of 2 or more is still refused at
export (torch refuses it too); a condition that picks a branch at 0 or 1:
test_dropin_sizes_below_two.py.  Each row is compared with torch.export's program and
with eager at other sizes."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.export import Dim

import safetrace as st

from tests.export.dropin_check import same


class Fn(nn.Module):
    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _assert_two(x):
    assert x.shape[0] > 1, "needs two rows"
    return x[1] - x[0]


def _check_two(x):
    torch._check(x.shape[0] >= 2)
    return x.cumsum(0)


def _raise_small(x):
    if x.shape[0] < 2:
        raise ValueError("needs two rows")
    return x * 2


def _train_norm(x):
    return F.batch_norm(x, None, None, training=True)


def _conv(x):
    return F.conv1d(x, torch.ones(1, 1, 3), padding=1)


# (name, forward, example, spec entry of dim 0 or 2, sizes that run, sizes eager refuses)
ROWS = [
    ("max of the whole tensor", lambda x: x.max(), (6,), 0, [1, 2, 9], [0]),
    ("first row", lambda x: x[0], (6, 2), 0, [1, 3], [0]),
    ("batch norm in training", _train_norm, (6, 2), 0, [0, 2, 7], [1]),
    ("assert on a size", _assert_two, (6, 2), 0, [2, 5], [0, 1]),
    ("torch._check on a size", _check_two, (6,), 0, [2, 5], [0, 1]),
    ("if ...: raise on a size", _raise_small, (6,), 0, [2, 5], [0, 1]),
    ("conv padded shorter than its kernel", _conv, (1, 1, 6), 2, [1, 2, 8], [0]),
]


@pytest.mark.parametrize("name, fn, shape, d, sizes, refused", ROWS,
                         ids=[r[0] for r in ROWS])
def test_exports_where_torch_does_and_checks_what_eager_refuses(
        name: str, fn: Callable, shape: tuple, d: int, sizes: list, refused: list) -> None:
    model = Fn(fn)
    example = (torch.randn(*shape),)
    spec = ({d: Dim("b")},)
    ref = torch.export.export(model, example, dynamic_shapes=spec)
    ours = st.export(model, example, dynamic_shapes=spec)
    conv = ours.to_torch()

    def at(n: int) -> torch.Tensor:
        return torch.randn(*shape[:d], n, *shape[d + 1:])

    for n in sizes:
        x = at(n)
        want = fn(x)
        same(ours.module()(x), want)
        same(conv.module()(x), want)
        if n >= 2:  # (torch's program: sizes 0 and 1 are outside its tracing assumption)
            same(ref.module()(x), want)
    for n in refused:
        x = at(n)
        with pytest.raises(Exception):
            fn(x)  # eager raises there
        with pytest.raises(st.InputMismatchError) as info:
            ours.module()(x)  # refused before running, naming the requirement's line
        assert "test_dropin_eager_raises.py" in str(info.value) or "functional.py" in \
            str(info.value), str(info.value)
        with pytest.raises(Exception):
            conv.module()(x)


def _check_three(x):
    torch._check(x.shape[0] >= 3)  # fails at 2 as well: torch refuses it too
    return x * 2


def test_a_requirement_past_two_is_still_refused() -> None:
    # (a branch at sizes below 2 that no split keeps: test_dropin_sizes_below_two.py)
    model, example, spec = Fn(_check_three), (torch.randn(6),), ({0: Dim("b")},)
    with pytest.raises(Exception, match="3 <= "):
        torch.export.export(model, example, dynamic_shapes=spec)
    with pytest.raises(st.ConstraintViolationError, match="min=3"):
        st.export(model, example, dynamic_shapes=spec)


def test_a_declared_minimum_of_one_keeps_its_range_where_only_one_raises() -> None:
    """Dim('b', min=1) with batch norm in training: b = 1 is the one size refused."""
    model: Any = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).train()
    spec = ({0: Dim("b", min=1, max=32)},)
    ours = st.export(model, (torch.randn(4, 3),), dynamic_shapes=spec)
    torch.export.export(model, (torch.randn(4, 3),), dynamic_shapes=spec)  # torch exports
    with pytest.raises(st.InputMismatchError, match="BatchNorm1d"):
        ours.module()(torch.randn(1, 3))
    with pytest.raises(st.InputMismatchError):
        ours.module()(torch.randn(33, 3))


def _caught(x):
    try:
        if x.shape[0] < 2:
            raise ValueError("small")
        y = x * 2
    except ValueError:  # the raise is caught: at sizes 0 and 1 eager computes `x`
        y = x
    return y


def test_a_raise_the_code_catches_is_a_branch_not_a_requirement() -> None:
    ep = st.export(Fn(_caught), (torch.randn(5),), dynamic_shapes=({0: Dim("b")},))
    for n in (0, 1, 2, 7):  # (both sides traced: sizes 0 and 1 run, as in eager)
        x = torch.randn(n)
        same(ep.module()(x), _caught(x))


def _small_raises(x):
    if x.shape[0] < 2:
        raise ValueError("small")
    return x * 2


def _caught_by_the_caller(x):
    try:  # the helper's raise is caught here: at sizes 0 and 1 eager computes x + 100
        y = _small_raises(x)
    except ValueError:
        y = x + 100
    return y


def test_a_raise_a_calling_frame_catches_is_a_branch_not_a_requirement() -> None:
    ep = st.export(Fn(_caught_by_the_caller), (torch.randn(5),),
                   dynamic_shapes=({0: Dim("b")},))
    for n in (0, 1, 2, 7):  # (both sides traced: sizes 0 and 1 run, as in eager)
        x = torch.randn(n)
        same(ep.module()(x), _caught_by_the_caller(x))


@pytest.mark.parametrize("fn, shape, sizes, refused", [
    (lambda x: F.unfold(x, 2), (1, 1, 6, 4), [2, 5], [0, 1]),
    (lambda x: F.avg_pool1d(x, 3, 2, 1), (2, 3, 5), [1, 2, 8], [0]),
], ids=["unfold shorter than its kernel", "pooling an empty length"])
def test_a_requirement_on_several_sizes_at_once_is_the_ops_on_each(
        fn: Callable, shape: tuple, sizes: list, refused: list) -> None:
    """An op's check of several sizes (`oh >= 1 and ow >= 1`, every spatial size non-zero)
    was a plain branch on the first: refused at export.  Exported, sizes where eager raises
    refused by the input checks (torch.export refuses both: its guards rule out sizes
    eager runs, 2 for unfold, 1 and 2 for the pooling)."""
    model, d = Fn(fn), 2
    ours = st.export(model, (torch.randn(*shape),), dynamic_shapes=({d: Dim("b")},)).module()

    def at(n: int) -> torch.Tensor:
        return torch.randn(*shape[:d], n, *shape[d + 1:])

    for n in sizes:
        x = at(n)
        same(ours(x), fn(x))
    for n in refused:
        with pytest.raises(Exception):
            fn(at(n))
        with pytest.raises(st.InputMismatchError):
            ours(at(n))
