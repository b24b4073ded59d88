"""``ep.to_torch()`` of a program that reads the same 0-d tensor twice (``.item()``, then
``__index__`` as a size) with a write to *another* tensor in between: safetrace numbers
the second read anew (any write starts a new data epoch), torch's fake tensor remembers
the first read of a tensor its version counter says is unchanged; the conversion takes
torch's symbol for ours.  A read after a write to the tensor itself (or a view of it) is a
new value on both sides."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st
from tests.helpers import assert_close


class _OtherWritten(torch.nn.Module):
    def forward(self, x, t):
        n = t.item()
        y = x.clone()
        y.add_(1)  # a write between the reads, to another tensor
        return torch.ones(x.shape[0], t + 1) * n, y


class _SelfWritten(torch.nn.Module):
    def forward(self, x, t):
        s = t.clone()
        n = s.item()
        s.view(()).add_(1)  # through a view: s holds another value now
        return torch.ones(x.shape[0], s) * n, x[:s]


def _export(model):
    x, t = torch.randn(4, 3), torch.tensor(2)
    return st.export(model, (x, t), dynamic_shapes={"x": {0: st.Dim("b")}, "t": None})


def _convert(ep):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", st.ConversionWarning)
        return ep.to_torch(verify=True)


def _items(gm):
    return [n for n in gm.graph.nodes if n.target is torch.ops.aten.item.default]


def _matches_eager(model, ep, tep):
    for b, v in [(0, 0), (1, 3), (5, 1), (3, 0)]:
        args = (torch.randn(b, 3), torch.tensor(v))
        want = model(*args)
        assert_close(ep.module()(*args), want)
        assert_close(tep.module()(*args), want)


def test_a_tensor_read_twice_converts_with_one_torch_symbol():
    model = _OtherWritten()
    ep = _export(model)
    tep = _convert(ep)
    tep.validate()
    # torch's fake tensor gives the second read the first one's symbol
    assert len({str(n.meta["val"]) for n in _items(tep.graph_module)}) == 1
    _matches_eager(model, ep, tep)


@pytest.mark.slow  # (torch.export's first trace: ~3 s)
def test_torch_export_runs_the_same_model_alike():
    model = _OtherWritten()
    ep = _export(model)
    ref = torch.export.export(model, (torch.randn(4, 3), torch.tensor(2)), dynamic_shapes={
        "x": {0: torch.export.Dim("b")}, "t": None})  # torch supports it too
    _matches_eager(model, ep, ref)


def test_a_read_after_a_write_to_a_view_is_a_new_value():
    model = _SelfWritten()
    ep = _export(model)
    tep = _convert(ep)
    tep.validate()
    assert len({str(n.meta["val"]) for n in _items(tep.graph_module)}) == 2
    _matches_eager(model, ep, tep)
