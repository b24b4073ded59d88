"""Small torch API usage patterns, part 1 of 3 (ex benchmarks/sweep_patterns.py);
each ``@case`` registers a function or module with its sizes and spec."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetrace import Dim
from tests.conformance.models.pattern_base import B, CASES, I, R, case


# =========================================================================================
# einsum / matmul family
# =========================================================================================
@case("einsum_bilinear", lambda b, n: ((R(b, n, 4), R(b, n, 5), R(6, 4, 5)), {}),
      dict(b=2, n=3), [dict(b=1, n=5), dict(b=4, n=1)],
      dyn=lambda: ((B(), Dim.AUTO, None), (B(), Dim.AUTO, None), None))
def einsum_bilinear(x, y, w):
    return torch.einsum("bni,oij,bnj->bno", x, w, y)


@case("einsum_ellipsis_trace", lambda b, n: ((R(b, 3, n, n),), {}),
      dict(b=2, n=4), [dict(b=3, n=2), dict(b=1, n=6)],
      dyn=lambda: ((B(), None, Dim("n", min=1, max=32), Dim("n", min=1, max=32)),))
def einsum_ellipsis_trace(x):
    return torch.einsum("...ii->...i", x).sum(-1) + torch.einsum("...ij,...jk->...ik", x, x).mean((-1, -2))


@case("einsum_outer_list_operands", lambda n, m: ((R(n), R(m)), {}),
      dict(n=3, m=4), [dict(n=5, m=2), dict(n=1, m=1)], dyn=lambda: ((Dim.AUTO,), (Dim.AUTO,)))
def einsum_outer_list_operands(a, b):
    return torch.einsum("i,j->ij", [a, b]) + torch.outer(a, b) + torch.einsum(a, [0], b, [1], [0, 1])


@case("matmul_1d_broadcast", lambda b, n: ((R(b, 3, n, 4), R(4), R(n)), {}),
      dict(b=2, n=5), [dict(b=1, n=2), dict(b=3, n=7)],
      dyn=lambda: ((B(), None, Dim.AUTO, None), None, (Dim.AUTO,)))
def matmul_1d_broadcast(x, v, u):
    a = x @ v                     # (b,3,n)
    c = u @ x                     # (b,3,4)
    return a.sum(-1, keepdim=True) + c.sum(-1, keepdim=True) + torch.matmul(u, u)


@case("addmm_addmv_addr", lambda b: ((R(b, 4), R(4, 6), R(6), R(b)), {}),
      dict(b=3), [dict(b=1), dict(b=7)], dyn=lambda: ((B(), None), None, None, (B(),)))
def addmm_addmv_addr(x, w, bias, v):
    y = torch.addmm(bias, x, w, beta=0.5, alpha=2.0)
    z = torch.addmv(v, x, w[:, 0])
    r = torch.addr(torch.zeros(x.shape[0], 6), v, bias)
    return y + z[:, None] + r + torch.mv(x, w[:, 1])[:, None] + torch.dot(bias, bias)


@case("bmm_baddbmm_chain", lambda b, n, m: ((R(b, n, m), R(b, m, n)), {}),
      dict(b=2, n=3, m=4), [dict(b=1, n=1, m=5), dict(b=5, n=6, m=2)],
      dyn=lambda: ((B(), Dim("n", min=1), Dim("m", min=1)), (B(), Dim("m", min=1), Dim("n", min=1))))
def bmm_baddbmm_chain(x, y):
    s = torch.bmm(x, y)
    return torch.baddbmm(s, x, y, beta=0.0) + s.transpose(-1, -2) + torch.linalg.matmul(x, y)


# =========================================================================================
# split family
# =========================================================================================
@case("chunk_uneven_dynamic", lambda n: ((R(2, n),), {}), dict(n=7),
      [dict(n=9), dict(n=8)], dyn=lambda: ({1: Dim.AUTO},))
def chunk_uneven_dynamic(x):
    parts = x.chunk(3, dim=1)
    return [p.sum(1) for p in parts] + [len(parts)]


@case("split_with_sizes_sym", lambda b, n: ((R(b, 3 * n),), {}), dict(b=2, n=4),
      [dict(b=3, n=2), dict(b=1, n=5)], dyn=lambda: ((B(), 3 * Dim("n", min=1, max=32)),))
def split_with_sizes_sym(x):
    n = x.shape[1] // 3
    a, b2, c = torch.split_with_sizes(x, [n, n, x.shape[1] - 2 * n], dim=1)
    return a * b2 - c


@case("tensor_split_indices", lambda n: ((R(n, 3),), {}), dict(n=8),
      [dict(n=6), dict(n=10)], dyn=lambda: ({0: Dim("n", min=5, max=64)},), below=dict(n=4))
def tensor_split_indices(x):
    a, b, c = torch.tensor_split(x, (2, 5), dim=0)
    d = torch.tensor_split(x, 3, dim=0)
    return a.sum(0) + b.sum(0) + c.sum(0) + d[-1].sum(0), [t.shape[0] for t in d]


@case("unbind_stack_dim", lambda b, t: ((R(b, t, 4),), {}), dict(b=2, t=3),
      [dict(b=4, t=3), dict(b=1, t=3)], dyn=lambda: ({0: B()},))
def unbind_stack_dim(x):
    steps = x.unbind(1)
    acc = steps[0]
    for s in steps[1:]:
        acc = torch.tanh(acc + s)
    return acc, torch.stack(steps, dim=-1).shape


@case("hsplit_vsplit_dsplit", lambda b: ((R(b, 4, 6),), {}), dict(b=2),
      [dict(b=1), dict(b=5)], dyn=lambda: ((B(), None, None),))
def hsplit_vsplit_dsplit(x):
    a, c = torch.hsplit(x, 2)
    d = torch.dsplit(x, [2, 4])
    return a + c, sum(t.sum() for t in d)


# =========================================================================================
# flip / roll / rot90 / cumulative
# =========================================================================================
@case("rot90_flip", lambda b, h, w: ((R(b, h, w),), {}), dict(b=2, h=3, w=5),
      [dict(b=1, h=4, w=2), dict(b=3, h=1, w=1)], dyn=lambda: ((B(), Dim.AUTO, Dim.AUTO),))
def rot90_flip(x):
    return torch.rot90(x, 1, (1, 2)).flip(1).sum(), torch.rot90(x, 2, (1, 2)) + x.fliplr().flipud()


@case("roll_dynamic_shift", lambda n: ((R(n, 4),), {}), dict(n=5), [dict(n=3), dict(n=9)],
      dyn=lambda: ({0: Dim("n", min=2, max=64)},), below=dict(n=1))
def roll_dynamic_shift(x):
    return x.roll(x.shape[0] // 2, 0) + x.roll(-1) .sum()


@case("cumsum_dtypes", lambda n: ((I(5, 3, n, dtype=torch.int32), R(3, n)), {}), dict(n=4),
      [dict(n=1), dict(n=6)], dyn=lambda: ((None, Dim.AUTO), (None, Dim.AUTO)))
def cumsum_dtypes(k, x):
    a = k.cumsum(1)                          # int32 -> int64
    b = k.cumsum(1, dtype=torch.float64)
    c = x.cumprod(-1, dtype=torch.float64)
    d = torch.logcumsumexp(x, dim=1)
    e = torch.cummax(x, 1)
    f = x.cummin(dim=0).indices
    return a, b, c, d, e.values, e.indices, f


@case("reverse_cumsum", lambda n: ((R(2, n),), {}), dict(n=5), [dict(n=2), dict(n=8)],
      dyn=lambda: ({1: Dim.AUTO},))
def reverse_cumsum(x):
    return x.flip(-1).cumsum(-1).flip(-1)


# =========================================================================================
# sort family
# =========================================================================================
@case("topk_kthvalue_msort", lambda n: ((R(3, n),), {}), dict(n=6), [dict(n=4), dict(n=10)],
      dyn=lambda: ({1: Dim("n", min=3, max=64)},), below=dict(n=2))
def topk_kthvalue_msort(x):
    v, i = torch.topk(x, 3, dim=1, largest=False, sorted=True)
    kv, ki = torch.kthvalue(x, 2, dim=1, keepdim=True)
    m = torch.msort(x.t())
    a = torch.argsort(x, dim=-1, descending=True, stable=True)
    return v, i, kv, ki, m, a


@case("topk_dynamic_k", lambda n: ((R(2, n),), {}), dict(n=8), [dict(n=4), dict(n=12)],
      dyn=lambda: ({1: 2 * Dim("h", min=1, max=32)},))
def topk_dynamic_k(x):
    v, i = x.topk(x.shape[-1] // 2, -1)
    return v.sum(-1), i


@case("sort_stable_int", lambda n: ((I(4, n),), {}), dict(n=7), [dict(n=3), dict(n=1)],
      dyn=lambda: ((Dim.AUTO,),))
def sort_stable_int(k):
    s, idx = torch.sort(k, stable=True)
    return s, idx, torch.unique_consecutive(s).numel() * 0 + s.max()


# =========================================================================================
# gather / scatter / index family
# =========================================================================================
@case("scatter_reduce_variants", lambda n: ((R(n, 4), I(3, n, 4)), {}), dict(n=5),
      [dict(n=2), dict(n=9)], dyn=lambda: ({0: Dim("n", min=1)}, {0: Dim("n", min=1)}))
def scatter_reduce_variants(x, idx):
    base = torch.zeros(3, 4)
    a = base.scatter_reduce(0, idx, x, reduce="amax", include_self=False)
    b = base.scatter_reduce(0, idx, x, reduce="mean", include_self=True)
    c = torch.ones(3, 4).scatter_reduce(0, idx, x, reduce="prod")
    d = base.scatter(0, idx, x, reduce="add")
    return a, b, c, d


@case("scatter_scalar_value", lambda b, n: ((R(b, n), I(n, b, 1)), {}), dict(b=3, n=5),
      [dict(b=1, n=5), dict(b=4, n=2)], dyn=lambda: ((B(), Dim("n", min=1)), (B(), None)))
def scatter_scalar_value(x, idx):
    onehot = torch.zeros_like(x).scatter_(1, idx, 1.0)
    return x * onehot, x.scatter(1, idx, -1.0)


@case("index_copy_add_fill", lambda n: ((R(n, 3), torch.tensor([0, 2])), {}), dict(n=4),
      [dict(n=3), dict(n=7)], dyn=lambda: ({0: Dim("n", min=3, max=64)}, None), below=dict(n=2))
def index_copy_add_fill(x, idx):
    src = torch.ones(2, 3)
    a = x.index_copy(0, idx, src)
    b = x.index_add(0, idx, src, alpha=3)
    c = x.index_fill(1, torch.tensor([1]), 0.5)
    return a, b, c, x.index_select(0, idx)


@case("take_along_dim_argmax", lambda b, n: ((R(b, n, 3),), {}), dict(b=2, n=5),
      [dict(b=1, n=1), dict(b=4, n=6)], dyn=lambda: ((B(), Dim.AUTO, None),))
def take_along_dim_argmax(x):
    i = x.argmax(dim=1, keepdim=True)
    return torch.take_along_dim(x, i, dim=1), torch.take_along_dim(x, x.argsort(-1), dim=-1)


@case("gather_expand_index", lambda b, t: ((R(b, t, 4), I(t, b)), {}), dict(b=3, t=5),
      [dict(b=1, t=2), dict(b=6, t=7)], dyn=lambda: ((B(), Dim("t", min=1), None), (B(),)))
def gather_expand_index(h, lengths):
    idx = lengths.view(-1, 1, 1).expand(-1, 1, h.size(-1))
    return h.gather(1, idx).squeeze(1)


@case("index_put_accumulate", lambda n: ((R(n), I(n, 6)), {}), dict(n=5), [dict(n=2), dict(n=9)],
      dyn=lambda: ((Dim("n", min=1),), None))
def index_put_accumulate(x, idx):
    y = torch.zeros_like(x)
    y = y.index_put((idx,), torch.ones(6), accumulate=True)
    z = x.clone()
    z[idx] = 0.0
    return y, z


@case("take_put_flat", lambda n: ((R(3, n),), {}), dict(n=4), [dict(n=2), dict(n=5)],
      dyn=lambda: ({1: Dim("n", min=2, max=64)},), below=dict(n=1))
def take_put_flat(x):
    flat = torch.tensor([0, 5, 1])
    return torch.take(x, flat), x.flatten()[flat]


# =========================================================================================
# masks / where / clamp
# =========================================================================================
@case("masked_fill_broadcast", lambda b, t: ((R(b, 2, t, t), torch.arange(t)[None].expand(b, t) < 2), {}),
      dict(b=2, t=4), [dict(b=1, t=2), dict(b=3, t=6)],
      dyn=lambda: ((B(), None, Dim("t", min=1), Dim("t", min=1)), (B(), Dim("t", min=1))))
def masked_fill_broadcast(s, keep):
    m = ~keep[:, None, None, :]
    return s.masked_fill(m, torch.finfo(s.dtype).min).softmax(-1), s.masked_fill(m, torch.tensor(0.0))


@case("where_scalar_dtypes", lambda n: ((I(9, n), R(n)), {}), dict(n=5), [dict(n=1), dict(n=8)],
      dyn=lambda: ((Dim("n", min=1),), (Dim("n", min=1),)))
def where_scalar_dtypes(k, x):
    a = torch.where(k > 3, k, 0)          # int64
    b = torch.where(k > 3, 1.5, 0)        # float32 (default dtype)
    c = torch.where(x > 0, k, x)          # promote to float
    d = torch.where(k > 3, True, False)
    return a, b, c, d


@case("clamp_tensor_bounds", lambda b, n: ((R(b, n), R(n), R(b, 1)), {}), dict(b=2, n=4),
      [dict(b=3, n=1), dict(b=1, n=5)], dyn=lambda: ((B(), Dim("n", min=1)), (Dim("n", min=1),), (B(), None)))
def clamp_tensor_bounds(x, lo, hi):
    return x.clamp(lo, lo + hi.abs()), torch.clamp(x, max=hi), x.clip(min=lo)


@case("nan_to_num_isfinite", lambda n: ((torch.tensor([1.0, float("nan"), float("inf"), -float("inf"), 2.0] * n),), {}),
      dict(n=1), [dict(n=2), dict(n=3)], dyn=lambda: ({0: 5 * Dim("k", min=1, max=20)},))
def nan_to_num_isfinite(x):
    a = torch.nan_to_num(x, nan=0.0, posinf=1e4, neginf=-1e4)
    b = x.isfinite() & ~x.isnan()
    c = torch.nan_to_num(x)
    return a, b, c, x.isinf().sum()


# =========================================================================================
# int / bool / type promotion
# =========================================================================================
@case("int_division_semantics", lambda n: ((I(20, n) - 10, I(5, n) + 1), {}), dict(n=6),
      [dict(n=1), dict(n=9)], dyn=lambda: ((Dim("n", min=1),), (Dim("n", min=1),)))
def int_division_semantics(a, b):
    return (a // b, a / b, torch.div(a, b, rounding_mode="trunc"), torch.div(a, b, rounding_mode="floor"),
            a % b, torch.fmod(a, b), torch.remainder(a, 3), a // 2, torch.floor_divide(a, -3))


@case("bitwise_int_ops", lambda n: ((I(256, n, dtype=torch.int32), I(256, n, dtype=torch.uint8)), {}),
      dict(n=5), [dict(n=2), dict(n=7)], dyn=lambda: ((Dim("n", min=1),), (Dim("n", min=1),)))
def bitwise_int_ops(a, u):
    return (a & 0xF, a | u, a ^ u, ~u, a << 2, a >> 1, torch.bitwise_left_shift(u, 1),
            torch.bitwise_and(u, 3).bool().logical_xor(a > 100))


@case("type_promotion", lambda n: ((I(9, n), R(n).half(), torch.rand(n) > 0.5), {}), dict(n=4),
      [dict(n=1), dict(n=6)], dyn=lambda: ((Dim("n", min=1),), (Dim("n", min=1),), (Dim("n", min=1),)), atol=1e-2, rtol=1e-2)
def type_promotion(k, h, m):
    return (k + 1.5, k * 2, m + 1, m + m, h + 1.0, h + k, h * torch.tensor(2.0), k / 2, k.float() + h,
            m.sum(), k.mean(dtype=torch.float32), torch.true_divide(k, 3), k ** 2, 2 ** k, k.pow(0.5))


@case("bool_reductions", lambda n: ((R(3, n),), {}), dict(n=4), [dict(n=1), dict(n=7)],
      dyn=lambda: ({1: Dim.AUTO},))
def bool_reductions(x):
    m = x > 0
    return m.all(), m.any(1), m.sum(1), m.float().mean(), torch.count_nonzero(m, dim=0), m.int().prod(1)


# =========================================================================================
# complex
# =========================================================================================
@case("complex_polar_view", lambda n: ((R(n, 2), R(n)), {}), dict(n=4), [dict(n=1), dict(n=6)],
      dyn=lambda: ((Dim("n", min=1), None), (Dim("n", min=1),)))
def complex_polar_view(x, th):
    z = torch.view_as_complex(x)
    p = torch.polar(th.abs(), th)
    w = z * p
    return torch.view_as_real(w), w.abs(), w.angle(), w.real + w.imag, torch.conj(w).imag


@case("rope_complex", lambda b, t: ((R(b, t, 2, 8),), {}), dict(b=2, t=5), [dict(b=1, t=1), dict(b=3, t=9)],
      dyn=lambda: ((B(), Dim("t", min=1, max=128), None, None),))
def rope_complex(x):
    t = x.shape[1]
    freqs = 1.0 / (10000 ** (torch.arange(0, 8, 2)[:4].float() / 8))
    ang = torch.outer(torch.arange(t).float(), freqs)
    cis = torch.polar(torch.ones_like(ang), ang)
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    out = torch.view_as_real(xc * cis[None, :, None, :]).flatten(3)
    return out.type_as(x)


# =========================================================================================
# factories with symbolic sizes
# =========================================================================================
@case("new_factories_dtype", lambda b, n: ((R(b, n),), {}), dict(b=2, n=3), [dict(b=1, n=1), dict(b=4, n=7)],
      dyn=lambda: ((B(), Dim.AUTO),))
def new_factories_dtype(x):
    a = x.new_zeros(x.shape[0], 2, dtype=torch.long)
    b = x.new_ones((x.size(1),), dtype=torch.bool)
    c = x.new_full(x.shape, 7, dtype=torch.int32)
    d = x.new_empty(x.shape[0]).fill_(3.0)
    e = torch.zeros_like(x, dtype=torch.float64)
    f = torch.ones_like(x, dtype=torch.int8)
    g = torch.empty_like(x).zero_()
    h = x.new_tensor([1, 2, 3])
    return a, b, c, d, e, f, g, h, torch.full((x.shape[1],), True)


@case("linspace_logspace_sym", lambda n: ((R(n),), {}), dict(n=5), [dict(n=2), dict(n=11)],
      dyn=lambda: ((Dim("n", min=2, max=100),),), below=dict(n=1))
def linspace_logspace_sym(x):
    n = x.shape[0]
    return x + torch.linspace(0, 1, n), torch.logspace(0, 2, steps=n) * 0 + x, torch.arange(n, 0, -1).float() + x


@case("diag_eye_embed", lambda n: ((R(n), R(n, n)), {}), dict(n=4), [dict(n=1), dict(n=6)],
      dyn=lambda: ((Dim("n", min=1),), (Dim("n", min=1), Dim("n", min=1))))
def diag_eye_embed(v, m):
    n = v.shape[0]
    return (torch.diag(v) + torch.eye(n) + torch.eye(n, n + 1)[:, :n], torch.diag(m), torch.diag_embed(v[None]),
            m.diagonal(offset=1).sum(), torch.diag(v, 1), torch.trace(m), torch.diagflat(v).sum())


@case("tril_indices_mask", lambda n: ((R(n, n),), {}), dict(n=4), [dict(n=2), dict(n=6)],
      dyn=lambda: ((Dim("n", min=1), Dim("n", min=1)),))
def tril_indices_mask(x):
    n = x.shape[0]
    i = torch.tril_indices(n, n, offset=-1)
    return x[i[0], i[1]], torch.ones(n, n, dtype=torch.bool).tril(-1) & (x > 0)


@case("meshgrid_xy_cartesian", lambda h, w: ((R(h, w),), {}), dict(h=3, w=4), [dict(h=1, w=2), dict(h=5, w=5)],
      dyn=lambda: ((Dim.AUTO, Dim.AUTO),))
def meshgrid_xy_cartesian(x):
    h, w = x.shape
    gx, gy = torch.meshgrid(torch.linspace(-1, 1, w), torch.linspace(-1, 1, h), indexing="xy")
    cp = torch.cartesian_prod(torch.arange(h), torch.arange(2))
    return x + gx + gy, cp


@case("arange_float_step", lambda n: ((R(n),), {}), dict(n=6), [dict(n=4), dict(n=10)],
      dyn=lambda: ((2 * Dim("h", min=1, max=64),),))
def arange_float_step(x):
    n = x.shape[0]
    return x + torch.arange(0, n / 2, 0.5), torch.arange(n, dtype=torch.float64)


# =========================================================================================
# unfold / fold / pixel shuffle
# =========================================================================================
@case("unfold_fold_roundtrip", lambda b, h, w: ((R(b, 3, h, w),), {}), dict(b=1, h=6, w=8),
      [dict(b=2, h=4, w=4), dict(b=1, h=10, w=6)],
      dyn=lambda: ((B(), None, 2 * Dim("hh", min=1, max=32), 2 * Dim("ww", min=1, max=32)),))
def unfold_fold_roundtrip(x):
    h, w = x.shape[-2:]
    p = F.unfold(x, kernel_size=2, stride=2)
    return F.fold(p * 2, output_size=(h, w), kernel_size=2, stride=2)


@case("unfold_overlap_padding", lambda b, h: ((R(b, 2, h, h),), {}), dict(b=1, h=5),
      [dict(b=2, h=3), dict(b=1, h=8)], dyn=lambda: ((B(), None, Dim("h", min=2, max=64), Dim("h", min=2, max=64)),),
      below=dict(h=1))
def unfold_overlap_padding(x):
    p = F.unfold(x, 3, dilation=1, padding=1, stride=1)
    return p.transpose(1, 2)


@case("pixel_unshuffle_roundtrip", lambda b, h: ((R(b, 2, 2 * h, 2 * h),), {}), dict(b=1, h=3),
      [dict(b=2, h=1), dict(b=1, h=5)], dyn=lambda: ((B(), None, 2 * Dim("h", min=1), 2 * Dim("h", min=1)),))
def pixel_unshuffle_roundtrip(x):
    y = F.pixel_unshuffle(x, 2)
    return F.pixel_shuffle(y * 2, 2), nn.PixelUnshuffle(2)(x).shape


@case("tensor_unfold_windows", lambda t: ((R(2, t),), {}), dict(t=10), [dict(t=4), dict(t=13)],
      dyn=lambda: ({1: Dim("t", min=4, max=200)},), below=dict(t=3))
def tensor_unfold_windows(x):
    return x.unfold(-1, 4, 2).mean(-1)


# =========================================================================================
# conv / pool
# =========================================================================================
_gconv = nn.Sequential(nn.Conv2d(4, 8, 3, groups=2, dilation=2, padding=2), nn.Conv2d(8, 8, 3, padding="same", dilation=2),
                       nn.Conv2d(8, 4, (1, 3), stride=(1, 2), padding=(0, 1), padding_mode="circular")).eval()


@case("grouped_dilated_same_conv", lambda b, h, w: ((R(b, 4, h, w),), {}), dict(b=1, h=7, w=9),
      [dict(b=2, h=5, w=4), dict(b=1, h=11, w=3)], dyn=lambda: ((B(), None, Dim("h", min=2, max=64), Dim("w", min=2, max=64)),),
      model=_gconv, below=dict(h=1, w=3))
def _unused1(x):
    pass


_ct1 = nn.Sequential(nn.ConvTranspose1d(3, 4, 4, stride=3, padding=1, output_padding=2, dilation=1), nn.ReLU(),
                     nn.ConvTranspose1d(4, 2, 3, stride=2, groups=2, output_padding=1)).eval()


@case("conv_transpose1d_outpad", lambda b, t: ((R(b, 3, t),), {}), dict(b=2, t=5), [dict(b=1, t=1), dict(b=3, t=9)],
      dyn=lambda: ((B(), None, Dim("t", min=1, max=100)),), model=_ct1)
def _unused2(x):
    pass


_ct2 = nn.ConvTranspose2d(3, 2, (3, 2), stride=(2, 3), padding=(1, 0), output_padding=(1, 2), dilation=(1, 2)).eval()


@case("conv_transpose2d_outpad_dil", lambda b, h, w: ((R(b, 3, h, w),), {}), dict(b=1, h=4, w=3),
      [dict(b=2, h=2, w=5), dict(b=1, h=7, w=1)], dyn=lambda: ((B(), None, Dim.AUTO, Dim.AUTO),), model=_ct2)
def _unused3(x):
    pass


class ConvTOutSize(nn.Module):
    def __init__(s):
        super().__init__()
        s.up = nn.ConvTranspose2d(2, 2, 3, stride=2, padding=1)

    def forward(s, x, skip):
        return s.up(x, output_size=skip.shape[-2:]) + skip


@case("conv_transpose_output_size", lambda b, h: ((R(b, 2, h, h), R(b, 2, 2 * h, 2 * h)), {}), dict(b=1, h=4),
      [dict(b=2, h=3), dict(b=1, h=6)], dyn=lambda: ((B(), None, Dim("h", min=1), Dim("h", min=1)), (B(), None, 2 * Dim("h", min=1), 2 * Dim("h", min=1))),
      model=ConvTOutSize().eval())
def _unused4(x):
    pass


@case("conv_same_functional_even_kernel", lambda b, t: ((R(b, 2, t), R(3, 2, 4)), {}), dict(b=1, t=7),
      [dict(b=2, t=3), dict(b=1, t=12)], dyn=lambda: ((B(), None, Dim("t", min=1, max=64)), None))
def conv_same_functional_even_kernel(x, w):
    return F.conv1d(x, w, padding="same"), F.conv1d(x, w, padding="valid", stride=2) if x.shape[-1] >= 4 else None


@case("pool_1d_3d_lp", lambda b, t: ((R(b, 2, t), R(b, 2, 4, t, t)), {}), dict(b=1, t=8),
      [dict(b=2, t=6), dict(b=1, t=11)], dyn=lambda: ((B(), None, Dim("t", min=4, max=64)), (B(), None, None, Dim("t", min=4, max=64), Dim("t", min=4, max=64))),
      below=dict(t=3))
def pool_1d_3d_lp(x, v):
    return (F.max_pool1d(x, 3, 2, padding=1, ceil_mode=True), F.avg_pool1d(x, 2, count_include_pad=False),
            F.lp_pool1d(x.abs(), 2, 2), F.max_pool3d(v, 2), F.avg_pool3d(v, (1, 2, 2), ceil_mode=True),
            F.adaptive_max_pool1d(x, 3), F.adaptive_avg_pool3d(v, (1, 2, 3)), F.lp_pool2d(v[:, :, 0].abs(), 2, 2))


@case("maxpool_return_indices_unpool", lambda b, h: ((R(b, 2, 2 * h, 2 * h),), {}), dict(b=1, h=3),
      [dict(b=2, h=1), dict(b=1, h=4)], dyn=lambda: ((B(), None, 2 * Dim("h", min=1), 2 * Dim("h", min=1)),))
def maxpool_return_indices_unpool(x):
    y, i = F.max_pool2d(x, 2, return_indices=True)
    return y, i, F.max_unpool2d(y, i, 2, output_size=x.shape[-2:])


@case("avgpool_divisor_override", lambda b, h, w: ((R(b, 3, h, w),), {}), dict(b=1, h=7, w=6),
      [dict(b=2, h=4, w=5), dict(b=1, h=9, w=9)], dyn=lambda: ((B(), None, Dim("h", min=3, max=64), Dim("w", min=3, max=64)),),
      below=dict(h=2, w=6))
def avgpool_divisor_override(x):
    return F.avg_pool2d(x, 3, stride=2, padding=1, divisor_override=4), F.max_pool2d(x, 3, stride=1, dilation=1, padding=1)


# =========================================================================================
# interpolate / grid_sample
# =========================================================================================
@case("interpolate_modes", lambda b, h, w: ((R(b, 2, h, w),), {}), dict(b=1, h=4, w=5),
      [dict(b=2, h=3, w=3), dict(b=1, h=7, w=2)], dyn=lambda: ((B(), None, Dim("h", min=2, max=64), Dim("w", min=2, max=64)),),
      below=dict(h=1, w=5))
def interpolate_modes(x):
    return (F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=True),
            F.interpolate(x, size=(6, 3), mode="bicubic", align_corners=False),
            F.interpolate(x, scale_factor=(1.5, 0.5), mode="nearest"),
            F.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True),
            F.interpolate(x, scale_factor=2, mode="nearest-exact"),
            F.interpolate(x, size=(x.shape[2] * 2, x.shape[3] + 1), mode="bilinear"))


@case("interpolate_1d_3d", lambda b, t: ((R(b, 2, t), R(b, 1, 2, t, t)), {}), dict(b=1, t=4),
      [dict(b=2, t=2), dict(b=1, t=7)], dyn=lambda: ((B(), None, Dim("t", min=2, max=64)), (B(), None, None, Dim("t", min=2, max=64), Dim("t", min=2, max=64))))
def interpolate_1d_3d(x, v):
    return (F.interpolate(x, scale_factor=3, mode="linear", align_corners=False), F.interpolate(x, size=5, mode="nearest"),
            F.interpolate(v, scale_factor=2, mode="trilinear"), F.interpolate(v, size=(3, 3, 3), mode="nearest"),
            F.interpolate(x, scale_factor=2, mode="linear", recompute_scale_factor=True))


@case("grid_sample_modes", lambda b, h, w: ((R(b, 2, h, w), R(b, 3, 5, 2).tanh()), {}), dict(b=1, h=4, w=6),
      [dict(b=2, h=3, w=3), dict(b=1, h=8, w=2)], dyn=lambda: ((B(), None, Dim.AUTO, Dim.AUTO), (B(), Dim.AUTO, Dim.AUTO, None)))
def grid_sample_modes(x, g):
    return (F.grid_sample(x, g, mode="bilinear", padding_mode="zeros", align_corners=True),
            F.grid_sample(x, g, mode="nearest", padding_mode="border", align_corners=False),
            F.grid_sample(x, g * 1.5, mode="bicubic", padding_mode="reflection", align_corners=False))


@case("affine_grid_dynamic", lambda b, h, w: ((R(b, 1, h, w), R(b, 2, 3) * 0.2 + torch.tensor([[1.0, 0, 0], [0, 1.0, 0]])), {}),
      dict(b=2, h=4, w=5), [dict(b=1, h=3, w=3), dict(b=3, h=6, w=2)], dyn=lambda: ((B(), None, Dim.AUTO, Dim.AUTO), (B(), None, None)))
def affine_grid_dynamic(x, theta):
    g = F.affine_grid(theta, x.size(), align_corners=False)
    return F.grid_sample(x, g, align_corners=False), g


# =========================================================================================
# normalization / distances
# =========================================================================================
@case("distances", lambda n, m: ((R(n, 5), R(m, 5)), {}), dict(n=3, m=4), [dict(n=1, m=1), dict(n=6, m=2)],
      dyn=lambda: ((Dim("n", min=1), None), (Dim("m", min=1), None)))
def distances(x, y):
    return (torch.cdist(x, y, p=1.0), torch.cdist(x[None], y[None], p=2.0, compute_mode="donot_use_mm_for_euclid_dist"),
            F.normalize(x, p=1, dim=0), F.pairwise_distance(x[:1], y[:1], keepdim=True),
            F.cosine_similarity(x[:, None, :], y[None, :, :], dim=-1, eps=1e-6), torch.cdist(x, y, p=float("inf")))


@case("norm_layers_eval", lambda b, t: ((R(b, 4, t),), {}), dict(b=2, t=5), [dict(b=1, t=2), dict(b=3, t=9)],
      dyn=lambda: ((B(), None, Dim("t", min=2, max=64)),), below=dict(t=1))
class NormLayers(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln = nn.LayerNorm(4, elementwise_affine=False)
        s.ln2 = nn.LayerNorm([4], bias=False)
        s.gn = nn.GroupNorm(2, 4, affine=True)
        s.inn = nn.InstanceNorm1d(4, affine=True, track_running_stats=False)
        s.rms = nn.RMSNorm(4, eps=1e-6)
        s.bn = nn.BatchNorm1d(4)
        s.bn.running_mean.uniform_(-1, 1)
        s.bn.running_var.uniform_(0.5, 2)

    def forward(s, x):
        y = x.transpose(1, 2)
        return s.ln(y), s.ln2(y), s.gn(x), s.inn(x), s.rms(y), s.bn(x), F.rms_norm(y, (4,)), F.layer_norm(x, x.shape[-1:])


CASES[-1][1].model = NormLayers().eval()


class BNTrainStats(nn.Module):
    """BatchNorm with track_running_stats=False in eval: uses batch statistics."""
    def __init__(s):
        super().__init__()
        s.bn = nn.BatchNorm2d(3, track_running_stats=False)
        s.inn = nn.InstanceNorm2d(3, track_running_stats=True)

    def forward(s, x):
        return s.bn(x), s.inn(x)
