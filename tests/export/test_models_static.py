"""Real model shapes with static sizes: MLP, conv net, attention block; state handling."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
import pytest

import safetrace as st
from tests.helpers import matches_eager, placeholders, rejects, targets
from tests.models import MLP, Attention, ConvNet


@pytest.mark.parametrize("make,shape", [
    (MLP, (4, 16)), (ConvNet, (2, 3, 16, 16)), (Attention, (2, 5, 32)),
])
def test_model_exports_and_matches_eager(make, shape):
    torch.manual_seed(0)
    model = make().eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(*shape)
    x_copy = x.clone()
    ep = st.export(model, (x,))
    assert torch.equal(x, x_copy)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    matches_eager(ep, model, (torch.randn(*shape),))
    bad = list(shape)
    bad[0] += 1
    rejects(ep, (torch.randn(*bad),), match=r"x.shape\[0\]: expected")
    sig = ep.graph_signature
    assert set(sig.parameters) == {k for k, _ in model.named_parameters()}
    assert sig.user_inputs == ["x"]
    assert set(ep.state_dict) == set(model.state_dict())
    for node in ep.graph.nodes:
        if node.op != "output":
            assert "val" in node.meta and "stack_trace" in node.meta


def test_conv_net_graph_uses_aten_units():
    ep = st.export(ConvNet().eval(), (torch.randn(2, 3, 16, 16),))
    t = targets(ep)
    for op in ("aten.conv2d.default", "aten.batch_norm.default", "aten.relu.default",
               "aten.max_pool2d.default", "aten.adaptive_avg_pool2d.default",
               "aten.linear.default", "aten.flatten.using_ints"):
        assert op in t, (op, t)


def test_attention_graph():
    ep = st.export(Attention().eval(), (torch.randn(2, 5, 32),))
    t = targets(ep)
    assert "aten.scaled_dot_product_attention.default" in t
    assert "aten.layer_norm.default" in t
    assert "aten.split.Tensor" in t


class InPlace(nn.Module):
    def forward(self, x):
        y = x * 2
        y.add_(1)
        y[:, 0] = 0.0
        y.masked_fill_(y > 3, 3.0)
        return y.relu_()


def test_inplace_on_intermediates():
    ep = st.export(InPlace(), (torch.randn(3, 4),))
    matches_eager(ep, InPlace(), (torch.randn(3, 4),))
    assert "aten.add_.Tensor" in targets(ep)


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(1))
        self.register_buffer("scratch", torch.zeros(3), persistent=False)

    def forward(self, x):
        self.count.add_(1)
        return x + self.count


def test_buffer_mutation_recorded_and_applied():
    m = Counter()
    ep = st.export(m, (torch.randn(3),))
    assert torch.equal(m.count, torch.zeros(1)), "export must not mutate the model"
    assert list(ep.graph_signature.buffers_to_mutate.values()) == ["count"]
    assert "scratch" not in ep.state_dict and "count" in ep.state_dict
    mod = ep.module()
    x = torch.randn(3)
    torch.testing.assert_close(mod(x), x + 1)
    torch.testing.assert_close(mod(x), x + 2)
    assert torch.equal(m.count, torch.zeros(1))


class Reassign(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("state", torch.zeros(2))

    def forward(self, x):
        self.state = self.state + x
        return self.state * 2


def test_buffer_reassignment():
    m = Reassign()
    ep = st.export(m, (torch.ones(2),))
    assert isinstance(m.state, torch.Tensor) and torch.equal(m.state, torch.zeros(2))
    assert type(m.state) is torch.Tensor
    mod = ep.module()
    torch.testing.assert_close(mod(torch.ones(2)), torch.full((2,), 2.0))
    torch.testing.assert_close(mod(torch.ones(2)), torch.full((2,), 4.0))


class DataBranch(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x


class FloatOfTensor(nn.Module):
    def forward(self, x):
        return x * float(x.max())


@pytest.mark.parametrize("model", [DataBranch(), FloatOfTensor()])
def test_data_is_never_read(model):
    with pytest.raises(st.DataDependentError) as info:
        st.export(model, (torch.randn(3),))
    assert "test_models_static.py" in str(info.value)


class DeviceAndFlags(nn.Module):
    def forward(self, x):
        assert torch.compiler.is_exporting() and torch.compiler.is_compiling()
        z = torch.zeros(x.shape[0], device=x.device, dtype=x.dtype)
        with torch.no_grad():
            y = x + z
        return y.to(x.device) + torch.arange(x.shape[0]).float()


def test_device_and_export_flags():
    ep = st.export(DeviceAndFlags(), (torch.randn(4),))
    assert not torch.compiler.is_exporting()
    x = torch.randn(4)
    torch.testing.assert_close(ep.module()(x), x + torch.arange(4).float())


def test_flags_restored_on_failure():
    with pytest.raises(st.DataDependentError):
        st.export(DataBranch(), (torch.randn(3),))
    assert not torch.compiler.is_exporting() and not torch.compiler.is_compiling()


class Constants(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.arange(4.0)  # a plain tensor attribute, not a buffer

    def forward(self, x):
        return x * self.table + torch.tensor([1.0, 2.0, 3.0, 4.0])


def test_constant_tensors_lifted():
    ep = st.export(Constants(), (torch.randn(4),))
    assert "c_table" in placeholders(ep)
    assert ep.graph_signature.lifted_tensor_constants
    matches_eager(ep, Constants(), (torch.randn(4),))


class Indexing(nn.Module):
    def forward(self, x, idx):
        a = x[:3]
        b = x[1, :, None]
        c = x[..., -1]
        d = x[idx]
        e = x[:, [0, 2]]
        return a.sum() + b.sum() + c.sum() + d.sum() + e.sum()


def test_indexing_lowered_to_aten():
    x, idx = torch.randn(5, 4), torch.tensor([0, 3])
    ep = st.export(Indexing(), (x, idx))
    t = targets(ep)
    assert "aten.slice.Tensor" in t and "aten.select.int" in t and "aten.index.Tensor" in t
    matches_eager(ep, Indexing(), (torch.randn(5, 4), torch.tensor([4, 1])))


def test_kwargs_and_tuple_outputs():
    def f(x, *, scale, bias=None):
        return {"out": (x * scale, x.shape[0]), "b": bias}

    ep = st.export(f, (torch.randn(3),), {"scale": 2.0})
    out = ep.module()(torch.ones(3), scale=2.0)
    assert out["b"] is None and out["out"][1] == 3
    torch.testing.assert_close(out["out"][0], torch.full((3,), 2.0))
    rejects(ep, (torch.ones(3),), {"scale": 3.0}, match="scale")


def test_unsupported_output_class():
    class Box:
        pass

    with pytest.raises(st.ExportError, match="Box"):
        st.export(lambda x: Box(), (torch.randn(2),))


def test_shape_error_names_source_line():
    def bad(x, y):
        return x @ y

    with pytest.raises(st.OpShapeError) as info:
        st.export(bad, (torch.randn(2, 3), torch.randn(4, 5)))
    assert "test_models_static.py" in str(info.value)


def test_module_holds_state_under_original_names():
    torch.manual_seed(0)
    model = ConvNet().eval()
    ep = st.export(model, (torch.randn(2, 3, 16, 16),))
    mod = ep.module()
    assert set(mod.state_dict()) == set(model.state_dict())
    other = ConvNet().eval()
    mod.load_state_dict(other.state_dict())
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        torch.testing.assert_close(mod(x), other(x))
    assert mod.to(torch.device("cpu")) is mod


class PythonState(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        self.last_shape = tuple(x.shape)
        return x * 2


def test_python_attributes_restored_after_export():
    m = PythonState()
    st.export(m, (torch.randn(3),))
    assert m.calls == 0 and not hasattr(m, "last_shape")
