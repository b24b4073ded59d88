"""``x.stride()`` of a view on its dims of size 0 or 1 (safetrace/trace/small_strides.py):
eager's rules for such dims (``computeStride`` of a view, ``unsqueeze``'s ``size * stride``,
``expand``'s 0) replayed on symbolic sizes where they give one answer at every size of the
declared space; refused where they do not.  Numerics against eager at sizes where the dims
are 1, and the rules themselves against eager on many random layouts (0- and 1-size dims)."""

from __future__ import annotations

import random

import pytest
import torch

import safetrace as st
from safetrace import Dim
from safetrace.trace import small_strides as S


class _Chunked(torch.nn.Module):
    """Longformer's ``_chunk``: overlapping chunks made with ``as_strided`` from the
    view's own ``stride()``; here the count of chunks and the batch may be 1."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x):  # (s, b, 16), s a multiple of 8
        s, b = x.shape[0], x.shape[1]
        q = self.lin(x).view(s, b, 2, 8).transpose(0, 1).transpose(1, 2)
        q = q.reshape(b * 2, s, 8)  # (a view: b and the heads merge)
        q = q.view(b * 2, s // 8, 8, 8)
        size, stride = list(q.size()), list(q.stride())
        size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
        return q.as_strided(size=size, stride=stride) * 2


def test_chunks_of_a_view_whose_count_may_be_one():
    model = _Chunked().eval()
    k, b = Dim("k", min=1, max=8), Dim("b", min=1, max=8)
    ep = st.export(model, (torch.randn(24, 3, 16),), dynamic_shapes=({0: 8 * k, 1: b},))
    for s, n in ((8, 1), (8, 3), (16, 1), (64, 5), (40, 8)):
        x = torch.randn(s, n, 16)
        torch.testing.assert_close(ep.module()(x), model(x))
    with pytest.raises(st.InputMismatchError):  # k = 9: outside the declared space
        ep.module()(torch.randn(72, 3, 16))
    with pytest.raises(st.InputMismatchError):  # b = 0
        ep.module()(torch.randn(16, 0, 16))


class _Unsqueezed(torch.nn.Module):
    """A dim of size 1 put before a transposed dim: eager's stride is ``size * stride``
    of the dim it lands before (not 1), read and used."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):  # (b, n, 4)
        y = self.lin(x).transpose(0, 1).unsqueeze(1)  # (n, 1, b, 4)
        st0, st1 = y.stride(0), y.stride(1)
        return y.as_strided((y.shape[0], y.shape[2]), (st0, st1 // y.shape[2]))


def test_unsqueeze_stride_read_and_used():
    model = _Unsqueezed().eval()
    ep = st.export(model, (torch.randn(3, 5, 4),),
                   dynamic_shapes=({0: Dim("b", min=1, max=9), 1: Dim("n", min=1, max=9)},))
    for b, n in ((1, 1), (1, 4), (4, 1), (2, 7)):
        x = torch.randn(b, n, 4)
        torch.testing.assert_close(ep.module()(x), model(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(10, 2, 4))


class _Expanded(torch.nn.Module):
    """``expand`` of a dim that may be 1 to a size that may be 1: eager's stride there is
    the input's where the sizes are equal and 0 where they are not."""

    def forward(self, x, y):  # (b, 1) expanded to y's (b, m)
        e = (x * 2).t().t().expand(x.shape[0], y.shape[1])
        return torch.tensor(e.stride()) + y.sum()


def test_expand_of_a_size_that_may_be_one_is_guarded():
    """Whether ``m`` is 1 decides the stride (the example's answer is a guard, as eager's
    branch): sizes on the example's side match eager, m = 1 is refused before running
    (or, split there, matches too)."""
    model = _Expanded()
    ep = st.export(model, (torch.randn(3, 1), torch.randn(3, 4)),
                   dynamic_shapes=({0: Dim("b")}, {0: Dim("b"), 1: Dim("m", min=1, max=8)}))
    for b, m in ((2, 4), (5, 8), (1, 2)):
        args = (torch.randn(b, 1), torch.randn(b, m))
        torch.testing.assert_close(ep.module()(*args), model(*args))
    for b in (1, 3):
        args = (torch.randn(b, 1), torch.randn(b, 1))
        try:
            got = ep.module()(*args)
        except st.InputMismatchError:
            continue
        torch.testing.assert_close(got, model(*args))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 1), torch.randn(3, 9))


def _random_layout(rng, sizes):
    t = torch.empty(sizes)
    nd = t.dim()
    if nd >= 2 and rng.random() < .6:
        p = list(range(nd))
        rng.shuffle(p)
        t = t.permute(p)
    if nd and rng.random() < .4:
        d = rng.randrange(nd)
        t = t[(slice(None),) * d + (slice(None, None, 2),)]
    if rng.random() < .3:
        t = t.unsqueeze(rng.randint(0, t.dim()))
    return t


def test_view_rule_agrees_with_eager_on_random_layouts():
    rng = random.Random(0)
    views = 0
    for _ in range(3000):
        t = _random_layout(rng, [rng.choice([1, 1, 2, 3, 4]) for _ in range(rng.randint(0, 4))])
        numel, new = t.numel(), []
        for f in (2, 3, 2, 2, 3):
            if numel % f == 0 and rng.random() < .6:
                new.append(f)
                numel //= f
        new.append(numel)
        for _ in range(rng.randint(0, 2)):
            new.insert(rng.randint(0, len(new)), 1)
        rng.shuffle(new)
        try:
            want = list(t.view(new).stride())
            views += 1
        except RuntimeError:
            want = None  # (eager's view fails: so does the rule)
        assert S.view_strides(tuple(t.shape), list(t.stride()), tuple(new)) == want
    assert views > 1000


class _Node:
    def __init__(self, *args):
        self.args, self.kwargs = (None, *args), {}


def test_view_op_rules_agree_with_eager_on_random_layouts():
    """unsqueeze, expand, squeeze, slice, select, transpose, permute, t on layouts with
    dims of size 0 and 1: where a rule answers, it is eager's stride."""
    rng = random.Random(1)
    checked = 0
    for _ in range(3000):
        nd = rng.randint(1, 4)
        t = _random_layout(rng, [rng.choice([0, 1, 1, 2, 3]) for _ in range(nd)])
        nd, sh, sts = t.dim(), tuple(t.shape), list(t.stride())
        op = rng.choice(["unsqueeze", "expand", "squeeze", "slice", "select", "transpose",
                         "permute"])
        d = rng.randrange(nd)
        if op == "unsqueeze":
            d = rng.randint(-nd - 1, nd)
            r, node, rule = t.unsqueeze(d), _Node(d), S._unsqueeze
        elif op == "expand":
            tgt = [rng.choice([1, 2]) for _ in range(rng.randint(0, 2))] + \
                [rng.choice([1, 2]) if s == 1 else s for s in sh]
            r, node, rule = t.expand(tgt), _Node(tgt), S._expand
        elif op == "squeeze":
            r, node, rule = t.squeeze(d), _Node(d), S._squeeze
        elif op == "slice":
            step = rng.randint(1, 3)
            r = torch.ops.aten.slice.Tensor(t, d, 0, None, step)
            node, rule = _Node(d, 0, None, step), S._slice
        elif op == "select":
            if sh[d] == 0:
                continue
            r, node, rule = t.select(d, 0), _Node(d, 0), S._select
        elif op == "transpose":
            e = rng.randrange(nd)
            r, node, rule = t.transpose(d, e), _Node(d, e), S._transpose
        else:
            p = list(range(nd))
            rng.shuffle(p)
            r, node, rule = t.permute(p), _Node(p), S._permute
        got = rule(sh, [(v, True) for v in sts], node, tuple(r.shape))
        assert got is not None and [v for v, _ in got] == list(r.stride()), \
            (op, sh, sts, node.args)
        assert all(full for _, full in got)
        checked += 1
    assert checked > 2500


class _MaskChunks(torch.nn.Module):
    """Longformer's mask path: a (b, s) mask as (b, s, 1, 1) floats (``type_as`` keeps
    its layout), transposed (contiguous to ``is_contiguous()``: only dims of size 1
    moved), merged and chunked, its strides read."""

    def forward(self, mask, x):  # (b, s), s a multiple of 8
        m = (mask != 0)[:, :, None, None]
        f = m.type_as(x).masked_fill(m, -1.0)
        b, s = mask.shape
        q = f.transpose(1, 2).reshape(b, s, 1).view(b, s // 8, 8, 1)
        size, stride = list(q.size()), list(q.stride())
        size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
        return q.as_strided(size=size, stride=stride) + x.sum()


def test_strides_through_a_mask_of_size_one_dims():
    model = _MaskChunks()
    b, k = Dim("b", min=1, max=8), Dim("k", min=1, max=8)
    ex = (torch.randint(0, 2, (2, 16)), torch.randn(3))
    ep = st.export(model, ex, dynamic_shapes=({0: b, 1: 8 * k}, None))
    for n, s in ((1, 8), (3, 8), (1, 24), (4, 40)):
        args = (torch.randint(0, 2, (n, s)), torch.randn(3))
        torch.testing.assert_close(ep.module()(*args), model(*args))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randint(0, 2, (2, 12)), torch.randn(3))


class _PaddedChunks(torch.nn.Module):
    """Longformer's value path: a padded (``F.pad``, constant) view, a new row-major
    tensor, chunked with its own strides; and its mask path: a mask read through a
    strided ``select`` (its batch dim's stride known where the batch is >= 2 only),
    unsqueezed, filled, transposed and chunked."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x, ext):  # (b, s, 8), (b, s, s); s a multiple of 8
        b, s = x.shape[0], x.shape[1]
        v = self.lin(x).view(b, s, 2, 4).transpose(1, 2).reshape(b * 2, s, 4)
        p = torch.nn.functional.pad(v, (0, 0, 4, 4), value=-1)
        st0, st1, _ = p.stride()
        out = p.as_strided((b * 2, s // 8, 16, 4), (st0, 8 * st1, st1, 1)).sum((2, 3))
        m = (ext[:, 0, :] != 0)[:, :, None, None]
        f = m.type_as(x).masked_fill(m, -3.0)
        q = f.transpose(1, 2).reshape(b, s, 1).view(b, s // 8, 8, 1)
        size, stride = list(q.size()), list(q.stride())
        size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
        return out, q.as_strided(size=size, stride=stride)


def test_strides_of_a_padded_view_and_a_mask_read_through_select():
    model = _PaddedChunks().eval()
    b, k = Dim("b", min=1, max=8), Dim("k", min=1, max=8)
    ex = (torch.randn(2, 16, 8), torch.randint(0, 2, (2, 16, 16)).float())
    ep = st.export(model, ex, dynamic_shapes=({0: b, 1: 8 * k}, {0: b, 1: 8 * k, 2: 8 * k}))
    for n, s in ((1, 8), (3, 8), (1, 24), (4, 40)):
        args = (torch.randn(n, s, 8), torch.randint(0, 2, (n, s, s)).float())
        for got, want in zip(ep.module()(*args), model(*args)):
            torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 12, 8), torch.randn(2, 12, 12))


class _FilledStrides(torch.nn.Module):
    """``masked_fill`` (out of place) of a transposed input: a contiguous copy, filled
    (LED's mask is filled from an expanded one); its layout asked, its strides read."""

    def forward(self, x, m):  # (n, b), (b, n)
        y = x.t().masked_fill(m, 0.5)
        y = y + 1 if y.is_contiguous() else y - 1
        return y.as_strided((y.shape[1], y.shape[0]), (y.stride(1), y.stride(0)))


def test_strides_of_masked_fill_of_a_transpose():
    model = _FilledStrides()
    n, b = Dim("n", min=1, max=8), Dim("b", min=1, max=8)
    ex = (torch.randn(3, 2), torch.rand(2, 3) < .5)
    ep = st.export(model, ex, dynamic_shapes=({0: n, 1: b}, {0: b, 1: n}))
    for i, j in ((1, 1), (1, 4), (5, 1), (7, 3)):
        args = (torch.randn(i, j), torch.rand(j, i) < .5)
        torch.testing.assert_close(ep.module()(*args), model(*args))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(9, 2), torch.rand(2, 9) < .5)


def test_chunks_under_dim_auto():
    """``Dim.AUTO``: the sizes' >= 1 and the view's branches become checks of the inputs
    where the facts do not decide them (as eager's branches would be); every size the
    program accepts matches eager."""
    model = _Chunked().eval()
    ep = st.export(model, (torch.randn(24, 3, 16),),
                   dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},))
    ran = 0
    for s, n in ((16, 2), (64, 5), (40, 8), (8, 1), (8, 3), (16, 1)):
        x = torch.randn(s, n, 16)
        try:
            got = ep.module()(x)
        except st.InputMismatchError:
            continue
        torch.testing.assert_close(got, model(x))
        ran += 1
    assert ran >= 3
