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
from safetrace.rules import get_rule
from safetrace.rules.registry import FAMILY

aten = torch.ops.aten


class _Asked:
    """Count the calls of the shape rules of `ops` while installed."""

    def __init__(self, *ops) -> None:
        self.ops, self.asked = ops, 0
        self.originals = [(get_rule(op), FAMILY[op]) for op in ops]

    def __enter__(self) -> _Asked:
        for op, (original, _) in zip(self.ops, self.originals):
            def counting(*a, _original=original, **k):
                self.asked += 1
                return _original(*a, **k)

            st.register_shape_rule(op)(counting)
        return self

    def __exit__(self, *exc) -> None:
        for op, (original, family) in zip(self.ops, self.originals):
            st.register_shape_rule(op)(original)
            FAMILY[op] = family  # (the library's rule again, as docs/ops.md lists it)


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
    with _Asked(*_INDEX_OPS) as rules:
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
        args = _args(rows)
        for got, want in zip(again.module()(*args), model(*args)):
            torch.testing.assert_close(got, want)
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
    with _Asked(aten.dropout.default) as rule:
        first = st.export(model, (torch.randn(3, 4),), dynamic_shapes=spec)
        assert rule.asked == 2
        again = st.export(model, (torch.randn(3, 4),), dynamic_shapes=spec)
        assert rule.asked == 2
        st.export(model, (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("n", max=8)}})
        assert rule.asked == 4
    assert again.graph_module.code == first.graph_module.code
    for rows in (0, 1, 5):
        x = torch.randn(rows, 4)
        for got, want in zip(again.module()(x), model(x)):
            torch.testing.assert_close(got, want)
