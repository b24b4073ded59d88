"""Reproducer of the fuzzer's ``to_torch`` mode (seed 3402): ``y.contiguous()`` (a view of
it returned), then ``y.mul_(n)``. Eager's ``contiguous()`` returns ``y`` itself when it is
contiguous, so the returned view shows the write; ``ep.module()`` runs it so. The
conversion wrote every ``contiguous()`` as a ``clone``: the converted program returned the
values before the write (a wrong result). Where an in-place write follows, the converted
graph now keeps ``aten.contiguous`` (an alias or a copy as the input is laid out, as in
eager); elsewhere the clone computes the same values."""

from __future__ import annotations

import pytest
import torch

from safetrace import Dim
from tests.fuzz.converted import converts_like_eager


class _ViewThenWrite(torch.nn.Module):
    def forward(self, xs):
        x, y, z = xs
        v1 = y.contiguous().flatten().as_strided((max(y.numel() - 1, 0), 2), (1, 1)) \
            if y.numel() else y.flatten()
        y.mul_(y.shape[0])
        v3 = y[:1]
        return (v1, v3)


class _Plain(torch.nn.Module):
    def forward(self, y):
        v1 = y.contiguous().flatten()[1:]
        y.mul_(3)
        return (v1, y.contiguous() * 2)


def test_a_view_of_contiguous_then_a_write_converts():
    """(Its loaded program holds a budget check torch.export graphs cannot: ``load`` is
    refused with a ConversionError naming it.)"""
    d0 = Dim("d0", max=16)

    class Flat(torch.nn.Module):
        def forward(self, x, y, z):
            return _ViewThenWrite()((x, y, z))

    spec = ({0: d0}, {0: d0}, {1: d0, 2: Dim("d1", min=1, max=16)})
    others = [[(n,), (n,), (2, n, m)] for n, m in [(4, 1), (0, 1), (1, 2), (7, 16), (2, 3)]]
    assert converts_like_eager(Flat(), [(5,), (5,), (2, 5, 2)], spec, others,
                               [(17,), (17,), (2, 17, 2)]) >= 4    # d0 = 17: above its max


@pytest.mark.parametrize("way", ["to_torch", "load"])
def test_contiguous_then_a_write_of_its_input(way):
    others = [[(n,)] for n in (0, 1, 2, 9)]
    assert converts_like_eager(_Plain(), [(5,)], ({0: Dim("d", max=9)},), others, [(10,)],
                               way) == 5
