"""Sweep over small torch API usage patterns (beyond tests/export/pattern_cases.py).

Each case: a function or module, a ``make(**sizes)`` building (args, kwargs), example sizes,
other sizes, and a dynamic_shapes spec. For each case:

* export static (no spec) and with the dynamic spec;
* run ``ep.module()`` on the example (both exports) and on the other sizes (dynamic export),
  compare against eager (values, dtypes, shapes, container structure, and any in-place
  mutation of the inputs);
* check that inputs violating the contract (wrong rank, wrong dtype, a size below a
  declared min) raise ``st.InputMismatchError`` and nothing else;
* check that export mutated neither the model state nor the inputs.

Status per case: ok / export-error (class: message) / WRONG RESULT / bad rejection /
narrow (a valid input of the declared space rejected) / run-error.

Run: .venv/bin/python benchmarks/sweep_patterns.py [name-substring ...] [-v]
"""

from __future__ import annotations

import collections
import math
import sys
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
warnings.filterwarnings("ignore")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch.utils._pytree as pytree  # noqa: E402

import safetrace as st  # noqa: E402
from safetrace import Dim  # noqa: E402

torch.manual_seed(0)
CASES = []


def case(name, make, ex, others, dyn=None, model=None, below=None, rtol=1e-4, atol=1e-4, bad=None):
    """Register a case. ``model`` defaults to the decorated function. ``bad``: a function of
    (args, kwargs) returning a list of (label, args, kwargs) that every export must reject."""
    def reg(fn):
        CASES.append(dict(name=name, fn=model if model is not None else fn, make=make, ex=ex,
                          others=others, dyn=dyn, below=below, rtol=rtol, atol=atol, bad=bad))
        return fn
    return reg


_SEED = [0]


def R(*shape, dtype=torch.float32):
    _SEED[0] += 1
    g = torch.Generator().manual_seed(_SEED[0] * 7919 + sum(shape) * 31 + len(shape))
    return torch.randn(*shape, generator=g).to(dtype)


def I(hi, *shape, dtype=torch.long):
    _SEED[0] += 1
    g = torch.Generator().manual_seed(_SEED[0] * 104729 + sum(shape))
    return torch.randint(0, hi, shape, generator=g, dtype=dtype)


def B(n="b", lo=1, hi=64):
    return Dim(n, min=lo, max=hi)


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


CASES[-1]["fn"] = NormLayers().eval()


class BNTrainStats(nn.Module):
    """BatchNorm with track_running_stats=False in eval: uses batch statistics."""
    def __init__(s):
        super().__init__()
        s.bn = nn.BatchNorm2d(3, track_running_stats=False)
        s.inn = nn.InstanceNorm2d(3, track_running_stats=True)

    def forward(s, x):
        return s.bn(x), s.inn(x)


@case("batchnorm_no_running_stats", lambda b, h: ((R(b, 3, h, h),), {}), dict(b=2, h=3), [dict(b=3, h=2), dict(b=4, h=5)],
      dyn=lambda: ((B(lo=2), None, Dim.AUTO, Dim.AUTO),), model=BNTrainStats().eval(), below=dict(b=1, h=3))
def _unused5(x):
    pass


# =========================================================================================
# attention
# =========================================================================================
_mha_nbf = nn.MultiheadAttention(8, 2, batch_first=False, kdim=6, vdim=4).eval()
_mha_bf = nn.MultiheadAttention(8, 2, batch_first=True, bias=False, add_bias_kv=True).eval()


class MHAMasks(nn.Module):
    def __init__(s):
        super().__init__()
        s.a, s.b = _mha_nbf, _mha_bf

    def forward(s, q, k, v, kpm):
        t, s_len = q.shape[0], k.shape[0]
        attn_mask = torch.ones(t, s_len, dtype=torch.bool).triu(1) if t == s_len else None
        o1, w1 = s.a(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=True, average_attn_weights=False)
        qb = q.transpose(0, 1)
        fmask = torch.zeros(qb.shape[1], qb.shape[1]).masked_fill(torch.ones(qb.shape[1], qb.shape[1], dtype=torch.bool).triu(1), float("-inf"))
        o2, _ = s.b(qb, qb, qb, attn_mask=fmask, need_weights=False)
        return o1, w1, o2


@case("mha_masks_both_layouts",
      lambda b, t, s: ((R(t, b, 8), R(s, b, 6), R(s, b, 4), torch.arange(s)[None].expand(b, s) >= s - 1), {}),
      dict(b=2, t=3, s=5), [dict(b=1, t=2, s=4), dict(b=3, t=4, s=7)],
      dyn=lambda: ((Dim("t", min=1), B(), None), (Dim("s", min=1), B(), None), (Dim("s", min=1), B(), None), (B(), Dim("s", min=1))),
      model=MHAMasks().eval())
def _unused6(x):
    pass


@case("sdpa_causal_bool_mask", lambda b, t: ((R(b, 2, t, 4), R(b, 2, t, 4), R(b, 2, t, 4), torch.rand(b, 1, 1, t) > 0.2), {}),
      dict(b=2, t=5), [dict(b=1, t=1), dict(b=3, t=8)], dyn=lambda: ((B(), None, Dim("t", min=1), None),) * 3 + ((B(), None, None, Dim("t", min=1)),))
def sdpa_causal_bool_mask(q, k, v, m):
    m = m.clone()
    m[..., 0] = True
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    b2 = F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3)
    c = F.scaled_dot_product_attention(q, k[:, :, :1], v[:, :, :1], attn_mask=None)
    return a, b2, c


@case("sdpa_gqa_float_mask", lambda b, t, s: ((R(b, 4, t, 8), R(b, 2, s, 8), R(b, 2, s, 8), R(t, s)), {}),
      dict(b=1, t=3, s=5), [dict(b=2, t=1, s=2), dict(b=1, t=6, s=6)],
      dyn=lambda: ((B(), None, Dim("t", min=1), None), (B(), None, Dim("s", min=1), None), (B(), None, Dim("s", min=1), None), (Dim("t", min=1), Dim("s", min=1))))
def sdpa_gqa_float_mask(q, k, v, bias):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, enable_gqa=True)


_tdec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=True), 2,
                              norm=nn.LayerNorm(8)).eval()


class TDec(nn.Module):
    def __init__(s):
        super().__init__()
        s.dec = _tdec

    def forward(s, tgt, mem, mem_pad):
        t = tgt.shape[1]
        causal = nn.Transformer.generate_square_subsequent_mask(t)
        return s.dec(tgt, mem, tgt_mask=causal, memory_key_padding_mask=mem_pad, tgt_is_causal=True)


@case("transformer_decoder_masks", lambda b, t, s: ((R(b, t, 8), R(b, s, 8), torch.arange(s)[None].expand(b, s) >= s - 1), {}),
      dict(b=2, t=3, s=5), [dict(b=1, t=1, s=2), dict(b=3, t=6, s=4)],
      dyn=lambda: ((B(), Dim("t", min=1), None), (B(), Dim("s", min=1), None), (B(), Dim("s", min=1))), model=TDec().eval())
def _unused7(x):
    pass


# =========================================================================================
# RNNs
# =========================================================================================
class BiLSTM(nn.Module):
    def __init__(s):
        super().__init__()
        s.lstm = nn.LSTM(5, 6, num_layers=2, bidirectional=True, proj_size=3)
        s.gru = nn.GRU(5, 4, batch_first=True, num_layers=2, bias=False)

    def forward(s, x, h0, c0):
        out, (h, c) = s.lstm(x, (h0, c0))
        g, hg = s.gru(x.transpose(0, 1))
        return out, h, c, g, hg


@case("lstm_bidir_proj_gru_bf", lambda t, b: ((R(t, b, 5), R(4, b, 3), R(4, b, 6)), {}), dict(t=4, b=2),
      [dict(t=1, b=1), dict(t=7, b=3)], dyn=lambda: ((Dim("t", min=1), B(), None), (None, B(), None), (None, B(), None)),
      model=BiLSTM().eval())
def _unused8(x):
    pass


class RNNCells(nn.Module):
    def __init__(s):
        super().__init__()
        s.cell = nn.LSTMCell(3, 4)
        s.gcell = nn.GRUCell(3, 4)
        s.rnn = nn.RNN(3, 4, nonlinearity="relu", batch_first=True)

    def forward(s, x):
        h = c = x.new_zeros(x.shape[0], 4)
        hg = None
        outs = []
        for xt in x.unbind(1):
            h, c = s.cell(xt, (h, c))
            hg = s.gcell(xt, hg)
            outs.append(h + hg)
        return torch.stack(outs, 1), s.rnn(x)[0]


@case("rnn_cells_loop", lambda b: ((R(b, 3, 3),), {}), dict(b=2), [dict(b=1), dict(b=5)],
      dyn=lambda: ((B(), None, None),), model=RNNCells().eval())
def _unused9(x):
    pass


_pk_lstm = nn.LSTM(3, 4, batch_first=True).eval()


@case("pack_padded_sequence", lambda b, t: ((R(b, t, 3), torch.tensor([t] + [max(1, t - 1)] * (b - 1))), {}), dict(b=2, t=4),
      [dict(b=3, t=5)], dyn=lambda: ((B(), Dim("t", min=1), None), (B(),)))
def pack_padded_sequence(x, lengths):
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=True)
    out, (h, c) = _pk_lstm(packed)
    y, lens = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
    return y, h


# =========================================================================================
# one_hot / bucketize / embedding
# =========================================================================================
@case("one_hot_inferred_classes", lambda n: ((I(5, n),), {}), dict(n=6), [dict(n=3)], dyn=lambda: ((Dim("n", min=1),),))
def one_hot_inferred_classes(k):
    return F.one_hot(k)  # num_classes=-1: data-dependent


@case("one_hot_dynamic_classes", lambda b, c: ((I(c, b), R(b, c)), {}), dict(b=4, c=3), [dict(b=1, c=5), dict(b=6, c=2)],
      dyn=lambda: ((B(),), (B(), Dim("c", min=1))))
def one_hot_dynamic_classes(k, logits):
    return F.one_hot(k, logits.shape[-1]).to(logits.dtype) * logits.log_softmax(-1)


@case("bucketize_searchsorted_opts", lambda n, m: ((R(n), R(m).sort().values), {}), dict(n=5, m=4), [dict(n=1, m=1), dict(n=8, m=6)],
      dyn=lambda: ((Dim("n", min=1),), (Dim("m", min=1),)))
def bucketize_searchsorted_opts(x, edges):
    return (torch.bucketize(x, edges, right=True), torch.bucketize(x, edges, out_int32=True),
            torch.searchsorted(edges, x, side="right"), torch.searchsorted(edges[None].expand(2, -1), x[None].expand(2, -1)))


class EmbeddingBagPad(nn.Module):
    def __init__(s):
        super().__init__()
        s.e = nn.Embedding(10, 4, padding_idx=0, max_norm=None)
        s.bag = nn.EmbeddingBag(10, 4, mode="max")

    def forward(s, ids, offsets):
        return s.e(ids), s.bag(ids.flatten(), offsets), F.embedding(ids, s.e.weight * 2)


@case("embedding_bag_offsets", lambda b, t: ((I(10, b, t), torch.arange(b) * t), {}), dict(b=2, t=3),
      [dict(b=1, t=1), dict(b=4, t=5)], dyn=lambda: ((B(), Dim("t", min=1)), (B(),)), model=EmbeddingBagPad().eval())
def _unused10(x):
    pass


# =========================================================================================
# reshaping with symbolic sizes
# =========================================================================================
@case("view_bt_merge", lambda b, t: ((R(b, t, 6),), {}), dict(b=2, t=3), [dict(b=1, t=1), dict(b=5, t=7)],
      dyn=lambda: ((B(), Dim("t", min=1), None),))
def view_bt_merge(x):
    b, t, d = x.shape
    y = x.view(b * t, -1)
    z = y.view(b, t, 2, d // 2).permute(0, 2, 1, 3).reshape(b, 2, -1)
    return y, z, x.unflatten(-1, (2, -1)), x.flatten(0, 1).unflatten(0, (b, t))


@case("half_split_int_cast", lambda b, n: ((R(b, 2 * n),), {}), dict(b=2, n=3), [dict(b=1, n=1), dict(b=3, n=8)],
      dyn=lambda: ((B(), 2 * Dim("n", min=1)),))
def half_split_int_cast(x):
    h = x.shape[1] // 2
    h2 = x.size(-1) // 2
    return x[:, :h] * x[:, h2:], math.prod(x.shape), x.new_zeros(math.prod(x.shape[:1]), 1)


@case("expand_repeat_tile_broadcast", lambda b, n: ((R(b, 1, n), R(n)), {}), dict(b=2, n=3), [dict(b=1, n=1), dict(b=4, n=5)],
      dyn=lambda: ((B(), None, Dim("n", min=1)), (Dim("n", min=1),)))
def expand_repeat_tile_broadcast(x, v):
    b, _, n = x.shape
    return (x.expand(-1, 4, -1), x.expand(b, n, n), v.expand_as(x), x.repeat(1, 2, 1), x.tile((2,)), torch.tile(v, (2, 1)),
            torch.broadcast_to(v, (b, n)), torch.broadcast_tensors(x, v[:, None])[1], v.repeat(b), x.expand(*x.shape))


@case("movedim_multi_permute", lambda b, c, h: ((R(b, c, h, 2),), {}), dict(b=2, c=3, h=4), [dict(b=1, c=1, h=1), dict(b=3, c=5, h=2)],
      dyn=lambda: ((B(), Dim("c", min=1), Dim("h", min=1), None),))
def movedim_multi_permute(x):
    return (torch.movedim(x, (1, 2), (3, 0)), x.moveaxis(-1, 0), x.permute(*range(x.ndim - 1, -1, -1)),
            x.transpose(-1, -3).contiguous().view(-1), x.swapdims(0, 2), x.mT, torch.atleast_3d(x[0, 0, 0]).shape)


@case("reshape_negative_infer_static_product", lambda b: ((R(b, 4, 6),), {}), dict(b=2), [dict(b=1), dict(b=5)],
      dyn=lambda: ((B(), None, None),))
def reshape_negative_infer_static_product(x):
    return x.reshape(-1, 12).reshape(x.shape[0], 2, -1), x.reshape(x.size(0), -1, 3, 8).sum((2, 3)), x.view(-1)


@case("squeeze_multi_unsqueeze", lambda b, t: ((R(b, 1, t, 1),), {}), dict(b=2, t=3), [dict(b=3, t=2), dict(b=4, t=5)],
      dyn=lambda: ((B(lo=2), None, Dim("t", min=2, max=64), None),), below=dict(b=1, t=3))
def squeeze_multi_unsqueeze(x):
    return x.squeeze((1, 3)), x.squeeze(), x.squeeze(-1).unsqueeze(0), x[None, ..., None].shape


# =========================================================================================
# indexing
# =========================================================================================
@case("negative_step_slice", lambda n: ((R(n, 4),), {}), dict(n=5), [dict(n=3)], dyn=lambda: ((Dim("n", min=1), None),))
def negative_step_slice(x):
    return x[::-1]


@case("ellipsis_none_int_index", lambda b, t: ((R(b, t, 3, 4),), {}), dict(b=2, t=5), [dict(b=1, t=2), dict(b=3, t=7)],
      dyn=lambda: ((B(), Dim("t", min=2, max=64), None, None),), below=dict(b=2, t=1))
def ellipsis_none_int_index(x):
    return (x[..., 0], x[:, -1], x[:, None, 1:, ..., ::2], x[0, ..., None, -1], x[..., 1:-1, :], x[:, -2:], x[:, :-1] - x[:, 1:],
            x[-1:, 0])


@case("adv_index_tensor_combos", lambda b, t: ((R(b, t, 4), I(t, 3), I(b, 3)), {}), dict(b=2, t=5), [dict(b=1, t=1), dict(b=4, t=6)],
      dyn=lambda: ((B(), Dim("t", min=1), None), None, None))
def adv_index_tensor_combos(x, ti, bi):
    ar = torch.arange(x.shape[0])
    last = x[ar, x.shape[1] - 1]
    return x[:, ti], x[bi, ti], x[bi[:, None], ti[None, :]], x[..., [0, 2]], last, x[bi, :, ti.clamp(max=3)]


@case("bool_mask_index_3d", lambda b, t: ((R(b, t, 3),), {}), dict(b=2, t=4), [dict(b=1, t=3), dict(b=3, t=6)],
      dyn=lambda: ((B(), Dim("t", min=1), None),))
def bool_mask_index_3d(x):
    m = x.sum(-1) > 0
    sel = x[m]                      # (u0, 3)
    return sel.sum(0), sel.shape[0] * 0 + 1, x[..., torch.tensor([True, False, True])]


@case("setitem_slices_inplace", lambda b, t: ((R(b, t), R(b)), {}), dict(b=2, t=5), [dict(b=1, t=3), dict(b=4, t=8)],
      dyn=lambda: ((B(), Dim("t", min=3, max=64)), (B(),)), below=dict(b=2, t=2))
def setitem_slices_inplace(x, v):
    y = torch.zeros(x.shape[0], x.shape[1] + 2)
    y[:, 1:-1] = x
    y[:, 0] = v
    y[:, -1] += 1.0
    y[0, 2:4] *= 3
    y[..., ::2] -= 0.5
    y[:, [1, 3]] = 7.0
    y.narrow(1, 0, 2).mul_(2)
    y[:, 1].clamp_(min=0)
    return y


@case("setitem_tensor_index_broadcast", lambda b, t: ((R(b, t), I(t, b)), {}), dict(b=3, t=4), [dict(b=1, t=1), dict(b=5, t=6)],
      dyn=lambda: ((B(), Dim("t", min=1)), (B(),)))
def setitem_tensor_index_broadcast(x, pos):
    y = x.clone()
    y[torch.arange(x.shape[0]), pos] = -1.0
    z = torch.zeros_like(x)
    z[:, 0] = x[:, -1]
    z[x > 1] = x[x > 1] * 10
    return y, z


@case("inplace_on_input", lambda b: ((R(b, 3),), {}), dict(b=2), [dict(b=1), dict(b=4)], dyn=lambda: ((B(), None),))
def inplace_on_input(x):
    x.mul_(2)
    x[:, 0] = 0.0
    return x + 1


@case("index_with_int_tensor_scalar", lambda b: ((R(b, 5), torch.tensor(2)), {}), dict(b=2), [dict(b=1), dict(b=3)],
      dyn=lambda: ((B(), None), None))
def index_with_int_tensor_scalar(x, i):
    return x[:, i], x.select(1, 3), x[:, i:i + 1] if False else x[:, 1]


# =========================================================================================
# attributes, python branches, outputs
# =========================================================================================
@case("attributes_branches", lambda b, n: ((R(b, n), I(3, b, n)), {}), dict(b=2, n=3), [dict(b=1, n=5), dict(b=3, n=3)],
      dyn=lambda: ((B(), Dim("n", min=1)), (B(), Dim("n", min=1))))
def attributes_branches(x, k):
    out = x.T @ x
    if x.dtype == torch.float32 and x.is_floating_point() and not k.is_floating_point():
        out = out + 1
    if k.dtype in (torch.int64, torch.int32):
        out = out * 2
    if x.ndim == 2 and x.dim() == 2:
        out = out + x.numel() + x.nelement()
    if x.device.type == "cpu" and not x.is_cuda:
        out = out - 1
    if x.requires_grad:
        out = out * 0
    return out, x.element_size(), torch.is_tensor(x), x.is_contiguous(), x.t().is_contiguous(), x.shape[0] * x.stride(0)


Out = collections.namedtuple("Out", ["logits", "aux", "n"])


@case("output_containers", lambda b: ((R(b, 4),), {}), dict(b=2), [dict(b=1), dict(b=5)], dyn=lambda: ((B(), None),))
def output_containers(x):
    return {"a": x * 2, "nested": [x.sum(), (x.mean(), None)], "nt": Out(x, None, x.shape[0]), "shape": x.shape,
            "n": x.shape[0] * 3 + 1, "f": float(x.shape[1]) / 2, "s": "str", "b": x.shape[0] > 1}


@case("kwargs_only_inputs", lambda b: ((R(b, 3),), {"scale": R(b, 1), "bias": R(3), "mode": "add"}), dict(b=2),
      [dict(b=1), dict(b=4)], dyn=lambda: {"x": (B(), None), "scale": (B(), None), "bias": None, "mode": None})
def kwargs_only_inputs(x, *, scale, bias=None, mode="mul"):
    y = x * scale if mode == "mul" else x + scale
    return y + bias if bias is not None else y


@case("list_of_tensors_input", lambda b, n: (([R(b, 3) for _ in range(n)],), {}), dict(b=2, n=3), [dict(b=1, n=3), dict(b=5, n=3)],
      dyn=lambda: ([(B(),) + (None,)] * 3,))
def list_of_tensors_input(xs):
    return torch.stack(xs, 0).sum(0), torch.cat(xs, 1), len(xs), sum(xs)


@case("optional_none_input", lambda b: ((R(b, 3), None), {"mask": None}), dict(b=2), [dict(b=1), dict(b=4)],
      dyn=lambda: ((B(), None), None, None) if False else {"x": (B(), None), "bias": None, "mask": None})
def optional_none_input(x, bias=None, mask=None):
    if bias is not None:
        x = x + bias
    if mask is None:
        mask = torch.ones_like(x, dtype=torch.bool)
    return x.masked_fill(~mask, 0.0), bias


@case("dict_input_tuple_output", lambda b: (({"img": R(b, 2, 4, 4), "meta": {"scale": R(b)}},), {}), dict(b=2),
      [dict(b=1), dict(b=3)], dyn=lambda: ({"img": (B(), None, None, None), "meta": {"scale": (B(),)}},))
def dict_input_tuple_output(batch):
    return batch["img"] * batch["meta"]["scale"][:, None, None, None], tuple(batch["img"].shape)


@case("scalar_tensor_outputs", lambda b: ((R(b, 3),), {}), dict(b=2), [dict(b=1), dict(b=5)], dyn=lambda: ((B(), None),))
def scalar_tensor_outputs(x):
    return torch.tensor(x.shape[0]), torch.tensor(x.shape, dtype=torch.float32), torch.as_tensor(x.shape[0] * 2.5), torch.scalar_tensor(x.shape[0])


# =========================================================================================
# misc ML snippets
# =========================================================================================
@case("label_smoothing_losses", lambda b, c: ((R(b, c), I(c, b), R(b, c)), {}), dict(b=3, c=4), [dict(b=1, c=2), dict(b=6, c=7)],
      dyn=lambda: ((B(), Dim("c", min=2, max=64)), (B(),), (B(), Dim("c", min=2, max=64))), below=dict(b=3, c=1))
def label_smoothing_losses(logits, y, t):
    return (F.cross_entropy(logits, y, label_smoothing=0.1), F.cross_entropy(logits, y, reduction="none", ignore_index=1),
            F.binary_cross_entropy_with_logits(logits, t.sigmoid(), pos_weight=torch.ones(logits.shape[1])),
            F.mse_loss(logits, t, reduction="sum"), F.smooth_l1_loss(logits, t, beta=0.5), F.kl_div(logits.log_softmax(-1), t.softmax(-1), reduction="batchmean"),
            F.huber_loss(logits, t), F.l1_loss(logits, t), F.cross_entropy(logits, t.softmax(-1)))


@case("gumbel_free_sampling_argmax", lambda b, c: ((R(b, c),), {}), dict(b=2, c=5), [dict(b=1, c=1), dict(b=3, c=8)],
      dyn=lambda: ((B(), Dim("c", min=1)),))
def gumbel_free_sampling_argmax(x):
    hard = F.one_hot(x.argmax(-1), x.shape[-1]).to(x)
    soft = x.softmax(-1)
    return hard - soft.detach() + soft, torch.argmax(x), x.argmin(-1, keepdim=True)


@case("std_var_mean_corrections", lambda b, n: ((R(b, n),), {}), dict(b=2, n=5), [dict(b=1, n=2), dict(b=3, n=9)],
      dyn=lambda: ((B(), Dim("n", min=2, max=64)),), below=dict(b=2, n=1))
def std_var_mean_corrections(x):
    v, m = torch.var_mean(x, dim=-1, correction=0)
    s, m2 = torch.std_mean(x, dim=1, unbiased=True, keepdim=True)
    return v, m, s, m2, x.var(0, unbiased=False), torch.median(x, dim=-1).values, x.nanmean(1), x.quantile(0.5, dim=1) if False else x.nansum()


@case("logsumexp_softmax_dtypes", lambda b, n: ((R(b, n).half(),), {}), dict(b=2, n=5), [dict(b=1, n=1), dict(b=3, n=8)],
      dyn=lambda: ((B(), Dim("n", min=1)),), atol=1e-2, rtol=1e-2)
def logsumexp_softmax_dtypes(x):
    return x.softmax(-1, dtype=torch.float32), F.log_softmax(x, dim=1, dtype=torch.float64), x.float().logsumexp(-1), F.softmin(x.float(), -1), x.sum(dtype=torch.float32)


@case("glu_gelu_tanh_approx", lambda b, n: ((R(b, 2 * n),), {}), dict(b=2, n=3), [dict(b=1, n=1), dict(b=3, n=5)],
      dyn=lambda: ((B(), 2 * Dim("n", min=1)),))
def glu_gelu_tanh_approx(x):
    a, g = x.chunk(2, -1)
    return F.glu(x, -1), a * F.gelu(g, approximate="tanh"), F.silu(a) * g, F.relu6(x), F.hardtanh(x, -0.5, 0.5), F.prelu(x, torch.tensor([0.25])), F.softsign(x), F.tanhshrink(x), F.threshold(x, 0.1, 20.0), F.logsigmoid(x), F.rrelu(x, training=False), F.celu(x, 0.5), F.selu(x)


@case("masked_mean_pooling", lambda b, t: ((R(b, t, 4), (torch.arange(t)[None] < torch.tensor([t] + [max(1, t // 2)] * (b - 1))[:, None]).long()), {}),
      dict(b=2, t=5), [dict(b=1, t=1), dict(b=3, t=7)], dyn=lambda: ((B(), Dim("t", min=1), None), (B(), Dim("t", min=1))))
def masked_mean_pooling(h, attn):
    m = attn.unsqueeze(-1).type_as(h)
    return (h * m).sum(1) / m.sum(1).clamp(min=1e-9), h.masked_fill(~attn.bool()[..., None], -1e4).max(1).values


@case("position_ids_cumsum_mask", lambda b, t: ((I(2, b, t),), {}), dict(b=2, t=5), [dict(b=1, t=1), dict(b=3, t=6)],
      dyn=lambda: ((B(), Dim("t", min=1)),))
def position_ids_cumsum_mask(attn):
    pos = attn.long().cumsum(-1) - 1
    pos = pos.masked_fill(attn == 0, 1)
    return pos, (torch.cumsum(attn.ne(0).int(), dim=1).type_as(attn) * attn).long() + 1


@case("alibi_slopes_bias", lambda b, t: ((R(b, 4, t, t),), {}), dict(b=1, t=3), [dict(b=2, t=1), dict(b=1, t=6)],
      dyn=lambda: ((B(), None, Dim("t", min=1), Dim("t", min=1)),))
def alibi_slopes_bias(s):
    n_heads, t = s.shape[1], s.shape[-1]
    slopes = torch.pow(2.0, -torch.arange(1, n_heads + 1, dtype=torch.float32) * 8 / n_heads)
    pos = torch.arange(t)
    rel = (pos[None, :] - pos[:, None]).abs().neg().float()
    return s + slopes[:, None, None] * rel[None]


@case("relative_position_bucket", lambda t: ((R(1, t, t),), {}), dict(t=5), [dict(t=1), dict(t=9)],
      dyn=lambda: ((None, Dim("t", min=1), Dim("t", min=1)),))
def relative_position_bucket(x):
    t = x.shape[-1]
    ctx = torch.arange(t, dtype=torch.long)[:, None]
    mem = torch.arange(t, dtype=torch.long)[None, :]
    rel = mem - ctx
    n = -torch.min(rel, torch.zeros_like(rel))
    large = 4 + (torch.log(n.float().clamp(min=1) / 4) / math.log(32 / 4) * 4).to(torch.long)
    large = torch.min(large, torch.full_like(large, 7))
    bucket = torch.where(n < 4, n, large)
    return x + bucket.float()


@case("stft_istft", lambda b, t: ((R(b, t),), {}), dict(b=1, t=64), [dict(b=2, t=48)], dyn=lambda: ((B(), Dim("t", min=16, max=1024)),))
def stft_istft(x):
    w = torch.hann_window(16)
    s = torch.stft(x, 16, hop_length=4, window=w, return_complex=True)
    return s.abs()


@case("fft_family", lambda b, t: ((R(b, t),), {}), dict(b=2, t=8), [dict(b=1, t=4), dict(b=3, t=6)],
      dyn=lambda: ((B(), Dim("t", min=2, max=64)),))
def fft_family(x):
    f = torch.fft.rfft(x, dim=-1)
    return torch.fft.irfft(f, n=x.shape[-1]), torch.view_as_real(torch.fft.fft(x)), f.abs()


@case("linalg_small", lambda b: ((R(b, 3, 3),), {}), dict(b=2), [dict(b=1), dict(b=4)], dyn=lambda: ((B(), None, None),))
def linalg_small(x):
    a = x @ x.mT + torch.eye(3) * 3
    return torch.linalg.norm(x, dim=(-2, -1)), torch.linalg.vector_norm(x, ord=2, dim=-1), torch.linalg.inv(a), torch.linalg.det(a), torch.linalg.cholesky(a)


@case("cross_product_rotation", lambda n: ((R(n, 3), R(n, 3)), {}), dict(n=4), [dict(n=1), dict(n=7)],
      dyn=lambda: ((Dim("n", min=1), None), (Dim("n", min=1), None)))
def cross_product_rotation(a, b):
    return torch.linalg.cross(a, b), torch.cross(a, b, dim=1), (a * b).sum(-1).acos().nan_to_num(), torch.atan2(a, b)


@case("lerp_addcmul_where_mix", lambda n: ((R(n), R(n), R(n)), {}), dict(n=5), [dict(n=1), dict(n=8)],
      dyn=lambda: ((Dim("n", min=1),),) * 3)
def lerp_addcmul_where_mix(a, b, w):
    return torch.lerp(a, b, w.sigmoid()), torch.lerp(a, b, 0.3), torch.addcmul(a, b, w, value=0.5), torch.addcdiv(a, b, w.abs() + 1, value=-1), a.copysign(b), torch.heaviside(a, b), torch.logaddexp(a, b), torch.xlogy(a.abs(), b.abs() + 1), torch.sinc(a), torch.erfinv(w.tanh() * 0.9)


@case("sum_to_size_expand_grad_style", lambda b, n: ((R(b, n), R(1, n)), {}), dict(b=3, n=4), [dict(b=1, n=1), dict(b=5, n=2)],
      dyn=lambda: ((B(), Dim("n", min=1)), (None, Dim("n", min=1))))
def sum_to_size_expand_grad_style(x, bias):
    y = x + bias
    return y.sum_to_size(bias.shape), y.sum_to_size(1, 1), torch.sum(y, 0, keepdim=True)


@case("channels_last_contiguous", lambda b, h: ((R(b, 3, h, h),), {}), dict(b=1, h=4), [dict(b=2, h=3), dict(b=1, h=5)],
      dyn=lambda: ((B(), None, Dim("h", min=1), Dim("h", min=1)),))
def channels_last_contiguous(x):
    y = x.contiguous(memory_format=torch.channels_last)
    return F.conv2d(y, torch.ones(2, 3, 1, 1)), y.permute(0, 2, 3, 1).reshape(x.shape[0], -1, 3)


@case("chunked_loop_over_dynamic", lambda b, t: ((R(b, t, 4),), {}), dict(b=1, t=6), [dict(b=2, t=9), dict(b=1, t=3)],
      dyn=lambda: ((B(), 3 * Dim("c", min=1, max=30), None),))
def chunked_loop_over_dynamic(x):
    outs = []
    for blk in x.split(3, dim=1):
        outs.append(blk.cumsum(1))
    return torch.cat(outs, 1)


@case("tensor_item_loop_bound", lambda n: ((R(n),), {}), dict(n=4), [dict(n=2)], dyn=lambda: ((Dim("n", min=1),),))
def tensor_item_loop_bound(x):
    k = int((x > 0).sum())
    return x[:k].sum() if k > 0 else x.sum()


@case("sym_min_max_builtin", lambda b, t: ((R(b, t),), {}), dict(b=2, t=5), [dict(b=1, t=3), dict(b=3, t=12)],
      dyn=lambda: ((B(), Dim("t", min=1, max=64)),))
def sym_min_max_builtin(x):
    return torch.sym_max(x.shape[1], 4), x[:, : torch.sym_min(x.shape[1], 4)], x.new_zeros(torch.sym_max(x.shape[0], 3))


@case("zeros_with_computed_shape", lambda b, t: ((R(b, t, 4),), {}), dict(b=2, t=5), [dict(b=1, t=1), dict(b=3, t=8)],
      dyn=lambda: ((B(), Dim("t", min=1), None),))
def zeros_with_computed_shape(x):
    b, t, d = x.shape
    pad_t = (4 - t % 4) % 4
    y = torch.cat([x, x.new_zeros(b, pad_t, d)], 1)
    return y.view(b, -1, 4, d).mean(2), F.pad(x, (0, 0, 0, pad_t)).shape[1]


@case("where_broadcast_3way", lambda b, t: ((R(b, 1, t), R(1, t, 1), R(t)), {}), dict(b=2, t=3), [dict(b=1, t=1), dict(b=4, t=5)],
      dyn=lambda: ((B(), None, Dim("t", min=1)), (None, Dim("t", min=1), None), (Dim("t", min=1),)))
def where_broadcast_3way(a, b, c):
    return torch.where(a > b, c, b), torch.maximum(a, b) - torch.minimum(b, c), torch.fmax(a, c), (a + b + c).shape


@case("conv1d_causal_pad_list", lambda b, t: ((R(b, 3, t),), {}), dict(b=2, t=6), [dict(b=1, t=1), dict(b=3, t=10)],
      dyn=lambda: ((B(), None, Dim("t", min=1)),))
def conv1d_causal_pad_list(x):
    w = torch.ones(3, 1, 3) / 3
    y = F.conv1d(F.pad(x, [2, 0]), w, groups=3)
    return y, F.pad(x, (1, 1), mode="replicate"), F.pad(x, (2, 3), value=-1.0), F.pad(x, (1, 1), mode="circular")


@case("amp_like_dtype_roundtrip", lambda b: ((R(b, 4),), {}), dict(b=2), [dict(b=1), dict(b=3)], dyn=lambda: ((B(), None),), atol=1e-2, rtol=1e-2)
def amp_like_dtype_roundtrip(x):
    y = x.to(torch.bfloat16) @ torch.ones(4, 4, dtype=torch.bfloat16)
    return y.float(), y.dtype == torch.bfloat16, x.to(dtype=torch.float16, copy=True), x.to(x.device, torch.float64)


@case("int_tensor_shape_values", lambda b, t: ((R(b, t),), {}), dict(b=2, t=5), [dict(b=1, t=1), dict(b=3, t=8)],
      dyn=lambda: ((B(), Dim("t", min=1)),))
def int_tensor_shape_values(x):
    lens = torch.full((x.shape[0],), x.shape[1], dtype=torch.long)
    return lens, (torch.arange(x.shape[1])[None] < lens[:, None]).sum(-1), x.shape[1] / x.shape[0], x.shape[1] // 2 * 2 - x.shape[1] % 2


# =========================================================================================
# batch 2: soundness probes (layout, eps/kwargs, size-1 examples, non-tensor inputs)
# =========================================================================================
@case("contiguity_branch", lambda b, n: ((R(b, n),), {}), dict(b=2, n=3), [dict(b=3, n=4), dict(b=1, n=1)],
      dyn=lambda: ((B(), Dim("n", min=1)),))
def contiguity_branch(x):
    y = x.t()
    if not y.is_contiguous():
        y = y.contiguous() * 2
    return y, y.stride(), x.t().stride(), x[:, ::2].is_contiguous()


class EpsNorms(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln = nn.LayerNorm(4, eps=1.0)
        s.gn = nn.GroupNorm(2, 4, eps=2.0)
        s.bn = nn.BatchNorm1d(4, eps=5.0)
        s.rms = nn.RMSNorm(4, eps=3.0)
        s.inn = nn.InstanceNorm1d(4, eps=4.0)

    def forward(s, x):
        y = x.transpose(1, 2)
        return (s.ln(y), s.gn(x), s.bn(x), s.rms(y), s.inn(x), F.normalize(x, dim=1, eps=10.0),
                F.layer_norm(y, (4,), eps=0.5), F.group_norm(x, 4, eps=0.7), F.rms_norm(y, (4,), eps=2.5),
                F.batch_norm(x, torch.zeros(4), torch.ones(4), eps=3.0), F.instance_norm(x, eps=6.0),
                F.cosine_similarity(x, x.flip(1), dim=1, eps=100.0), F.pairwise_distance(y, y.flip(1), eps=3.0))


@case("large_eps_norms", lambda b, t: ((R(b, 4, t),), {}), dict(b=2, t=5), [dict(b=1, t=2), dict(b=3, t=9)],
      dyn=lambda: ((B(), None, Dim("t", min=2, max=64)),), model=EpsNorms().eval())
def _unused11(x):
    pass


@case("activation_kwargs", lambda n: ((R(3, n) * 3,), {}), dict(n=5), [dict(n=1), dict(n=8)], dyn=lambda: ((None, Dim("n", min=1)),))
def activation_kwargs(x):
    return (F.elu(x, alpha=2.0), F.leaky_relu(x, negative_slope=0.3), F.softplus(x, beta=2.0, threshold=1.0), F.hardtanh(x, min_val=-2.0, max_val=0.5),
            F.celu(x, alpha=3.0), torch.round(x, decimals=1), F.hardshrink(x, 0.7), F.softshrink(x, lambd=0.9), torch.clamp(x, -0.1, 0.2),
            F.gelu(x, approximate="none"), torch.special.expit(x), torch.logit(x.sigmoid(), eps=0.2), x.std(-1, correction=2) if x.shape[-1] > 2 else None,
            torch.nn.functional.threshold(x, 0.5, -3.0), F.softmax(x / 0.1, dim=0), x.var(dim=0, correction=0))


@case("squeeze_dynamic_example_one", lambda b: ((R(b, 3),), {}), dict(b=1), [dict(b=2), dict(b=5)],
      dyn=lambda: ((Dim("b", min=1, max=8), None),))
def squeeze_dynamic_example_one(x):
    return x.squeeze(), x.squeeze(0), x.unsqueeze(1).squeeze(1), x.squeeze(-1)


@case("broadcast_dynamic_example_one", lambda a, b: ((R(a, 4), R(b, 4)), {}), dict(a=1, b=3), [dict(a=1, b=5), dict(a=3, b=3), dict(a=2, b=2)],
      dyn=lambda: ((Dim("a", min=1, max=8), None), (Dim("b2", min=1, max=8), None)))
def broadcast_dynamic_example_one(x, y):
    return x + y, torch.matmul(x[:, None, :], y[:, :, None]).squeeze(-1)


@case("expand_dynamic_example_one", lambda b, n: ((R(b, 1, 4), R(n)), {}), dict(b=1, n=3), [dict(b=1, n=1), dict(b=4, n=2)],
      dyn=lambda: ((Dim.AUTO, None, None), (Dim("n", min=1),)))
def expand_dynamic_example_one(x, v):
    return x.expand(-1, v.shape[0], -1), x.squeeze(1).softmax(0), x.shape[0] == 1


@case("matmul_batch_broadcast_one", lambda a, b, n: ((R(a, n, 3), R(b, 3, 2)), {}), dict(a=1, b=2, n=4), [dict(a=1, b=3, n=1), dict(a=1, b=1, n=5)],
      dyn=lambda: ((Dim.AUTO, Dim("n", min=1), None), (B(), None, None)))
def matmul_batch_broadcast_one(x, y):
    return x @ y, torch.matmul(x[0], y), torch.bmm(x.expand(y.shape[0], -1, -1), y)


@case("python_scalar_inputs", lambda b: ((R(b, 3),), {"temperature": 0.7, "k": 2, "flag": True, "name": "a"}), dict(b=2), [dict(b=1), dict(b=4)],
      dyn=lambda: {"x": (B(), None), "temperature": None, "k": None, "flag": None, "name": None},
      bad=lambda a, k: [("temperature changed", a, {**k, "temperature": 0.5}), ("k changed", a, {**k, "k": 1}),
                        ("flag changed", a, {**k, "flag": False}), ("str changed", a, {**k, "name": "b"}),
                        ("int->float", a, {**k, "k": 2.0})])
def python_scalar_inputs(x, temperature=1.0, k=1, flag=False, name="x"):
    y = (x / temperature).softmax(-1)
    y = y.topk(k, -1).values
    return (y * 2 if flag else y), name + "!"


@case("container_inputs_bad_structure", lambda b: (([R(b, 3), R(b, 3)], {"a": R(b, 2), "opt": None}), {}), dict(b=2), [dict(b=1), dict(b=3)],
      dyn=lambda: ([(B(), None), (B(), None)], {"a": (B(), None), "opt": None}),
      bad=lambda a, k: [("list longer", ([*a[0], a[0][0]], a[1]), k), ("dict extra key", (a[0], {**a[1], "z": a[1]["a"]}), k),
                        ("None -> tensor", (a[0], {**a[1], "opt": a[1]["a"]}), k), ("tuple instead of list", (tuple(a[0]), a[1]), k)])
def container_inputs_bad_structure(xs, d):
    out = sum(xs) + d["a"].sum(-1, keepdim=True)
    if d["opt"] is not None:
        out = out + d["opt"].sum()
    return out


@case("int_outputs_from_shapes", lambda b, t: ((R(b, t),), {}), dict(b=2, t=5), [dict(b=1, t=1), dict(b=3, t=8)],
      dyn=lambda: ((B(), Dim("t", min=1)),))
def int_outputs_from_shapes(x):
    b, t = x.shape
    return b * t, t // 2, t % 3, -b, b + 1 > t, [b, t], x.numel(), x.size(1), len(x)


@case("interp_fractional_scale", lambda b, h, w: ((R(b, 2, h, w),), {}), dict(b=1, h=5, w=7), [dict(b=2, h=3, w=3), dict(b=1, h=9, w=4)],
      dyn=lambda: ((B(), None, Dim("h", min=2, max=64), Dim("w", min=2, max=64)),))
def interp_fractional_scale(x):
    return (F.interpolate(x, scale_factor=1.7, mode="bilinear", align_corners=False, recompute_scale_factor=False),
            F.interpolate(x, scale_factor=1.7, mode="bilinear", align_corners=False, recompute_scale_factor=True),
            F.interpolate(x, scale_factor=0.6, mode="nearest"),
            F.interpolate(x, scale_factor=(2.5, 1.3), mode="bicubic", align_corners=True),
            F.interpolate(x, scale_factor=0.5, mode="area"),
            F.upsample(x, scale_factor=2, mode="nearest"), nn.Upsample(scale_factor=1.5, mode="bilinear")(x))


@case("adaptive_pool_none_sizes", lambda b, h, w: ((R(b, 3, h, w),), {}), dict(b=1, h=5, w=7), [dict(b=2, h=3, w=3), dict(b=1, h=9, w=4)],
      dyn=lambda: ((B(), None, Dim("h", min=1, max=64), Dim("w", min=1, max=64)),))
def adaptive_pool_none_sizes(x):
    return F.adaptive_avg_pool2d(x, (None, 1)), nn.AdaptiveAvgPool2d((2, None))(x), F.adaptive_max_pool2d(x, (1, None))


@case("maxpool_ceil_edge", lambda b, h: ((R(b, 2, h, h),), {}), dict(b=1, h=6), [dict(b=1, h=5), dict(b=2, h=7), dict(b=1, h=3)],
      dyn=lambda: ((B(), None, Dim("h", min=3, max=64), Dim("h", min=3, max=64)),), below=dict(h=2))
def maxpool_ceil_edge(x):
    return (F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True), F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True, count_include_pad=True),
            F.avg_pool2d(x, 2, 2, ceil_mode=True, count_include_pad=False), F.max_pool2d(x, 2, 2, ceil_mode=True))


@case("conv_padding_modes", lambda b, h: ((R(b, 2, h, h + 1),), {}), dict(b=1, h=5), [dict(b=2, h=3), dict(b=1, h=8)],
      dyn=lambda: ((B(), None, Dim("h", min=3, max=64), Dim("h", min=3, max=64) + 1),))
class ConvPadModes(nn.Module):
    def __init__(s):
        super().__init__()
        s.a = nn.Conv2d(2, 2, 3, padding=1, padding_mode="reflect")
        s.b = nn.Conv2d(2, 2, 3, padding=2, padding_mode="replicate", dilation=2)
        s.c = nn.Conv2d(2, 2, (3, 1), padding=(1, 0), padding_mode="circular", stride=2)

    def forward(s, x):
        return s.a(x), s.b(x), s.c(x)


CASES[-1]["fn"] = ConvPadModes().eval()


@case("linear_bilinear_ranks", lambda b, t: ((R(b, t, 4), R(4)), {}), dict(b=2, t=3), [dict(b=1, t=1), dict(b=3, t=5)],
      dyn=lambda: ((B(), Dim("t", min=1), None), None))
def linear_bilinear_ranks(x, v):
    w, bias = torch.ones(5, 4) * 0.1, torch.arange(5.0)
    return (F.linear(x, w, bias), F.linear(v, w), F.linear(x, w[0]), F.bilinear(x, x, torch.ones(2, 4, 4), torch.ones(2)),
            nn.Flatten(1)(x), nn.Unflatten(2, (2, 2))(x))


@case("embedding_max_norm_inplace", lambda b: ((I(6, b, 3),), {}), dict(b=2), [dict(b=1), dict(b=3)],
      dyn=lambda: ((B(), None),))
class EmbMaxNorm(nn.Module):
    def __init__(s):
        super().__init__()
        s.e = nn.Embedding(6, 4, max_norm=1.0)
        with torch.no_grad():
            s.e.weight.mul_(5)

    def forward(s, ids):
        return s.e(ids)


CASES[-1]["fn"] = EmbMaxNorm().eval()


@case("cat_promote_empty", lambda b: ((R(b, 3), I(5, b, 3), R(0, 3)), {}), dict(b=2), [dict(b=1), dict(b=4)],
      dyn=lambda: ((B(), None), (B(), None), None))
def cat_promote_empty(x, k, e):
    return torch.cat([x, k], 0), torch.cat([e, x]), torch.cat([k, k.int()], 1), torch.concat((x, x.half()), -1), torch.cat([x[:0], x]), torch.hstack([x, k]), torch.vstack([x, e])


@case("int_reductions_dtypes", lambda n: ((I(5, 3, n, dtype=torch.int32), I(2, 3, n).bool(), I(4, 3, n, dtype=torch.uint8)), {}), dict(n=4),
      [dict(n=1), dict(n=7)], dyn=lambda: ((None, Dim("n", min=1)),) * 3)
def int_reductions_dtypes(k, m, u):
    return (k.sum(), k.prod(1), m.sum(-1), m.cumsum(1), u.sum(0), u + k, u - 1, m + m, m * 2.5, k.max(1).values, m.max(), u.to(torch.int8) * 100,
            k.float().mean(), (k / k.clamp(min=1)), k.abs(), m.any(), -k, k.sign(), u.cumprod(1), k.argmax(1), torch.amin(u, 1))


@case("float_to_int_casts", lambda n: ((R(n) * 10,), {}), dict(n=6), [dict(n=1), dict(n=9)], dyn=lambda: ((Dim("n", min=1),),))
def float_to_int_casts(x):
    return x.long(), x.int(), x.to(torch.uint8), x.bool(), x.round().long(), x.floor().to(torch.int16), x.type(torch.int32), x.trunc(), x.frac(), x.ceil().long()


@case("negative_index_tensor_and_dims", lambda b, n: ((R(b, n), R(b, n, 2)), {}), dict(b=3, n=4), [dict(b=2, n=2), dict(b=5, n=6)],
      dyn=lambda: ((B(lo=2), Dim("n", min=2)), (B(lo=2), Dim("n", min=2), None)))
def negative_index_tensor_and_dims(x, y):
    i = torch.tensor([-1, 0, -2])
    return x[i % x.shape[0]], x[:, torch.tensor([-1, 0])], y.gather(-1, torch.zeros_like(y, dtype=torch.long)), x.index_select(-1, torch.tensor([0])), y.sum(-3), x.select(-1, -1)


@case("masked_ops_inplace_clone", lambda b, n: ((R(b, n),), {}), dict(b=2, n=5), [dict(b=1, n=1), dict(b=3, n=8)],
      dyn=lambda: ((B(), Dim("n", min=1)),))
def masked_ops_inplace_clone(x):
    y = x.clone()
    y.masked_fill_(y < 0, 0.0)
    y.clamp_max_(0.5)
    y.mul_(torch.arange(x.shape[1]).float())
    z = torch.zeros_like(x).masked_scatter_(x > 0, x * 10)
    w = x.clone()
    w.sub_(w.mean(-1, keepdim=True)).div_(w.std(-1, keepdim=True) + 1)
    return y, z, w, x.masked_fill(x.isnan(), 0).where(x > -0.5, torch.tensor(-0.5))


@case("kron_blockdiag_cumulative", lambda n: ((R(n, 2), R(2, 3)), {}), dict(n=3), [dict(n=1), dict(n=5)],
      dyn=lambda: ((Dim("n", min=1), None), None))
def kron_blockdiag_cumulative(a, b):
    return torch.kron(a, b), torch.block_diag(a, b), torch.diff(a, n=1, dim=0, prepend=a[:1]), torch.cumsum(a, 0).flip(0), torch.cummax(a, 0)[1]


@case("grad_mode_contexts", lambda b: ((R(b, 3),), {}), dict(b=2), [dict(b=1), dict(b=4)], dyn=lambda: ((B(), None),))
def grad_mode_contexts(x):
    with torch.no_grad():
        a = x * 2
    with torch.inference_mode():
        b = x + 1
    with torch.enable_grad():
        c = x.exp()
    with torch.set_grad_enabled(False):
        d = x.relu()
    return a, b, c, d, torch.is_grad_enabled()


@case("half_bf16_compute", lambda b: ((R(b, 8).half(), R(b, 8).bfloat16()), {}), dict(b=2), [dict(b=1), dict(b=3)],
      dyn=lambda: ((B(), None), (B(), None)), atol=2e-2, rtol=2e-2)
def half_bf16_compute(h, bf):
    return (h @ h.t(), h.softmax(-1), F.layer_norm(h, (8,)), bf @ bf.t(), bf.float().sum(-1), h + bf, F.gelu(bf), h.mean(-1), h.sum(-1, dtype=torch.float32))


@case("tolist_numpy_errors", lambda b: ((R(b, 3),), {}), dict(b=2), [dict(b=3)], dyn=lambda: ((B(), None),))
def tolist_numpy_errors(x):
    return x * len(x.tolist())


@case("masked_scatter_repeat_interleave_tensor", lambda b: ((R(b, 3), torch.tensor([1, 2, 0] * b)[:b]), {}), dict(b=3), [dict(b=1), dict(b=4)],
      dyn=lambda: ((B(), None), (B(),)))
def masked_scatter_repeat_interleave_tensor(x, reps):
    return torch.repeat_interleave(x, reps, dim=0).sum(0), torch.repeat_interleave(x, 2, dim=0, output_size=2 * x.shape[0])


@case("nonzero_as_tuple_unique", lambda n: ((I(4, n),), {}), dict(n=6), [dict(n=1), dict(n=9)], dyn=lambda: ((Dim("n", min=1),),))
def nonzero_as_tuple_unique(k):
    (i,) = torch.nonzero(k > 1, as_tuple=True)
    u, inv, cnt = torch.unique(k, sorted=True, return_inverse=True, return_counts=True)
    return i, u, inv, cnt, k[i].sum()


@case("pad_negative_crop_symbolic", lambda b, t, s: ((R(b, 2, t), R(b, 2, s)), {}), dict(b=1, t=5, s=8), [dict(b=2, t=3, s=9), dict(b=1, t=7, s=7)],
      dyn=lambda: ((B(), None, Dim("t", min=3, max=64)), (B(), None, Dim("s", min=3, max=64))))
def pad_negative_crop_symbolic(x, y):
    d = y.shape[-1] - x.shape[-1]
    return F.pad(x, (d // 2, d - d // 2)) + y if d >= 0 else F.pad(x, (-1, -1)), F.pad(x, (-1, 0))


@case("einsum_attention_4d", lambda b, t, s: ((R(b, 2, t, 4), R(b, 2, s, 4), R(b, 2, s, 4)), {}), dict(b=1, t=3, s=5),
      [dict(b=2, t=1, s=2), dict(b=1, t=6, s=6)], dyn=lambda: ((B(), None, Dim("t", min=1), None), (B(), None, Dim("s", min=1), None), (B(), None, Dim("s", min=1), None)))
def einsum_attention_4d(q, k, v):
    a = torch.einsum("bhqd,bhkd->bhqk", q, k) * q.shape[-1] ** -0.5
    return torch.einsum("bhqk,bhkd->bqhd", a.softmax(-1), v).reshape(q.shape[0], q.shape[2], -1), torch.einsum("bhqd->bqd", q)


# =========================================================================================
# harness
# =========================================================================================
def _clone(v):
    return pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, v)


def _same_tree(a, b):
    fa, sa = pytree.tree_flatten(a)
    fb, sb = pytree.tree_flatten(b)
    return fa, fb, sa, sb


def _compare(eo, go, rtol, atol):
    """Return None if equal, else a description of the first difference."""
    if isinstance(eo, torch.Size):
        eo = tuple(eo)
    fa, fb, sa, sb = _same_tree(eo, go)
    if len(fa) != len(fb):
        return f"structure: eager {sa} vs ep {sb}"
    if type(eo) is not type(go) and not (isinstance(eo, tuple) and isinstance(go, tuple)):
        return f"container type: eager {type(eo).__name__} vs ep {type(go).__name__}"
    for i, (a, b) in enumerate(zip(fa, fb)):
        if isinstance(a, torch.Size):
            a = tuple(a)
        if isinstance(b, torch.Size):
            b = tuple(b)
        if isinstance(a, torch.Tensor):
            if not isinstance(b, torch.Tensor):
                return f"leaf {i}: eager tensor vs ep {type(b).__name__} {b!r}"
            if a.dtype != b.dtype:
                return f"leaf {i}: dtype eager {a.dtype} vs ep {b.dtype}"
            if a.shape != b.shape:
                return f"leaf {i}: shape eager {tuple(a.shape)} vs ep {tuple(b.shape)}"
            try:
                torch.testing.assert_close(b, a, rtol=rtol, atol=atol, equal_nan=True)
            except AssertionError as e:
                lines = [ln.strip() for ln in str(e).splitlines() if "Greatest absolute" in ln or "Mismatched" in ln]
                return f"leaf {i}: values differ ({'; '.join(lines)[:160]})"
        else:
            if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(b, bool)):
                return f"leaf {i}: type eager {type(a).__name__}={a!r} vs ep {type(b).__name__}={b!r}"
            if a != b and not (isinstance(a, float) and math.isnan(a)):
                return f"leaf {i}: eager {a!r} vs ep {b!r}"
    return None


def _noncontig(tree):
    """Same values, other memory layout: column-major for ndim >= 2, stride 2 for 1-d."""
    def nc(t):
        if not isinstance(t, torch.Tensor) or t.numel() <= 1:
            return t
        if t.ndim >= 2:
            perm = list(range(t.ndim))[::-1]
            return t.permute(perm).contiguous().permute(perm)
        if t.ndim == 1:
            buf = torch.zeros(2 * t.shape[0], dtype=t.dtype)
            v = buf[::2]
            v.copy_(t)
            return v
        return t
    return pytree.tree_map(nc, tree)


def _bad_variants(args, kwargs):
    """Inputs violating any contract: wrong rank, wrong dtype of the first tensor leaf."""
    leaves, spec = pytree.tree_flatten((args, kwargs))
    out = []
    ti = next((i for i, v in enumerate(leaves) if isinstance(v, torch.Tensor)), None)
    if ti is None:
        return out
    t = leaves[ti]
    l1 = list(leaves)
    l1[ti] = t.unsqueeze(0)
    out.append(("rank+1", pytree.tree_unflatten(l1, spec)))
    l2 = list(leaves)
    nd = {torch.float32: torch.float64, torch.float16: torch.float32, torch.int64: torch.int32, torch.int32: torch.int64,
          torch.bool: torch.uint8, torch.uint8: torch.int64}.get(t.dtype, torch.float32)
    l2[ti] = t.to(nd)
    out.append((f"dtype {str(t.dtype)[6:]}->{str(nd)[6:]}", pytree.tree_unflatten(l2, spec)))
    return out


def _errline(e, n=1):
    msg = [ln for ln in str(e).strip().splitlines() if ln.strip()][:n]
    return f"{type(e).__name__}: " + " | ".join(ln.strip()[:220] for ln in msg)


def _state(fn):
    if isinstance(fn, nn.Module):
        return {k: v.detach().clone() for k, v in fn.state_dict().items()}
    return {}


def _state_equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _inputs_equal(a, b):
    fa, sa = pytree.tree_flatten(a)
    fb, sb = pytree.tree_flatten(b)
    if sa != sb:
        return False
    for x, y in zip(fa, fb):
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype:
                return False
            if not torch.equal(x, y) and not (x.is_floating_point() and torch.equal(x.nan_to_num(), y.nan_to_num())
                                              and torch.equal(x.isnan(), y.isnan())):
                return False
    return True


def _eager(fn, args, kwargs):
    a, k = _clone((args, kwargs))
    torch.manual_seed(0)
    with torch.no_grad():
        out = fn(*a, **k)
    return out, (a, k)


def run_case(c, verbose=False):
    fn, make, rtol, atol = c["fn"], c["make"], c["rtol"], c["atol"]
    ex_args, ex_kwargs = make(**c["ex"])
    problems = []      # (kind, text)
    notes = []
    status = "ok"

    def check_run(ep, args, kwargs, label):
        try:
            eo, (ea, ek) = _eager(fn, args, kwargs)
        except Exception as e:  # eager itself fails: skip
            notes.append(f"{label}: eager fails ({_errline(e)})")
            return
        a, k = _clone((args, kwargs))
        try:
            torch.manual_seed(0)
            with torch.no_grad():
                go = ep.module()(*a, **k)
        except st.InputMismatchError as e:
            auto = [k for k, v in getattr(ep, "dims_report", {}).items() if str(v).startswith("static")]
            if auto and label.startswith("dyn"):
                notes.append(f"{label}: rejected, Dim.AUTO specialized {auto} ({_errline(e)[:140]})")
            else:
                problems.append(("narrow", f"{label}: valid input rejected: {_errline(e)}"))
            return
        except Exception as e:
            problems.append(("run-error", f"{label}: {_errline(e)}"))
            if verbose:
                traceback.print_exc()
            return
        d = _compare(eo, go, rtol, atol)
        if d is not None:
            problems.append(("WRONG RESULT", f"{label}: {d}"))
        elif not _inputs_equal((ea, ek), (a, k)):
            problems.append(("WRONG RESULT", f"{label}: in-place mutation of inputs differs from eager"))

    def check_bad(ep, args, kwargs, label):
        variants = _bad_variants(args, kwargs)
        if c["bad"]:
            variants += [(w, (a, k)) for w, a, k in c["bad"](args, kwargs)]
        for what, (ba, bk) in variants:
            ba, bk = _clone((ba, bk))
            try:
                with torch.no_grad():
                    ep.module()(*ba, **bk)
            except st.InputMismatchError:
                continue
            except Exception as e:
                problems.append(("bad rejection", f"{label} {what}: raised {_errline(e)} instead of InputMismatchError"))
                continue
            problems.append(("bad rejection", f"{label} {what}: accepted (no InputMismatchError)"))

    results = {}
    for mode in ("static", "dynamic"):
        spec = None if mode == "static" else (c["dyn"]() if callable(c["dyn"]) else c["dyn"])
        if mode == "dynamic" and spec is None:
            continue
        before_state = _state(fn)
        before_in = _clone((ex_args, ex_kwargs))
        try:
            torch.manual_seed(0)
            ep = st.export(fn, ex_args, ex_kwargs, dynamic_shapes=spec)
        except st.ExportError as e:
            results[mode] = ("export-error", _errline(e, 3))
            if verbose:
                traceback.print_exc()
            continue
        except Exception as e:
            results[mode] = ("CRASH", _errline(e, 3))
            if verbose:
                traceback.print_exc()
            continue
        finally:
            if not _state_equal(before_state, _state(fn)):
                problems.append(("MUTATION", f"{mode}: export changed the model's state"))
            if not _inputs_equal(before_in, (ex_args, ex_kwargs)):
                problems.append(("MUTATION", f"{mode}: export changed the example inputs"))
        results[mode] = ("ok", "")
        check_run(ep, ex_args, ex_kwargs, f"{mode} example")
        nc_args, nc_kwargs = _noncontig((ex_args, ex_kwargs))
        check_run(ep, nc_args, nc_kwargs, f"{mode} example non-contiguous")
        check_bad(ep, ex_args, ex_kwargs, mode)
        if mode == "dynamic":
            for sz in c["others"]:
                a, k = make(**sz)
                check_run(ep, a, k, f"dyn {sz}")
            if c["below"]:
                a, k = make(**{**c["ex"], **c["below"]})
                try:
                    with torch.no_grad():
                        ep.module()(*_clone(a), **_clone(k))
                    problems.append(("bad rejection", f"below-min {c['below']}: accepted"))
                except st.InputMismatchError:
                    pass
                except Exception as e:
                    problems.append(("bad rejection", f"below-min {c['below']}: raised {_errline(e)}"))
        if verbose:
            print(f"--- {c['name']} [{mode}]")
            print(ep)
    order = ["WRONG RESULT", "MUTATION", "CRASH", "run-error", "bad rejection", "narrow", "export-error"]
    kinds = [p[0] for p in problems] + [r[0] for r in results.values() if r[0] != "ok"]
    for k in order:
        if k in kinds:
            status = k
            break
    return status, results, problems, notes


def main(argv):
    verbose = "-v" in argv
    sel = [a for a in argv if not a.startswith("-")]
    cases = [c for c in CASES if not sel or any(s in c["name"] for s in sel)]
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    t0 = time.time()
    rows = []
    for c in cases:
        t = time.time()
        try:
            status, results, problems, notes = run_case(c, verbose)
        except Exception as e:  # harness bug
            status, results, problems, notes = "HARNESS", {}, [("HARNESS", _errline(e))], []
            traceback.print_exc()
        rows.append((c["name"], status, results, problems, notes, time.time() - t))
    w = max(len(r[0]) for r in rows)
    print(f"{'case':<{w}}  {'status':<13} {'static':<12} {'dynamic':<12} secs")
    print("-" * (w + 48))
    for name, status, results, problems, notes, dt in rows:
        s = results.get("static", ("-",))[0]
        d = results.get("dynamic", ("-",))[0]
        print(f"{name:<{w}}  {status:<13} {s:<12} {d:<12} {dt:5.2f}")
        for mode, (k, msg) in results.items():
            if k != "ok":
                print(f"{'':<{w}}    [{mode}] {msg}")
        for k, msg in problems:
            print(f"{'':<{w}}    {k}: {msg}")
        for n in notes:
            print(f"{'':<{w}}    note: {n}")
    counts = collections.Counter(r[1] for r in rows)
    print()
    print(f"sweep_patterns: {len(rows)} cases in {time.time() - t0:.1f}s: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
