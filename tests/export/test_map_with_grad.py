"""A program with a ``map`` whose body computes a size from data (a per-item ``x[x > 0]``
padded to a fixed count) runs from ``ep.module()`` with grad enabled and weights that
require grad, as eager does: same values, outputs requiring grad exactly when eager's do,
same gradients (torch's eager ``map`` first traces such a body for autograd and stops on
the count; docs/deploying.md#batched-detectors).  ``st.map`` is that step as a Python loop
eagerly and one map node when exported.
"""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from tests.helpers import assert_close

AUTO = st.Dim.AUTO
K = 4


class TorchMap(torch.nn.Module):
    """torch's map under export, a loop eagerly (torch's eager map compiles its body)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(K, K)

    def one(self, row: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.lin(row)
        kept = y[y > 0]                       # how many: data
        n = kept.shape[0]
        return F.pad(kept, (0, K - n)), torch.arange(K) < n

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if torch.compiler.is_exporting():
            from torch._higher_order_ops import map as per_item
            return per_item(self.one, x)
        outs = [self.one(r) for r in x]
        return torch.stack([o[0] for o in outs]), torch.stack([o[1] for o in outs])


class StMap(TorchMap):
    """The same step through st.map: no is_exporting() branch."""

    def one(self, row: torch.Tensor, scale: torch.Tensor) -> dict[str, torch.Tensor]:
        v, valid = super().one(row * scale)
        return {"v": v, "valid": valid}

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> dict[str, torch.Tensor]:
        return st.map(self.one, x, scale)


def _x(b: int, seed: int) -> torch.Tensor:
    return torch.randn(b, K, generator=torch.Generator().manual_seed(seed))


def _same_with_grads(model, mod, args):
    """Values, requires_grad and the weight's gradient of the program as eager's."""
    want, got = model(*args), mod(*args)
    want_v, got_v = (want[0], got[0]) if isinstance(want, tuple) else (want["v"], got["v"])
    for w, g in zip(pytree_leaves(want), pytree_leaves(got)):
        assert_close(g, w)
        assert g.requires_grad == w.requires_grad
    assert got_v.requires_grad  # the weights require grad: so do the values, as eager's
    (gw,) = torch.autograd.grad(got_v.sum() * 3, mod.lin.weight)
    (ww,) = torch.autograd.grad(want_v.sum() * 3, model.lin.weight)
    assert_close(gw, ww)


def pytree_leaves(v):
    return list(v.values()) if isinstance(v, dict) else list(v)


def test_a_torch_map_with_a_count_from_data_runs_with_grad_as_eager():
    model = TorchMap()
    assert torch.is_grad_enabled() and model.lin.weight.requires_grad
    ep = st.export(model, (_x(2, 0),), dynamic_shapes={"x": {0: AUTO}})
    assert any(n.target is torch.ops.higher_order.map_impl for n in ep.graph.nodes)
    mod = ep.module()
    for b, seed in ((1, 1), (2, 2), (3, 3)):
        _same_with_grads(model, mod, (_x(b, seed),))
    with torch.no_grad():  # (as before: nothing requires grad)
        got, want = mod(_x(3, 4)), model(_x(3, 4))
        assert_close(got[0], want[0]) and not got[0].requires_grad
    with pytest.raises(st.InputMismatchError, match=r"x.shape\[0\] = 0"):
        mod(_x(0, 5))  # (torch's map refuses an empty xs; the program says so first)


@pytest.mark.slow
def test_torch_exports_the_same_map_and_runs_it_under_no_grad():
    model = TorchMap()
    tep = torch.export.export(model, (_x(2, 0),),
                              dynamic_shapes={"x": {0: torch.export.Dim.AUTO}})
    with torch.no_grad():
        x = _x(3, 6)
        assert_close(tep.module()(x)[0], model(x)[0])


@pytest.mark.slow  # (a conversion with a map: several seconds)
def test_to_torch_says_its_map_of_sizes_from_data_runs_only_without_grad():
    model = TorchMap()
    ep = st.export(model, (_x(2, 0),), dynamic_shapes={"x": {0: AUTO}})
    with pytest.warns(st.ConversionWarning, match=r"the map .*per_item.*makes a size from "
                                                  r"data(.|\n)*torch\.no_grad\(\)"):
        converted = ep.to_torch().module()
    with torch.no_grad():
        for b, seed in ((1, 16), (3, 17)):
            got, want = converted(_x(b, seed)), model(_x(b, seed))
            assert_close(got[0], want[0]) and assert_close(got[1], want[1])
    with pytest.raises(RuntimeError, match="concrete integers"):  # what the warning says
        converted(_x(2, 18))


class PlainBody(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(K, K)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return st.map(lambda row: self.lin(row).relu(), x)


@pytest.mark.slow  # (a conversion with a map: several seconds)
def test_to_torch_of_a_map_without_sizes_from_data_trains_as_eager_and_says_nothing():
    model = PlainBody()
    ep = st.export(model, (_x(2, 0),), dynamic_shapes={"x": {0: AUTO}})
    with warnings.catch_warnings():
        warnings.simplefilter("error", st.ConversionWarning)
        converted = ep.to_torch().module()
    weight = dict(converted.named_parameters())["lin.weight"]
    for b, seed in ((1, 19), (4, 20)):
        got, want = converted(_x(b, seed)), model(_x(b, seed))
        assert_close(got, want)
        (gw,) = torch.autograd.grad(got.sum(), weight)
        (ww,) = torch.autograd.grad(want.sum(), model.lin.weight)
        assert_close(gw, ww)


def test_st_map_loops_eagerly_and_exports_one_map_node():
    model, s = StMap(), torch.tensor(1.5)
    x = _x(3, 7)
    want = {k: torch.stack([model.one(r, s)[k] for r in x]) for k in ("v", "valid")}
    got = model(x, s)
    assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want)
    ep = st.export(model, (_x(2, 0), s), dynamic_shapes={"x": {0: AUTO}, "scale": None})
    assert sum(n.target is torch.ops.higher_order.map_impl for n in ep.graph.nodes) == 1
    mod = ep.module()
    for b, seed in ((1, 8), (2, 9), (3, 10)):
        _same_with_grads(model, mod, (_x(b, seed), s))
    with pytest.raises(st.ExportError, match="xs has length 0 along dim 0"):
        model(_x(0, 11), s)
    with pytest.raises(st.InputMismatchError, match=r"x.shape\[0\] = 0"):
        mod(_x(0, 11), s)


class WritesItsOwn(TorchMap):
    """A body that writes its own intermediates in place, one through a slice bounded by a
    size handed to the body (torchvision's batching of images: ``batched[i, :h, :w]
    .copy_(img)``): the weights it reads are not written, so autograd goes through them,
    as in eager."""

    def one(self, row: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = torch.zeros((2, K))
        z[:, : min(row.shape[0] - 3, K)] = 0.5
        y = self.lin(row[:K])
        y.clamp_(min=-0.5)
        return super().one(y + z.sum(0))  # (lin again on the written intermediate)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return st.map(self.one, x)


def test_a_body_writing_its_intermediates_keeps_autograd_through_the_weights():
    model = WritesItsOwn()
    ep = st.export(model, (torch.randn(2, 6),), dynamic_shapes={"x": {0: AUTO, 1: AUTO}})
    mod = ep.module()
    for b, w, seed in ((1, 4, 13), (3, 9, 14), (2, 6, 15)):
        x = torch.randn(b, w, generator=torch.Generator().manual_seed(seed))
        _same_with_grads(model, mod, (x,))
    assert all(p.requires_grad for p in mod.parameters())


class CondWritesItsOwn(torch.nn.Module):
    """The same write (a slice bounded by a size) in a cond branch."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(K, K)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def written(x: torch.Tensor) -> torch.Tensor:
            z = torch.zeros(2, K)
            z[:, : min(x.shape[0], K)] = 0.5
            return self.lin(x) + z.sum()

        if torch.compiler.is_exporting():
            return torch.cond(x.sum() > 0, written, lambda x: self.lin(x) * 2, (x,))
        # (eager torch.cond compiles its branches, ~10 s: the same choice in Python)
        return written(x) if x.sum() > 0 else self.lin(x) * 2


def test_a_cond_branch_writing_its_intermediates_keeps_autograd_through_the_weights():
    model = CondWritesItsOwn()
    ep = st.export(model, (_x(3, 16),), dynamic_shapes={"x": {0: AUTO}})
    assert any(n.target is torch.ops.higher_order.cond for n in ep.graph.nodes)
    mod = ep.module()
    for x in (_x(2, 17).abs(), -_x(1, 18).abs(), _x(5, 19).abs(), _x(0, 20)):
        want, got = model(x), mod(x)
        assert_close(got, want)
        assert got.requires_grad and want.requires_grad
        (gw,) = torch.autograd.grad(got.sum(), mod.lin.weight)
        (ww,) = torch.autograd.grad(want.sum(), model.lin.weight)
        assert_close(gw, ww)
