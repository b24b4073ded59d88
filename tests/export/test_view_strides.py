"""Exact strides of views (safetrace/trace/strides.py): the layouts the tracer records
equal torch's meta kernels' (compared through ``to_torch(verify=True)``, which runs
them), ``x.contiguous()`` of a tensor known contiguous records nothing (as eager returns
self and torch.export records nothing: no clone after attention), and answers to layout
questions hold at every size, 0 and 1 included."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from safetrace import Dim


def _gpt2_block(x):  # (b, s, 3 * 64): GPT-2's q/k/v split, 4 heads of 16
    b, s = x.shape[0], x.shape[1]
    q, k, v = x.split(64, 2)
    q, k, v = (t.view(b, s, 4, 16).transpose(1, 2) for t in (q, k, v))
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return o.transpose(1, 2).contiguous().reshape(b, s, 64)


def _rotate_half(t):
    half = t.shape[-1] // 2
    return torch.cat((-t[..., half:], t[..., :half]), dim=-1)


def _llama_block(x, cos):  # (b, s, 64), (b, s, 16): rotary q/k, 2 kv heads for 4
    b, s = x.shape[0], x.shape[1]
    q = x.view(b, s, 4, 16).transpose(1, 2)
    k = x[..., :32].reshape(b, s, 2, 16).transpose(1, 2)
    c = cos.unsqueeze(1)
    q = q * c + _rotate_half(q) * c.sin()
    k = k * c + _rotate_half(k) * c.sin()
    k = k[:, :, None].expand(b, 2, 2, s, 16).reshape(b, 4, s, 16)
    o = F.scaled_dot_product_attention(q, k, k)
    return o.transpose(1, 2).contiguous().view(b, s, 64)


class _Projected(torch.nn.Module):
    """A block on projections of its inputs (new row-major tensors at every run, as a
    model's q/k/v are): its layouts are the same whatever the inputs' strides."""

    def __init__(self, block, sizes):
        super().__init__()
        self.block = block
        self.projs = torch.nn.ModuleList(torch.nn.Linear(n, n) for n in sizes)

    def forward(self, *xs):
        return self.block(*(p(x) for p, x in zip(self.projs, xs)))


def _calls(ep, *names):
    return [n for n in ep.graph_module.graph.nodes
            if n.op == "call_function" and getattr(n.target, "_opname", "") in names]


@pytest.mark.slow
@pytest.mark.parametrize("fn, example", [
    (_gpt2_block, (torch.randn(2, 8, 192),)),
    (_llama_block, (torch.randn(2, 8, 64), torch.randn(2, 8, 16))),
])
def test_no_copy_after_attention_and_eager_results_at_every_size(fn, example):
    s = Dim("s", min=1, max=64)
    spec = tuple({0: Dim("b", min=1, max=8), 1: s} for _ in example)
    fn = _Projected(fn, [a.shape[2] for a in example])
    ep = st.export(fn, example, dynamic_shapes=spec)
    assert not _calls(ep, "contiguous", "clone")
    assert not _calls(ep.to_torch(), "clone")  # (torch.export records none)
    for b, n in ((1, 1), (2, 1), (1, 2), (3, 7), (2, 64)):
        args = tuple(torch.randn(b, n, a.shape[2]) for a in example)
        torch.testing.assert_close(ep.module()(*args), fn(*args))
    with pytest.raises(st.InputMismatchError):
        ep.module()(*(torch.randn(2, 65, a.shape[2]) for a in example))


def _layouts(fn, example):
    """Our layout of every traced value and torch's meta-kernel value of the same node."""
    ep = st.export(fn, example)
    torch_vals = {n.name: n.meta.get("val") for n in ep.to_torch(verify=True).graph.nodes}
    for n in ep.graph_module.graph.nodes:
        ours = n.meta.get("val")
        if hasattr(ours, "st_contig") and isinstance(torch_vals.get(n.name), torch.Tensor):
            yield n.name, ours, torch_vals[n.name]


@pytest.mark.parametrize("fn, example", [
    (_gpt2_block, (torch.randn(2, 8, 192),)),
    (_gpt2_block, (torch.randn(1, 2, 192),)),
    (_llama_block, (torch.randn(2, 8, 64), torch.randn(2, 8, 16))),
    (lambda x: (x.permute(2, 0, 1) * 2 + x.permute(2, 0, 1)[:1], x.unbind(1)[1].t(),
                x.select(2, 3)[::2].unsqueeze(0).squeeze(0), x.expand(2, 3, 4, 5)[1]),
     (torch.randn(3, 4, 5),)),
    (lambda x: (x.transpose(0, 1).reshape(12, 5), x.transpose(1, 2).reshape(3, 20),
                torch.cat([x.transpose(1, 2), x.transpose(1, 2)], 0).sin()),
     (torch.randn(3, 4, 5),)),
])
def test_recorded_layouts_are_torchs_meta_kernels(fn, example):
    seen = 0
    for name, ours, theirs in _layouts(fn, example):
        shape, stride = tuple(theirs.shape), theirs.stride()
        if ours.st_contig is True:
            assert stride == torch.empty(shape).stride(), name
        elif ours.st_contig is not None:
            assert theirs.is_contiguous(), name
        elif ours.st_layout is not None and theirs.numel():
            seen += 1
            for d, (size, a, b) in enumerate(zip(shape, ours.st_layout[0], stride)):
                assert size < 2 or a == b, (name, d, ours.st_layout, stride)
    assert seen


def _contiguity(x):
    y = x.transpose(0, 1)
    z = y.transpose(0, 1)
    w = (y * 2).transpose(0, 1)
    return (x * int(y.is_contiguous()) + int(z.is_contiguous()) * 10 +
            int(w.is_contiguous()) * 100 + z.contiguous().view(-1).sum())


def test_layout_answers_hold_at_every_size():
    ep = st.export(_contiguity, (torch.randn(3, 4),),
                   dynamic_shapes=({0: Dim("a", min=2), 1: Dim("b", min=2)},))
    for shape in ((2, 2), (5, 3), (2, 9)):
        x = torch.randn(shape)
        torch.testing.assert_close(ep.module()(x), _contiguity(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1, 4))


def test_contiguity_of_a_transpose_that_depends_on_a_size_of_one_is_refused():
    # x.t() is contiguous exactly where a dim is 1: not known for a size in [0, inf]
    with pytest.raises(st.UnsupportedOpError, match="memory layout"):
        st.export(lambda x: x * int(x.t().is_contiguous()), (torch.randn(3, 4),),
                  dynamic_shapes=({0: Dim("a"), 1: Dim("b")},))


class _Project(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(6, 6)

    def forward(self, x):
        h = self.proj(x).t().t().contiguous()  # (contiguous at every run: no copy)
        h.add_(1)  # (eager's contiguous() returned the projection itself)
        y = x.t().t().contiguous()  # (an input may come strided: eager copies then)
        return h.view(-1) + y.view(-1)


def test_contiguous_is_the_tensor_itself_where_every_run_has_it_contiguous():
    m = _Project()
    ep = st.export(m, (torch.randn(3, 6),), dynamic_shapes=({0: Dim("n", min=0, max=40)},))
    assert len(_calls(ep, "contiguous")) == 1  # (the input's, kept)
    for x in (torch.randn(0, 6), torch.randn(1, 6), torch.randn(40, 6),
              torch.randn(6, 5).t()):  # (a strided input: eager's copy, not a view error)
        torch.testing.assert_close(ep.module()(x), m(x))


def test_a_view_of_a_split_part_is_decided_without_replaying_the_example(monkeypatch):
    from safetrace.trace import layout

    def no_replay(*a, **k):
        raise AssertionError("replayed")

    monkeypatch.setattr(layout, "_example", no_replay)
    m = _Projected(_gpt2_block, [192])
    ep = st.export(m, (torch.randn(2, 8, 192),),
                   dynamic_shapes=({0: Dim("b", min=1), 1: Dim("s", min=1)},))
    assert not _calls(ep, "contiguous", "clone")
    for x in (torch.randn(1, 3, 192), torch.randn(2, 1, 192)):
        torch.testing.assert_close(ep.module()(x), m(x))


class _MaskedHeads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(192, 192)

    def forward(self, x, mask):
        q, k, v = (t.view(1, 8, 4, 16).transpose(1, 2) for t in self.qkv(x).split(64, 2))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2) \
            .is_contiguous()


def test_attention_layout_follows_the_kernel_eager_picks():
    m, x = _MaskedHeads(), torch.randn(1, 8, 192)
    mask = torch.ones(8, 8, dtype=torch.bool)  # (the flash kernel: allocated like q)
    assert st.export(m, (x, mask)).module()(x, mask) is m(x, mask) is True
    mask = torch.ones(1, 8, 8, dtype=torch.bool)  # (a 3-d mask: the math kernel's result)
    assert m(x, mask) is False
    with pytest.raises(st.UnsupportedOpError, match="memory layout"):
        st.export(m, (x, mask))


class _Chunked(torch.nn.Module):
    """Longformer's ``_chunk``: overlapping chunks of a strided view made with
    ``as_strided`` from the view's own ``stride()``."""

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


def test_stride_of_a_view_of_symbolic_sizes_feeds_as_strided():
    """``stride()`` of a view whose dims are all >= 2 is its traced strides (expressions
    of the sizes), so longformer's chunking exports and matches eager at other sizes."""
    model = _Chunked().eval()
    k, b = Dim("k", min=2, max=8), Dim("b", min=2, max=8)
    ep = st.export(model, (torch.randn(24, 3, 16),), dynamic_shapes=({0: 8 * k, 1: b},))
    for s, n in ((16, 2), (64, 5), (40, 8)):
        x = torch.randn(s, n, 16)
        torch.testing.assert_close(ep.module()(x), model(x))
    with pytest.raises(st.InputMismatchError):  # k = 1: the dim of chunks may be 1
        ep.module()(torch.randn(8, 3, 16))
