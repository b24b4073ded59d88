"""A refused input's FailedCondition says whether eager would raise there too (a requirement
of the code or an op) or computes another branch (the one answer the trace took)."""

import pytest
import torch

import safetrace as st
from safetrace import Dim


class Branch(torch.nn.Module):
    def forward(self, x, v):
        if len(x) == len(v):
            return x + v
        return x.sum() + v.sum()


class Squeeze(torch.nn.Module):
    def forward(self, x):
        return x.squeeze() * 2


class Checked(torch.nn.Module):
    def forward(self, x, y):
        torch._check(x.shape[0] * x.shape[0] <= y.shape[0])
        return x.sum() + y.sum()


def _refusal(ep, *args):
    with pytest.raises(st.InputMismatchError) as info:
        ep.module()(*args)
    return str(info.value)


def test_branch_guard_says_eager_takes_the_other_side():
    D = Dim.DYNAMIC
    ep = st.export(Branch(), (torch.ones(3), torch.ones(4)), dynamic_shapes=({0: D}, {0: D}))
    for n, m in [(0, 1), (1, 5), (2, 3), (7, 4)]:  # the traced side: numerics as eager's
        x, v = torch.randn(n), torch.randn(m)
        torch.testing.assert_close(ep.module()(x, v), Branch()(x, v))
    msg = _refusal(ep, torch.ones(4), torch.ones(4))
    Branch()(torch.ones(4), torch.ones(4))  # (eager does not raise there)
    assert "the inputs violate `x.shape[0] != v.shape[0]`, required (from `if len(x) == " \
           "len(v):` at test_condition_kinds.py:13)" in msg
    assert "Eager does not raise here: the program was exported for one answer of this " \
           "condition at test_condition_kinds.py:13" in msg
    assert "eager raises" not in msg.lower()
    assert "out = torch.cond(x.shape[0] != v.shape[0], true_fn, false_fn, (x, v))" in msg


def test_specialization_names_a_range_that_keeps_the_condition():
    ep = st.export(Squeeze(), (torch.ones(3, 4),), dynamic_shapes=({0: Dim("d0", max=6)},))
    msg = _refusal(ep, torch.ones(1, 4))
    assert "Eager does not raise here" in msg
    fix = "dynamic_shapes={'x': {0: Dim('x_0', min=2, max=6)}}"
    assert fix in msg
    # the fix pastes: that range keeps the condition, and no size in it is refused
    ep2 = st.export(Squeeze(), (torch.ones(3, 4),), dynamic_shapes=eval(fix[15:]))
    assert not ep2.contract.conditions
    for n in (2, 6):
        x = torch.randn(n, 4)
        torch.testing.assert_close(ep2.module()(x), Squeeze()(x))
    with pytest.raises(st.InputMismatchError):
        ep2.module()(torch.ones(1, 4))


def test_requirement_says_eager_raises_too():
    D = Dim.DYNAMIC
    ep = st.export(Checked(), (torch.ones(3), torch.ones(10)), dynamic_shapes=({0: D}, {0: D}))
    for n, m in [(0, 0), (1, 1), (2, 4), (3, 12)]:
        x, y = torch.randn(n), torch.randn(m)
        torch.testing.assert_close(ep.module()(x, y), Checked()(x, y))
    msg = _refusal(ep, torch.ones(4), torch.ones(10))
    with pytest.raises(RuntimeError):  # eager raises there too
        Checked()(torch.ones(4), torch.ones(10))
    assert "the inputs violate `x.shape[0]*x.shape[0] <= y.shape[0]`, required (from " \
           "`torch._check(" in msg
    assert "Eager raises for these inputs too" in msg
    assert "Eager does not raise" not in msg and "torch.cond" not in msg


def test_kind_survives_save_and_load(tmp_path):
    D = Dim.DYNAMIC
    ep = st.export(Branch(), (torch.ones(3), torch.ones(4)), dynamic_shapes=({0: D}, {0: D}))
    st.save(ep, tmp_path / "p.st")
    back = st.load(tmp_path / "p.st")
    assert "Eager does not raise here" in _refusal(back, torch.ones(4), torch.ones(4))


class Broadcast(torch.nn.Module):
    def forward(self, x, y):
        return x.reshape(-1) + y.reshape(-1)


def test_broadcast_says_where_eager_raises_and_where_it_broadcasts():
    D = Dim.DYNAMIC
    ep = st.export(Broadcast(), (torch.ones(2, 3), torch.ones(3, 2)),
                   dynamic_shapes=({0: D, 1: D}, {0: D, 1: D}))
    for xs, ys in [((0, 5), (5, 0)), ((1, 4), (2, 2)), ((3, 3), (1, 9))]:
        x, y = torch.randn(xs), torch.randn(ys)
        torch.testing.assert_close(ep.module()(x, y), Broadcast()(x, y))
    with pytest.raises(RuntimeError):  # 6 against 4: eager raises too
        Broadcast()(torch.ones(2, 3), torch.ones(2, 2))
    msg = _refusal(ep, torch.ones(2, 3), torch.ones(2, 2))
    assert "Eager raises too where these sizes differ and none is 1 (broadcasting); where " \
           "one is 1 it broadcasts, which the program was not traced for." in msg
    assert "Eager does not raise" not in msg
