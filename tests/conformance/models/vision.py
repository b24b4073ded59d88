"""Hand-written architectures that users export (torchvision-style CNNs, detection and
segmentation heads, point clouds, sequence and generative models, GNNs); ex
benchmarks/sweep_vision.py. The cases are at the bottom."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetrace import Dim
from tests.conformance.checker import Case
from tests.conformance.inputs import gen


def img(b, c, h, w):
    return torch.randn(b, c, h, w, generator=gen(b, c, h, w))


def B():
    return Dim("batch", min=1, max=64)


def HW(lo=16, hi=256):
    return Dim("h", min=lo, max=hi), Dim("w", min=lo, max=hi)


# -- classification CNNs ------------------------------------------------------------------
def cbr(i, o, k=3, s=1, g=1, act=nn.ReLU):
    return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(o), act())


class Basic(nn.Module):
    def __init__(s, i, o, stride):
        super().__init__()
        s.c1, s.c2 = cbr(i, o, 3, stride), nn.Sequential(nn.Conv2d(o, o, 3, 1, 1, bias=False), nn.BatchNorm2d(o))
        s.down = None if stride == 1 and i == o else nn.Sequential(nn.Conv2d(i, o, 1, stride, bias=False), nn.BatchNorm2d(o))

    def forward(s, x):
        idt = x if s.down is None else s.down(x)
        return F.relu(s.c2(s.c1(x)) + idt)


class Bottleneck(nn.Module):
    def __init__(s, i, m, stride):
        super().__init__()
        o = m * 4
        s.body = nn.Sequential(cbr(i, m, 1), cbr(m, m, 3, stride), nn.Conv2d(m, o, 1, bias=False), nn.BatchNorm2d(o))
        s.down = nn.Sequential(nn.Conv2d(i, o, 1, stride, bias=False), nn.BatchNorm2d(o)) if stride != 1 or i != o else nn.Identity()

    def forward(s, x):
        return (s.body(x) + s.down(x)).relu_()


class ResNet(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Sequential(cbr(3, 8, 7, 2), nn.MaxPool2d(3, 2, 1))
        s.layers = nn.Sequential(Basic(8, 8, 1), Basic(8, 16, 2), Bottleneck(16, 8, 2), Bottleneck(32, 8, 1))
        s.fc = nn.Linear(32, 10)

    def forward(s, x):
        x = s.layers(s.stem(x))
        return s.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class SE(nn.Module):
    def __init__(s, c, r=4, gate=nn.Hardsigmoid):
        super().__init__()
        s.f1, s.f2, s.gate = nn.Conv2d(c, c // r, 1), nn.Conv2d(c // r, c, 1), gate()

    def forward(s, x):
        w = x.mean((2, 3), keepdim=True)
        return x * s.gate(s.f2(F.relu(s.f1(w))))


class MBV3Block(nn.Module):
    def __init__(s, i, e, o, k, stride, se):
        super().__init__()
        s.res = stride == 1 and i == o
        s.b = nn.Sequential(cbr(i, e, 1, act=nn.Hardswish), cbr(e, e, k, stride, g=e, act=nn.Hardswish),
                            SE(e) if se else nn.Identity(), nn.Conv2d(e, o, 1, bias=False), nn.BatchNorm2d(o))

    def forward(s, x):
        y = s.b(x)
        return x + y if s.res else y


class MobileNetV3(nn.Module):
    def __init__(s):
        super().__init__()
        s.f = nn.Sequential(cbr(3, 8, 3, 2, act=nn.Hardswish), MBV3Block(8, 16, 8, 3, 1, True),
                            MBV3Block(8, 24, 12, 5, 2, False), MBV3Block(12, 36, 12, 5, 1, True))
        s.head = nn.Sequential(nn.Linear(12, 32), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(32, 10))

    def forward(s, x):
        return s.head(F.adaptive_avg_pool2d(s.f(x), 1).flatten(1))


def stochastic_depth(x, p, training):
    if not training or p == 0.0:
        return x
    keep = torch.empty([x.shape[0]] + [1] * (x.ndim - 1), dtype=x.dtype).bernoulli_(1 - p)
    return x * keep / (1 - p)


class MBConv(nn.Module):
    def __init__(s, i, o, e, stride, p):
        super().__init__()
        m = i * e
        s.res, s.p = stride == 1 and i == o, p
        s.b = nn.Sequential(cbr(i, m, 1, act=nn.SiLU), cbr(m, m, 3, stride, g=m, act=nn.SiLU),
                            SE(m, 4, nn.Sigmoid), nn.Conv2d(m, o, 1, bias=False), nn.BatchNorm2d(o))

    def forward(s, x):
        y = s.b(x)
        if s.res:
            y = stochastic_depth(y, s.p, s.training) + x
        return y


class EfficientNet(nn.Module):
    def __init__(s):
        super().__init__()
        s.f = nn.Sequential(cbr(3, 8, 3, 2, act=nn.SiLU), MBConv(8, 8, 1, 1, 0.1), MBConv(8, 12, 4, 2, 0.1), MBConv(12, 12, 4, 1, 0.2))
        s.fc = nn.Linear(12, 10)

    def forward(s, x):
        return s.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(s.f(x), (1, 1)), 1))


class DenseLayer(nn.Module):
    def __init__(s, i, g):
        super().__init__()
        s.n1, s.c1, s.n2, s.c2 = nn.BatchNorm2d(i), nn.Conv2d(i, 4 * g, 1, bias=False), nn.BatchNorm2d(4 * g), nn.Conv2d(4 * g, g, 3, 1, 1, bias=False)

    def forward(s, feats):
        x = torch.cat(feats, 1)
        return s.c2(F.relu(s.n2(s.c1(F.relu(s.n1(x))))))


class DenseNet(nn.Module):
    def __init__(s, g=4):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.MaxPool2d(2))
        s.layers = nn.ModuleList([DenseLayer(8 + i * g, g) for i in range(3)])
        s.trans = nn.Sequential(nn.BatchNorm2d(8 + 3 * g), nn.ReLU(), nn.Conv2d(8 + 3 * g, 10, 1), nn.AvgPool2d(2, 2))
        s.fc = nn.Linear(10, 5)

    def forward(s, x):
        feats = [s.stem(x)]
        for l in s.layers:
            feats.append(l(feats))
        y = s.trans(torch.cat(feats, 1))
        return s.fc(F.adaptive_avg_pool2d(F.relu(y), (1, 1)).view(y.size(0), -1))


class Inception(nn.Module):
    def __init__(s, i=3):
        super().__init__()
        s.b1 = nn.Conv2d(i, 4, 1)
        s.b2 = nn.Sequential(nn.Conv2d(i, 4, 1), nn.Conv2d(4, 6, 3, padding=1))
        s.b3 = nn.Sequential(nn.Conv2d(i, 2, 1), nn.Conv2d(2, 4, 5, padding=2))
        s.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1, ceil_mode=True), nn.Conv2d(i, 4, 1))
        s.b5 = nn.Sequential(nn.Conv2d(i, 3, (1, 7), padding=(0, 3)), nn.Conv2d(3, 3, (7, 1), padding=(3, 0)))
        s.fc = nn.Linear(21, 10)

    def forward(s, x):
        y = torch.cat([s.b1(x), s.b2(x), s.b3(x), s.b4(x), s.b5(x)], 1)
        y = F.max_pool2d(y, 3, 2, ceil_mode=True)
        return s.fc(F.adaptive_avg_pool2d(y, (1, 1)).flatten(1))


class Fire(nn.Module):
    def __init__(s, i, sq, e):
        super().__init__()
        s.sq, s.e1, s.e3 = nn.Conv2d(i, sq, 1), nn.Conv2d(sq, e, 1), nn.Conv2d(sq, e, 3, padding=1)

    def forward(s, x):
        x = F.relu(s.sq(x))
        return torch.cat([F.relu(s.e1(x)), F.relu(s.e3(x))], 1)


class SqueezeNet(nn.Module):
    def __init__(s):
        super().__init__()
        s.f = nn.Sequential(nn.Conv2d(3, 8, 3, 2), nn.ReLU(True), nn.MaxPool2d(3, 2, ceil_mode=True), Fire(8, 4, 8), Fire(16, 4, 8),
                            nn.MaxPool2d(3, 2, ceil_mode=True), Fire(16, 4, 8))
        s.cls = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(16, 10, 1), nn.ReLU(True), nn.AdaptiveAvgPool2d((1, 1)))

    def forward(s, x):
        return torch.flatten(s.cls(s.f(x)), 1)


def channel_shuffle(x, groups):
    b, c, h, w = x.size()
    x = x.view(b, groups, c // groups, h, w)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(b, -1, h, w)


class ShuffleUnit(nn.Module):
    def __init__(s, i, o, stride):
        super().__init__()
        s.stride = stride
        bi = i if stride > 1 else i // 2
        bo = o // 2
        if stride > 1:
            s.b1 = nn.Sequential(cbr(i, i, 3, stride, g=i, act=nn.Identity), cbr(i, bo, 1))
        s.b2 = nn.Sequential(cbr(bi, bo, 1), cbr(bo, bo, 3, stride, g=bo, act=nn.Identity), cbr(bo, bo, 1))

    def forward(s, x):
        if s.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, s.b2(x2)), dim=1)
        else:
            out = torch.cat((s.b1(x), s.b2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNet(nn.Module):
    def __init__(s):
        super().__init__()
        s.f = nn.Sequential(cbr(3, 8, 3, 2), nn.MaxPool2d(3, 2, 1), ShuffleUnit(8, 16, 2), ShuffleUnit(16, 16, 1))
        s.fc = nn.Linear(16, 10)

    def forward(s, x):
        return s.fc(s.f(x).mean([2, 3]))


class LayerNorm2d(nn.LayerNorm):
    def forward(s, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, s.normalized_shape, s.weight, s.bias, s.eps)
        return x.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.dw = nn.Conv2d(d, d, 7, padding=3, groups=d)
        s.ln = nn.LayerNorm(d, eps=1e-6)
        s.pw1, s.pw2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        s.gamma = nn.Parameter(torch.full((d,), 0.5))

    def forward(s, x):
        y = s.dw(x).permute(0, 2, 3, 1)
        y = s.pw2(F.gelu(s.pw1(s.ln(y))))
        return x + (s.gamma * y).permute(0, 3, 1, 2)


class ConvNeXt(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(3, 8, 4, 4), LayerNorm2d(8))
        s.s1 = CNBlock(8)
        s.down = nn.Sequential(LayerNorm2d(8), nn.Conv2d(8, 16, 2, 2))
        s.s2 = CNBlock(16)
        s.head = nn.Sequential(nn.Flatten(1), nn.LayerNorm(16), nn.Linear(16, 10))

    def forward(s, x):
        x = s.s2(s.down(s.s1(s.stem(x))))
        return s.head(x.mean([-2, -1], keepdim=True))


def window_partition(x, ws):
    b, h, w, c = x.shape
    x = x.view(b, h // ws, ws, w // ws, ws, c)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws, ws, c)


def window_reverse(win, ws, h, w, legacy=False):
    if legacy:  # the original Swin code: int() of a float specializes the batch (a Python limit)
        b = int(win.shape[0] / (h * w / ws / ws))
    else:       # timm / torchvision: -1
        b = -1
    x = win.view(b, h // ws, w // ws, ws, ws, win.shape[-1])
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(b, h, w, win.shape[-1])


class SwinBlock(nn.Module):
    def __init__(s, d=16, heads=2, ws=4, shift=2, legacy=False):
        super().__init__()
        s.d, s.h, s.ws, s.shift, s.legacy = d, heads, ws, shift, legacy
        s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        s.qkv, s.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        s.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        s.rpb = nn.Parameter(torch.randn((2 * ws - 1) ** 2, heads) * 0.02)
        c = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
        r = (c[:, :, None] - c[:, None, :]).permute(1, 2, 0).contiguous()
        r[:, :, 0] += ws - 1
        r[:, :, 1] += ws - 1
        r[:, :, 0] *= 2 * ws - 1
        s.register_buffer("rpi", r.sum(-1), persistent=False)

    def forward(s, x):  # x: B, H, W, C
        b, H, W, C = x.shape
        sc = x
        x = s.n1(x)
        ph, pw = (s.ws - H % s.ws) % s.ws, (s.ws - W % s.ws) % s.ws
        x = F.pad(x, (0, 0, 0, pw, 0, ph))
        _, Hp, Wp, _ = x.shape
        x = torch.roll(x, shifts=(-s.shift, -s.shift), dims=(1, 2))
        win = window_partition(x, s.ws).view(-1, s.ws * s.ws, C)
        n = win.shape[1]
        qkv = s.qkv(win).reshape(win.shape[0], n, 3, s.h, C // s.h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = (q * (C // s.h) ** -0.5) @ k.transpose(-2, -1)
        bias = s.rpb[s.rpi.view(-1)].view(n, n, -1).permute(2, 0, 1).contiguous()
        a = (a + bias.unsqueeze(0)).softmax(-1)
        y = (a @ v).transpose(1, 2).reshape(win.shape[0], n, C)
        y = s.proj(y).view(-1, s.ws, s.ws, C)
        x = window_reverse(y, s.ws, Hp, Wp, s.legacy)
        x = torch.roll(x, shifts=(s.shift, s.shift), dims=(1, 2))
        x = x[:, :H, :W, :].contiguous()
        x = sc + x
        return x + s.mlp(s.n2(x))


class Swin(nn.Module):
    def __init__(s, legacy=False):
        super().__init__()
        s.embed = nn.Conv2d(3, 16, 2, 2)
        s.blk = SwinBlock(legacy=legacy)
        s.fc = nn.Linear(16, 10)

    def forward(s, x):
        x = s.embed(x).permute(0, 2, 3, 1)
        return s.fc(s.blk(x).mean((1, 2)))


# -- dense prediction ---------------------------------------------------------------------
class ASPP(nn.Module):
    def __init__(s, i, o=8, rates=(2, 3)):
        super().__init__()
        s.b0 = cbr(i, o, 1)
        s.bs = nn.ModuleList([nn.Sequential(nn.Conv2d(i, o, 3, padding=r, dilation=r, bias=False), nn.BatchNorm2d(o), nn.ReLU()) for r in rates])
        s.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(i, o, 1), nn.ReLU())
        s.proj = cbr(o * (len(rates) + 2), o, 1)

    def forward(s, x):
        size = x.shape[-2:]
        res = [s.b0(x)] + [b(x) for b in s.bs]
        res.append(F.interpolate(s.pool(x), size=size, mode="bilinear", align_corners=False))
        return s.proj(torch.cat(res, dim=1))


class DeepLab(nn.Module):
    def __init__(s):
        super().__init__()
        s.back = nn.Sequential(cbr(3, 8, 3, 2), cbr(8, 12, 3, 2), nn.Conv2d(12, 12, 3, padding=2, dilation=2))
        s.aspp = ASPP(12)
        s.cls = nn.Conv2d(8, 4, 1)

    def forward(s, x):
        h, w = x.shape[-2:]
        y = s.cls(s.aspp(s.back(x)))
        return {"out": F.interpolate(y, size=(h, w), mode="bilinear", align_corners=False)}


class FCN(nn.Module):
    def __init__(s):
        super().__init__()
        s.b1, s.b2, s.b3 = cbr(3, 8, 3, 2), cbr(8, 16, 3, 2), cbr(16, 16, 3, 2)
        s.s3, s.s2 = nn.Conv2d(16, 4, 1), nn.Conv2d(16, 4, 1)
        s.up = nn.ConvTranspose2d(4, 4, 4, 2, 1, bias=False)

    def forward(s, x):
        f1 = s.b1(x); f2 = s.b2(f1); f3 = s.b3(f2)
        y = s.up(s.s3(f3))
        y = y[:, :, : f2.shape[2], : f2.shape[3]] + s.s2(f2)
        return F.interpolate(y, x.shape[2:], mode="nearest")


class YOLOHead(nn.Module):
    def __init__(s, na=3, nc=4, chs=(8, 16)):
        super().__init__()
        s.na, s.no = na, nc + 5
        s.back = nn.ModuleList([cbr(3, chs[0], 3, 8), cbr(chs[0], chs[1], 3, 2)])
        s.m = nn.ModuleList([nn.Conv2d(c, na * s.no, 1) for c in chs])
        s.register_buffer("anchors", torch.tensor([[[1., 2.], [2., 1.], [2., 2.]], [[3., 4.], [4., 3.], [4., 4.]]]))
        s.stride = [8, 16]

    def forward(s, x):
        outs, f = [], x
        for i, (bk, m) in enumerate(zip(s.back, s.m)):
            f = bk(f)
            p = m(f)
            b, _, ny, nx = p.shape
            p = p.view(b, s.na, s.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            yv, xv = torch.meshgrid(torch.arange(ny, device=p.device), torch.arange(nx, device=p.device), indexing="ij")
            grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()
            ag = s.anchors[i].view(1, s.na, 1, 1, 2)
            y = p.sigmoid()
            xy = (y[..., 0:2] * 2 - 0.5 + grid) * s.stride[i]
            wh = (y[..., 2:4] * 2) ** 2 * ag
            outs.append(torch.cat((xy, wh, y[..., 4:]), -1).view(b, -1, s.no))
        return torch.cat(outs, 1)


# -- other modalities ---------------------------------------------------------------------
class PointNet(nn.Module):
    def __init__(s):
        super().__init__()
        s.c = nn.Sequential(nn.Conv1d(3, 16, 1), nn.BatchNorm1d(16), nn.ReLU(), nn.Conv1d(16, 32, 1))
        s.t = nn.Linear(32, 9)
        s.fc = nn.Linear(32, 5)

    def forward(s, pts):  # B, N, 3
        b = pts.size(0)
        f = s.c(pts.transpose(2, 1))
        g = torch.max(f, 2, keepdim=True)[0].view(-1, 32)
        tr = s.t(g).view(b, 3, 3) + torch.eye(3).view(1, 9).repeat(b, 1).view(-1, 3, 3)
        f2 = s.c(torch.bmm(pts, tr).transpose(2, 1))
        return s.fc(f2.max(dim=2).values), f2.mean(-1)


class TCN(nn.Module):
    def __init__(s, c=4, h=8, k=3, levels=3):
        super().__init__()
        s.k = k
        s.convs = nn.ModuleList([nn.Conv1d(c if i == 0 else h, h, k, dilation=2 ** i, padding=(k - 1) * 2 ** i) for i in range(levels)])
        s.left = nn.ModuleList([nn.Conv1d(h, h, 2, dilation=2 ** i) for i in range(levels)])
        s.down = nn.Conv1d(c, h, 1)
        s.out = nn.Conv1d(h, 2, 1)

    def forward(s, x):  # B, C, T
        y = x
        for i, (cv, lf) in enumerate(zip(s.convs, s.left)):
            pad = (s.k - 1) * 2 ** i
            z = cv(y)[:, :, :-pad].contiguous()             # chomp
            z = torch.tanh(z) * torch.sigmoid(lf(F.pad(z, (2 ** i, 0))))  # wavenet gate, left pad
            y = z + (s.down(y) if i == 0 else y)
        return s.out(y)


class VAE(nn.Module):
    def __init__(s):
        super().__init__()
        s.enc = nn.Sequential(nn.Conv2d(1, 8, 4, 2, 1), nn.ReLU(), nn.Conv2d(8, 16, 4, 2, 1), nn.ReLU(), nn.Flatten())
        s.mu, s.lv = nn.Linear(16 * 4 * 4, 6), nn.Linear(16 * 4 * 4, 6)
        s.fc = nn.Linear(6, 16 * 4 * 4)
        s.dec = nn.Sequential(nn.ConvTranspose2d(16, 8, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(8, 1, 4, 2, 1), nn.Sigmoid())

    def forward(s, x):
        h = s.enc(x)
        mu, lv = s.mu(h), s.lv(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * lv)
        return s.dec(s.fc(z).view(-1, 16, 4, 4)), mu, lv


class DCGAN(nn.Module):
    def __init__(s, nz=8):
        super().__init__()
        s.g = nn.Sequential(nn.ConvTranspose2d(nz, 16, 4, 1, 0, bias=False), nn.BatchNorm2d(16), nn.ReLU(True),
                            nn.ConvTranspose2d(16, 8, 4, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(True),
                            nn.ConvTranspose2d(8, 3, 4, 2, 1, bias=False), nn.Tanh())

    def forward(s, z):
        return s.g(z)


class Seq2Seq(nn.Module):
    def __init__(s, v=12, e=6, h=8, tgt_len=5):
        super().__init__()
        s.emb, s.enc, s.dec = nn.Embedding(v, e), nn.LSTM(e, h, batch_first=True), nn.LSTMCell(e, h)
        s.att, s.out, s.T = nn.Linear(2 * h, h), nn.Linear(h, v), tgt_len

    def forward(s, src):  # B, S (token ids)
        mem, (h, c) = s.enc(s.emb(src))
        h, c = h[0], c[0]
        tok = torch.zeros(src.shape[0], dtype=torch.long)
        outs = []
        for _ in range(s.T):
            h, c = s.dec(s.emb(tok), (h, c))
            w = torch.softmax(torch.bmm(mem, h.unsqueeze(2)).squeeze(2), dim=1)
            ctx = (w.unsqueeze(2) * mem).sum(1)
            logit = s.out(torch.tanh(s.att(torch.cat([h, ctx], 1))))
            outs.append(logit)
            tok = logit.argmax(-1)
        return torch.stack(outs, 1)


class GNN(nn.Module):
    def __init__(s, d=6, h=8):
        super().__init__()
        s.lin, s.self_, s.lin2 = nn.Linear(d, h), nn.Linear(d, h), nn.Linear(h, h)

    def forward(s, x, edge_index):  # x: N, d ; edge_index: 2, E
        src, dst = edge_index[0], edge_index[1]
        msg = s.lin(x)[src]
        agg = torch.zeros(x.shape[0], msg.shape[1], dtype=x.dtype).index_add_(0, dst, msg)
        deg = torch.zeros(x.shape[0], dtype=x.dtype).scatter_add_(0, dst, torch.ones_like(dst, dtype=x.dtype)).clamp(min=1)
        h = F.relu(agg / deg[:, None] + s.self_(x))
        m2 = s.lin2(h).index_select(0, src)
        out = torch.zeros_like(h).scatter_add(0, dst.unsqueeze(-1).expand(-1, h.shape[1]), m2)
        return out + h


class Perceiver(nn.Module):
    def __init__(s, d_in=5, d=16, n_lat=4, heads=2):
        super().__init__()
        s.lat = nn.Parameter(torch.randn(n_lat, d))
        s.kv = nn.Linear(d_in, 2 * d)
        s.q = nn.Linear(d, d)
        s.h = heads
        s.self_att = nn.MultiheadAttention(d, heads, batch_first=True)
        s.ln = nn.LayerNorm(d)

    def forward(s, x, mask):  # x: B, M, d_in ; mask: B, M bool (True = keep)
        b = x.shape[0]
        lat = s.lat.unsqueeze(0).expand(b, -1, -1)
        k, v = s.kv(x).chunk(2, -1)
        q = s.q(lat)
        sp = lambda t: t.view(b, t.shape[1], s.h, -1).transpose(1, 2)
        y = F.scaled_dot_product_attention(sp(q), sp(k), sp(v), attn_mask=mask[:, None, None, :])
        y = s.ln(y.transpose(1, 2).reshape(b, -1, q.shape[-1]) + lat)
        return y + s.self_att(y, y, y, need_weights=False)[0]


class MixerBlock(nn.Module):
    def __init__(s, n, d):
        super().__init__()
        s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        s.tok = nn.Sequential(nn.Linear(n, 2 * n), nn.GELU(), nn.Linear(2 * n, n))
        s.ch = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(s, x):
        x = x + s.tok(s.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + s.ch(s.n2(x))


class Mixer(nn.Module):
    def __init__(s, p=4, d=16, img=16):
        super().__init__()
        s.stem = nn.Conv2d(3, d, p, p)
        s.blocks = nn.Sequential(MixerBlock((img // p) ** 2, d), MixerBlock((img // p) ** 2, d))
        s.fc = nn.Linear(d, 10)

    def forward(s, x):
        x = s.stem(x).flatten(2).transpose(1, 2)
        return s.fc(s.blocks(x).mean(1))


# -- the cases ----------------------------------------------------------------------------
def image_case(model, c=3, hw=(32, 32), others=((3, 48, 40), (1, 64, 64)), dyn_hw=True, lo=16,
               hi=256, mode="values"):
    spec = {0: B()}
    if dyn_hw:
        h, w = HW(lo, hi)
        spec.update({2: h, 3: w})
    else:
        others = tuple((b, *hw) for b, *_ in others)
    return Case(model, lambda b, h, w: (img(b, c, h, w),), (2, *hw), (spec,), list(others),
                mode=mode)


def pointnet():
    mk = lambda b, n: (torch.randn(b, n, 3, generator=gen(b, n)),)  # noqa: E731
    return Case(PointNet(), mk, (2, 50), ({0: B(), 1: Dim("points", min=2, max=4096)},),
                [(3, 33), (1, 128)])


def tcn():
    mk = lambda b, t: (torch.randn(b, 4, t, generator=gen(b, t)),)  # noqa: E731
    return Case(TCN(), mk, (2, 30), ({0: B(), 2: Dim("time", min=2, max=1024)},),
                [(3, 17), (1, 64)])


def vae():
    mk = lambda b: (torch.rand(b, 1, 16, 16, generator=gen(b)),)  # noqa: E731
    return Case(VAE(), mk, (2,), ({0: B()},), [(3,), (1,)], mode="shapes")


def dcgan():
    mk = lambda b: (torch.randn(b, 8, 1, 1, generator=gen(b)),)  # noqa: E731
    return Case(DCGAN(), mk, (2,), ({0: B()},), [(5,), (1,)])


def seq2seq():
    mk = lambda b, s: (torch.randint(0, 12, (b, s), generator=gen(b, s)),)  # noqa: E731
    return Case(Seq2Seq(), mk, (2, 7), ({0: B(), 1: Dim("src", min=1, max=128)},),
                [(3, 4), (1, 11)])


def gnn():
    def mk(n, e):
        g = gen(n, e)
        return torch.randn(n, 6, generator=g), torch.randint(0, n, (2, e), generator=g)
    spec = ({0: Dim("nodes", min=1, max=10000)}, {1: Dim("edges", min=0, max=100000)})
    return Case(GNN(), mk, (10, 25), spec, [(7, 13), (20, 60)])


def perceiver():
    def mk(b, m):
        g = gen(b, m)
        mask = torch.ones(b, m, dtype=torch.bool)
        mask[0, -2:] = False
        return torch.randn(b, m, 5, generator=g), mask
    s = {0: B(), 1: Dim("inputs", min=2, max=2048)}
    return Case(Perceiver(), mk, (2, 20), (s, dict(s)), [(3, 9), (1, 40)])


VISION = {
    "resnet": lambda: image_case(ResNet()),
    "mobilenetv3": lambda: image_case(MobileNetV3()),
    "efficientnet": lambda: image_case(EfficientNet()),
    "densenet": lambda: image_case(DenseNet()),
    "inception": lambda: image_case(Inception(), hw=(31, 29), others=((3, 40, 37), (1, 17, 64))),
    "squeezenet": lambda: image_case(SqueezeNet(), hw=(33, 35), others=((3, 48, 41), (1, 64, 64)),
                                     lo=20),
    "shufflenet": lambda: image_case(ShuffleNet()),
    "convnext": lambda: image_case(ConvNeXt()),
    "swin": lambda: image_case(Swin(), hw=(20, 28), others=((3, 16, 36), (1, 26, 18))),
    "swin_int_batch": lambda: image_case(Swin(legacy=True), hw=(20, 28),
                                         others=((3, 16, 36), (1, 26, 18))),
    "deeplab": lambda: image_case(DeepLab(), hw=(33, 40), others=((3, 48, 41), (1, 64, 64))),
    "fcn": lambda: image_case(FCN(), hw=(32, 40), others=((3, 48, 64), (1, 64, 64))),
    "yolo": lambda: image_case(YOLOHead(), hw=(64, 48), others=((3, 32, 80), (1, 96, 96)), lo=16),
    "pointnet": pointnet,
    "tcn": tcn,
    "vae": vae,
    "dcgan": dcgan,
    "seq2seq": seq2seq,
    "gnn": gnn,
    "perceiver": perceiver,
    "mixer": lambda: image_case(Mixer(), hw=(16, 16), dyn_hw=False),
}
