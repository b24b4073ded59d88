"""A later ``to_torch()`` of a static program whose every value an earlier conversion kept
(``interop/plan.py: settled``) builds its nodes outside the fake mode, the Python
dispatcher and the size-oblivious setting: its program is the first conversion's, runs
as eager does, refuses what ``ep.module()`` refuses, and torch's tools use it alike."""

import warnings

import pytest
import torch

import safetrace as st
from safetrace import Dim
from safetrace.interop import torch_export


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(6, 8), torch.nn.Linear(8, 3)
        self.register_buffer("scale", torch.full((3,), 0.5))

    def forward(self, x, y):
        return (self.b(torch.relu(self.a(x))) * self.scale).softmax(-1), x + y


def _entries(monkeypatch) -> list:
    """Calls of the conversion's fake-mode entry, counted (conversions on their fast path:
    verification off, as by default outside these tests)."""
    monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0")
    seen = []
    real = torch_export.entered

    def counting(mode):
        seen.append(mode)
        return real(mode)
    monkeypatch.setattr(torch_export, "entered", counting)
    return seen


def _text(tep) -> tuple:
    vals = [(n.name, tuple(v.shape), tuple(v.stride()), v.dtype, v.requires_grad)
            for n in tep.graph.nodes if isinstance(v := n.meta.get("val"), torch.Tensor)]
    return (tep.graph_module.code, str(tep.graph_signature), str(tep.range_constraints),
            str(tep.module_call_graph), tuple(vals))


def test_a_static_program_settles_and_converts_alike(monkeypatch):
    seen = _entries(monkeypatch)
    model = _Net().eval()
    x, y = torch.randn(4, 6), torch.randn(4, 6)
    ep = st.export(model, (x, y))
    teps = [ep.to_torch()]
    first = len(seen)  # (the first conversion may propagate: it keeps the values)
    teps += [ep.to_torch() for _ in range(2)]
    assert len(seen) == first  # the later ones need no mode
    assert len({_text(t) for t in teps[1:]} | {_text(teps[0])}) == 1
    last = teps[-1]
    mode = last.graph.find_nodes(op="placeholder")[0].meta["val"].fake_mode
    vals = [n.meta["val"] for n in last.graph.nodes
            if isinstance(n.meta.get("val"), torch.Tensor)]
    assert all(v.fake_mode is mode for v in vals)
    inputs = [n.meta["val"] for n in last.graph.find_nodes(op="placeholder")]
    storages = {v.untyped_storage()._cdata for v in inputs}
    assert len(storages) == len(inputs)  # (x and y of one form: a storage each)
    for t in (last.module(), last.run_decompositions().module()):
        for got, want in zip(t(x, y), model(x, y)):
            torch.testing.assert_close(got, want)
        with pytest.raises(Exception):
            t(torch.randn(5, 6), y)
        with pytest.raises(Exception):
            t(torch.randn(4, 6, 1), y)
    with pytest.raises(Exception):
        ep.module()(torch.randn(5, 6), y)


class _Parts(torch.nn.Module):
    """Parts of multi-output ops (``operator.getitem`` nodes: an attention's q, k, v)."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)

    def forward(self, x):
        q, k, v = self.qkv(x).split(8, -1)
        a, b = x.unbind(0)
        return (q * k).softmax(-1) @ v.transpose(0, 1), a - b, x.chunk(2, 1)[1]


def test_parts_of_multi_output_ops_settle(monkeypatch):
    seen = _entries(monkeypatch)
    model = _Parts().eval()
    x = torch.randn(2, 8)
    ep = st.export(model, (x,))
    teps = [ep.to_torch()]
    first = len(seen)
    teps += [ep.to_torch() for _ in range(2)]
    assert len(seen) == first  # the later ones need no mode
    assert len({_text(t) for t in teps}) == 1
    for t in (teps[-1].module(), teps[-1].run_decompositions().module()):
        for got, want in zip(t(x), model(x)):
            torch.testing.assert_close(got, want)
        with pytest.raises(Exception):
            t(torch.randn(3, 8))


def test_a_dynamic_program_still_propagates(monkeypatch):
    seen = _entries(monkeypatch)
    model = _Net().eval()
    ep = st.export(model, (torch.randn(4, 6), torch.randn(4, 6)),
                   dynamic_shapes=({0: Dim("n", min=1, max=64)}, {0: Dim("n", min=1, max=64)}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        teps = [ep.to_torch() for _ in range(2)]
    assert len(seen) == 2
    for n in (1, 2, 7):
        x, y = torch.randn(n, 6), torch.randn(n, 6)
        for got, want in zip(teps[-1].module()(x, y), model(x, y)):
            torch.testing.assert_close(got, want)
    with pytest.raises(Exception):
        teps[-1].module()(torch.randn(65, 6), torch.randn(65, 6))
