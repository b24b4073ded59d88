"""Hand-written architectures, part 2 of 3 (the cases are listed in tests/conformance/table_models.py)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetrace import Dim
from tests.conformance.models.base import C, B64 as B
from tests.conformance.inputs import rn, ri, gen


class FCNVAE(nn.Module):
    """Fully-convolutional VAE, eval: z = mu (no sampling); spatial latent."""

    def __init__(self, c=3, z=4):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(c, 8, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(8, 16, 4, 2, 1), nn.GroupNorm(4, 16), nn.SiLU())
        self.to_moments = nn.Conv2d(16, 2 * z, 1)
        self.dec = nn.Sequential(nn.Conv2d(z, 16, 3, padding=1), nn.SiLU(), nn.ConvTranspose2d(16, 8, 4, 2, 1), nn.SiLU(),
                                 nn.ConvTranspose2d(8, c, 4, 2, 1))

    def reparameterize(self, mu, logvar):
        if self.training:
            return mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return mu

    def forward(self, x):
        mu, logvar = torch.chunk(self.to_moments(self.enc(x)), 2, dim=1)
        logvar = torch.clamp(logvar, -30.0, 20.0)
        z = self.reparameterize(mu, logvar)
        recon = torch.sigmoid(self.dec(z))
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=[1, 2, 3])
        return recon, kl


def fcn_vae():
    mk = lambda b, h, w: ((torch.rand(b, 3, h, w, generator=gen(b, h, w)),), {})
    d = Dim("h4", min=1, max=64), Dim("w4", min=1, max=64)
    spec = ({0: B(), 2: 4 * d[0], 3: 4 * d[1]},)
    return C(FCNVAE(), mk, spec, (2, 16, 24), [(1, 4, 40), (3, 32, 8)], (2, 18, 24), edges=[(1, 4, 4), (1, 256, 4)])


# =========================================================================================
# Sequence / language
# =========================================================================================
class MoE(nn.Module):
    """Top-k routing computed densely: every expert runs, one_hot(top-k) weights combine."""

    def __init__(self, d=16, n_exp=4, k=2, hidden=24):
        super().__init__()
        self.k, self.n = k, n_exp
        self.gate = nn.Linear(d, n_exp, bias=False)
        self.w1 = nn.Parameter(torch.randn(n_exp, d, hidden) * 0.2)
        self.w2 = nn.Parameter(torch.randn(n_exp, hidden, d) * 0.2)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):  # B, T, d
        bsz, T, d = x.shape
        h = self.norm(x).view(-1, d)
        logits = self.gate(h)
        probs = F.softmax(logits, dim=-1, dtype=torch.float)
        topv, topi = torch.topk(probs, self.k, dim=-1)
        topv = topv / topv.sum(dim=-1, keepdim=True)
        mask = F.one_hot(topi, num_classes=self.n).to(h.dtype)        # N, k, E
        weights = (mask * topv.unsqueeze(-1)).sum(1)                    # N, E
        inter = F.silu(torch.einsum("nd,edh->neh", h, self.w1))
        out_e = torch.einsum("neh,ehd->ned", inter, self.w2)
        y = (out_e * weights.unsqueeze(-1)).sum(1)
        # Switch-style load-balancing auxiliary loss
        tokens_per_expert = mask.sum(1).mean(0)
        aux = self.n * (tokens_per_expert * probs.mean(0)).sum()
        return x + y.view(bsz, T, d), aux, torch.gather(logits, 1, topi)


def moe():
    mk = lambda b, t: ((rn(b, t, 16),), {})
    spec = ({0: B(), 1: Dim("seq", min=1, max=512)},)
    return C(MoE(), mk, spec, (2, 9), [(1, 1), (4, 31)], (2, 513), edges=[(1, 2), (64, 512)])


def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def reshape_for_broadcast(freqs_cis, x):
    ndim = x.ndim
    assert 0 <= 1 < ndim
    assert freqs_cis.shape == (x.shape[1], x.shape[-1])
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class LlamaRef(nn.Module):
    """Meta's llama/model.py attention: complex freqs_cis buffer, view_as_complex rotary,
    mask = full(-inf).triu(1) with hstack of zeros for the cache (start_pos = 0)."""

    def __init__(self, d=16, heads=2, max_seq=64, vocab=20):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.tok = nn.Embedding(vocab, d)
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.norm = nn.RMSNorm(d, eps=1e-5)
        self.out = nn.Linear(d, vocab, bias=False)
        self.register_buffer("freqs_cis", precompute_freqs_cis(d // heads, max_seq * 2), persistent=False)

    def forward(self, tokens, start_pos: int = 0):
        bsz, seqlen = tokens.shape
        h = self.tok(tokens)
        freqs_cis = self.freqs_cis[start_pos: start_pos + seqlen]
        mask = None
        if seqlen > 1:
            mask = torch.full((seqlen, seqlen), float("-inf"), device=tokens.device)
            mask = torch.triu(mask, diagonal=1)
            mask = torch.hstack([torch.zeros((seqlen, start_pos), device=tokens.device), mask]).type_as(h)
        x = self.norm(h)
        xq = self.wq(x).view(bsz, seqlen, self.h, self.hd)
        xk = self.wk(x).view(bsz, seqlen, self.h, self.hd)
        xv = self.wv(x).view(bsz, seqlen, self.h, self.hd)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
        xq, keys, values = xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.hd)
        if mask is not None:
            scores = scores + mask
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        out = torch.matmul(scores, values).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.out(h + self.wo(out)).float()


def llama_ref():
    mk = lambda b, t: ((ri(20, b, t),), {})
    spec = ({0: B(), 1: Dim("seq", min=2, max=128)},)
    return C(LlamaRef(), mk, spec, (2, 11), [(1, 2), (3, 128)], (2, 129), edges=[(1, 3), (1, 64)],
             note="freqs_cis has 128 rows; seqlen > 1 branch")


class KVCacheStep(nn.Module):
    """One decode step: new token(s) attend to past keys/values given as inputs (dynamic past
    length, possibly 0); rotary positions start at the past length; returns the new cache."""

    def __init__(self, d=16, heads=2, vocab=20, max_pos=256):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.emb = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)
        self.lm = nn.Linear(d, vocab)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        self.register_buffer("inv_freq", inv, persistent=False)

    @staticmethod
    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def forward(self, input_ids, past_k, past_v):
        b, t = input_ids.shape
        past = past_k.shape[2]
        pos = torch.arange(past, past + t, device=input_ids.device)
        freqs = pos[:, None].float() * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        q, k, v = self.qkv(self.emb(input_ids)).view(b, t, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
        q = q * cos + self.rotate_half(q) * sin
        k = k * cos + self.rotate_half(k) * sin
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        kv_len = k.shape[2]
        causal = torch.ones(t, kv_len, dtype=torch.bool).tril(diagonal=kv_len - t)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
        y = self.o(y.transpose(1, 2).reshape(b, t, -1))
        return self.lm(y)[:, -1, :], k, v


def kv_cache():
    def mk(b, t, p):
        return (ri(20, b, t), rn(b, 2, p, 8), rn(b, 2, p, 8)), {}
    bb, p = B(), Dim("past", min=0, max=255)
    spec = ({0: bb, 1: Dim("new", min=1, max=8)}, {0: bb, 2: p}, {0: bb, 2: p})
    return C(KVCacheStep(), mk, spec, (2, 1, 7), [(3, 4, 0), (1, 1, 30)], (2, 1, 256), edges=[(1, 8, 0), (1, 1, 255), (1, 8, 255)])


def get_alibi_slopes(n):
    def pow2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return pow2(n)
    c = 2 ** math.floor(math.log2(n))
    return pow2(c) + get_alibi_slopes(2 * c)[0::2][: n - c]


class ALiBi(nn.Module):
    """ALiBi attention (BLOOM/MPT style): slopes x relative distance + causal + padding mask."""

    def __init__(self, d=24, heads=3, vocab=30):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.register_buffer("slopes", torch.tensor(get_alibi_slopes(heads)), persistent=False)

    def forward(self, input_ids, attention_mask):
        b, T = input_ids.shape
        x = self.emb(input_ids)
        q, k, v = self.qkv(x).split(x.shape[-1], dim=-1)
        q, k, v = (t.view(b, T, self.h, self.hd).transpose(1, 2) for t in (q, k, v))
        ctx = torch.arange(T, device=x.device)
        rel = ctx[None, :] - ctx[:, None]                        # j - i
        bias = self.slopes[:, None, None] * rel[None].float()     # h, T, T
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd) + bias
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        att = att.masked_fill(~causal, float("-inf"))
        att = att.masked_fill(attention_mask[:, None, None, :] == 0, torch.finfo(att.dtype).min)
        y = att.softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, T, -1))


def alibi():
    def mk(b, t):
        ids = ri(30, b, t, lo=1)
        m = torch.ones(b, t, dtype=torch.long)
        m[0, :1] = 0  # left padding
        return (ids, m), {}
    bb, t = B(), Dim("seq", min=2, max=512)
    spec = ({0: bb, 1: t}, {0: bb, 1: t})
    return C(ALiBi(), mk, spec, (2, 10), [(3, 2), (1, 33)], (2, 1), edges=[(1, 3), (1, 512)])


class T5RelBias(nn.Module):
    """Hand-written T5 relative-position buckets (log buckets), bidirectional encoder bias and
    a cross-length (query / key of different lengths) causal decoder bias."""

    def __init__(self, heads=2, num_buckets=8, max_distance=20, d=16):
        super().__init__()
        self.nb, self.md, self.h = num_buckets, max_distance, heads
        self.rel_enc = nn.Embedding(num_buckets, heads)
        self.rel_dec = nn.Embedding(num_buckets, heads)
        self.q, self.k = nn.Linear(d, d), nn.Linear(d, d)

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1))
        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    def compute_bias(self, qlen, klen, emb, bidirectional, offset=0):
        context_position = torch.arange(qlen, dtype=torch.long)[:, None] + offset
        memory_position = torch.arange(klen, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        bucket = self._relative_position_bucket(relative_position, bidirectional, self.nb, self.md)
        return emb(bucket).permute([2, 0, 1]).unsqueeze(0)

    def forward(self, x, y):  # x: B, S, d (encoder); y: B, T, d (decoder queries over memory + self)
        S, T = x.shape[1], y.shape[1]
        be = self.compute_bias(S, S, self.rel_enc, True)
        q, k = self.q(x).view(x.shape[0], S, self.h, -1).transpose(1, 2), self.k(x).view(x.shape[0], S, self.h, -1).transpose(1, 2)
        enc = torch.softmax(q @ k.transpose(-1, -2) + be, -1)
        bd = self.compute_bias(T, S + T, self.rel_dec, False, offset=S)
        kk = self.k(torch.cat([x, y], 1)).view(x.shape[0], S + T, self.h, -1).transpose(1, 2)
        qd = self.q(y).view(y.shape[0], T, self.h, -1).transpose(1, 2)
        dec = torch.softmax(qd @ kk.transpose(-1, -2) + bd, -1)
        return enc, dec


def t5_bias():
    mk = lambda b, s, t: ((rn(b, s, 16), rn(b, t, 16)), {})
    bb = B()
    spec = ({0: bb, 1: Dim("src", min=1, max=256)}, {0: bb, 1: Dim("tgt", min=1, max=256)})
    return C(T5RelBias(), mk, spec, (2, 13, 5), [(1, 40, 1), (3, 1, 30)], (2, 13, 0), edges=[(1, 1, 1), (1, 256, 256)])


class SlidingWindowLM(nn.Module):
    """Sliding-window causal attention mask built two ways (Mistral / Longformer local)."""

    def __init__(self, d=16, heads=2, window=4, vocab=25):
        super().__init__()
        self.w, self.h = window, heads
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(128, d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        b, T = ids.shape
        pos = torch.arange(0, T, dtype=torch.long, device=ids.device).unsqueeze(0)
        x = self.emb(ids) + self.pos(pos)
        i = torch.arange(T)[:, None]
        j = torch.arange(T)[None, :]
        allowed = (j <= i) & (j > i - self.w)
        band = torch.ones(T, T, dtype=torch.bool).tril().triu(-(self.w - 1))
        mask = torch.zeros(T, T).masked_fill(~(allowed & band), float("-inf"))
        y = self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]
        return self.head(self.ln(x + y))


def sliding_window():
    mk = lambda b, t: ((ri(25, b, t),), {})
    spec = ({0: B(), 1: Dim("seq", min=1, max=128)},)
    return C(SlidingWindowLM(), mk, spec, (2, 12), [(1, 1), (3, 128)], (2, 129), edges=[(1, 2), (1, 4), (1, 5)], note="pos table has 128 rows")


class CLIPLike(nn.Module):
    """Dual encoder: ViT image tower + causal text tower pooled at the EOT token (argmax of
    ids), L2-normalized, logit_scale.exp() * img @ txt.T (different batch sizes)."""

    def __init__(self, d=16, vocab=30, ctx=16, heads=2):
        super().__init__()
        self.conv1 = nn.Conv2d(3, d, 4, 4, bias=False)
        self.class_embedding = nn.Parameter(torch.randn(d) * 0.1)
        self.vpos = nn.Parameter(torch.randn(17, d) * 0.1)
        self.ln_pre = nn.LayerNorm(d)
        self.vblock = nn.TransformerEncoderLayer(d, heads, 2 * d, 0.0, activation="gelu", batch_first=True, norm_first=True)
        self.proj_v = nn.Parameter(torch.randn(d, 8) * 0.2)
        self.token_embedding = nn.Embedding(vocab, d)
        self.tpos = nn.Parameter(torch.randn(ctx, d) * 0.1)
        self.tblock = nn.TransformerEncoderLayer(d, heads, 2 * d, 0.0, activation="gelu", batch_first=True, norm_first=True)
        self.ln_final = nn.LayerNorm(d)
        self.text_projection = nn.Parameter(torch.randn(d, 8) * 0.2)
        self.logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / 0.07))
        self.register_buffer("attn_mask", torch.empty(ctx, ctx).fill_(float("-inf")).triu_(1), persistent=False)

    def encode_image(self, x):
        x = self.conv1(x).reshape(x.shape[0], self.conv1.out_channels, -1).permute(0, 2, 1)
        x = torch.cat([self.class_embedding.to(x.dtype) + torch.zeros(x.shape[0], 1, x.shape[-1], dtype=x.dtype), x], dim=1)
        x = self.ln_pre(x + self.vpos.to(x.dtype))
        return self.vblock(x)[:, 0, :] @ self.proj_v

    def encode_text(self, text):
        x = self.token_embedding(text) + self.tpos
        x = self.tblock(x, src_mask=self.attn_mask)
        x = self.ln_final(x)
        return x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection

    def forward(self, image, text):
        i = self.encode_image(image)
        t = self.encode_text(text)
        i = i / i.norm(dim=1, keepdim=True)
        t = t / t.norm(dim=1, keepdim=True)
        logits_per_image = self.logit_scale.exp() * i @ t.t()
        return logits_per_image, logits_per_image.t()


def clip_like():
    def mk(bi, bt):
        t = ri(28, bt, 16, lo=1)
        t[:, -3] = 29  # EOT id is the max id
        return (rn(bi, 3, 16, 16), t), {}
    spec = ({0: Dim("n_img", min=1, max=64)}, {0: Dim("n_txt", min=1, max=64)})
    return C(CLIPLike(), mk, spec, (3, 5), [(1, 1), (4, 2)], (3, 65))


class TransfoXL(nn.Module):
    """Transformer-XL layer: memory concatenated to the segment, relative sinusoid
    positions over klen, _rel_shift by zero-pad/view, triu(diagonal=1+mlen) mask, new mems."""

    def __init__(self, d=16, heads=2, mem_len=6):
        super().__init__()
        self.d, self.h, self.hd, self.mem_len = d, heads, d // heads, mem_len
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.r_net = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.r_w_bias = nn.Parameter(torch.randn(heads, d // heads) * 0.1)
        self.r_r_bias = nn.Parameter(torch.randn(heads, d // heads) * 0.1)
        self.ln = nn.LayerNorm(d)
        self.register_buffer("inv_freq", 1 / (10000 ** (torch.arange(0.0, d, 2.0) / d)))

    @staticmethod
    def _rel_shift(x):
        zero_pad_shape = (x.size(0), 1) + x.size()[2:]
        zero_pad = torch.zeros(zero_pad_shape, device=x.device, dtype=x.dtype)
        x_padded = torch.cat([zero_pad, x], dim=1)
        x_padded_shape = (x.size(1) + 1, x.size(0)) + x.size()[2:]
        x_padded = x_padded.view(*x_padded_shape)
        return x_padded[1:].view_as(x)

    def forward(self, w, mems):  # w: qlen, B, d ; mems: mlen, B, d
        qlen, bsz = w.size(0), w.size(1)
        mlen = mems.size(0)
        klen = mlen + qlen
        pos_seq = torch.arange(klen - 1, -1, -1.0, device=w.device, dtype=w.dtype)
        sinusoid_inp = torch.outer(pos_seq, self.inv_freq)
        r = torch.cat([sinusoid_inp.sin(), sinusoid_inp.cos()], dim=-1)[:, None, :]
        cat = torch.cat([mems, w], 0)
        w_heads = self.qkv(cat)
        r_head_k = self.r_net(r).view(klen, self.h, self.hd)
        w_head_q, w_head_k, w_head_v = torch.chunk(w_heads, 3, dim=-1)
        w_head_q = w_head_q[-qlen:].view(qlen, bsz, self.h, self.hd)
        w_head_k = w_head_k.view(klen, bsz, self.h, self.hd)
        w_head_v = w_head_v.view(klen, bsz, self.h, self.hd)
        AC = torch.einsum("ibnd,jbnd->ijbn", (w_head_q + self.r_w_bias, w_head_k))
        BD = self._rel_shift(torch.einsum("ibnd,jnd->ijbn", (w_head_q + self.r_r_bias, r_head_k)))
        score = (AC + BD) * (1 / self.hd ** 0.5)
        dec_attn_mask = torch.triu(w.new_ones(qlen, klen), diagonal=1 + mlen).bool()[:, :, None, None]
        score = score.float().masked_fill(dec_attn_mask, -float("inf"))
        prob = F.softmax(score, dim=1)
        vec = torch.einsum("ijbn,jbnd->ibnd", (prob, w_head_v)).contiguous().view(qlen, bsz, self.d)
        out = self.ln(w + self.o(vec))
        new_mems = torch.cat([mems, out], 0)[-self.mem_len:].detach()
        return out, new_mems


def transfo_xl():
    mk = lambda b, q, m: ((rn(q, b, 16), rn(m, b, 16)), {})
    bb = B()
    spec = ({0: Dim("qlen", min=1, max=64), 1: bb}, {0: Dim("mlen", min=6, max=64), 1: bb})
    return C(TransfoXL(), mk, spec, (2, 5, 6), [(1, 1, 6), (3, 9, 20)], (2, 5, 5))


class TabularModel(nn.Module):
    """FT-Transformer-ish tabular model: a dict of categorical columns (one embedding each,
    ModuleDict), numeric features tokenized per column, a CLS token, one encoder layer."""

    def __init__(self, cards=None, n_num=3, d=8):
        super().__init__()
        cards = cards or {"city": 7, "device": 3, "weekday": 7}
        self.cols = sorted(cards)
        self.emb = nn.ModuleDict({c: nn.Embedding(n + 1, d) for c, n in cards.items()})
        self.num_w = nn.Parameter(torch.randn(n_num, d) * 0.3)
        self.num_b = nn.Parameter(torch.zeros(n_num, d))
        self.cls = nn.Parameter(torch.randn(1, 1, d))
        self.enc = nn.TransformerEncoderLayer(d, 2, 16, 0.0, batch_first=True)
        self.bn = nn.BatchNorm1d(n_num)
        self.head = nn.Sequential(nn.LayerNorm(d), nn.ReLU(), nn.Linear(d, 1))

    def forward(self, cats: dict, num):
        num = self.bn(num)
        xn = num.unsqueeze(-1) * self.num_w + self.num_b                # B, n_num, d
        xc = torch.stack([self.emb[c](cats[c]) for c in self.cols], 1)  # B, n_cat, d
        x = torch.cat([self.cls.expand(num.shape[0], -1, -1), xn, xc], 1)
        return self.head(self.enc(x)[:, 0]).squeeze(-1)


def tabular():
    def mk(b):
        return ({"weekday": ri(8, b), "city": ri(8, b), "device": ri(4, b)}, rn(b, 3)), {}
    bb = B()
    spec = ({"city": {0: bb}, "device": {0: bb}, "weekday": {0: bb}}, {0: bb})
    return C(TabularModel(), mk, spec, (4,), [(1,), (9,)], (65,))


class BiLSTMMask(nn.Module):
    """BiLSTM encoder over padded batches, packing replaced by a length mask: masked mean /
    max pooling and a masked per-token classifier."""

    def __init__(self, vocab=40, e=8, h=8, ncls=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, e, padding_idx=0)
        self.lstm = nn.LSTM(e, h, num_layers=1, batch_first=True, bidirectional=True)
        self.tok = nn.Linear(2 * h, ncls)
        self.cls = nn.Linear(4 * h, ncls)

    def forward(self, ids, lengths):
        T = ids.shape[1]
        mask = torch.arange(T, device=ids.device)[None, :] < lengths[:, None]   # B, T
        out, _ = self.lstm(self.emb(ids))
        out = out * mask.unsqueeze(-1).to(out.dtype)
        mean = out.sum(1) / lengths.clamp(min=1).unsqueeze(-1).to(out.dtype)
        mx = out.masked_fill(~mask.unsqueeze(-1), float("-inf")).max(dim=1).values
        tags = self.tok(out).masked_fill(~mask.unsqueeze(-1), 0.0)
        return self.cls(torch.cat([mean, mx], -1)), tags


def bilstm_mask():
    def mk(b, t):
        lens = torch.tensor([t] + [max(1, t - 2 - i) for i in range(b - 1)])
        ids = ri(40, b, t, lo=1) * (torch.arange(t)[None] < lens[:, None])
        return (ids, lens), {}
    bb = B()
    spec = ({0: bb, 1: Dim("seq", min=1, max=256)}, {0: bb})
    return C(BiLSTMMask(), mk, spec, (3, 9), [(1, 1), (4, 20)], (3, 257), edges=[(2, 1), (1, 256)])


class PackedLSTM(BiLSTMMask):
    """The same with pack_padded_sequence (lengths on the CPU: data-dependent)."""

    def forward(self, ids, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.emb(ids), lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=ids.shape[1])
        return self.tok(out)


def packed_lstm():
    c = bilstm_mask()
    m = PackedLSTM()
    m.load_state_dict(c.model.state_dict())
    c.model = m
    c.note = "expected DataDependentError (packing is data-dependent)"
    return c


class MLMTied(nn.Module):
    """BERT-style encoder with a masked-LM head whose decoder weight is the word embedding
    (tied), predictions gathered at given masked positions; learned absolute positions."""

    def __init__(self, vocab=50, d=16, max_pos=64):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.position = nn.Embedding(max_pos, d)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)), persistent=False)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layer = nn.TransformerEncoderLayer(d, 2, 32, 0.0, activation="gelu", batch_first=True)
        self.transform = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d, eps=1e-12))
        self.decoder = nn.Linear(d, vocab, bias=False)
        self.bias = nn.Parameter(torch.zeros(vocab))
        self.decoder.weight = self.word.weight  # tie

    def forward(self, input_ids, attention_mask, masked_positions):
        T = input_ids.shape[1]
        pos = self.position_ids[:, :T]
        x = self.ln(self.word(input_ids) + self.position(pos))
        x = self.layer(x, src_key_padding_mask=attention_mask == 0)
        idx = masked_positions.unsqueeze(-1).expand(-1, -1, x.size(-1))
        h = torch.gather(x, 1, idx)
        return self.decoder(self.transform(h)) + self.bias


def mlm_tied():
    def mk(b, t, p):
        m = torch.ones(b, t, dtype=torch.long)
        m[-1, t - 1:] = 0
        return (ri(50, b, t), m, ri(t, b, p)), {}
    bb, t = B(), Dim("seq", min=2, max=64)
    spec = ({0: bb, 1: t}, {0: bb, 1: t}, {0: bb, 1: Dim("npred", min=1, max=20)})
    return C(MLMTied(), mk, spec, (2, 12, 3), [(1, 2, 1), (3, 64, 5)], (2, 65, 3), edges=[(1, 64, 20)])


class AudioFrontend(nn.Module):
    """wav2vec-style conv feature extractor: output lengths via (L - k) // s + 1 on a length
    tensor, feature mask from arange, masked mean over time; also positional conv with
    'same' padding that removes one frame (even kernel)."""

    def __init__(self):
        super().__init__()
        self.conv_layers = [(8, 10, 5), (8, 3, 2), (8, 2, 2)]
        layers, cin = [], 1
        for i, (c, k, s) in enumerate(self.conv_layers):
            layers.append(nn.Conv1d(cin, c, k, s, bias=False))
            layers.append(nn.GroupNorm(c, c, affine=True) if i == 0 else nn.Identity())
            layers.append(nn.GELU())
            cin = c
        self.fe = nn.Sequential(*layers)
        self.proj = nn.Linear(8, 16)
        self.pos_conv = nn.Conv1d(16, 16, 4, padding=2, groups=2)
        self.ln = nn.LayerNorm(16)

    def _get_feat_extract_output_lengths(self, input_lengths):
        def _conv_out_length(input_length, kernel_size, stride):
            return torch.div(input_length - kernel_size, stride, rounding_mode="floor") + 1
        for _, k, s in self.conv_layers:
            input_lengths = _conv_out_length(input_lengths, k, s)
        return input_lengths

    def forward(self, input_values, lengths):
        x = self.fe(input_values[:, None]).transpose(1, 2)
        x = self.proj(x)
        out_len = self._get_feat_extract_output_lengths(lengths)
        T = x.shape[1]
        L = input_values.shape[1]
        for _, k, s in self.conv_layers:   # the same length computation on the Python size
            L = (L - k) // s + 1
        assert L == T
        mask = torch.arange(T, device=x.device)[None, :] < out_len[:, None]
        pc = self.pos_conv(x.transpose(1, 2))[:, :, :-1]
        x = self.ln(x + F.gelu(pc).transpose(1, 2))
        x = x * mask[..., None]
        pooled = x.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        return x, pooled, out_len


def audio_frontend():
    def mk(b, n):
        lens = torch.tensor([n] + [max(30, n - 37 * (i + 1)) for i in range(b - 1)])
        return (rn(b, n), lens), {}
    bb = B()
    spec = ({0: bb, 1: Dim("samples", min=30, max=16000)}, {0: bb})  # 30: the last conv needs 2 frames
    return C(AudioFrontend(), mk, spec, (2, 400), [(1, 30), (3, 1001)], (2, 29), edges=[(2, 31), (1, 49), (1, 50)])
