"""Results that are new row-major tensors whatever their operands' layout: ``linear``
(addmm or matmul of a reshape, viewed back) and ``x.new_ones(size)`` and its kin.  Their
strides are known, so a view of them answers ``stride()`` (Longformer's ``_chunk``:
``as_strided`` with sizes and strides computed from the view's own), and the program
matches eager at other sizes; where the strides are not known the query is still refused."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


def _chunk(t):  # Longformer's _chunk: overlapping chunks of 8 rows, by as_strided
    t = t.view(t.size(0), t.size(1) // 8, 8, t.size(2))
    size, stride = list(t.size()), list(t.stride())
    size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
    return t.as_strided(size=size, stride=stride)


class _LinearOfTranspose(torch.nn.Module):
    """(b, s, 16) -> transpose -> Linear (a strided input) -> heads -> chunks."""

    def __init__(self) -> None:
        super().__init__()
        self.q = torch.nn.Linear(16, 16)

    def forward(self, x):
        h = x.transpose(0, 1)                        # (s, b, 16), a view
        s, b = h.shape[0], h.shape[1]
        q = self.q(h).view(s, b, 2, 8).transpose(0, 1)     # (b, s, 2, 8)
        q = q.transpose(1, 2).reshape(b * 2, s, 8)   # (a view: b and the heads merge)
        return _chunk(q) * 2


class _NewOnesOfView(torch.nn.Module):
    """``m.new_ones(size)`` of a view ``m`` of unknown layout: a new row-major tensor
    (Longformer's mask: ``float_mask.new_ones(size=float_mask.size())``)."""

    def forward(self, x):  # (b, s, 4)
        m = torch.einsum("bsi,bti->bst", x, x)           # (einsum: strides not known)
        b, s = m.shape[0], m.shape[1]
        ones = m.new_ones((b, s, 2, 4)).transpose(1, 2)  # (b, 2, s, 4)
        return _chunk(ones.reshape(b * 2, s, 4)) * m.sum()


def _spec():
    return ({0: Dim("b", min=2, max=8), 1: 8 * Dim("k", min=2, max=8)},)


@pytest.mark.parametrize("model", [_LinearOfTranspose, _NewOnesOfView])
def test_stride_of_a_view_of_a_fresh_result_feeds_as_strided(model):
    torch.manual_seed(0)
    m = model().eval()
    ep = st.export(m, (torch.randn(3, 24, 16 if model is _LinearOfTranspose else 4),),
                   dynamic_shapes=_spec())
    width = 16 if model is _LinearOfTranspose else 4
    for b, s in ((2, 16), (5, 64), (8, 40), (2, 32)):
        x = torch.randn(b, s, width)
        torch.testing.assert_close(ep.module()(x), m(x))
    with pytest.raises(st.InputMismatchError):   # b = 1: outside the declared space
        ep.module()(torch.randn(1, 16, width))
    with pytest.raises(st.InputMismatchError):   # one chunk of 8: k = 1, outside too
        ep.module()(torch.randn(3, 8, width))


def test_linear_result_is_row_major_for_strided_inputs():
    """``.contiguous()`` of a linear of a transposed input records no copy (eager returns
    the tensor itself) and ``is_contiguous()`` answers True, at every size."""

    class M(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 6)

        def forward(self, x):
            y = self.lin(x.transpose(0, 1))
            return y * 2 if y.is_contiguous() else y * 3

    m = M().eval()
    ep = st.export(m, (torch.randn(3, 5, 4),),
                   dynamic_shapes=({0: Dim("a", min=0, max=9), 1: Dim("c", min=0, max=9)},))
    for a, c in ((0, 2), (1, 1), (2, 0), (7, 9), (1, 5)):
        x = torch.randn(a, c, 4)
        torch.testing.assert_close(ep.module()(x), m(x))


class _StrideOfUnknown(torch.nn.Module):
    """``stride()`` of a transpose of einsum's result (einsum may return a permuted
    tensor): its strides are not known, the query is refused."""

    def forward(self, x):
        y = torch.einsum("bij,bjk->bik", x, x).transpose(1, 2)
        return y.as_strided(y.size(), y.stride()) + 1


class _StrideOfDimMaybeOne(torch.nn.Module):
    """Longformer's chunks where the chunk count may be 1 (a sequence of 8): the view's
    stride on that dim is eager's ``computeStride`` one at every size (small_strides.py)."""

    def __init__(self) -> None:
        super().__init__()
        self.q = torch.nn.Linear(16, 16)

    def forward(self, x):
        h = x.transpose(0, 1)
        s, b = h.shape[0], h.shape[1]
        q = self.q(h).view(s, b, 2, 8).transpose(0, 1).transpose(1, 2)
        return _chunk(q.reshape(b * 2, s, 8))


def test_stride_of_a_dim_that_may_be_one_is_eager_s():
    model = _StrideOfDimMaybeOne().eval()
    spec = ({0: Dim("b", min=2, max=8), 1: 8 * Dim("k", min=1, max=8)},)
    ep = st.export(model, (torch.randn(3, 24, 16),), dynamic_shapes=spec)
    for b, s in ((2, 8), (5, 8), (3, 40)):
        x = torch.randn(b, s, 16)
        torch.testing.assert_close(ep.module()(x), model(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 12, 16))


@pytest.mark.parametrize("model,spec,says", [
    (_StrideOfUnknown, ({0: Dim("b", min=2, max=8)},), "asks for the memory layout"),
])
def test_stride_where_the_layout_is_not_known_is_refused(model, spec, says):
    x = torch.randn(3, 8, 8) if model is _StrideOfUnknown else torch.randn(3, 24, 16)
    with pytest.raises(st.UnsupportedOpError, match=r"stride\(\)") as info:
        st.export(model().eval(), (x,), dynamic_shapes=spec)
    assert info.match(says)
