"""An op's check of a condition made of several (``in-place add_``'s output shape equal to
the broadcast one, size by size; ``embedding``'s ``rows != 0 or no indices``; ``arange``'s
``step > 0 and start <= end``) is one requirement (``rules.common.every`` / ``either``),
not Python's ``and`` / ``or`` / ``all()`` deciding its first part as a plain branch at the
example: each program was refused at export ("only works for ...", a relation) and now
exports for the whole declared space, its input checks refusing exactly the sizes where
eager raises (named Dims from 0; checked against eager at each size)."""

from __future__ import annotations

from typing import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import safetrace as st

from tests.export.dropin_check import same

N, M = st.Dim("n", max=64), st.Dim("m", max=64)


class Fn(nn.Module):
    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _into_first_row(x, y):
    return x.clone()[:1].add_(y)  # y broadcast into at most one row


def _lookup(w, i):
    return F.embedding(i, w)  # an empty table with indices: eager raises


def _repeat(x, r):
    return x.repeat_interleave(r, dim=0)  # one count per row, or one for all


def _count_down(x):
    return torch.arange(x.shape[0] - 1, dtype=torch.float32) * 2


def _fold(x):
    return F.fold(x, (x.shape[2], 1), (1, 1))  # (N, C, L) -> (N, C, L, 1), L blocks


def _unique_rows(x):
    return torch.unique(x, dim=0)


def _ints(*shape):
    return torch.randint(0, 3, shape)


# (forward, inputs of (n, m), spec, sizes (n, m) eager runs, sizes eager raises at)
ROWS = {
    "in-place into a slice": (
        _into_first_row, lambda n, m: (torch.randn(n, 3), torch.randn(m, 3)), ({0: N}, {0: M}),
        [(4, 1), (0, 0), (1, 1), (3, 1), (0, 1)], [(3, 0), (2, 5), (1, 2), (5, 0), (0, 4)]),
    "embedding": (
        _lookup, lambda n, m: (torch.randn(n, 3), torch.zeros(m, dtype=torch.long)),
        ({0: N}, {0: M}), [(5, 2), (0, 0), (1, 1), (3, 0), (5, 4)], [(0, 2), (0, 1)]),
    "repeat_interleave": (
        _repeat, lambda n, m: (torch.randn(n, 2), torch.ones(m, dtype=torch.long)),
        ({0: N}, {0: M}), [(4, 4), (0, 0), (1, 1), (3, 3), (3, 1), (0, 1)],
        [(2, 3), (1, 0), (3, 2)]),
    "arange": (_count_down, lambda n, m: (torch.randn(n),), ({0: N},),
               [(5, 0), (1, 0), (2, 0), (9, 0)], [(0, 0)]),
    "fold": (_fold, lambda n, m: (torch.randn(1, 3, n),), ({2: N},),
             [(4, 0), (1, 0), (2, 0), (7, 0)], [(0, 0)]),
    "unique rows": (_unique_rows, lambda n, m: (_ints(n, m).float(),), ({0: N, 1: M},),
                    [(5, 2), (0, 2), (1, 1), (3, 2)], [(3, 0), (1, 0)]),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_a_requirement_of_several_parts_is_the_ops_not_a_branch(name: str) -> None:
    fn, make, spec, sizes, refused = ROWS[name]
    ep = st.export(Fn(fn), make(*sizes[0]), dynamic_shapes=spec)
    ours = ep.module()
    for n, m in sizes:
        args = make(n, m)
        same(ours(*[a.clone() for a in args]), fn(*args))
    for n, m in refused:
        args = make(n, m)
        with pytest.raises(Exception):
            fn(*[a.clone() for a in args])  # eager raises there
        with pytest.raises(st.InputMismatchError):
            ours(*args)
