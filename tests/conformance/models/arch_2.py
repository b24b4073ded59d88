"""Hand-written architectures, part 3 of 3 (the cases are listed in tests/conformance/table_models.py)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetrace import Dim
from tests.conformance.models.base import C, Given, B64 as B
from tests.conformance.inputs import rn, ri, gen


class ConformerFront(nn.Module):
    """ESPnet Conv2dSubsampling (x_mask[:, :, :-2:2][:, :, :-2:2]) + Conformer convolution
    module (pointwise -> GLU -> depthwise -> BatchNorm -> SiLU -> pointwise) + macaron FFN."""

    def __init__(self, idim=12, d=16, k=5):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, d, 3, 2), nn.ReLU(), nn.Conv2d(d, d, 3, 2), nn.ReLU())
        self.out = nn.Linear(d * (((idim - 1) // 2 - 1) // 2), d)
        self.ff1 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))
        self.pointwise_conv1 = nn.Conv1d(d, 2 * d, 1)
        self.depthwise_conv = nn.Conv1d(d, d, k, padding=(k - 1) // 2, groups=d)
        self.norm = nn.BatchNorm1d(d)
        self.pointwise_conv2 = nn.Conv1d(d, d, 1)
        self.ln = nn.LayerNorm(d)

    def forward(self, xs, x_mask):  # xs: B, T, idim ; x_mask: B, 1, T (bool)
        x = self.conv(xs.unsqueeze(1))
        b, c, t, f = x.size()
        x = self.out(x.transpose(1, 2).contiguous().view(b, t, c * f))
        mask = x_mask[:, :, :-2:2][:, :, :-2:2]
        x = x + 0.5 * self.ff1(x)
        y = x.transpose(1, 2)
        y = y.masked_fill(~mask, 0.0)
        y = F.glu(self.pointwise_conv1(y), dim=1)
        y = self.pointwise_conv2(F.silu(self.norm(self.depthwise_conv(y))))
        x = self.ln(x + y.transpose(1, 2))
        return x, mask


def conformer():
    def mk(b, t):
        m = torch.ones(b, 1, t, dtype=torch.bool)
        m[-1, :, t - t // 3:] = False
        return (rn(b, t, 12), m), {}
    bb, t = B(), Dim("frames", min=7, max=3000)
    spec = ({0: bb, 1: t}, {0: bb, 2: t})
    return C(ConformerFront(), mk, spec, (2, 30), [(1, 7), (3, 101)], (2, 6), edges=[(1, 8), (1, 9), (2, 10), (1, 11)])


class GRUAttnDecoder(nn.Module):
    """Bidirectional GRU encoder + GRUCell decoder with Bahdanau attention over a length
    mask, greedy for a fixed number of steps (feeding back the argmax token)."""

    def __init__(self, v=15, e=8, h=8, steps=4, bos=1):
        super().__init__()
        self.steps, self.bos = steps, bos
        self.emb = nn.Embedding(v, e)
        self.enc = nn.GRU(e, h, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * h, h)
        self.W_h, self.W_s, self.v = nn.Linear(2 * h, h, bias=False), nn.Linear(h, h), nn.Linear(h, 1, bias=False)
        self.cell = nn.GRUCell(e + 2 * h, h)
        self.out = nn.Linear(h + 2 * h, v)

    def forward(self, src, src_len):
        S = src.size(1)
        mask = torch.arange(S)[None, :] < src_len[:, None]
        enc, hn = self.enc(self.emb(src))
        s = torch.tanh(self.bridge(torch.cat([hn[0], hn[1]], dim=-1)))
        keys = self.W_h(enc)
        y = torch.full((src.size(0),), self.bos, dtype=torch.long)
        logits = []
        for _ in range(self.steps):
            e = self.v(torch.tanh(keys + self.W_s(s).unsqueeze(1))).squeeze(-1)
            a = torch.softmax(e.masked_fill(~mask, -1e9), dim=-1)
            ctx = torch.bmm(a.unsqueeze(1), enc).squeeze(1)
            s = self.cell(torch.cat([self.emb(y), ctx], -1), s)
            lo = self.out(torch.cat([s, ctx], -1))
            logits.append(lo)
            y = lo.argmax(-1)
        return torch.stack(logits, 1)


def gru_decoder():
    def mk(b, s):
        lens = torch.tensor([s] + [max(1, s - 3 * (i + 1)) for i in range(b - 1)])
        return (ri(15, b, s), lens), {}
    bb = B()
    spec = ({0: bb, 1: Dim("src", min=1, max=100)}, {0: bb})
    return C(GRUAttnDecoder(), mk, spec, (2, 8), [(1, 1), (3, 17)], (2, 101), edges=[(2, 1), (1, 100)])


class CausalLinearAttn(nn.Module):
    """Katharopoulos linear attention: phi = elu + 1, causal via cumsum of k v^T."""

    def __init__(self, d=16, heads=2):
        super().__init__()
        self.h = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.h, -1) for t in (q, k, v))
        q, k = F.elu(q) + 1, F.elu(k) + 1
        kv = torch.einsum("bnhd,bnhe->bnhde", k, v).cumsum(dim=1)
        k_cum = k.cumsum(dim=1)
        num = torch.einsum("bnhd,bnhde->bnhe", q, kv)
        den = torch.einsum("bnhd,bnhd->bnh", q, k_cum).unsqueeze(-1) + 1e-6
        return self.o((num / den).reshape(b, n, d))


def linear_attn():
    mk = lambda b, t: ((rn(b, t, 16),), {})
    spec = ({0: B(), 1: Dim("seq", min=1, max=1024)},)
    return C(CausalLinearAttn(), mk, spec, (2, 10), [(1, 1), (3, 50)], (65, 10), edges=[(1, 2)])


class FFTConv(nn.Module):
    """S4D / Hyena long convolution: Vandermonde kernel over L, FFT convolution with n=2L."""

    def __init__(self, h=8, n=4):
        super().__init__()
        self.log_dt = nn.Parameter(torch.rand(h) * -3)
        self.A_re = nn.Parameter(-0.5 * torch.ones(h, n // 2))
        self.A_im = nn.Parameter(math.pi * torch.arange(n // 2).float().repeat(h, 1))
        self.Cr = nn.Parameter(torch.randn(h, n // 2) * 0.5)
        self.D = nn.Parameter(torch.randn(h))

    def forward(self, u):  # B, H, L
        L = u.size(-1)
        dt = torch.exp(self.log_dt)
        A = -torch.exp(torch.log(-self.A_re)) + 1j * self.A_im
        dtA = A * dt.unsqueeze(-1)
        K = dtA.unsqueeze(-1) * torch.arange(L, device=u.device)
        C_ = self.Cr * (torch.exp(dtA) - 1.0) / A
        k = 2 * torch.einsum("hn,hnl->hl", C_, torch.exp(K)).real
        k_f = torch.fft.rfft(k, n=2 * L)
        u_f = torch.fft.rfft(u, n=2 * L)
        y = torch.fft.irfft(u_f * k_f, n=2 * L)[..., :L]
        return F.gelu(y + u * self.D.unsqueeze(-1))


def fft_conv():
    mk = lambda b, l: ((rn(b, 8, l),), {})
    spec = ({0: B(), 2: Dim("len", min=1, max=4096)},)
    return C(FFTConv(), mk, spec, (2, 20), [(1, 1), (3, 77)], (2, 4097))


class SASRec(nn.Module):
    """Sequential recommender: item ids with padding 0, timeline mask, causal bool attn_mask
    to nn.MultiheadAttention, scores against given positive / negative item ids."""

    def __init__(self, n_items=30, d=16, maxlen=50, heads=2):
        super().__init__()
        self.item_emb = nn.Embedding(n_items + 1, d, padding_idx=0)
        self.pos_emb = nn.Embedding(maxlen, d)
        self.ln_a, self.ln_f, self.ln_last = nn.LayerNorm(d, eps=1e-8), nn.LayerNorm(d, eps=1e-8), nn.LayerNorm(d, eps=1e-8)
        self.attn = nn.MultiheadAttention(d, heads, dropout=0.0)
        self.ff = nn.Sequential(nn.Conv1d(d, d, 1), nn.ReLU(), nn.Conv1d(d, d, 1))

    def log2feats(self, log_seqs):
        seqs = self.item_emb(log_seqs) * self.item_emb.embedding_dim ** 0.5
        poss = torch.arange(1, log_seqs.shape[1] + 1, device=log_seqs.device).unsqueeze(0).repeat(log_seqs.shape[0], 1)
        poss = poss * (log_seqs != 0)
        seqs = seqs + self.pos_emb(poss)
        timeline_mask = log_seqs == 0
        seqs = seqs * ~timeline_mask.unsqueeze(-1)
        tl = seqs.shape[1]
        attention_mask = ~torch.tril(torch.ones((tl, tl), dtype=torch.bool, device=seqs.device))
        seqs = torch.transpose(seqs, 0, 1)
        Q = self.ln_a(seqs)
        mha, _ = self.attn(Q, seqs, seqs, attn_mask=attention_mask)
        seqs = torch.transpose(Q + mha, 0, 1)
        seqs = self.ln_f(seqs)
        seqs = seqs + self.ff(seqs.transpose(-1, -2)).transpose(-1, -2)
        seqs = seqs * ~timeline_mask.unsqueeze(-1)
        return self.ln_last(seqs)

    def forward(self, log_seqs, pos_seqs, neg_seqs):
        feats = self.log2feats(log_seqs)
        pos_logits = (feats * self.item_emb(pos_seqs)).sum(dim=-1)
        neg_logits = (feats * self.item_emb(neg_seqs)).sum(dim=-1)
        return pos_logits, neg_logits


def sasrec():
    def mk(b, t):
        s = ri(31, b, t, lo=1)
        s[0, : t // 2] = 0  # left padding
        return (s, ri(31, b, t, lo=1), ri(31, b, t, lo=1)), {}
    bb, t = B(), Dim("seq", min=1, max=49)
    spec = ({0: bb, 1: t}, {0: bb, 1: t}, {0: bb, 1: t})
    return C(SASRec(), mk, spec, (2, 10), [(1, 1), (3, 49)], (2, 50), edges=[(2, 2)], note="pos table has 50 rows, positions 1..T")


class DCNv2(nn.Module):
    """Deep & Cross Network v2 + factorization-machine second-order term."""

    def __init__(self, fields=4, vocab=20, e=4, layers=2):
        super().__init__()
        self.emb = nn.Embedding(fields * vocab, e)
        self.register_buffer("offsets", torch.arange(fields) * vocab)
        d = fields * e + 2
        self.cross_w = nn.ParameterList([nn.Parameter(torch.randn(d, d) * 0.1) for _ in range(layers)])
        self.cross_b = nn.ParameterList([nn.Parameter(torch.zeros(d)) for _ in range(layers)])
        self.deep = nn.Sequential(nn.Linear(d, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU())
        self.out = nn.Linear(d + 8 + 1, 1)

    def forward(self, sparse, dense):
        e = self.emb(sparse + self.offsets.unsqueeze(0))               # B, F, e
        fm = 0.5 * (e.sum(1).pow(2) - e.pow(2).sum(1)).sum(1, keepdim=True)
        x0 = torch.cat([e.flatten(1), torch.log1p(dense.clamp(min=0))], 1)
        x = x0
        for w, b in zip(self.cross_w, self.cross_b):
            x = x0 * (x @ w + b) + x
        return torch.sigmoid(self.out(torch.cat([x, self.deep(x0), fm], 1))).squeeze(1)


def dcn():
    mk = lambda b: ((ri(20, b, 4), rn(b, 2).abs() * 10), {})
    bb = B()
    spec = ({0: bb}, {0: bb})
    return C(DCNv2(), mk, spec, (5,), [(1,), (17,)], (65,))


class CapsNet(nn.Module):
    """Dynamic routing between capsules (3 iterations), squash, class-capsule lengths."""

    def __init__(self, in_caps_ch=8, n_cls=4, out_dim=6, iters=3):
        super().__init__()
        self.conv = nn.Conv2d(1, 16, 5, 2)
        self.prim = nn.Conv2d(16, 2 * in_caps_ch, 3, 2)
        self.in_dim, self.iters = in_caps_ch, iters
        self.W = nn.Parameter(0.1 * torch.randn(1, 2 * 4 * 4, n_cls, out_dim, in_caps_ch))

    @staticmethod
    def squash(s, dim=-1):
        n2 = (s ** 2).sum(dim=dim, keepdim=True)
        return n2 / (1 + n2) * s / torch.sqrt(n2 + 1e-8)

    def forward(self, x):
        b = x.size(0)
        u = self.prim(F.relu(self.conv(x)))                               # B, 16, 4, 4
        u = u.view(b, 2, self.in_dim, -1).permute(0, 1, 3, 2).reshape(b, -1, self.in_dim)
        u = self.squash(u)
        u_hat = torch.matmul(self.W, u[:, :, None, :, None]).squeeze(-1)  # B, N, C, D
        b_ij = torch.zeros(b, u_hat.size(1), u_hat.size(2), device=x.device)
        for i in range(self.iters):
            c = F.softmax(b_ij, dim=2)
            v = self.squash((c.unsqueeze(-1) * u_hat).sum(1))             # B, C, D
            if i < self.iters - 1:
                b_ij = b_ij + (u_hat * v.unsqueeze(1)).sum(-1)
        return v.norm(dim=-1)


def capsnet():
    mk = lambda b: ((rn(b, 1, 23, 23),), {})
    return C(CapsNet(), mk, ({0: B()},), (2,), [(1,), (5,)], (65,))


class NeRF(nn.Module):
    """NeRF: sinusoidal encoding, MLP with a skip concat, volume rendering over samples."""

    def __init__(self, L=4, W=16):
        super().__init__()
        self.L = L
        d = 3 + 3 * 2 * L
        self.l1 = nn.Sequential(nn.Linear(d, W), nn.ReLU(), nn.Linear(W, W), nn.ReLU())
        self.l2 = nn.Sequential(nn.Linear(W + d, W), nn.ReLU())
        self.sigma = nn.Linear(W, 1)
        self.rgb = nn.Sequential(nn.Linear(W + d, W // 2), nn.ReLU(), nn.Linear(W // 2, 3))

    def embed(self, x):
        out = [x]
        for i in range(self.L):
            for fn in (torch.sin, torch.cos):
                out.append(fn((2.0 ** i) * x))
        return torch.cat(out, -1)

    def forward(self, rays_o, rays_d, z_vals):  # R,3 ; R,3 ; R,S
        pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
        vd = rays_d / torch.norm(rays_d, dim=-1, keepdim=True)
        e = self.embed(pts)
        h = self.l2(torch.cat([self.l1(e), e], -1))
        sigma = F.relu(self.sigma(h))[..., 0]
        rgb = torch.sigmoid(self.rgb(torch.cat([h, self.embed(vd)[:, None].expand(-1, pts.shape[1], -1)], -1)))
        dists = z_vals[..., 1:] - z_vals[..., :-1]
        dists = torch.cat([dists, torch.tensor([1e10]).expand(dists[..., :1].shape)], -1)
        dists = dists * torch.norm(rays_d[..., None, :], dim=-1)
        alpha = 1.0 - torch.exp(-sigma * dists)
        T = torch.cumprod(torch.cat([torch.ones((alpha.shape[0], 1)), 1.0 - alpha + 1e-10], -1), -1)[:, :-1]
        weights = alpha * T
        rgb_map = torch.sum(weights[..., None] * rgb, -2)
        depth_map = torch.sum(weights * z_vals, -1)
        acc_map = torch.sum(weights, -1)
        disp_map = 1.0 / torch.max(1e-10 * torch.ones_like(depth_map), depth_map / acc_map)
        return rgb_map, disp_map, acc_map


def nerf():
    def mk(r, s):
        z = torch.linspace(2.0, 6.0, s).expand(r, s).contiguous() + 0.01 * torch.rand(r, s, generator=gen(r, s))
        return (rn(r, 3), rn(r, 3) + 0.1, z), {}
    rr, s = Dim("rays", min=1, max=65536), Dim("samples", min=1, max=256)
    spec = ({0: rr}, {0: rr}, {0: rr, 1: s})
    return C(NeRF(), mk, spec, (12, 8), [(1, 1), (40, 33)], (12, 257), edges=[(1, 2), (3, 256)])


class DGCNN(nn.Module):
    """DGCNN EdgeConv: kNN by pairwise distance + topk, neighbour gather with an idx_base
    offset (arange(B) * N), max over neighbours; dynamic point count (>= k)."""

    def __init__(self, k=4):
        super().__init__()
        self.k = k
        self.conv1 = nn.Sequential(nn.Conv2d(6, 16, 1, bias=False), nn.BatchNorm2d(16), nn.LeakyReLU(0.2))
        self.conv2 = nn.Sequential(nn.Conv1d(16, 32, 1, bias=False), nn.BatchNorm1d(32), nn.LeakyReLU(0.2))
        self.fc = nn.Linear(64, 5)

    @staticmethod
    def knn(x, k):
        inner = -2 * torch.matmul(x.transpose(2, 1), x)
        xx = torch.sum(x ** 2, dim=1, keepdim=True)
        pairwise_distance = -xx - inner - xx.transpose(2, 1)
        return pairwise_distance.topk(k=k, dim=-1)[1]

    def get_graph_feature(self, x, k):
        batch_size, num_dims, num_points = x.size()
        x = x.view(batch_size, -1, num_points)
        idx = self.knn(x, k)
        idx_base = torch.arange(0, batch_size, device=x.device).view(-1, 1, 1) * num_points
        idx = (idx + idx_base).view(-1)
        x = x.transpose(2, 1).contiguous()
        feature = x.view(batch_size * num_points, -1)[idx, :]
        feature = feature.view(batch_size, num_points, k, num_dims)
        x = x.view(batch_size, num_points, 1, num_dims).repeat(1, 1, k, 1)
        return torch.cat((feature - x, x), dim=3).permute(0, 3, 1, 2).contiguous()

    def forward(self, x):  # B, 3, N
        x = self.conv1(self.get_graph_feature(x, self.k)).max(dim=-1, keepdim=False)[0]
        x = self.conv2(x)
        x = torch.cat((F.adaptive_max_pool1d(x, 1).view(x.size(0), -1), F.adaptive_avg_pool1d(x, 1).view(x.size(0), -1)), 1)
        return self.fc(x)


def dgcnn():
    mk = lambda b, n: ((rn(b, 3, n),), {})
    spec = ({0: B(), 2: Dim("points", min=4, max=4096)},)
    return C(DGCNN(), mk, spec, (2, 20), [(1, 4), (3, 57)], (2, 3), edges=[(1, 5)])


class GAT(nn.Module):
    """GAT layer over an edge_index: per-destination softmax with scatter_reduce('amax'),
    exp, scatter_add denominator, weighted index_add_ aggregation, multi-head concat."""

    def __init__(self, din=6, dout=4, heads=2):
        super().__init__()
        self.h, self.d = heads, dout
        self.lin = nn.Linear(din, heads * dout, bias=False)
        self.att_src = nn.Parameter(torch.randn(1, heads, dout) * 0.3)
        self.att_dst = nn.Parameter(torch.randn(1, heads, dout) * 0.3)
        self.bias = nn.Parameter(torch.zeros(heads * dout))

    def forward(self, x, edge_index):
        N = x.size(0)
        # add self loops
        loop = torch.arange(N, device=x.device)
        edge_index = torch.cat([edge_index, torch.stack([loop, loop])], 1)
        src, dst = edge_index
        h = self.lin(x).view(-1, self.h, self.d)
        a_s = (h * self.att_src).sum(-1)
        a_d = (h * self.att_dst).sum(-1)
        e = F.leaky_relu(a_s[src] + a_d[dst], 0.2)                      # E, H
        idx = dst.unsqueeze(-1).expand_as(e)
        e_max = torch.full((N, self.h), float("-inf"), dtype=e.dtype).scatter_reduce(0, idx, e, reduce="amax", include_self=True)
        e = (e - e_max[dst]).exp()
        denom = torch.zeros(N, self.h, dtype=e.dtype).scatter_add_(0, idx, e)
        alpha = e / (denom[dst] + 1e-16)
        out = torch.zeros(N, self.h, self.d, dtype=x.dtype).index_add_(0, dst, h[src] * alpha.unsqueeze(-1))
        return F.elu(out.reshape(N, -1) + self.bias)


def gat():
    def mk(n, e):
        return (rn(n, 6), ri(n, 2, e)), {}
    spec = ({0: Dim("nodes", min=1, max=10000)}, {1: Dim("edges", min=0, max=100000)})
    c = C(GAT(), mk, spec, (10, 30), [(3, 0), (25, 80)], None)
    c.outside = [Given(*((rn(10, 6), ri(10, 3, 30)), {}))]  # edge_index with 3 rows
    return c


class DLinear(nn.Module):
    """DLinear time-series forecaster: series decomposition by replicate-padded moving
    average (front/end repeat + AvgPool1d), per-channel linear maps over time."""

    def __init__(self, seq_len=24, pred_len=6, k=5):
        super().__init__()
        self.k = k
        self.avg = nn.AvgPool1d(kernel_size=k, stride=1, padding=0)
        self.lin_s = nn.Linear(seq_len, pred_len)
        self.lin_t = nn.Linear(seq_len, pred_len)

    def moving_avg(self, x):
        front = x[:, 0:1, :].repeat(1, (self.k - 1) // 2, 1)
        end = x[:, -1:, :].repeat(1, (self.k - 1) // 2, 1)
        x = torch.cat([front, x, end], dim=1)
        return self.avg(x.permute(0, 2, 1)).permute(0, 2, 1)

    def forward(self, x):  # B, L, C
        trend = self.moving_avg(x)
        seasonal = x - trend
        s, t = seasonal.permute(0, 2, 1), trend.permute(0, 2, 1)
        return (self.lin_s(s) + self.lin_t(t)).permute(0, 2, 1)


def dlinear():
    mk = lambda b, c: ((rn(b, 24, c),), {})
    spec = ({0: B(), 2: Dim("channels", min=1, max=512)},)
    return C(DLinear(), mk, spec, (2, 7), [(1, 1), (3, 20)], (2, 513))


class CTCGreedy(nn.Module):
    """Acoustic model + CTC greedy decoding: argmax, unique_consecutive, drop blanks."""

    def __init__(self, feat=8, v=6):
        super().__init__()
        self.conv = nn.Conv1d(feat, 16, 3, padding=1)
        self.fc = nn.Linear(16, v)

    def forward(self, feats):  # 1, T, F (single utterance)
        logits = self.fc(F.relu(self.conv(feats.transpose(1, 2))).transpose(1, 2))
        best = logits.argmax(-1)[0]
        collapsed = torch.unique_consecutive(best)
        return collapsed[collapsed != 0], logits.log_softmax(-1)


def ctc_greedy():
    mk = lambda b, t: ((rn(b, t, 8),), {})
    spec = ({1: Dim("frames", min=1, max=1000)},)
    return C(CTCGreedy(), mk, spec, (1, 20), [(1, 1), (1, 77)], (2, 20), edges=[(1, 2), (1, 1000)], note="batch static 1")


class GptFastCache(nn.Module):
    """gpt-fast style static KV cache: buffers updated in place with index_put at a tensor of
    positions (k_cache[:, :, input_pos] = k), mask rows picked by input_pos; stateful."""

    def __init__(self, d=16, heads=2, max_seq=32, vocab=20):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.tok_embeddings = nn.Embedding(vocab, d)
        self.wqkv = nn.Linear(d, 3 * d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        self.output = nn.Linear(d, vocab, bias=False)
        self.register_buffer("k_cache", torch.zeros(1, heads, max_seq, d // heads))
        self.register_buffer("v_cache", torch.zeros(1, heads, max_seq, d // heads))
        self.register_buffer("causal_mask", torch.tril(torch.ones(max_seq, max_seq, dtype=torch.bool)))

    def forward(self, idx, input_pos):
        bsz, seqlen = idx.shape
        x = self.tok_embeddings(idx)
        q, k, v = self.wqkv(x).split([x.shape[-1]] * 3, dim=-1)
        q, k, v = (t.view(bsz, seqlen, self.h, self.hd).transpose(1, 2) for t in (q, k, v))
        mask = self.causal_mask[None, None, input_pos]
        k_out, v_out = self.k_cache, self.v_cache
        k_out[:, :, input_pos] = k
        v_out[:, :, input_pos] = v
        y = F.scaled_dot_product_attention(q, k_out, v_out, attn_mask=mask, dropout_p=0.0)
        y = y.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.output(self.wo(y))


def gpt_fast():
    # a prefill of 5 tokens, then decode steps at positions 5, then 6..8 (run in this order)
    def mk(t, start):
        return (ri(20, 1, t), torch.arange(start, start + t)), {}
    t = Dim("t", min=1, max=32)
    spec = ({1: t}, {0: t})
    c = C(GptFastCache(), mk, spec, (5, 0), [(1, 5), (3, 6)], (33, 0), stateful=True)
    c.outside = [Given(*((ri(20, 1, 3), torch.arange(0, 4)), {}))]  # positions of another length
    return c


class BoxNormHead(nn.Module):
    """Detection post-processing written the mmdet / detectron2 way: boxes normalized by
    the image size with boxes.new_tensor([w, h, w, h])."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 4, 1))

    def forward(self, img):
        h, w = img.shape[-2:]
        boxes = self.body(img).flatten(2).transpose(1, 2).sigmoid() * 64
        scale = boxes.new_tensor([w, h, w, h])
        return boxes / scale, boxes.new_tensor([1.0, 2.0]).sum()


def box_norm():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    spec = ({0: B(), 2: Dim("h", min=2, max=256), 3: Dim("w", min=2, max=256)},)
    return C(BoxNormHead(), mk, spec, (2, 20, 24), [(1, 9, 31), (3, 64, 2)], (2, 1, 24))


class SqrtLenPool(nn.Module):
    """Sum pooling scaled by 1/sqrt(length) (x.size(1) ** -0.5), e.g. fastText / CBOW."""

    def __init__(self, v=30, d=8):
        super().__init__()
        self.emb = nn.Embedding(v, d)
        self.fc = nn.Linear(d, 3)

    def forward(self, ids):
        e = self.emb(ids)
        return self.fc(e.sum(1) * e.size(1) ** -0.5)


def sqrt_pool():
    mk = lambda b, t: ((ri(30, b, t),), {})
    spec = ({0: B(), 1: Dim("seq", min=1, max=512)},)
    return C(SqrtLenPool(), mk, spec, (2, 9), [(1, 1), (3, 40)], (2, 513))
