"""torch.vmap in forward (issue 21): over a batch of known size the exported program applies
the function to each slice and stacks the results, as vmap computes; over a dynamic batch
(torch's test_vmap) it is one map over the batch.  Compared with torch.export's program
and with eager."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import safetrace as st
from torch.export import Dim

from tests.export.dropin_check import same


class PairSum(nn.Module):
    def forward(self, x, y):
        return torch.vmap(lambda a, b: (a * b).sum(0))(x, y)


class Shared(nn.Module):
    """One argument mapped, one shared; the results stacked along dim 1."""

    def forward(self, x, w):
        return torch.vmap(lambda a, m: a @ m, in_dims=(0, None), out_dims=1)(x, w)


class Nested(nn.Module):
    def forward(self, x):
        rows = torch.func.vmap(lambda r: torch.vmap(lambda v: v * 2 + 1)(r))
        return rows(x)


@pytest.mark.parametrize("model, args, torch_exports", [
    (PairSum, (torch.randn(3, 4), torch.randn(3, 4)), True),
    # (torch.export 2.13 fails both: "We found a fake tensor in the exported program
    # constant's list")
    (Shared, (torch.randn(3, 2, 4), torch.randn(4, 5)), False),
    (Nested, (torch.randn(2, 3, 4),), False),
], ids=["pairs", "in_dims and out_dims", "nested"])
def test_vmap_over_a_static_batch_matches_torch_export(model, args, torch_exports) -> None:
    m = model()
    ref = torch.export.export(m, args) if torch_exports else None
    ours = st.export(m, args)
    conv = ours.to_torch()
    for _ in range(2):
        fresh = tuple(torch.randn(a.shape) for a in args)
        want = m(*fresh)
        same(ours.module()(*fresh), want)
        same(conv.module()(*fresh), want)
        if ref is not None:
            same(ref.module()(*fresh), want)
    with pytest.raises(st.InputMismatchError):  # the batch is static
        ours.module()(*(torch.randn(a.shape[0] + 1, *a.shape[1:]) for a in args))


# -- a dynamic batch: one map over it (torch's test_vmap) ----------------------------------
@pytest.mark.parametrize("model, args, spec, torch_exports", [
    (PairSum, (torch.randn(3, 4), torch.randn(3, 4)), ({0: Dim.DYNAMIC}, {0: Dim.DYNAMIC}),
     True),
    (Shared, (torch.randn(3, 2, 4), torch.randn(4, 5)), ({0: Dim.DYNAMIC}, None), False),
    (Nested, (torch.randn(2, 3, 4),), ({0: Dim.DYNAMIC},), False),
], ids=["pairs", "in_dims and out_dims", "nested"])
def test_vmap_over_a_dynamic_batch_matches_torch_export(model, args, spec,
                                                        torch_exports) -> None:
    m = model()
    ref = torch.export.export(m, args, dynamic_shapes=spec) if torch_exports else None
    ours = st.export(m, args, dynamic_shapes=spec)
    conv = ours.to_torch()
    for n in (1, 70):  # (70: past the unrolled path's limit)
        fresh = tuple(torch.randn(n, *a.shape[1:]) if s else torch.randn(a.shape)
                      for a, s in zip(args, spec))
        want = m(*fresh)
        same(ours.module()(*fresh), want)
        same(conv.module()(*fresh), want)
        if ref is not None:
            same(ref.module()(*fresh), want)
    with pytest.raises(st.InputMismatchError):  # the map needs a slice (eager: empty)
        ours.module()(*(torch.randn(0, *a.shape[1:]) if s else a for a, s in zip(args, spec)))


@pytest.mark.slow  # (torch's run_decompositions of a map: ~1 s)
def test_vmap_over_a_dynamic_batch_survives_torchs_decompositions() -> None:
    args = (torch.randn(3, 4), torch.randn(3, 4))
    conv = st.export(PairSum(), args, dynamic_shapes=({0: Dim.DYNAMIC}, {0: Dim.DYNAMIC}))
    decomposed = conv.to_torch().run_decompositions({})
    for n in (1, 6):
        fresh = (torch.randn(n, 4), torch.randn(n, 4))
        same(decomposed.module()(*fresh), PairSum()(*fresh))


def test_vmap_over_a_large_static_batch_is_one_map() -> None:
    x = torch.randn(100, 3)
    ep = st.export(Nested(), (x.reshape(100, 3, 1),))
    assert "map_impl" in ep.graph_module.code
    same(ep.to_torch().module()(x.reshape(100, 3, 1)), Nested()(x.reshape(100, 3, 1)))


def test_vmap_outside_an_export_is_torchs_own() -> None:
    st.export(PairSum(), (torch.randn(2, 3), torch.randn(2, 3)))
    assert torch.vmap(lambda a: a * 2)(torch.ones(2)).tolist() == [2.0, 2.0]
    assert torch.vmap.__module__.startswith("torch")


class WritesOutside(nn.Module):
    """An unbatched write inside the function: eager's vmap does it once (acc == 1), the
    slices would do it once each."""

    def forward(self, x):
        acc = torch.zeros(3)

        def f(r):
            acc.add_(1)
            return r * 2
        return torch.vmap(f)(x), acc


class Random(nn.Module):
    def __init__(self, randomness: str) -> None:
        super().__init__()
        self.randomness = randomness

    def forward(self, x):
        return torch.vmap(lambda r: r + torch.rand(3), randomness=self.randomness)(x)


class ReadsData(nn.Module):
    def forward(self, x):
        return torch.vmap(lambda r: r * (r > 0).sum().item())(x)


@pytest.mark.parametrize("spec", [None, ({0: Dim.DYNAMIC},)], ids=["static", "dynamic"])
@pytest.mark.parametrize("model, what", [
    (WritesOutside(), "writes (a tensor )?in place"),
    (Random("error"), "random op"),
    (Random("same"), "random op"),
    (ReadsData(), "reads tensor data"),
])
def test_what_vmap_does_once_or_refuses_is_refused(model, what, spec) -> None:
    """What a per-slice application cannot reproduce is refused: eager's vmap writes an
    unbatched tensor once, draws one random value for the batch with 'same' and raises
    for random ops ('error') and data reads; over a dynamic batch (one map) too."""
    x = torch.randn(4, 3)
    with pytest.raises(st.UnsupportedOpError, match=what):
        st.export(model, (x,), dynamic_shapes=spec)


def test_vmap_with_different_randomness_draws_per_slice() -> None:
    ep = st.export(Random("different"), (torch.randn(4, 3),))
    out = ep.module()(torch.zeros(4, 3))
    assert out.shape == (4, 3) and not torch.equal(out[0], out[1])


class ReturnsItsInput(nn.Module):
    def forward(self, x):
        y = torch.vmap(lambda r: r)(x)  # eager: y views x
        x.add_(1)
        return y * 1


class WritesAViewOut(nn.Module):
    def forward(self, x):
        y = torch.vmap(lambda r: r[0:2])(x)  # eager: y views x
        y.add_(1)
        return x * 1


@pytest.mark.parametrize("spec", [None, ({0: Dim.DYNAMIC},)], ids=["static", "dynamic"])
@pytest.mark.parametrize("model", [ReturnsItsInput, WritesAViewOut])
def test_a_write_through_a_view_vmap_returns_is_refused(model, spec) -> None:
    """eager's vmap returns a view where the function returns a view of its input; the
    stacked slices (or the map's results) are a new tensor, so a later write to either
    side is refused (before: the write did not show through, a wrong result)."""
    with pytest.raises(st.UnsupportedOpError, match="an output of torch.vmap"):
        st.export(model(), (torch.zeros(3, 4),), dynamic_shapes=spec)


def test_a_write_to_what_vmap_computed_afresh_is_kept() -> None:
    class Fresh(nn.Module):
        def forward(self, x):
            y = torch.vmap(lambda r: r * 2)(x)
            y.add_(1)
            return y, x * 1
    ep = st.export(Fresh(), (torch.randn(3, 4),))
    x = torch.randn(3, 4)
    same(ep.module()(x), Fresh()(x))


class WritesAReshapeOfAClone(nn.Module):
    def forward(self, x):
        v = torch.vmap(lambda r: r.flip(0), in_dims=2)(x).clone()  # (vmap's strides kept)
        v.permute(3, 0, 1, 2).reshape(v.shape[-1], -1).mul_(2)  # (eager: a view of v)
        return v


class WritesItsContiguous(nn.Module):
    def forward(self, x):
        v = torch.vmap(lambda r: r.flip(0), in_dims=2)(x)
        v.contiguous().mul_(2)  # (eager: a copy; the program's map output: v itself)
        return v


class WritesARowMajorCopy(nn.Module):
    def forward(self, x):
        v = torch.vmap(lambda r: r.flip(0), in_dims=2)(x).clone(
            memory_format=torch.contiguous_format)
        v.permute(3, 0, 1, 2).reshape(v.shape[-1], -1).mul_(2)
        return v


@pytest.mark.parametrize("model", [WritesAReshapeOfAClone, WritesItsContiguous])
def test_a_write_through_a_reshape_of_vmaps_strides_is_refused(model) -> None:
    """Whether a reshape (or contiguous()) is a view depends on the strides, and eager's
    vmap gives its output strides the program's map does not: the write reached the
    tensor in one and not the other (fuzz seed 1814, a wrong result before)."""
    with pytest.raises(st.UnsupportedOpError, match="reshape .or flatten, or contiguous"):
        st.export(model(), (torch.randn(3, 3, 4, 4),), dynamic_shapes=({0: Dim.DYNAMIC},))


def test_a_write_through_a_reshape_of_a_row_major_copy_is_kept() -> None:
    ep = st.export(WritesARowMajorCopy(), (torch.randn(3, 3, 4, 4),),
                   dynamic_shapes=({0: Dim.DYNAMIC},))
    for n in (1, 2, 5):
        x = torch.randn(n, 3, 4, 4)
        same(ep.module()(x), WritesARowMajorCopy()(x))


class ViewsItsMovedBatch(nn.Module):
    def forward(self, x):
        v = torch.vmap(lambda r: r.flip(0), in_dims=1)(x).clone()  # (vmap's strides kept)
        return v.movedim(0, -1).view(-1)  # (eager: row-major again, the program's not)


class SplitsItsBatch(nn.Module):
    def forward(self, x):
        v = torch.vmap(lambda r: r * 2, in_dims=1)(x)
        return v.view(v.shape[0], 1, 2, -1), v.view(v.shape)  # (splits: any strides view)


def test_a_view_merging_dims_of_vmaps_strides_is_refused() -> None:
    """Whether eager's view merges two dims depends on their strides, which eager's vmap
    chooses and the program's map does not reproduce: the program raised "view size is
    not compatible" where eager ran (fuzz18 views run, crash_after_checks)."""
    with pytest.raises(st.UnsupportedOpError, match="merges dims of an output of torch.vmap"):
        st.export(ViewsItsMovedBatch(), (torch.randn(1, 7),),
                  dynamic_shapes=({0: Dim("d0", min=1, max=4)},))


def test_a_view_splitting_dims_of_vmaps_strides_is_kept() -> None:
    ep = st.export(SplitsItsBatch(), (torch.randn(4, 3),),
                   dynamic_shapes=({1: Dim("b", min=1)},))
    for shape in ((4, 1), (4, 5), (4, 3)):
        x = torch.randn(shape)
        same(ep.module()(x), SplitsItsBatch()(x))


# -- a memory format inside vmap is the batched tensor's (torch's test_vmap_to_assert) -----
class ChannelsLastSlices(nn.Module):
    """channels_last on 3-d slices: eager's vmap applies it to the 4-d batched tensor."""

    def forward(self, x, y):
        per = lambda a, b: ((a * b).to("cpu", memory_format=torch.channels_last)  # noqa: E731
                            + 1).sum(dim=0)
        return torch.vmap(per)(x, y).sum(dim=0)


class CastChannelsLast(nn.Module):
    def forward(self, x):
        return torch.vmap(lambda a: a.double(memory_format=torch.channels_last) * 2)(x)


@pytest.mark.parametrize("model", [ChannelsLastSlices, CastChannelsLast],
                         ids=["to", "double"])
def test_channels_last_of_a_slice_inside_vmap(model) -> None:
    # (two tensors: torch.export's program of one tensor passed twice is wrong on two)
    args = tuple(torch.randn(3, 4, 2, 5) for _ in range(2 if model is ChannelsLastSlices
                                                         else 1))
    m = model()
    ref = torch.export.export(m, args)
    conv = st.export(m, args).to_torch()
    for _ in range(2):
        fresh = tuple(torch.randn(a.shape) for a in args)
        want = m(*fresh)
        same(conv.module()(*fresh), want)
        same(ref.module()(*fresh), want)


class ChannelsLastTooManyDims(nn.Module):
    def forward(self, x):
        return torch.vmap(lambda a: a.to(memory_format=torch.channels_last))(x)


def test_channels_last_on_a_slice_of_the_wrong_rank_is_refused_as_eager_refuses() -> None:
    x = torch.randn(2, 3, 4, 5, 6)  # slices of 4 dims: the batched tensor has 5
    with pytest.raises(RuntimeError, match="rank 4"):
        ChannelsLastTooManyDims()(x)
    with pytest.raises(st.ExportError, match="rank 4"):
        st.export(ChannelsLastTooManyDims(), (x,))
