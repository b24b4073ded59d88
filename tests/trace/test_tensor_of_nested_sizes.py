"""``torch.as_tensor`` / ``torch.tensor`` of a nested list of sizes: deformable attention's
``spatial_shapes = torch.as_tensor([(h, w) for each level], dtype=torch.long)`` (Deformable
DETR, Mask2Former, RT-DETR-style encoders) with ``level_start_index`` from its cumulative
products. Sizes are not tensor data: the leaves are computed in the graph, stacked and viewed
as the nesting (was refused as a data read; torch.export exports it). A tensor inside the
data is still a data read; a ragged nesting raises eager's own error."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


class _Levels(torch.nn.Module):
    def forward(self, a, b):
        shapes = [(a.shape[2], a.shape[3]), (b.shape[2], b.shape[3])]
        spatial = torch.as_tensor(shapes, dtype=torch.long, device=a.device)
        start = torch.cat((spatial.new_zeros((1,)), spatial.prod(1).cumsum(0)[:-1]))
        flat = torch.cat([a.flatten(2), b.flatten(2)], 2)
        ratios = torch.tensor([[a.shape[2] / 2, 1.0], [b.shape[0], 2]])   # (floats, nested)
        return spatial, start, flat.sum(1) * spatial.prod(1).sum(), ratios


def _inputs(n, h, w, h2, w2):
    g = torch.Generator().manual_seed(n * 1000 + h * 37 + w)
    return (torch.randn(n, 3, h, w, generator=g), torch.randn(n, 3, h2, w2, generator=g))


def _spec():
    n = Dim("n", min=0, max=8)
    return ({0: n, 2: Dim("h", min=1, max=64), 3: Dim("w", min=1, max=64)},
            {0: n, 2: Dim("h2", max=32), 3: Dim("w2", max=32)})


def _same(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        torch.testing.assert_close(g, e)


def test_nested_sizes_become_a_tensor_in_the_graph():
    model = _Levels()
    ep = st.export(model, _inputs(2, 8, 6, 4, 3), dynamic_shapes=_spec())
    for sizes in [(2, 8, 6, 4, 3), (1, 1, 1, 5, 7), (0, 5, 9, 2, 1), (3, 64, 1, 32, 0),
                  (8, 2, 3, 1, 1)]:
        args = _inputs(*sizes)
        _same(ep.module()(*args), model(*args))


def test_out_of_space_is_refused_before_running():
    ep = st.export(_Levels(), _inputs(2, 8, 6, 4, 3), dynamic_shapes=_spec())
    with pytest.raises(st.InputMismatchError):
        ep.module()(*_inputs(2, 65, 6, 4, 3))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 3, 8, 6), torch.randn(3, 3, 4, 3))   # n differs


def test_auto_dims_and_a_tensor_inside_stays_a_data_read():
    model = _Levels()
    ep = st.export(model, _inputs(2, 8, 6, 4, 3),
                   dynamic_shapes=({0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO},
                                   {0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO}))
    args = _inputs(1, 9, 2, 3, 1)
    _same(ep.module()(*args), model(*args))

    class WithTensor(torch.nn.Module):
        def forward(self, x):
            return torch.tensor([[x.shape[0], x.sum()]])

    with pytest.raises(st.DataDependentError):
        st.export(WithTensor(), (torch.randn(3, 2),), dynamic_shapes=({0: Dim("n")},))


def test_ragged_nesting_raises_eagers_error():
    class Ragged(torch.nn.Module):
        def forward(self, x):
            return torch.tensor([[x.shape[0]], [1, 2]])

    with pytest.raises(ValueError, match="expected sequence of length 1"):
        Ragged()(torch.randn(3, 2))
    with pytest.raises(ValueError, match="expected sequence of length 1"):
        st.export(Ragged(), (torch.randn(3, 2),), dynamic_shapes=({0: Dim("n")},))
