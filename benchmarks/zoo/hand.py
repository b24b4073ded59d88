"""Hand-written architectures of the zoo."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from safetrace import Dim

from benchmarks.zoo import Case, Entry


# -- MLP ----------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self, d_in=32, hidden=64, d_out=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                 nn.GELU(), nn.LayerNorm(hidden), nn.Linear(hidden, d_out))

    def forward(self, x):
        return self.net(x).log_softmax(-1)


def mlp() -> Case:
    torch.manual_seed(0)
    batch = Dim("batch", min=1, max=1024)
    r = torch.randn
    return Case(MLP().eval(), (r(8, 32),), {}, {"x": {0: batch}},
                [((r(3, 32),), {}), ((r(1, 32),), {})],
                outside=((r(8, 31),), {}))


# -- ResNet-style CNN ---------------------------------------------------------------------
class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.layers = nn.Sequential(Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(self.pool(x), 1))


def resnet() -> Case:
    torch.manual_seed(0)
    m = ResNet()
    for mod in m.modules():   # non-trivial running stats
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.1, 0.1)
            mod.running_var.uniform_(0.5, 1.5)
    batch, h, w = Dim("batch", min=1, max=256), Dim("h", min=8, max=512), Dim("w", min=8, max=512)
    r = torch.randn
    return Case(m.eval(), (r(2, 3, 32, 32),), {}, {"x": {0: batch, 2: h, 3: w}},
                [((r(3, 3, 24, 40),), {}), ((r(1, 3, 17, 33),), {})],
                outside=((r(2, 3, 4, 32),), {}))


# -- U-Net-style encoder/decoder ----------------------------------------------------------
def _cbr(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


class UNet(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.e1, self.e2, self.e3 = _cbr(3, c), _cbr(c, 2 * c), _cbr(2 * c, 4 * c)
        self.d2, self.d1 = _cbr(6 * c, 2 * c), _cbr(3 * c, c)
        self.head = nn.Conv2d(c, 2, 1)

    def forward(self, x):
        s1 = self.e1(x)
        s2 = self.e2(F.max_pool2d(s1, 2))
        s3 = self.e3(F.max_pool2d(s2, 2))
        u2 = F.interpolate(s3, scale_factor=2.0, mode="bilinear", align_corners=False)
        d2 = self.d2(torch.cat([u2, s2], dim=1))
        u1 = F.interpolate(d2, size=s1.shape[-2:], mode="nearest")
        d1 = self.d1(torch.cat([u1, s1], dim=1))
        return self.head(d1)


def unet() -> Case:
    torch.manual_seed(0)
    batch = Dim("batch", min=1, max=64)
    hq, wq = Dim("hq", min=2, max=128), Dim("wq", min=2, max=128)   # H = 4*hq, W = 4*wq
    r = torch.randn
    return Case(UNet().eval(), (r(2, 3, 32, 32),), {}, {"x": {0: batch, 2: 4 * hq, 3: 4 * wq}},
                [((r(1, 3, 16, 48),), {}), ((r(3, 3, 40, 24),), {})],
                outside=((r(2, 3, 30, 32),), {}))


# -- nn.TransformerEncoder ----------------------------------------------------------------
class TEnc(nn.Module):
    def __init__(self, vocab=100, d=32, heads=4, layers=2, classes=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, heads, 64, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, classes)

    def forward(self, ids):
        return self.head(self.enc(self.emb(ids)).mean(1))


def transformer_encoder() -> Case:
    torch.manual_seed(0)
    batch, seq = Dim("batch", min=1, max=256), Dim("seq", min=2, max=512)
    ri = lambda *s: torch.randint(0, 100, s)  # noqa: E731
    return Case(TEnc().eval(), (ri(2, 12),), {}, {"ids": {0: batch, 1: seq}},
                [((ri(3, 7),), {}), ((ri(1, 20),), {})],
                outside=((ri(2, 1),), {}))


# -- LSTM / GRU taggers -------------------------------------------------------------------
class Tagger(nn.Module):
    def __init__(self, cell="lstm", vocab=100, d=16, hidden=24, tags=7):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(d, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, tags)

    def forward(self, ids):
        h, _ = self.rnn(self.emb(ids))
        return self.out(h).log_softmax(-1)


def _tagger(cell) -> Case:
    torch.manual_seed(0)
    batch, seq = Dim("batch", min=1, max=256), Dim("seq", min=1, max=512)
    ri = lambda *s: torch.randint(0, 100, s)  # noqa: E731
    return Case(Tagger(cell).eval(), (ri(2, 10),), {}, {"ids": {0: batch, 1: seq}},
                [((ri(3, 6),), {}), ((ri(1, 15),), {})],
                outside=((ri(2, 10, 1),), {}))


def lstm_tagger() -> Case:
    return _tagger("lstm")


def gru_tagger() -> Case:
    return _tagger("gru")


# -- EmbeddingBag recommender (DLRM-like) -------------------------------------------------
class Recommender(nn.Module):
    def __init__(self, tables=(50, 40, 30), d=8, dense=13):
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(n, d, mode="sum") for n in tables)
        self.bottom = nn.Sequential(nn.Linear(dense, 16), nn.ReLU(), nn.Linear(16, d))
        n = len(tables) + 1
        self.top = nn.Sequential(nn.Linear(d + n * (n - 1) // 2, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, dense, sparse):
        x = self.bottom(dense)
        feats = [x] + [bag(ids) for bag, ids in zip(self.bags, sparse)]
        t = torch.stack(feats, dim=1)                       # B, n, d
        inter = torch.bmm(t, t.transpose(1, 2))             # B, n, n
        i, j = torch.triu_indices(t.shape[1], t.shape[1], offset=1)
        flat = inter[:, i, j]
        return torch.sigmoid(self.top(torch.cat([x, flat], dim=1)))


def recommender() -> Case:
    torch.manual_seed(0)
    batch, bag = Dim("batch", min=1, max=4096), Dim("bag", min=1, max=64)
    r = torch.randn

    def sparse(b, l):
        return [torch.randint(0, n, (b, l)) for n in (50, 40, 30)]

    spec = {"dense": {0: batch}, "sparse": [{0: batch, 1: bag}] * 3}
    return Case(Recommender().eval(), (r(4, 13), sparse(4, 3)), {}, spec,
                [((r(2, 13), sparse(2, 5)), {}), ((r(7, 13), sparse(7, 1)), {})],
                outside=((r(4, 13), sparse(5, 3)), {}))


# -- GPT-style decoder with SDPA ----------------------------------------------------------
class TinyGPT(nn.Module):
    def __init__(self, vocab=128, d=32, heads=4, layers=2, ctx=64):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(
            ln1=nn.LayerNorm(d), qkv=nn.Linear(d, 3 * d), proj=nn.Linear(d, d),
            ln2=nn.LayerNorm(d), fc=nn.Linear(d, 4 * d), out=nn.Linear(4 * d, d)))
            for _ in range(layers))
        self.ln, self.heads = nn.LayerNorm(d), heads
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, ids):
        b, t = ids.shape
        x = self.tok(ids) + self.pos(torch.arange(t, device=ids.device))
        for blk in self.blocks:
            q, k, v = blk["qkv"](blk["ln1"](x)).chunk(3, dim=-1)
            q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + blk["proj"](y.transpose(1, 2).reshape(b, t, -1))
            x = x + blk["out"](F.gelu(blk["fc"](blk["ln2"](x))))
        return self.head(self.ln(x))


def tiny_gpt() -> Case:
    torch.manual_seed(0)
    batch, seq = Dim("batch", min=1, max=256), Dim("seq", min=1, max=64)
    ri = lambda *s: torch.randint(0, 128, s)  # noqa: E731
    return Case(TinyGPT().eval(), (ri(2, 16),), {}, {"ids": {0: batch, 1: seq}},
                [((ri(3, 9),), {}), ((ri(1, 40),), {})],
                outside=((ri(2, 65),), {}))


# -- data-dependent op --------------------------------------------------------------------
class KeepPositive(nn.Module):
    """Rows whose score is positive go through a linear layer (data-dependent count)."""

    def __init__(self, d=16):
        super().__init__()
        self.score = nn.Linear(d, 1)
        self.fc = nn.Linear(d, 8)

    def forward(self, x):
        keep = x[self.score(x).squeeze(-1) > 0]
        return self.fc(keep).sum(0)


def data_dependent() -> Case:
    torch.manual_seed(0)
    batch = Dim("batch", min=1, max=4096)
    r = torch.randn
    return Case(KeepPositive().eval(), (r(10, 16),), {}, {"x": {0: batch}},
                [((r(5, 16),), {}), ((r(33, 16),), {})],
                outside=((r(10, 15),), {}))


ENTRIES = [
    Entry("mlp", mlp, fast=True),
    Entry("resnet", resnet, fast=True),
    Entry("unet", unet),
    Entry("transformer_encoder", transformer_encoder, fast=True),
    Entry("lstm_tagger", lstm_tagger, fast=True),
    Entry("gru_tagger", gru_tagger),
    Entry("recommender", recommender),
    Entry("tiny_gpt", tiny_gpt),
    Entry("data_dependent", data_dependent, note="boolean-mask indexing (unbacked size)"),
]
