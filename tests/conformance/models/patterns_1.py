"""Small torch API usage patterns, part 2 of 3 (ex benchmarks/sweep_patterns.py);
each ``@case`` registers a function or module with its sizes and spec."""

from __future__ import annotations

import collections
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetrace import Dim
from tests.conformance.models.pattern_base import B, I, R, case
from tests.conformance.models.patterns_0 import BNTrainStats


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
