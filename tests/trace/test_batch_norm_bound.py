"""``F.batch_norm`` in evaluation is bound onto its one ATen op (its Python body passes
``torch.backends.cudnn.enabled``, which its signature lacks, so it used to be traced through
on every export and never remembered); training, a negative ``eps`` and the cudnn flag keep
eager's behaviour."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim

aten = torch.ops.aten


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.bn1 = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.bn1(y.mean((2, 3)))


def _net(train: bool = False) -> _Net:
    torch.manual_seed(0)
    m = _Net()
    with torch.no_grad():  # (running statistics other than the defaults)
        for bn in (m.bn, m.bn1):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
    return m.train(train)


def _spec():
    return {"x": {0: Dim("b", max=16), 2: Dim("h", min=1, max=32), 3: Dim("w", min=1, max=32)}}


def _batch_norms(ep) -> list:
    return [n for n in ep.graph.nodes if n.target == aten.batch_norm.default]


def test_evaluation_batch_norm_is_one_node_and_matches_eager():
    m = _net()
    ep = st.export(m, (torch.randn(2, 3, 8, 8),), dynamic_shapes=_spec())
    nodes = _batch_norms(ep)
    assert len(nodes) == 2
    assert all(n.args[5] is False and n.args[8] is torch.backends.cudnn.enabled for n in nodes)
    for shape in ((0, 3, 5, 7), (1, 3, 1, 1), (5, 3, 9, 4), (16, 3, 32, 32)):
        x = torch.randn(shape)
        with torch.no_grad():
            torch.testing.assert_close(ep.module()(x), m(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(17, 3, 8, 8))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 4, 8, 8))


def test_the_cudnn_flag_is_read_at_each_export():
    """The flag is part of what a remembered call is keyed by: an export under
    ``cudnn.flags(enabled=False)`` after one without records False, and the next True."""
    m = _net()
    x = torch.randn(2, 3, 8, 8)
    first = st.export(m, (x,), dynamic_shapes=_spec())
    with torch.backends.cudnn.flags(enabled=False):
        off = st.export(m, (x,), dynamic_shapes=_spec())
    again = st.export(m, (x,), dynamic_shapes=_spec())
    assert [n.args[8] for n in _batch_norms(first)] == [True, True]
    assert [n.args[8] for n in _batch_norms(off)] == [False, False]
    assert [n.args[8] for n in _batch_norms(again)] == [True, True]


def test_training_batch_norm_keeps_eagers_batch_size_check():
    """Training: the body's ``_verify_batch_size`` (one value per channel raises) is traced
    as before; the program never computes where eager raises."""
    m = _net(train=True)
    ep = st.export(m, (torch.randn(4, 3, 2, 2),),
                   dynamic_shapes={"x": {0: Dim("b", min=2, max=16)}})
    for b in (2, 3, 16):
        x = torch.randn(b, 3, 2, 2)
        want = _net(train=True)(x)
        torch.testing.assert_close(ep.module()(x), want)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1, 3, 2, 2))


def test_a_negative_eps_raises_as_in_eager():
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.batch_norm(x, torch.zeros(3), torch.ones(3), eps=-1.0)

    x = torch.randn(2, 3)
    with pytest.raises(ValueError, match="eps"):
        M()(x)
    with pytest.raises(Exception, match="eps"):
        st.export(M(), (x,))
