"""Hand-written architectures, part 1 of 3 (the cases are listed in tests/conformance/table_models.py)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetrace import Dim
from tests.conformance.models.base import C, Given, B64 as B
from tests.conformance.inputs import rn, gen


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
    # topk(K=2) needs two cells: h >= 16 makes that hold for every w (with h, w >= 8 it is a
    # relation between the two independent Dims, refused with a ConstraintViolationError)
    spec = ({0: B(), 2: Dim("h", min=16, max=512), 3: Dim("w", min=8, max=512)},)
    return C(FCOSHead(), mk, spec, (2, 40, 56), [(1, 64, 33), (3, 17, 100)], (2, 40, 513), edges=[(1, 16, 8), (1, 17, 9), (1, 16, 24)])


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
    c.outside = [Given(*((a[0], a[1][:, :, :40]), {}))]  # mask narrower than the image
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
    mk = lambda b, h, w: ((torch.rand(b, 3, h, w, generator=gen(b, h, w)),), {})
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
