"""Running or converting ep.module() never changes the exported model: written state gets
its own storage, parameters their own objects, load_state_dict copies into fresh storage."""

from __future__ import annotations

import torch
from torch import nn

import safetrace as st
from safetrace import Dim


def _snapshot(m):
    return {k: v.detach().clone() for k, v in m.state_dict().items()}


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_batch_norm_training_updates_only_the_program_state():
    m = nn.BatchNorm1d(4).train()
    before = _snapshot(m)
    ep = st.export(m, (torch.randn(8, 4),), dynamic_shapes={"input": {0: Dim.AUTO}})
    x = torch.randn(6, 4)
    prog = ep.module()
    expected = nn.BatchNorm1d(4).train()
    torch.testing.assert_close(prog(x), expected(x))
    assert _same(_snapshot(m), before)
    torch.testing.assert_close(prog.running_mean, expected.running_mean)
    torch.testing.assert_close(prog.running_var, expected.running_var)
    assert set(ep.graph_signature.buffers_to_mutate.values()) >= {"running_mean", "running_var"}


class FrozenWrite(nn.Module):
    def __init__(self, requires_grad):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3), requires_grad=requires_grad)

    def forward(self, x):
        with torch.no_grad():
            self.w.mul_(2)
        return x + self.w


def test_parameter_written_in_place_gets_its_own_copy():
    for requires_grad in (False, True):
        m = FrozenWrite(requires_grad)
        ep = st.export(m, (torch.ones(3),))
        prog = ep.module()
        torch.testing.assert_close(prog(torch.ones(3)), torch.full((3,), 3.0))
        torch.testing.assert_close(prog(torch.ones(3)), torch.full((3,), 5.0))
        torch.testing.assert_close(m.w.detach(), torch.ones(3))


def test_conversions_and_load_state_dict_leave_the_model_alone():
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    before = _snapshot(m)
    ep = st.export(m, (torch.randn(2, 4),))
    ep.module().half()
    ep.module().to(torch.float64)
    other = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    prog = ep.module()
    prog.load_state_dict(other.state_dict())
    assert _same(_snapshot(m), before) and m[0].weight.dtype == torch.float32
    x = torch.randn(2, 4)
    torch.testing.assert_close(prog(x), other(x))
    # the program's state is the program's (torch's rule): a fresh module runs on the
    # weights loaded into another module of it; the model keeps its own
    torch.testing.assert_close(ep.module()(x), other(x))
    assert _same(_snapshot(m), before)


class MaskedConv(nn.Conv2d):
    """PixelCNN's MaskedConv2d: `self.weight.data *= self.mask` in forward."""

    def __init__(self):
        super().__init__(3, 4, 3, padding=1)
        self.register_buffer("mask", (torch.rand_like(self.weight) > 0.5).float())

    def forward(self, x):
        self.weight.data *= self.mask
        return super().forward(x)


def test_assigning_data_in_forward_writes_only_the_program_copy():
    m = MaskedConv()
    before = _snapshot(m)
    ep = st.export(m, (torch.randn(1, 3, 8, 8),),
                   dynamic_shapes=({0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO},))
    assert _same(_snapshot(m), before)
    ref = MaskedConv()
    ref.load_state_dict(m.state_dict())
    x = torch.randn(2, 3, 5, 7)
    torch.testing.assert_close(ep.module()(x), ref(x))
    assert _same(_snapshot(m), before)
