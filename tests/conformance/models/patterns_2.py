"""Small torch API usage patterns, part 3 of 3 (ex benchmarks/sweep_patterns.py);
each ``@case`` registers a function or module with its sizes and spec."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetrace import Dim
from tests.conformance.models.pattern_base import B, CASES, I, R, case


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


CASES[-1][1].model = ConvPadModes().eval()


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


CASES[-1][1].model = EmbMaxNorm().eval()


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


@case("grad_mode_contexts", lambda b: ((R(b, 3),), {}), dict(b=2), [dict(b=1), dict(b=4)], dyn=lambda: ((B(), None),),
      grad=True)  # is_grad_enabled() is specialized at export, as torch.export does
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
