"""Indexing and Python composites replayed across exports (trace/memo.py): ``x[index]``
keyed by its tensors' metas and the index's ints, slices, None and Ellipsis (sizes by
their expressions, with the environment's state), ``F.dropout`` bound by name.  A later
export of the same model and spec gives the same program without asking the rules; a
changed range or dtype is another key, and the rules are asked again."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from tests.helpers import matches_eager
from tests.trace.caches import StaticCache, fills_as_eager_and_refuses_when_full
from tests.trace.rules_asked import RulesAsked

aten = torch.ops.aten


class _Indexed(torch.nn.Module):
    def forward(self, x, mask):
        return (x[:, 0] * 2, x[..., None] + 1, x[1:] - 1, x[:, 1:3].sum(-1), x[:], x[...],
                mask.to(x.dtype)[:, 0], x[None, :, None] * 3)  # (two views: each replayed)


class _NotReplayed(torch.nn.Module):
    """Indices that are not one plain op: a size the env is asked about, two ops, a
    bool mask (its values are numbered, trace/numbering.py); traced each time."""

    def forward(self, x, mask):
        n = x.shape[0]
        return x[n - 1] * 2, x[:n - 1, :, ::2] + 1, mask[:, None, :].float()


_INDEX_OPS = (aten.select.int, aten.slice.Tensor, aten.unsqueeze.default, aten.alias.default)


def _args(rows, dtype=torch.float32):
    return (torch.randn(rows, 4, 6).to(dtype), torch.rand(rows, 6) > 0.5)


def _spec(**dim):
    n = st.Dim("n", min=2, **dim)
    return {"x": {0: n}, "mask": {0: n}}


def test_an_index_is_replayed_in_another_export_of_the_same_spec():
    model = _Indexed()
    with RulesAsked(*_INDEX_OPS) as rules:
        first = st.export(model, _args(3), dynamic_shapes=_spec())
        asked = rules.asked
        again = st.export(model, _args(3), dynamic_shapes=_spec())
        assert asked >= 9 and rules.asked == asked  # (every index replayed)
        st.export(model, _args(3), dynamic_shapes=_spec(max=9))
        assert rules.asked == 2 * asked  # (another range: every rule asked again)
        st.export(model, _args(3, torch.float64), dynamic_shapes=_spec())
        assert rules.asked == 3 * asked  # (another dtype: another key)
    assert again.graph_module.code == first.graph_module.code
    for a, b in zip(first.graph.nodes, again.graph.nodes):
        assert a.meta.get("stack_trace") == b.meta.get("stack_trace")
    for rows in (2, 3, 7):
        matches_eager(again, model, _args(rows))
    for bad in (_args(1), (torch.randn(3, 4, 6), torch.rand(4, 6) > 0.5)):
        with pytest.raises(st.InputMismatchError):
            again.module()(*bad)


def test_an_index_that_is_not_one_plain_op_is_traced_again():
    model = _NotReplayed()
    programs = [st.export(model, _args(3), dynamic_shapes=_spec()) for _ in range(2)]
    assert programs[0].graph_module.code == programs[1].graph_module.code
    for rows in (2, 5):
        args = _args(rows)
        for got, want in zip(programs[1].module()(*args), model(*args)):
            torch.testing.assert_close(got, want)


class _Steps(torch.nn.Module):
    def forward(self, x):
        return x[::2] + 0, x[1::2] + 0, x[0] * x[-1]


def test_indices_that_differ_only_in_kind_or_step_are_not_mixed_up():
    """``x[::2]`` and ``x[1::2]``, ``x[0]`` and ``x[-1]``: each its own key; a second
    export (replayed) computes what eager computes."""
    model = _Steps()
    for _ in range(2):
        ep = st.export(model, (torch.randn(6, 3),))
        x = torch.randn(6, 3)
        for got, want in zip(ep.module()(x), model(x)):
            torch.testing.assert_close(got, want)


class _Writes(torch.nn.Module):
    def forward(self, x):
        y = x * 1
        y[:, 0] = 5.0  # (the view written is replayed; the write is recorded each time)
        y[1:, None] += 1
        y[..., -1] = y[:, 1]
        return y


def test_writes_through_replayed_views_reach_the_tensor():
    model = _Writes()
    for _ in range(2):
        ep = st.export(model, (torch.randn(4, 3),), dynamic_shapes={"x": {0: st.Dim("n")}})
        for rows in (0, 1, 5):
            x = torch.randn(rows, 3)
            torch.testing.assert_close(ep.module()(x), model(x))


class _Dropouts(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(x) * 2, F.dropout(x, 0.2, training=False) + 1


def test_dropout_is_replayed_in_another_export():
    """F.dropout bound by name is one plain call (trace/composites.py): replayed in a
    later export of the same spec, asked again for another range."""
    model = _Dropouts().eval()
    spec = {"x": {0: st.Dim("n")}}
    with RulesAsked(aten.dropout.default) as rule:
        first = st.export(model, (torch.randn(3, 4),), dynamic_shapes=spec)
        assert rule.asked == 2
        again = st.export(model, (torch.randn(3, 4),), dynamic_shapes=spec)
        assert rule.asked == 2
        st.export(model, (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("n", max=8)}})
        assert rule.asked == 4
    assert again.graph_module.code == first.graph_module.code
    for rows in (0, 1, 5):
        matches_eager(again, model, (torch.randn(rows, 4),))


class _Casts(torch.nn.Module):
    def forward(self, x):
        t = x.transpose(0, 1)
        return (x.to(torch.float64) * 2, x.half().float() + 1, t.contiguous() * 3,
                x.to("cpu", torch.float64, copy=True) - 1)


_CAST_OPS = (aten.to.dtype, aten.to.device, aten.contiguous.default)


def test_casts_and_contiguous_are_replayed_in_another_export():
    """The ops the cast and ``contiguous`` handlers record go through the same keys
    (memo.emit): replayed in a later export, asked again for another range or dtype."""
    model = _Casts()
    spec = {"x": {0: st.Dim("n")}}
    with RulesAsked(*_CAST_OPS) as rules:
        first = st.export(model, (torch.randn(3, 4),), dynamic_shapes=spec)
        asked = rules.asked
        again = st.export(model, (torch.randn(3, 4),), dynamic_shapes=spec)
        assert asked >= 5 and rules.asked == asked
        st.export(model, (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("n", max=5)}})
        assert rules.asked == 2 * asked
        st.export(model, (torch.randn(3, 4, dtype=torch.float64),), dynamic_shapes=spec)
        assert rules.asked > 2 * asked
    assert again.graph_module.code == first.graph_module.code
    for rows in (0, 1, 6):
        x = torch.randn(rows, 4)
        for got, want in zip(again.module()(x), model(x)):
            torch.testing.assert_close(got, want)
            assert got.dtype == want.dtype and got.is_contiguous() == want.is_contiguous()


def test_an_arange_is_replayed_with_the_values_it_spans():
    """``torch.arange(n)`` (no tensor argument) is keyed by its arguments: replayed in a
    later export with the span it noted, so that program checks the cache's bound too."""
    spec = ({1: st.Dim("n", min=1)},)
    with RulesAsked(aten.arange.default) as rule:
        first = st.export(StaticCache(aranged=True), (torch.randn(1, 3, 2),), dynamic_shapes=spec)
        asked = rule.asked
        again = st.export(StaticCache(aranged=True), (torch.randn(1, 3, 2),), dynamic_shapes=spec)
        assert asked == 2 and rule.asked == asked
        st.export(StaticCache(aranged=True), (torch.randn(1, 3, 2),), dynamic_shapes=({1: st.Dim("n", min=2)},))
        assert rule.asked == 2 * asked
    assert again.graph_module.code == first.graph_module.code
    assert "s0 + u0 <= 8" in str(again)
    fills_as_eager_and_refuses_when_full(again, StaticCache(aranged=True))


class _FirstRead(torch.nn.Module):
    def forward(self, x):
        return x.expand(x.shape[0], 2, 2) * 2  # (the expand reads n's node first)


def test_a_call_that_reads_a_size_first_is_replayed_with_its_node():
    """The expand's node argument ``n`` is made by the call itself (``sym_size``): the call
    is remembered, and a replay in the next export makes that node again, in the same
    place (the same program)."""
    spec = {"x": {0: st.Dim("n")}}
    with RulesAsked(aten.expand.default) as rule:
        first = st.export(_FirstRead(), (torch.randn(3, 2, 2),), dynamic_shapes=spec)
        again = st.export(_FirstRead(), (torch.randn(3, 2, 2),), dynamic_shapes=spec)
        assert rule.asked == 1
    assert str(again.graph) == str(first.graph)
    assert "sym_size" in str(again.graph)
    for rows in (0, 1, 4):
        x = torch.randn(rows, 2, 2)
        torch.testing.assert_close(again.module()(x), _FirstRead()(x))
