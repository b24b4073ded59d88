"""A replayed op's results (trace/memo.py's hit path, which makes their metas and a
split's getitem nodes inline) are what the traced call made: each meta has every slot
``meta.tensor.static_meta`` sets, with its values; the pieces are named and linked as
``graph.add_node`` makes them; the programs compute as eager at other sizes."""

from __future__ import annotations

import operator

import pytest
import torch
from torch import nn

import safetrace as st
from safetrace import Dim
from safetrace.meta import TensorMeta
from safetrace.meta.tensor import static_meta
from tests.models import MLP, Attention


class Pieces(nn.Module):
    """Pieces twice (the second split's names go on from the first's) and an unbind of a
    size-0 dim (no piece)."""

    def forward(self, x):
        a, b = x.split(2, dim=1)
        c, d = (a * 2).chunk(2, dim=1)
        e = torch.zeros(0, 3).unbind(0)
        return a + b, c - d, len(e)


def _metas(ep):
    return [n.meta["val"].st_meta for n in ep.graph.nodes
            if n.op == "call_function" and isinstance(n.meta.get("val"), torch.Tensor)]


def _nodes(ep):
    return [(n.name, n.op, str(n.target), str(n.args)) for n in ep.graph.nodes]


@pytest.mark.parametrize("cls, shape", [(MLP, (4, 16)), (Attention, (2, 5, 32)),
                                        (Pieces, (3, 4))])
def test_replayed_results_are_the_traced_ones(cls, shape):
    torch.manual_seed(0)
    m = cls().eval()
    x = torch.randn(*shape)
    first = st.export(m, (x,))
    warm = st.export(m, (x,))  # (its ops replayed from the first's entries)
    assert _nodes(warm) == _nodes(first)
    for ep in (first, warm):
        metas = _metas(ep)
        assert metas
        for meta in metas:
            want = static_meta(meta.static)
            for slot in TensorMeta.__slots__:  # (a traced meta's bounds epoch is the
                if slot != "_bounds_epoch":      # data epoch then: no bounds either way)
                    assert getattr(meta, slot) == getattr(want, slot), slot
            assert meta.bounds is None and want.bounds is None
        got, want = ep.module()(x), m(x)
        torch.testing.assert_close(got, want)
        items = ep.graph.find_nodes(op="call_function", target=operator.getitem)
        assert len(items) == sum(n.target is operator.getitem for n in ep.graph.nodes)


def test_replayed_pieces_at_other_sizes_and_refused_outside():
    m = Pieces()
    spec = {"x": {0: Dim("batch", max=32)}}
    for _ in range(2):
        ep = st.export(m, (torch.randn(3, 4),), dynamic_shapes=spec)
        for n in (0, 1, 9):
            x = torch.randn(n, 4)
            torch.testing.assert_close(ep.module()(x), m(x))
        with pytest.raises(Exception, match="4"):
            ep.module()(torch.randn(3, 5))
