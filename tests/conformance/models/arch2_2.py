"""Realistic architectures, part 3 of 4 (the cases are listed in tests/conformance/table_models.py)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetrace import Dim
from tests.conformance.models.base import C, B32 as B
from tests.conformance.inputs import rn, ri
from tests.conformance.models.arch2_1 import SeriesDecomp


class AutoCorrelation(nn.Module):
    """thuml/Autoformer AutoCorrelation (eval: time_delay_agg_inference)."""

    def __init__(self, factor=1):
        super().__init__()
        self.factor = factor

    def time_delay_agg_inference(self, values, corr):
        batch, head, channel, length = values.shape
        init_index = torch.arange(length).unsqueeze(0).unsqueeze(0).unsqueeze(0).repeat(batch, head, channel, 1).to(values.device)
        top_k = int(self.factor * math.log(length))
        mean_value = torch.mean(torch.mean(corr, dim=1), dim=1)
        weights, delay = torch.topk(mean_value, top_k, dim=-1)
        tmp_corr = torch.softmax(weights, dim=-1)
        tmp_values = values.repeat(1, 1, 1, 2)
        delays_agg = torch.zeros_like(values).float()
        for i in range(top_k):
            tmp_delay = init_index + delay[:, i].unsqueeze(1).unsqueeze(1).unsqueeze(1).repeat(1, head, channel, length)
            pattern = torch.gather(tmp_values, dim=-1, index=tmp_delay)
            delays_agg = delays_agg + pattern * (tmp_corr[:, i].unsqueeze(1).unsqueeze(1).unsqueeze(1).repeat(1, head, channel, length))
        return delays_agg

    def forward(self, queries, keys, values):
        B_, L, H, E = queries.shape
        _, S, _, D = values.shape
        if L > S:
            zeros = torch.zeros_like(queries[:, :(L - S), :]).float()
            values = torch.cat([values, zeros], dim=1)
            keys = torch.cat([keys, zeros], dim=1)
        else:
            values = values[:, :L, :, :]
            keys = keys[:, :L, :, :]
        q_fft = torch.fft.rfft(queries.permute(0, 2, 3, 1).contiguous(), dim=-1)
        k_fft = torch.fft.rfft(keys.permute(0, 2, 3, 1).contiguous(), dim=-1)
        res = q_fft * torch.conj(k_fft)
        corr = torch.fft.irfft(res, n=L, dim=-1)
        V = self.time_delay_agg_inference(values.permute(0, 2, 3, 1).contiguous(), corr).permute(0, 3, 1, 2)
        return V.contiguous()


class AutoCorrelationLayer(nn.Module):
    def __init__(self, d_model=16, n_heads=2):
        super().__init__()
        self.inner = AutoCorrelation()
        self.q, self.k, self.v, self.o = (nn.Linear(d_model, d_model) for _ in range(4))
        self.n_heads = n_heads

    def forward(self, queries, keys, values):
        B_, L, _ = queries.shape
        _, S, _ = keys.shape
        H = self.n_heads
        out = self.inner(self.q(queries).view(B_, L, H, -1), self.k(keys).view(B_, S, H, -1), self.v(values).view(B_, S, H, -1))
        return self.o(out.view(B_, L, -1))


class Autoformer(nn.Module):
    """Autoformer encoder layer + seasonal/trend decomposition + projection."""

    def __init__(self, c_in=3, d_model=16, moving_avg=5):
        super().__init__()
        self.emb = nn.Conv1d(c_in, d_model, 3, padding=1, padding_mode="circular", bias=False)
        self.attn = AutoCorrelationLayer(d_model)
        self.decomp1, self.decomp2 = SeriesDecomp(moving_avg), SeriesDecomp(moving_avg)
        self.conv1 = nn.Conv1d(d_model, 2 * d_model, 1, bias=False)
        self.conv2 = nn.Conv1d(2 * d_model, d_model, 1, bias=False)
        self.proj = nn.Linear(d_model, c_in)

    def forward(self, x_enc):
        seasonal, trend = SeriesDecomp(5)(x_enc)
        x = self.emb(seasonal.permute(0, 2, 1)).transpose(1, 2)
        x = x + self.attn(x, x, x)
        x, _ = self.decomp1(x)
        y = self.conv2(F.gelu(self.conv1(x.transpose(-1, 1)))).transpose(-1, 1)
        res, _ = self.decomp2(x + y)
        return self.proj(res) + trend


def autoformer():
    mk = lambda b, t: ((rn(b, t, 3),), {})
    spec = ({0: B(), 1: Dim("seq", min=8, max=512)},)
    return C(Autoformer(), mk, spec, (2, 24), [(1, 8), (3, 96)], (2, 513), edges=[(1, 512), (1, 21), (1, 20)])


class PositionalEmbedding(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        pe = torch.zeros(max_len, d_model).float()
        position = torch.arange(0, max_len).float().unsqueeze(1)
        div_term = (torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model)).exp()
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return self.pe[:, :x.size(1)]


class DistilConvLayer(nn.Module):
    """Informer ConvLayer (distilling): circular conv, BN, ELU, MaxPool1d(3, 2, 1)."""

    def __init__(self, c_in):
        super().__init__()
        self.downConv = nn.Conv1d(c_in, c_in, kernel_size=3, padding=2, padding_mode="circular")
        self.norm = nn.BatchNorm1d(c_in)
        self.activation = nn.ELU()
        self.maxPool = nn.MaxPool1d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        x = self.downConv(x.permute(0, 2, 1))
        x = self.maxPool(self.activation(self.norm(x)))
        return x.transpose(1, 2)


class ReplicateDecomp(nn.Module):
    """FEDformer/DLinear-style moving average with F.pad(mode='replicate') + avg_pool1d."""

    def __init__(self, k=7):
        super().__init__()
        self.k = k

    def forward(self, x):
        xt = F.pad(x.transpose(1, 2), ((self.k - 1) // 2, (self.k - 1) // 2), mode="replicate")
        trend = F.avg_pool1d(xt, self.k, stride=1).transpose(1, 2)
        return x - trend, trend


class InformerEnc(nn.Module):
    def __init__(self, c_in=4, d=16):
        super().__init__()
        self.value_embedding = nn.Conv1d(c_in, d, 3, padding=1, padding_mode="circular", bias=False)
        self.position_embedding = PositionalEmbedding(d)
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(d, 2, 32, 0.0, batch_first=True) for _ in range(2))
        self.convs = nn.ModuleList([DistilConvLayer(d)])
        self.decomp = ReplicateDecomp()
        self.norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, 1)

    def forward(self, x):
        seasonal, trend = self.decomp(x)
        h = self.value_embedding(seasonal.permute(0, 2, 1)).transpose(1, 2) + self.position_embedding(seasonal)
        for attn_layer, conv_layer in zip(self.layers, self.convs):
            h = conv_layer(attn_layer(h))
        h = self.layers[-1](h)
        return self.out(self.norm(h)), trend.mean(-1)


def informer():
    mk = lambda b, t: ((rn(b, t, 4),), {})
    spec = ({0: B(), 1: Dim("seq", min=4, max=4096)},)
    return C(InformerEnc(), mk, spec, (2, 24), [(1, 4), (3, 97)], (2, 3), edges=[(1, 4096), (1, 5)])


class WaveNet(nn.Module):
    """WaveNet: causal dilated conv by left F.pad, gated tanh*sigmoid with a global speaker
    condition, residual and skip 1x1 convs, mu-law class logits."""

    def __init__(self, classes=16, res=8, skip=8, dilations=(1, 2, 4, 8), n_spk=3):
        super().__init__()
        self.dilations = dilations
        self.start = nn.Conv1d(classes, res, 1)
        self.filter = nn.ModuleList(nn.Conv1d(res, res, 2, dilation=d) for d in dilations)
        self.gate = nn.ModuleList(nn.Conv1d(res, res, 2, dilation=d) for d in dilations)
        self.cond = nn.ModuleList(nn.Linear(4, 2 * res) for _ in dilations)
        self.residual = nn.ModuleList(nn.Conv1d(res, res, 1) for _ in dilations)
        self.skip = nn.ModuleList(nn.Conv1d(res, skip, 1) for _ in dilations)
        self.spk = nn.Embedding(n_spk, 4)
        self.end1, self.end2 = nn.Conv1d(skip, skip, 1), nn.Conv1d(skip, classes, 1)
        self.classes = classes

    def forward(self, audio, speaker):
        x = F.one_hot(audio, self.classes).float().transpose(1, 2)
        x = self.start(x)
        g = self.spk(speaker)
        skips = 0
        for i, d in enumerate(self.dilations):
            xp = F.pad(x, (d, 0))
            cf, cg = self.cond[i](g).unsqueeze(-1).chunk(2, dim=1)
            z = torch.tanh(self.filter[i](xp) + cf) * torch.sigmoid(self.gate[i](xp) + cg)
            skips = skips + self.skip[i](z)
            x = x + self.residual[i](z)
        out = self.end2(F.relu(self.end1(F.relu(skips))))
        return F.log_softmax(out, dim=1)


def wavenet():
    mk = lambda b, t: ((ri(16, b, t), ri(3, b)), {})
    bb = B()
    spec = ({0: bb, 1: Dim("t", min=1, max=16000)}, {0: bb})
    return C(WaveNet(), mk, spec, (2, 30), [(1, 1), (3, 200)], (2, 16001), edges=[(1, 2), (1, 16000)])


SEGSUM_DTYPE = [bool]


def segsum(x):
    """state-spaces/mamba ssd_minimal.py (einops repeat written out)."""
    bool = SEGSUM_DTYPE[0]  # noqa: A001  (the reference passes the Python type `bool`)
    T = x.size(-1)
    x = x[..., None].expand(*x.shape, T)
    mask = torch.tril(torch.ones(T, T, device=x.device, dtype=bool), diagonal=-1)
    x = x.masked_fill(~mask, 0)
    x_segsum = torch.cumsum(x, dim=-2)
    mask = torch.tril(torch.ones(T, T, device=x.device, dtype=bool), diagonal=0)
    return x_segsum.masked_fill(~mask, -torch.inf)


def ssd_minimal_discrete(X, A, B_, C_, block_len, initial_states=None):
    def chunk(t):  # rearrange(x, "b (c l) ... -> b c l ...", l=block_len)
        return t.reshape(t.shape[0], t.shape[1] // block_len, block_len, *t.shape[2:])
    X, A, B_, C_ = (chunk(t) for t in (X, A, B_, C_))
    A = A.permute(0, 3, 1, 2)   # "b c l h -> b h c l"
    A_cumsum = torch.cumsum(A, dim=-1)
    L = torch.exp(segsum(A))
    Y_diag = torch.einsum("bclsn,bcshn,bhcls,bcshp->bclhp", C_, B_, L, X)
    decay_states = torch.exp(A_cumsum[:, :, :, -1:] - A_cumsum)
    states = torch.einsum("bclhn,bhcl,bclhp->bchpn", B_, decay_states, X)
    if initial_states is None:
        initial_states = torch.zeros_like(states[:, :1])
    states = torch.cat([initial_states, states], dim=1)
    decay_chunk = torch.exp(segsum(F.pad(A_cumsum[:, :, :, -1], (1, 0))))
    new_states = torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)
    states, final_state = new_states[:, :-1], new_states[:, -1]
    state_decay_out = torch.exp(A_cumsum)
    Y_off = torch.einsum("bclhn,bchpn,bhcl->bclhp", C_, states, state_decay_out)
    Y = Y_diag + Y_off
    return Y.reshape(Y.shape[0], -1, *Y.shape[3:]), final_state


class Mamba2Lite(nn.Module):
    def __init__(self, d_model=16, d_state=8, headdim=4, expand=2, chunk=8, vocab=30):
        super().__init__()
        self.d_inner = expand * d_model
        self.nheads, self.headdim, self.d_state, self.chunk = self.d_inner // headdim, headdim, d_state, chunk
        self.emb = nn.Embedding(vocab, d_model)
        self.in_proj = nn.Linear(d_model, 2 * self.d_inner + 2 * d_state + self.nheads, bias=False)
        self.conv1d = nn.Conv1d(self.d_inner + 2 * d_state, self.d_inner + 2 * d_state, 4, groups=self.d_inner + 2 * d_state, padding=3)
        self.dt_bias = nn.Parameter(torch.rand(self.nheads))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, self.nheads + 1).float()))
        self.D = nn.Parameter(torch.ones(self.nheads))
        self.norm = nn.LayerNorm(self.d_inner)
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=False)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, input_ids):
        u = self.emb(input_ids)
        b, seqlen, _ = u.shape
        zxbcdt = self.in_proj(u)
        z, xBC, dt = torch.split(zxbcdt, [self.d_inner, self.d_inner + 2 * self.d_state, self.nheads], dim=-1)
        dt = F.softplus(dt + self.dt_bias)
        xBC = F.silu(self.conv1d(xBC.transpose(1, 2)).transpose(1, 2)[:, :seqlen])
        x, Bm, Cm = torch.split(xBC, [self.d_inner, self.d_state, self.d_state], dim=-1)
        A = -torch.exp(self.A_log.float())
        x = x.view(b, seqlen, self.nheads, self.headdim)
        y, _ = ssd_minimal_discrete(x * dt.unsqueeze(-1), A * dt, Bm.unsqueeze(2).expand(-1, -1, self.nheads, -1),
                                    Cm.unsqueeze(2).expand(-1, -1, self.nheads, -1), self.chunk)
        y = y + x * self.D.unsqueeze(-1)
        y = self.norm(y.reshape(b, seqlen, -1) * F.silu(z))
        return self.lm_head(self.out_proj(y) + u)


def mamba2_ssd():
    mk = lambda b, t: ((ri(30, b, t),), {})
    spec = ({0: B(), 1: 8 * Dim("chunks", min=1, max=64)},)
    return C(Mamba2Lite(), mk, spec, (2, 24), [(1, 8), (3, 64)], (2, 20), edges=[(1, 512)])


class _TorchBoolSegsum(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Mamba2Lite()

    def forward(self, ids):
        SEGSUM_DTYPE[0] = torch.bool
        try:
            return self.inner(ids)
        finally:
            SEGSUM_DTYPE[0] = bool


def mamba2_ssd_torchbool():
    """the same with dtype=torch.bool in segsum's masks."""
    mk = lambda b, t: ((ri(30, b, t),), {})
    spec = ({0: B(), 1: 8 * Dim("chunks", min=1, max=64)},)
    return C(_TorchBoolSegsum(), mk, spec, (2, 24), [(1, 8), (3, 64)], (2, 20), edges=[(1, 512)])


class RWKV_TimeMix(nn.Module):
    """BlinkDL/RWKV-LM RWKV-v2 'GPT mode' time mix: circulant decay matrix from time_w padded,
    tiled and reshaped, sliced [:T, :T]; token shift with nn.ZeroPad2d((0, 0, 1, -1))."""

    def __init__(self, n_embd=16, n_head=2, ctx_len=32):
        super().__init__()
        self.ctx_len, self.n_head, self.head_size = ctx_len, n_head, n_embd // n_head
        ww = torch.ones(n_head, ctx_len)
        curve = torch.tensor([-(ctx_len - 1 - i) for i in range(ctx_len)])
        for h in range(n_head):
            decay_speed = math.pow(ctx_len, -(h + 1) / (n_head - 1 + 1e-9)) if n_head > 1 else 0.0
            ww[h] = torch.exp(curve * decay_speed)
        self.time_w = nn.Parameter(ww)
        self.time_alpha = nn.Parameter(1 + 0.1 * torch.randn(n_head, 1, ctx_len))
        self.time_beta = nn.Parameter(1 + 0.1 * torch.randn(n_head, ctx_len, 1))
        self.time_gamma = nn.Parameter(1 + 0.1 * torch.randn(ctx_len, 1))
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.key, self.value, self.receptance = (nn.Linear(n_embd, n_embd, bias=False) for _ in range(3))
        self.output = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B_, T, C_ = x.size()
        TT = self.ctx_len
        w = F.pad(self.time_w, (0, TT))
        w = torch.tile(w, [TT])
        w = w[:, :-TT].reshape(-1, TT, 2 * TT - 1)
        w = w[:, :, TT - 1:]
        w = w[:, :T, :T] * self.time_alpha[:, :, :T] * self.time_beta[:, :T, :]
        x = torch.cat([self.time_shift(x[:, :, :C_ // 2]), x[:, :, C_ // 2:]], dim=-1)
        k, v, r = self.key(x), self.value(x), self.receptance(x)
        k = torch.exp(torch.clamp(k, max=30, min=-60))
        sum_k = torch.cumsum(k, dim=1)
        kv = (k * v).view(B_, T, self.n_head, self.head_size)
        wkv = torch.einsum("htu,buhc->bthc", w, kv).contiguous().view(B_, T, -1)
        rwkv = torch.sigmoid(r) * wkv / sum_k
        return self.output(rwkv) * self.time_gamma[:T, :]


class RWKV_ChannelMix(nn.Module):
    def __init__(self, n_embd=16):
        super().__init__()
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.key, self.value = nn.Linear(n_embd, 3 * n_embd), nn.Linear(3 * n_embd // 2, n_embd)
        self.weight, self.receptance = nn.Linear(3 * n_embd // 2, n_embd), nn.Linear(n_embd, n_embd)

    def forward(self, x):
        C_ = x.size(-1)
        x = torch.cat([self.time_shift(x[:, :, :C_ // 2]), x[:, :, C_ // 2:]], dim=-1)
        k, v = self.key(x).chunk(2, dim=-1)
        return torch.sigmoid(self.receptance(x)) * self.weight(F.mish(k) * v)


class RWKV2(nn.Module):
    def __init__(self, vocab=30, n_embd=16, ctx_len=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, n_embd)
        self.ln1, self.ln2, self.ln_f = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.att, self.ffn = RWKV_TimeMix(n_embd, ctx_len=ctx_len), RWKV_ChannelMix(n_embd)
        self.head = nn.Linear(n_embd, vocab, bias=False)
        self.ctx_len = ctx_len

    def forward(self, idx, targets=None):
        B_, T = idx.size()
        assert T <= self.ctx_len, "Cannot forward, because len(input) > model ctx_len."
        x = self.emb(idx)
        x = x + self.att(self.ln1(x))
        x = x + self.ffn(self.ln2(x))
        x = self.head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(x.view(-1, x.size(-1)), targets.view(-1))
        return x, loss


def rwkv_v2():
    mk = lambda b, t: ((ri(30, b, t), ri(30, b, t)), {})
    bb, t = B(), Dim("t", min=1, max=32)
    spec = ({0: bb, 1: t}, {0: bb, 1: t})
    return C(RWKV2(), mk, spec, (2, 12), [(1, 1), (3, 32)], (2, 33), edges=[(32, 2)])


class RetNetRelPos(nn.Module):
    def __init__(self, embed_dim=16, num_heads=2):
        super().__init__()
        angle = 1.0 / (10000 ** torch.linspace(0, 1, embed_dim // num_heads // 2))
        angle = angle.unsqueeze(-1).repeat(1, 2).flatten()
        decay = torch.log(1 - 2 ** (-5 - torch.arange(num_heads, dtype=torch.float)))
        self.register_buffer("angle", angle)
        self.register_buffer("decay", decay)

    def forward(self, slen):
        index = torch.arange(slen).to(self.decay)
        sin = torch.sin(index[:, None] * self.angle[None, :])
        cos = torch.cos(index[:, None] * self.angle[None, :])
        mask = torch.tril(torch.ones(slen, slen).to(self.decay))
        mask = torch.masked_fill(index[:, None] - index[None, :], ~mask.bool(), float("inf"))
        mask = torch.exp(mask * self.decay[:, None, None])
        mask = torch.nan_to_num(mask)
        mask = mask / mask.sum(dim=-1, keepdim=True).sqrt()
        mask = torch.nan_to_num(mask, nan=0.0)
        return (sin, cos), mask


def rotate_every_two(x):
    x1, x2 = x[:, :, :, ::2], x[:, :, :, 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def theta_shift(x, sin, cos):
    return (x * cos) + (rotate_every_two(x) * sin)


class MultiScaleRetention(nn.Module):
    """microsoft/torchscale MultiScaleRetention.parallel_forward."""

    def __init__(self, embed_dim=16, num_heads=2):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, embed_dim // num_heads
        self.key_dim, self.scaling = embed_dim // num_heads, (embed_dim // num_heads) ** -0.5
        self.q_proj, self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False), nn.Linear(embed_dim, embed_dim, bias=False)
        self.v_proj, self.g_proj = nn.Linear(embed_dim, embed_dim, bias=False), nn.Linear(embed_dim, embed_dim, bias=False)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.group_norm = nn.LayerNorm(self.head_dim, elementwise_affine=False, eps=1e-6)

    def forward(self, x, rel_pos):
        bsz, tgt_len, _ = x.size()
        (sin, cos), inner_mask = rel_pos
        q, k, v, g = self.q_proj(x), self.k_proj(x) * self.scaling, self.v_proj(x), self.g_proj(x)
        q = q.view(bsz, tgt_len, self.num_heads, self.key_dim).transpose(1, 2)
        k = k.view(bsz, tgt_len, self.num_heads, self.key_dim).transpose(1, 2)
        qr, kr = theta_shift(q, sin, cos), theta_shift(k, sin, cos)
        vr = v.view(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2)
        qk_mat = qr @ kr.transpose(-1, -2)
        qk_mat = qk_mat * inner_mask
        qk_mat = qk_mat / qk_mat.detach().abs().sum(dim=-1, keepdim=True).clamp(min=1, max=5e4)
        output = torch.matmul(qk_mat, vr).transpose(1, 2)
        output = self.group_norm(output).reshape(bsz, tgt_len, self.head_dim * self.num_heads)
        return self.out_proj(F.silu(g) * output)


class RetNet(nn.Module):
    def __init__(self, vocab=30, d=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rel = RetNetRelPos(d)
        self.ret = MultiScaleRetention(d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens):
        x = self.emb(tokens)
        rel = self.rel(x.size(1))
        x = x + self.ret(self.ln1(x), rel)
        x = x + self.ffn(self.ln2(x))
        return self.head(x)


def retnet():
    mk = lambda b, t: ((ri(30, b, t),), {})
    spec = ({0: B(), 1: Dim("t", min=1, max=2048)},)
    return C(RetNet(), mk, spec, (2, 11), [(1, 1), (3, 40)], (2, 2049), edges=[(1, 2), (1, 2048)])


def orthogonal_matrix_chunk(cols, gen):
    unstructured_block = torch.randn((cols, cols), generator=gen)
    q, r = torch.linalg.qr(unstructured_block.cpu(), mode="reduced")
    return q.t()


def gaussian_orthogonal_random_matrix(nb_rows, nb_columns, gen):
    nb_full_blocks = int(nb_rows / nb_columns)
    block_list = [orthogonal_matrix_chunk(nb_columns, gen) for _ in range(nb_full_blocks)]
    remaining_rows = nb_rows - nb_full_blocks * nb_columns
    if remaining_rows > 0:
        block_list.append(orthogonal_matrix_chunk(nb_columns, gen)[:remaining_rows])
    final_matrix = torch.cat(block_list)
    multiplier = torch.randn((nb_rows, nb_columns), generator=gen).norm(dim=1)
    return torch.diag(multiplier) @ final_matrix


def softmax_kernel(data, *, projection_matrix, is_query, normalize_data=True, eps=1e-4):
    b, h, *_ = data.shape
    data_normalizer = (data.shape[-1] ** -0.25) if normalize_data else 1.0
    ratio = projection_matrix.shape[0] ** -0.5
    projection = projection_matrix.expand(b, h, *projection_matrix.shape)   # repeat(p, 'j d -> b h j d')
    projection = projection.type_as(data)
    data_dash = torch.einsum("...id,...jd->...ij", (data_normalizer * data), projection)
    diag_data = data ** 2
    diag_data = torch.sum(diag_data, dim=-1)
    diag_data = (diag_data / 2.0) * (data_normalizer ** 2)
    diag_data = diag_data.unsqueeze(dim=-1)
    if is_query:
        data_dash = ratio * (torch.exp(data_dash - diag_data - torch.amax(data_dash, dim=-1, keepdim=True).detach()) + eps)
    else:
        data_dash = ratio * (torch.exp(data_dash - diag_data - torch.amax(data_dash, dim=(-1, -2), keepdim=True).detach()) + eps)
    return data_dash.type_as(data)


def linear_attention(q, k, v):
    k_cumsum = k.sum(dim=-2)
    D_inv = 1.0 / torch.einsum("...nd,...d->...n", q, k_cumsum.type_as(q))
    context = torch.einsum("...nd,...ne->...de", k, v)
    return torch.einsum("...de,...nd,...n->...ne", context, q, D_inv)


class Performer(nn.Module):
    """lucidrains/performer-pytorch FAVOR+ attention, random features fixed at init (buffer),
    key padding mask applied to k and v."""

    def __init__(self, vocab=30, d=16, heads=2, nb_features=12):
        super().__init__()
        self.h = heads
        self.emb = nn.Embedding(vocab, d)
        self.to_qkv = nn.Linear(d, 3 * d, bias=False)
        self.to_out = nn.Linear(d, d)
        self.register_buffer("projection_matrix", gaussian_orthogonal_random_matrix(nb_features, d // heads, torch.Generator().manual_seed(3)))
        self.ln = nn.LayerNorm(d)
        self.cls = nn.Linear(d, 2)

    def forward(self, ids, mask):
        x = self.emb(ids)
        b, n, _ = x.shape
        q, k, v = self.to_qkv(self.ln(x)).chunk(3, dim=-1)
        q, k, v = (t.view(b, n, self.h, -1).transpose(1, 2) for t in (q, k, v))
        gmask = mask[:, None, :, None]
        k = k.masked_fill(~gmask, 0.0)
        v = v.masked_fill(~gmask, 0.0)
        q = softmax_kernel(q, projection_matrix=self.projection_matrix, is_query=True)
        k = softmax_kernel(k, projection_matrix=self.projection_matrix, is_query=False)
        out = linear_attention(q, k, v).transpose(1, 2).reshape(b, n, -1)
        x = x + self.to_out(out)
        m = mask.unsqueeze(-1).to(x.dtype)
        return self.cls((x * m).sum(1) / m.sum(1))


def performer():
    def mk(b, t):
        m = torch.ones(b, t, dtype=torch.bool)
        m[0, (t + 1) // 2:] = False
        return (ri(30, b, t), m), {}
    bb, t = B(), Dim("t", min=1, max=4096)
    spec = ({0: bb, 1: t}, {0: bb, 1: t})
    return C(Performer(), mk, spec, (2, 13), [(1, 1), (3, 70)], (2, 4097), edges=[(1, 4096), (32, 2)])


def look_around(x, backward=1, forward=0, pad_value=-1, dim=2):
    t = x.shape[1]
    dims = (len(x.shape) - dim) * (0, 0)
    padded_x = F.pad(x, (*dims, backward, forward), value=pad_value)
    tensors = [padded_x[:, ind:(ind + t), ...] for ind in range(forward + backward + 1)]
    return torch.cat(tensors, dim=dim)


class LocalAttention(nn.Module):
    """lucidrains/local-attention (Reformer-style chunking): the sequence reshaped into
    windows of a fixed size (length must divide), look one window back, causal mask from
    arange positions, pad mask."""

    def __init__(self, d=16, window_size=4, vocab=30):
        super().__init__()
        self.window_size = window_size
        self.emb = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, vocab)

    def forward(self, ids):
        x = self.emb(ids)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        b, t, e = q.shape
        ws = self.window_size
        assert (t % ws) == 0, f"sequence length {t} must be divisible by window size {ws} for local attention"
        windows = t // ws
        ticker = torch.arange(t, device=x.device)[None, :]
        b_t = ticker.reshape(1, windows, ws)
        bq, bk, bv = (z.reshape(b, windows, ws, -1) for z in (q, k, v))
        bk, bv = look_around(bk), look_around(bv)
        bq_t, bq_k = b_t, look_around(b_t)
        sim = torch.einsum("bhie,bhje->bhij", bq, bk) * e ** -0.5
        mask_value = -torch.finfo(sim.dtype).max
        causal = bq_t[:, :, :, None] < bq_k[:, :, None, :]
        sim = sim.masked_fill(causal, mask_value)
        sim = sim.masked_fill(bq_k[:, :, None, :] == -1, mask_value)
        attn = sim.softmax(dim=-1)
        out = torch.einsum("bhij,bhje->bhie", attn, bv).reshape(b, t, e)
        return self.out(out)


def local_attn():
    mk = lambda b, t: ((ri(30, b, t),), {})
    spec = ({0: B(), 1: 4 * Dim("w", min=1, max=256)},)
    return C(LocalAttention(), mk, spec, (2, 16), [(1, 4), (3, 44)], (2, 18), edges=[(1, 1024)])
