"""Breadth probe over more hand-written architectures, written the way their reference
repositories write them (not covered by benchmarks/zoo, sweep_vision.py or sweep_hf.py).

Every model is tiny (random weights, eval mode). For each:

1. ``st.export`` with named Dims (min/max) for the batch and, where natural, the sequence
   length / image size / number of points / past length;
2. the model and the example inputs must be unchanged by the export (state_dict values,
   ``training`` flags, input tensors);
3. ``ep.module()`` against eager on the example and on two other sizes (values, shapes and
   dtypes; ``torch.testing.assert_close``), and once more after the runs: the original
   model's state must still be unchanged;
4. one input outside the declared space must raise ``st.InputMismatchError``;
5. the same with every Dim replaced by ``Dim.AUTO`` (export, compare on the same inputs);
6. ``torch.export`` with the same named spec (translated to ``torch.export.Dim``), as the
   reference: does it export, and does it match eager on the other sizes.

status: ok | WRONG (an accepted input computed something else) | crash (a non-safetrace
exception escaped export or the run) | fail (a safetrace ExportError) | narrow (an input of
the declared space was rejected) | lax (the out-of-spec input was not rejected) | mutated
(export or the run changed the model or the inputs).

Run: .venv/bin/python benchmarks/sweep_models.py [name ...] [-v] [--no-torch]   (~1 min, 2 cores)

First run (torch 2.13.0 CPU): safetrace 33/43 ok, torch.export 22/43 exported; no wrong
result. Open problems it shows: mlm_tied (AUTO: AttributeError from torch._check_with in
nn.MultiheadAttention's key_padding_mask check), transfo_xl (aten.view_as has no rule),
box_norm (Tensor.new_tensor cannot be traced, even with constant data), sqrt_pool
(SymInt ** float specializes; torch.export keeps it symbolic), packed_lstm (OpShapeError
claiming eager would reject; the message names a meta tensor), gpt_fast under AUTO
(index_put guards t != 1, rejecting the one-token decode step), nerf (slice [:1] of a
possibly-empty dim narrows min to 2), vit_interp (float scale_factor specializes), stn
/ fft_conv (affine_grid_generator, aten.real: no rules), sam_window (residual pad-branch
guard narrows a named Dim without an error, by design).
"""

from __future__ import annotations

import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
warnings.filterwarnings("ignore")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from benchmarks.common import sweep_main  # noqa: E402
from safetrace import Dim  # noqa: E402


def _g(*k):
    return torch.Generator().manual_seed(hash(k) % (2 ** 31))


def rn(*shape):
    return torch.randn(*shape, generator=_g("rn", *shape))


def ri(hi, *shape, lo=0):
    return torch.randint(lo, hi, shape, generator=_g("ri", hi, lo, *shape))


def B(lo=1, hi=64):
    return Dim("batch", min=lo, max=hi)


@dataclass
class Case:
    model: nn.Module
    args: tuple
    kwargs: dict
    spec: Any                      # named Dims; the AUTO spec is derived from it
    others: list                   # [(args, kwargs)] two other sizes in the declared space
    outside: tuple | None          # (args, kwargs) outside the declared space
    mode: str = "values"           # or "shapes"
    note: str = ""
    edges: list = field(default_factory=list)  # boundary sizes; eager may reject some (then so must st)
    stateful: bool = False         # buffers change per call: compare a sequence on copies


def C(model, mk, spec, ex, others, outside, edges=(), **kw):
    """mk(*size) -> (args, kwargs)."""
    a, k = mk(*ex)
    return Case(model, a, k, spec, [mk(*o) for o in others], mk(*outside) if outside else None,
                edges=[mk(*e) for e in edges], **kw)


# =========================================================================================
# Vision
# =========================================================================================
class GRN(nn.Module):
    """ConvNeXt-V2 global response normalization (channels-last)."""

    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.randn(1, 1, 1, dim) * 0.1)
        self.beta = nn.Parameter(torch.randn(1, 1, 1, dim) * 0.1)

    def forward(self, x):
        Gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
        Nx = Gx / (Gx.mean(dim=-1, keepdim=True) + 1e-6)
        return self.gamma * (x * Nx) + self.beta + x


class LayerNormCF(nn.Module):
    """ConvNeXt's LayerNorm supporting channels_first by hand."""

    def __init__(self, n, eps=1e-6, data_format="channels_last"):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.ones(n) + 0.1 * torch.randn(n)), nn.Parameter(torch.zeros(n))
        self.eps, self.data_format, self.normalized_shape = eps, data_format, (n,)

    def forward(self, x):
        if self.data_format == "channels_last":
            return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class ConvNeXtV2Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = LayerNormCF(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.grn = GRN(4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.drop_path = nn.Identity()

    def forward(self, x):
        inp = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)  # (N, C, H, W) -> (N, H, W, C)
        x = self.pwconv2(self.grn(self.act(self.pwconv1(self.norm(x)))))
        x = x.permute(0, 3, 1, 2)
        return inp + self.drop_path(x)


class ConvNeXtV2(nn.Module):
    def __init__(self, dims=(8, 16)):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dims[0], 4, 4), LayerNormCF(dims[0], data_format="channels_first"))
        self.stage1 = ConvNeXtV2Block(dims[0])
        self.down = nn.Sequential(LayerNormCF(dims[0], data_format="channels_first"), nn.Conv2d(dims[0], dims[1], 2, 2))
        self.stage2 = ConvNeXtV2Block(dims[1])
        self.norm = nn.LayerNorm(dims[1])
        self.head = nn.Linear(dims[1], 10)

    def forward(self, x):
        x = self.stage2(self.down(self.stage1(self.stem(x))))
        return self.head(self.norm(x.mean([-2, -1])))


def convnextv2():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    spec = ({0: B(), 2: Dim("h", min=8, max=512), 3: Dim("w", min=8, max=512)},)
    return C(ConvNeXtV2(), mk, spec, (2, 32, 40), [(3, 24, 56), (1, 8, 8)], (2, 4, 40), edges=[(1, 8, 15), (1, 15, 8), (1, 512, 8)])


class GhostModule(nn.Module):
    """GhostNet: cheap depthwise ops generate the other half, then slice to oup."""

    def __init__(self, inp, oup, ratio=2, dw_size=3, relu=True):
        super().__init__()
        self.oup = oup
        init_channels = math.ceil(oup / ratio)
        new_channels = init_channels * (ratio - 1)
        self.primary_conv = nn.Sequential(nn.Conv2d(inp, init_channels, 1, 1, 0, bias=False), nn.BatchNorm2d(init_channels),
                                          nn.ReLU(inplace=True) if relu else nn.Sequential())
        self.cheap_operation = nn.Sequential(
            nn.Conv2d(init_channels, new_channels, dw_size, 1, dw_size // 2, groups=init_channels, bias=False),
            nn.BatchNorm2d(new_channels), nn.ReLU(inplace=True) if relu else nn.Sequential())

    def forward(self, x):
        x1 = self.primary_conv(x)
        x2 = self.cheap_operation(x1)
        out = torch.cat([x1, x2], dim=1)
        return out[:, : self.oup, :, :]


class GhostNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.g1 = GhostModule(8, 11)
        self.g2 = GhostModule(11, 8, relu=False)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.classifier = nn.Linear(8, 5)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.g2(self.g1(x))
        x = self.pool(x)
        x = x.view(x.size(0), -1)
        return self.classifier(x)


def ghostnet():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    spec = ({0: B(), 2: Dim("h", min=2, max=256), 3: Dim("w", min=2, max=256)},)
    return C(GhostNet(), mk, spec, (2, 17, 20), [(4, 31, 9), (1, 2, 2)], (2, 1, 20), edges=[(1, 3, 2), (1, 256, 3)])


class Up(nn.Module):
    """milesial/Pytorch-UNet: pad the upsampled map to the skip's size (odd sizes)."""

    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cin // 2, kernel_size=2, stride=2)
        self.conv = nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    def forward(self, x1, x2):
        x1 = self.up(x1)
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class UNetPad(nn.Module):
    def __init__(self):
        super().__init__()
        self.inc = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(inplace=True))
        self.down1 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(inplace=True))
        self.down2 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(inplace=True))
        self.up1, self.up2 = Up(32, 16), Up(16, 8)
        self.outc = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


def unet_pad():
    mk = lambda b, h, w: ((rn(b, 1, h, w),), {})
    spec = ({0: B(), 2: Dim("h", min=4, max=512), 3: Dim("w", min=4, max=512)},)
    return C(UNetPad(), mk, spec, (2, 21, 30), [(1, 33, 47), (3, 4, 7)], (2, 2, 30), edges=[(1, 4, 4), (1, 5, 7), (1, 7, 7)])


class UNetInterp(nn.Module):
    """Decoder upsamples bilinearly to the skip's exact size (segmentation_models style)."""

    def __init__(self):
        super().__init__()
        self.e1 = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU())
        self.e2 = nn.Sequential(nn.Conv2d(8, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU())
        self.e3 = nn.Sequential(nn.Conv2d(16, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU())
        self.d2 = nn.Conv2d(32, 16, 3, padding=1)
        self.d1 = nn.Conv2d(24, 8, 3, padding=1)
        self.head = nn.Conv2d(8, 3, 1)

    def forward(self, x):
        f1 = self.e1(x)
        f2 = self.e2(f1)
        f3 = self.e3(f2)
        y = F.interpolate(f3, size=f2.shape[-2:], mode="bilinear", align_corners=False)
        y = F.relu(self.d2(torch.cat([y, f2], 1)))
        y = F.interpolate(y, size=f1.shape[2:], mode="nearest")
        y = F.relu(self.d1(torch.cat([y, f1], 1)))
        return F.interpolate(self.head(y), size=x.shape[-2:], mode="bilinear", align_corners=True)


def unet_interp():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    spec = ({0: B(), 2: Dim("h", min=1, max=512), 3: Dim("w", min=1, max=512)},)
    return C(UNetInterp(), mk, spec, (2, 37, 45), [(1, 9, 64), (3, 1, 5)], (2, 37, 513), edges=[(1, 1, 1), (1, 2, 1), (1, 3, 17)])


class HRFuse(nn.Module):
    """HRNet-like two-resolution exchange: upsample low-res by scale_factor=2 (even sizes)."""

    def __init__(self, c=8):
        super().__init__()
        self.hi = nn.Sequential(nn.Conv2d(3, c, 3, 1, 1), nn.BatchNorm2d(c), nn.ReLU())
        self.lo = nn.Sequential(nn.Conv2d(c, 2 * c, 3, 2, 1), nn.BatchNorm2d(2 * c), nn.ReLU())
        self.lo2hi = nn.Sequential(nn.Conv2d(2 * c, c, 1, bias=False), nn.BatchNorm2d(c), nn.Upsample(scale_factor=2, mode="nearest"))
        self.hi2lo = nn.Sequential(nn.Conv2d(c, 2 * c, 3, 2, 1, bias=False), nn.BatchNorm2d(2 * c))
        self.head = nn.Conv2d(3 * c, 4, 1)

    def forward(self, x):
        h = self.hi(x)
        l = self.lo(h)
        h2 = F.relu(h + self.lo2hi(l))
        l2 = F.relu(l + self.hi2lo(h))
        up = F.interpolate(l2, scale_factor=2, mode="bilinear", align_corners=False)
        return self.head(torch.cat([h2, up], 1))


def hrnet_fuse():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    d = Dim("hh", min=2, max=128), Dim("ww", min=2, max=128)
    spec = ({0: B(), 2: 2 * d[0], 3: 2 * d[1]},)
    return C(HRFuse(), mk, spec, (2, 16, 24), [(1, 4, 30), (3, 40, 8)], (2, 17, 24), edges=[(1, 4, 4), (1, 256, 6)])


class FCOSHead(nn.Module):
    """FCOS/CenterNet style: per-level locations from arange * stride + stride // 2, peak NMS
    by max-pooling, top-k over the flattened heat map."""

    def __init__(self, c=8, ncls=3, K=6):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, c, 3, 4, 1), nn.ReLU(), nn.Conv2d(c, c, 3, 2, 1), nn.ReLU())
        self.cls = nn.Conv2d(c, ncls, 3, padding=1)
        self.reg = nn.Conv2d(c, 4, 3, padding=1)
        self.stride, self.K = 8, K

    def compute_locations(self, h, w, device):
        shifts_x = torch.arange(0, w * self.stride, step=self.stride, dtype=torch.float32, device=device)
        shifts_y = torch.arange(0, h * self.stride, step=self.stride, dtype=torch.float32, device=device)
        shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
        shift_x, shift_y = shift_x.reshape(-1), shift_y.reshape(-1)
        return torch.stack((shift_x, shift_y), dim=1) + self.stride // 2

    def forward(self, x):
        f = self.body(x)
        heat = self.cls(f).sigmoid()
        reg = F.relu(self.reg(f))
        b, c, h, w = heat.shape
        hmax = F.max_pool2d(heat, 3, stride=1, padding=1)
        keep = (hmax == heat).float()
        heat = heat * keep
        scores, inds = torch.topk(heat.view(b, -1), self.K)
        clses = torch.div(inds, h * w, rounding_mode="floor")
        pix = inds % (h * w)
        locs = self.compute_locations(h, w, x.device)
        pts = locs[pix]                                             # b, K, 2
        r = reg.view(b, 4, -1).permute(0, 2, 1)
        r = torch.gather(r, 1, pix.unsqueeze(-1).expand(-1, -1, 4))
        boxes = torch.cat([pts - r[..., :2], pts + r[..., 2:]], dim=-1)
        return boxes, scores, clses


def fcos():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    spec = ({0: B(), 2: Dim("h", min=8, max=512), 3: Dim("w", min=8, max=512)},)
    return C(FCOSHead(), mk, spec, (2, 40, 56), [(1, 64, 33), (3, 17, 100)], (2, 40, 513), edges=[(1, 8, 8), (1, 9, 9), (1, 8, 24)])


class AnchorGen(nn.Module):
    """RetinaNet: grid anchors (shifts x base anchors) and box decoding with clamped dw/dh."""

    def __init__(self, c=8, na=3):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.ReLU(), nn.Conv2d(c, c, 3, 2, 1), nn.ReLU())
        self.box = nn.Conv2d(c, na * 4, 3, padding=1)
        self.cls = nn.Conv2d(c, na * 2, 3, padding=1)
        sizes, ratios = torch.tensor([8.0]), torch.tensor([0.5, 1.0, 2.0])
        hr = torch.sqrt(ratios)
        ws, hs = (sizes[None, :] / hr[:, None]).view(-1), (sizes[None, :] * hr[:, None]).view(-1)
        self.register_buffer("cell_anchors", (torch.stack([-ws, -hs, ws, hs], dim=1) / 2).round())
        self.stride = 4
        self.clip = math.log(1000.0 / 16)

    def forward(self, images):
        f = self.backbone(images)
        N, _, H, W = f.shape
        shifts_x = torch.arange(0, W, dtype=torch.int32, device=f.device) * self.stride
        shifts_y = torch.arange(0, H, dtype=torch.int32, device=f.device) * self.stride
        shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
        shift_x, shift_y = shift_x.reshape(-1), shift_y.reshape(-1)
        shifts = torch.stack((shift_x, shift_y, shift_x, shift_y), dim=1)
        anchors = (shifts.view(-1, 1, 4) + self.cell_anchors.view(1, -1, 4)).reshape(-1, 4)
        rel = self.box(f).view(N, -1, 4, H, W).permute(0, 3, 4, 1, 2).reshape(N, -1, 4)
        logits = self.cls(f).view(N, -1, 2, H, W).permute(0, 3, 4, 1, 2).reshape(N, -1, 2)
        widths = anchors[:, 2] - anchors[:, 0]
        heights = anchors[:, 3] - anchors[:, 1]
        ctr_x = anchors[:, 0] + 0.5 * widths
        ctr_y = anchors[:, 1] + 0.5 * heights
        dx, dy, dw, dh = rel.unbind(-1)
        dw, dh = torch.clamp(dw, max=self.clip), torch.clamp(dh, max=self.clip)
        pcx, pcy = dx * widths + ctr_x, dy * heights + ctr_y
        pw, ph = torch.exp(dw) * widths, torch.exp(dh) * heights
        boxes = torch.stack((pcx - 0.5 * pw, pcy - 0.5 * ph, pcx + 0.5 * pw, pcy + 0.5 * ph), dim=2)
        img_h, img_w = images.shape[-2:]
        boxes = torch.stack([boxes[..., 0].clamp(0, img_w), boxes[..., 1].clamp(0, img_h),
                             boxes[..., 2].clamp(0, img_w), boxes[..., 3].clamp(0, img_h)], -1)
        return boxes, logits.softmax(-1)


def retina_anchors():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    spec = ({0: B(), 2: Dim("h", min=1, max=512), 3: Dim("w", min=1, max=512)},)
    return C(AnchorGen(), mk, spec, (2, 30, 41), [(1, 64, 16), (3, 5, 3)], (65, 30, 41), edges=[(1, 1, 1), (1, 2, 3), (1, 4, 4)])


class PositionEmbeddingSine(nn.Module):
    """DETR: sine positions from the cumulative sum of the not-padded mask."""

    def __init__(self, num_pos_feats=8, temperature=10000):
        super().__init__()
        self.num_pos_feats, self.temperature, self.scale = num_pos_feats, temperature, 2 * math.pi

    def forward(self, mask):
        not_mask = ~mask
        y_embed = not_mask.cumsum(1, dtype=torch.float32)
        x_embed = not_mask.cumsum(2, dtype=torch.float32)
        eps = 1e-6
        y_embed = y_embed / (y_embed[:, -1:, :] + eps) * self.scale
        x_embed = x_embed / (x_embed[:, :, -1:] + eps) * self.scale
        dim_t = torch.arange(self.num_pos_feats, dtype=torch.float32, device=mask.device)
        dim_t = self.temperature ** (2 * (dim_t // 2) / self.num_pos_feats)
        pos_x = x_embed[:, :, :, None] / dim_t
        pos_y = y_embed[:, :, :, None] / dim_t
        pos_x = torch.stack((pos_x[:, :, :, 0::2].sin(), pos_x[:, :, :, 1::2].cos()), dim=4).flatten(3)
        pos_y = torch.stack((pos_y[:, :, :, 0::2].sin(), pos_y[:, :, :, 1::2].cos()), dim=4).flatten(3)
        return torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)


class DETR(nn.Module):
    def __init__(self, d=16, nq=5, ncls=4, heads=2):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, 2, 1), nn.ReLU())
        self.input_proj = nn.Conv2d(8, d, 1)
        self.pos = PositionEmbeddingSine(d // 2)
        self.query_embed = nn.Embedding(nq, d)
        self.enc = nn.MultiheadAttention(d, heads)
        self.self_attn = nn.MultiheadAttention(d, heads)
        self.cross_attn = nn.MultiheadAttention(d, heads)
        self.n1, self.n2, self.n3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d))
        self.class_embed = nn.Linear(d, ncls + 1)
        self.bbox_embed = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))

    def forward(self, samples, mask):
        feat = self.backbone(samples)
        m = F.interpolate(mask[None].float(), size=feat.shape[-2:]).to(torch.bool)[0]
        pos = self.pos(m)
        src = self.input_proj(feat)
        bs, c, h, w = src.shape
        src = src.flatten(2).permute(2, 0, 1)
        pos_embed = pos.flatten(2).permute(2, 0, 1)
        key_padding = m.flatten(1)
        memory = src + self.enc(src + pos_embed, src + pos_embed, src, key_padding_mask=key_padding)[0]
        query_pos = self.query_embed.weight.unsqueeze(1).repeat(1, bs, 1)
        tgt = torch.zeros_like(query_pos)
        q = k = tgt + query_pos
        tgt = self.n1(tgt + self.self_attn(q, k, value=tgt)[0])
        tgt2 = self.cross_attn(query=tgt + query_pos, key=memory + pos_embed, value=memory,
                               key_padding_mask=key_padding)[0]
        tgt = self.n2(tgt + tgt2)
        hs = self.n3(tgt + self.ffn(tgt)).transpose(0, 1)
        return {"pred_logits": self.class_embed(hs), "pred_boxes": self.bbox_embed(hs).sigmoid()}


def detr():
    def mk(b, h, w):
        mask = torch.zeros(b, h, w, dtype=torch.bool)
        mask[0, :, w - w // 4:] = True  # right quarter of image 0 is padding
        return (rn(b, 3, h, w), mask), {}
    h, w = Dim("h", min=4, max=512), Dim("w", min=4, max=512)
    spec = ({0: B(), 2: h, 3: w}, {0: B(), 1: h, 2: w})
    c = C(DETR(), mk, spec, (2, 32, 48), [(1, 20, 36), (3, 64, 16)], None)
    a, _ = mk(2, 32, 48)
    c.outside = ((a[0], a[1][:, :, :40]), {})  # mask narrower than the image
    return c


class ViTInterp(nn.Module):
    """DINO's interpolate_pos_encoding: bicubic resize of the patch positions by a float
    scale_factor computed from the image size (w0 + 0.1 trick)."""

    def __init__(self, img=16, p=4, d=16, heads=2):
        super().__init__()
        self.patch_size = p
        self.patch_embed = nn.Conv2d(3, d, p, p)
        n = (img // p) ** 2
        self.cls_token = nn.Parameter(torch.randn(1, 1, d))
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, d) * 0.2)
        self.block = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 7)

    def interpolate_pos_encoding(self, x, w, h):
        npatch = x.shape[1] - 1
        N = self.pos_embed.shape[1] - 1
        if npatch == N and w == h:
            return self.pos_embed
        class_pos_embed = self.pos_embed[:, 0]
        patch_pos_embed = self.pos_embed[:, 1:]
        dim = x.shape[-1]
        w0 = w // self.patch_size
        h0 = h // self.patch_size
        w0, h0 = w0 + 0.1, h0 + 0.1
        patch_pos_embed = F.interpolate(
            patch_pos_embed.reshape(1, int(math.sqrt(N)), int(math.sqrt(N)), dim).permute(0, 3, 1, 2),
            scale_factor=(w0 / math.sqrt(N), h0 / math.sqrt(N)), mode="bicubic")
        assert int(w0) == patch_pos_embed.shape[-2] and int(h0) == patch_pos_embed.shape[-1]
        patch_pos_embed = patch_pos_embed.permute(0, 2, 3, 1).view(1, -1, dim)
        return torch.cat((class_pos_embed.unsqueeze(0), patch_pos_embed), dim=1)

    def forward(self, x):
        B_, nc, w, h = x.shape
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(B_, -1, -1), x), dim=1)
        x = x + self.interpolate_pos_encoding(x, w, h)
        x = self.norm(self.block(x))
        return self.head(x[:, 0])


def vit_interp():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    spec = ({0: B(), 2: Dim("h", min=4, max=256), 3: Dim("w", min=4, max=256)},)
    return C(ViTInterp(), mk, spec, (2, 24, 32), [(1, 40, 20), (3, 12, 12)], (2, 3, 32), edges=[(1, 4, 4), (1, 7, 4), (1, 16, 16)])


class ViTInterpSize(ViTInterp):
    """Newer DINOv2/timm variant: resize to an explicit size=(h0, w0)."""

    def interpolate_pos_encoding(self, x, w, h):
        N = self.pos_embed.shape[1] - 1
        M = int(math.sqrt(N))
        dim = x.shape[-1]
        w0, h0 = w // self.patch_size, h // self.patch_size
        pp = self.pos_embed[:, 1:].reshape(1, M, M, dim).permute(0, 3, 1, 2)
        pp = F.interpolate(pp, size=(w0, h0), mode="bicubic", antialias=False, align_corners=False)
        pp = pp.permute(0, 2, 3, 1).view(1, -1, dim)
        return torch.cat((self.pos_embed[:, :1], pp), dim=1)


def vit_interp_size():
    c = vit_interp()
    m = ViTInterpSize()
    m.load_state_dict(c.model.state_dict())
    c.model = m
    return c


class SamWindowAttn(nn.Module):
    """ViTDet / SAM image-encoder block: pad to a multiple of the window, window attention
    with decomposed relative positions (einsum), unpad."""

    def __init__(self, dim=16, heads=2, window=4):
        super().__init__()
        self.ws, self.h = window, heads
        hd = dim // heads
        self.scale = hd ** -0.5
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.rel_pos_h = nn.Parameter(torch.randn(2 * window - 1, hd) * 0.1)
        self.rel_pos_w = nn.Parameter(torch.randn(2 * window - 1, hd) * 0.1)

    @staticmethod
    def get_rel_pos(q_size, k_size, rel_pos):
        q_coords = torch.arange(q_size)[:, None] * max(k_size / q_size, 1.0)
        k_coords = torch.arange(k_size)[None, :] * max(q_size / k_size, 1.0)
        relative_coords = (q_coords - k_coords) + (k_size - 1) * max(q_size / k_size, 1.0)
        return rel_pos[relative_coords.long()]

    def add_decomposed_rel_pos(self, attn, q, q_size, k_size):
        q_h, q_w = q_size
        k_h, k_w = k_size
        Rh = self.get_rel_pos(q_h, k_h, self.rel_pos_h)
        Rw = self.get_rel_pos(q_w, k_w, self.rel_pos_w)
        B_, _, dim = q.shape
        r_q = q.reshape(B_, q_h, q_w, dim)
        rel_h = torch.einsum("bhwc,hkc->bhwk", r_q, Rh)
        rel_w = torch.einsum("bhwc,wkc->bhwk", r_q, Rw)
        attn = (attn.view(B_, q_h, q_w, k_h, k_w) + rel_h[:, :, :, :, None] + rel_w[:, :, :, None, :])
        return attn.view(B_, q_h * q_w, k_h * k_w)

    def forward(self, x):  # B, H, W, C
        shortcut = x
        x = self.norm1(x)
        B_, H, W, Cc = x.shape
        ws = self.ws
        pad_h = (ws - H % ws) % ws
        pad_w = (ws - W % ws) % ws
        if pad_h > 0 or pad_w > 0:
            x = F.pad(x, (0, 0, 0, pad_w, 0, pad_h))
        Hp, Wp = H + pad_h, W + pad_w
        x = x.view(B_, Hp // ws, ws, Wp // ws, ws, Cc)
        win = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws, ws, Cc)
        Bw = win.shape[0]
        qkv = self.qkv(win).reshape(Bw, ws * ws, 3, self.h, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.reshape(3, Bw * self.h, ws * ws, -1).unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = self.add_decomposed_rel_pos(attn, q, (ws, ws), (ws, ws))
        attn = attn.softmax(dim=-1)
        y = (attn @ v).view(Bw, self.h, ws, ws, -1).permute(0, 2, 3, 1, 4).reshape(Bw, ws, ws, -1)
        y = self.proj(y)
        y = y.view(B_, Hp // ws, Wp // ws, ws, ws, -1).permute(0, 1, 3, 2, 4, 5).contiguous().view(B_, Hp, Wp, -1)
        if Hp > H or Wp > W:
            y = y[:, :H, :W, :].contiguous()
        return shortcut + y


def sam_window():
    mk = lambda b, h, w: ((rn(b, h, w, 16),), {})
    spec = ({0: B(), 1: Dim("h", min=1, max=256), 2: Dim("w", min=1, max=256)},)
    return C(SamWindowAttn(), mk, spec, (2, 10, 13), [(1, 8, 8), (3, 5, 17)], (2, 0, 13), edges=[(1, 1, 1), (1, 4, 1), (1, 3, 4)],
             note="the pad branch is taken at the example")


class ESPCN(nn.Module):
    """Super-resolution: sub-pixel convolution + bicubic residual (scale 3)."""

    def __init__(self, r=3):
        super().__init__()
        self.r = r
        self.body = nn.Sequential(nn.Conv2d(3, 16, 5, padding=2), nn.Tanh(), nn.Conv2d(16, 8, 3, padding=1), nn.Tanh(),
                                  nn.Conv2d(8, 3 * r * r, 3, padding=1))
        self.ps = nn.PixelShuffle(r)

    def forward(self, x):
        base = F.interpolate(x, scale_factor=self.r, mode="bicubic", align_corners=False)
        return (self.ps(self.body(x)) + base).clamp(0, 1)


def espcn():
    mk = lambda b, h, w: ((torch.rand(b, 3, h, w, generator=_g(b, h, w)),), {})
    spec = ({0: B(), 2: Dim("h", min=1, max=256), 3: Dim("w", min=1, max=256)},)
    return C(ESPCN(), mk, spec, (2, 11, 14), [(1, 1, 7), (3, 20, 9)], (2, 257, 14), edges=[(1, 1, 1), (1, 256, 1)])


class SamePadConv(nn.Conv2d):
    """EfficientNet-PyTorch Conv2dDynamicSamePadding (TF 'SAME')."""

    def forward(self, x):
        ih, iw = x.size()[-2:]
        kh, kw = self.weight.size()[-2:]
        sh, sw = self.stride
        oh, ow = math.ceil(ih / sh), math.ceil(iw / sw)
        pad_h = max((oh - 1) * self.stride[0] + (kh - 1) * self.dilation[0] + 1 - ih, 0)
        pad_w = max((ow - 1) * self.stride[1] + (kw - 1) * self.dilation[1] + 1 - iw, 0)
        if pad_h > 0 or pad_w > 0:
            x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2])
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class MobileNetSame(nn.Module):
    """Depthwise-separable MobileNet with hardswish / ReLU6 and TF 'SAME' padding."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(SamePadConv(3, 8, 3, 2, bias=False), nn.BatchNorm2d(8), nn.Hardswish())
        self.dw = nn.Sequential(SamePadConv(8, 8, 3, 2, groups=8, bias=False), nn.BatchNorm2d(8), nn.ReLU6())
        self.pw = nn.Sequential(nn.Conv2d(8, 16, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.pw(self.dw(self.stem(x))), 1).flatten(1))


def mobilenet_same():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    spec = ({0: B(), 2: Dim("h", min=1, max=256), 3: Dim("w", min=1, max=256)},)
    return C(MobileNetSame(), mk, spec, (2, 32, 30), [(1, 17, 33), (3, 64, 8)], (2, 32, 300), edges=[(1, 1, 1), (1, 2, 2), (1, 3, 5)])


class STN(nn.Module):
    """Spatial transformer: localization net -> affine theta -> affine_grid + grid_sample."""

    def __init__(self):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(1, 4, 5), nn.MaxPool2d(2), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(16, 6))
        with torch.no_grad():
            self.loc[-1].weight.mul_(0.1)
            self.loc[-1].bias.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))
        self.cls = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3))

    def forward(self, x):
        theta = self.loc(x).view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        x = F.grid_sample(x, grid, align_corners=False)
        return self.cls(x)


def stn():
    mk = lambda b, h, w: ((rn(b, 1, h, w),), {})
    spec = ({0: B(), 2: Dim("h", min=8, max=256), 3: Dim("w", min=8, max=256)},)
    return C(STN(), mk, spec, (2, 28, 30), [(1, 20, 41), (3, 9, 12)], (2, 7, 30))


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
    mk = lambda b, h, w: ((torch.rand(b, 3, h, w, generator=_g(b, h, w)),), {})
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
        z = torch.linspace(2.0, 6.0, s).expand(r, s).contiguous() + 0.01 * torch.rand(r, s, generator=_g(r, s))
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
    c.outside = ((rn(10, 6), ri(10, 3, 30)), {})  # edge_index with 3 rows
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
    c.outside = ((ri(20, 1, 3), torch.arange(0, 4)), {})  # positions of another length
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


CASES = {
    # vision
    "convnextv2": convnextv2,
    "ghostnet": ghostnet,
    "unet_pad": unet_pad,
    "unet_interp": unet_interp,
    "hrnet_fuse": hrnet_fuse,
    "fcos": fcos,
    "retina_anchors": retina_anchors,
    "detr": detr,
    "vit_interp": vit_interp,
    "vit_interp_size": vit_interp_size,
    "sam_window": sam_window,
    "espcn": espcn,
    "mobilenet_same": mobilenet_same,
    "stn": stn,
    "fcn_vae": fcn_vae,
    "capsnet": capsnet,
    # sequence / language
    "moe": moe,
    "llama_ref": llama_ref,
    "kv_cache": kv_cache,
    "alibi": alibi,
    "t5_bias": t5_bias,
    "sliding_window": sliding_window,
    "clip_like": clip_like,
    "transfo_xl": transfo_xl,
    "mlm_tied": mlm_tied,
    "linear_attn": linear_attn,
    "fft_conv": fft_conv,
    "bilstm_mask": bilstm_mask,
    "packed_lstm": packed_lstm,
    "gru_decoder": gru_decoder,
    "audio_frontend": audio_frontend,
    "conformer": conformer,
    "ctc_greedy": ctc_greedy,
    # other
    "tabular": tabular,
    "sasrec": sasrec,
    "dcn": dcn,
    "nerf": nerf,
    "dgcnn": dgcnn,
    "gat": gat,
    "dlinear": dlinear,
    "gpt_fast": gpt_fast,
    "box_norm": box_norm,
    "sqrt_pool": sqrt_pool,
}


# =========================================================================================
# The harness
# =========================================================================================










def main(argv):
    return sweep_main("sweep_models", CASES, argv, roundtrip=False)

if __name__ == "__main__":
    main(sys.argv[1:])
