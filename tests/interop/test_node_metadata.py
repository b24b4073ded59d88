"""Every node's ``meta['val']`` of ``ep.to_torch()`` carries torch's metadata beyond the
shape: dtype, strides, ``requires_grad`` and the storage size, compared with
``to_torch(verify=True)`` (torch's kernels) and with ``torch.export.export`` of the same
model.  torch.export records each node's value detached (its tracer snapshots them), so a
node computed from parameters that require grad does not require grad itself; placeholders
keep their flag.  Storage sizes are compared on placeholders only (see fakes.py)."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st


class _Mlp(torch.nn.Module):
    """Parameters requiring grad, exported under grad mode, a no_grad region, an integer
    output (argmax) and a chain of views."""

    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(4, 8)
        self.l2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        h = self.l1(x).relu()
        with torch.no_grad():
            z = h * 2
        a = h.argmax(-1)
        v = h.view(-1, 2, 4).transpose(0, 1)[0].unsqueeze(0)
        return self.l2(h) + z.sum(), a, v, self.l1.weight.t().sum(0)


class _Views(torch.nn.Module):
    def forward(self, x):
        y = x.permute(1, 0, 2)[:, 1:].reshape(-1, 4)
        return y.expand(2, -1, -1).select(0, 1) * 3, x.mean(-1).unsqueeze(-1)


def _hint(v):
    return int(v.node.hint) if isinstance(v, torch.SymInt) else int(v)


def _fields(t, storage):
    return ([_hint(s) for s in t.shape], t.dtype, [_hint(s) for s in t.stride()],
            t.requires_grad, _hint(t.untyped_storage().nbytes()) if storage else None)


def _tensors(graph):
    """Each tensor's fields; the storage size of placeholders only (the fast path leaves
    an intermediate value of symbolic sizes on an empty storage: see fakes.py)."""
    out = {}
    for node in graph.nodes:
        val = node.meta.get("val")
        parts = val if isinstance(val, (tuple, list)) else [val]
        for i, p in enumerate(parts):
            if isinstance(p, torch.Tensor):
                out[(node.name, i)] = _fields(p, node.op == "placeholder")
    return out


def _compare(mine, theirs):
    shared = sorted(mine.keys() & theirs.keys())
    wrong = [(k, mine[k], theirs[k]) for k in shared if mine[k] != theirs[k]]
    assert not wrong, "\n".join(f"{k}: ours {a} torch {b}" for k, a, b in wrong)
    return len(shared)


_CASES = [(_Mlp, (5, 4), 2), (_Views, (3, 5, 4), 3)]


def _convert(model, shape, lo):
    torch.manual_seed(0)
    m, x = model(), torch.randn(*shape)
    ep = st.export(m, (x,), dynamic_shapes={"x": {0: st.Dim("b", min=lo, max=64)}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", st.ConversionWarning)
        return m, x, ep.to_torch(verify=False), ep.to_torch(verify=True)


@pytest.mark.parametrize("model, shape, lo", _CASES)
def test_node_values_are_torchs_kernels_on_every_field(model, shape, lo):
    _, _, fast, verified = _convert(model, shape, lo)
    mine = _tensors(fast.graph)
    assert mine == _tensors(verified.graph)
    for node in fast.graph.nodes:
        val = node.meta.get("val")
        if node.op == "call_function" and isinstance(val, torch.Tensor):
            assert not val.requires_grad, node.name  # (torch.export's: detached)
    params = [n for n in fast.graph.nodes if n.name.startswith("p_")]
    assert all(n.meta["val"].requires_grad for n in params)


@pytest.mark.slow
@pytest.mark.parametrize("model, shape, lo", _CASES)
def test_node_values_are_torch_exports_on_every_field(model, shape, lo):
    m, x, fast, _ = _convert(model, shape, lo)
    te = torch.export.export(m, (x,), dynamic_shapes={"x": {0: torch.export.Dim(
        "b", min=lo, max=64)}})
    assert _compare(_tensors(fast.graph), _tensors(te.graph)) >= 6
