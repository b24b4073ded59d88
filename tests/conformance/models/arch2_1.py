"""Realistic architectures, part 2 of 4 (the cases are listed in tests/conformance/table_models.py)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetrace import Dim
from tests.conformance.models.base import C, B32 as B
from tests.conformance.inputs import rn, gen


class BiFPNLayer(nn.Module):
    """EfficientDet (zylo117) fast normalized fusion, Upsample(scale_factor=2) + MaxPool s2."""

    def __init__(self, c=8, eps=1e-4):
        super().__init__()
        self.eps = eps
        self.p4_w1, self.p3_w2 = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(2))
        self.p4_w2, self.p5_w2 = nn.Parameter(torch.ones(3)), nn.Parameter(torch.ones(2))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.down = nn.MaxPool2d(3, 2, 1)
        self.conv4_up, self.conv3_up = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)
        self.conv4_down, self.conv5_down = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)
        self.swish = nn.SiLU()

    def forward(self, inputs):
        p3_in, p4_in, p5_in = inputs
        p4_w1 = F.relu(self.p4_w1)
        weight = p4_w1 / (torch.sum(p4_w1, dim=0) + self.eps)
        p4_up = self.conv4_up(self.swish(weight[0] * p4_in + weight[1] * self.up(p5_in)))
        p3_w2 = F.relu(self.p3_w2)
        weight = p3_w2 / (torch.sum(p3_w2, dim=0) + self.eps)
        p3_out = self.conv3_up(self.swish(weight[0] * p3_in + weight[1] * self.up(p4_up)))
        p4_w2 = F.relu(self.p4_w2)
        weight = p4_w2 / (torch.sum(p4_w2, dim=0) + self.eps)
        p4_out = self.conv4_down(self.swish(weight[0] * p4_in + weight[1] * p4_up + weight[2] * self.down(p3_out)))
        p5_w2 = F.relu(self.p5_w2)
        weight = p5_w2 / (torch.sum(p5_w2, dim=0) + self.eps)
        p5_out = self.conv5_down(self.swish(weight[0] * p5_in + weight[1] * self.down(p4_out)))
        return p3_out, p4_out, p5_out


class EfficientDetLite(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.SiLU(), nn.Conv2d(8, 8, 3, 2, 1), nn.SiLU(),
                                  nn.Conv2d(8, 8, 3, 2, 1))
        self.d4, self.d5 = nn.Conv2d(8, 8, 3, 2, 1), nn.Conv2d(8, 8, 3, 2, 1)
        self.bifpn = nn.Sequential(BiFPNLayer(), BiFPNLayer())
        self.head = nn.Conv2d(8, 9 * 4, 3, padding=1)

    def forward(self, x):
        p3 = self.stem(x)
        p4 = self.d4(p3)
        p5 = self.d5(p4)
        feats = self.bifpn((p3, p4, p5))
        out = [self.head(f).permute(0, 2, 3, 1).contiguous().view(x.shape[0], -1, 4) for f in feats]
        return torch.cat(out, dim=1)


def bifpn():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    bb, h, w = B(), Dim("h", min=1, max=16), Dim("w", min=1, max=16)
    spec = ({0: bb, 2: 32 * h, 3: 32 * w},)
    return C(EfficientDetLite(), mk, spec, (2, 64, 96), [(1, 32, 32), (3, 128, 64)], (2, 64, 80), edges=[(1, 512, 32)])


class CenterNet(nn.Module):
    """xingyizhou/CenterNet ctdet decode: heatmap NMS with max_pool, topk, gather."""

    def __init__(self, nc=3, K=10):
        super().__init__()
        self.K = K
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, 2, 1), nn.ReLU())
        self.hm = nn.Conv2d(8, nc, 1)
        self.wh = nn.Conv2d(8, 2, 1)
        self.reg = nn.Conv2d(8, 2, 1)

    @staticmethod
    def _nms(heat, kernel=3):
        pad = (kernel - 1) // 2
        hmax = F.max_pool2d(heat, (kernel, kernel), stride=1, padding=pad)
        keep = (hmax == heat).float()
        return heat * keep

    @staticmethod
    def _gather_feat(feat, ind):
        dim = feat.size(2)
        ind = ind.unsqueeze(2).expand(ind.size(0), ind.size(1), dim)
        return feat.gather(1, ind)

    def _transpose_and_gather_feat(self, feat, ind):
        feat = feat.permute(0, 2, 3, 1).contiguous()
        feat = feat.view(feat.size(0), -1, feat.size(3))
        return self._gather_feat(feat, ind)

    def _topk(self, scores, K):
        batch, cat, height, width = scores.size()
        topk_scores, topk_inds = torch.topk(scores.view(batch, cat, -1), K)
        topk_inds = topk_inds % (height * width)
        topk_ys = (topk_inds / width).int().float()
        topk_xs = (topk_inds % width).int().float()
        topk_score, topk_ind = torch.topk(topk_scores.view(batch, -1), K)
        topk_clses = (topk_ind / K).int()
        topk_inds = self._gather_feat(topk_inds.view(batch, -1, 1), topk_ind).view(batch, K)
        topk_ys = self._gather_feat(topk_ys.view(batch, -1, 1), topk_ind).view(batch, K)
        topk_xs = self._gather_feat(topk_xs.view(batch, -1, 1), topk_ind).view(batch, K)
        return topk_score, topk_inds, topk_clses, topk_ys, topk_xs

    def forward(self, x):
        f = self.backbone(x)
        heat = self._nms(self.hm(f).sigmoid_())
        batch = heat.size(0)
        scores, inds, clses, ys, xs = self._topk(heat, self.K)
        reg = self._transpose_and_gather_feat(self.reg(f), inds).view(batch, self.K, 2)
        xs = xs.view(batch, self.K, 1) + reg[:, :, 0:1]
        ys = ys.view(batch, self.K, 1) + reg[:, :, 1:2]
        wh = self._transpose_and_gather_feat(self.wh(f), inds).view(batch, self.K, 2)
        bboxes = torch.cat([xs - wh[..., 0:1] / 2, ys - wh[..., 1:2] / 2, xs + wh[..., 0:1] / 2, ys + wh[..., 1:2] / 2], dim=2)
        return torch.cat([bboxes, scores.unsqueeze(2), clses.float().unsqueeze(2)], dim=2)


def centernet():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    spec = ({0: B(), 2: Dim("h", min=13, max=512), 3: Dim("w", min=13, max=512)},)
    return C(CenterNet(), mk, spec, (2, 37, 50), [(1, 13, 13), (3, 64, 17)], (2, 12, 50), edges=[(1, 13, 512), (2, 14, 15)])


class RTDETRSelect(nn.Module):
    """RT-DETR / DINO two-stage query selection: anchors from the feature grid, topk of
    encoder class scores, gather of memory and boxes, one decoder layer (self + cross attn)."""

    def __init__(self, d=16, nc=4, num_queries=10, eps=1e-2):
        super().__init__()
        self.num_queries, self.eps = num_queries, eps
        self.backbone = nn.Sequential(nn.Conv2d(3, d, 4, 4), nn.ReLU(), nn.Conv2d(d, d, 3, 2, 1))
        self.enc_output = nn.Sequential(nn.Linear(d, d), nn.LayerNorm(d))
        self.enc_score_head = nn.Linear(d, nc)
        self.enc_bbox_head = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))
        self.self_attn = nn.MultiheadAttention(d, 2, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(d, 2, batch_first=True)
        self.query_pos_head = nn.Sequential(nn.Linear(4, d), nn.ReLU(), nn.Linear(d, d))
        self.dec_score_head = nn.Linear(d, nc)
        self.dec_bbox_head = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))

    def _generate_anchors(self, spatial_shapes, grid_size=0.05, dtype=torch.float32, device="cpu"):
        anchors = []
        for lvl, (h, w) in enumerate(spatial_shapes):
            grid_y, grid_x = torch.meshgrid(torch.arange(end=h, dtype=dtype), torch.arange(end=w, dtype=dtype), indexing="ij")
            grid_xy = torch.stack([grid_x, grid_y], -1)
            valid_WH = torch.tensor([w, h]).to(dtype)
            grid_xy = (grid_xy.unsqueeze(0) + 0.5) / valid_WH
            wh = torch.ones_like(grid_xy) * grid_size * (2.0 ** lvl)
            anchors.append(torch.concat([grid_xy, wh], -1).reshape(-1, h * w, 4))
        anchors = torch.concat(anchors, 1).to(device)
        valid_mask = ((anchors > self.eps) * (anchors < 1 - self.eps)).all(-1, keepdim=True)
        anchors = torch.log(anchors / (1 - anchors))
        anchors = torch.where(valid_mask, anchors, torch.inf)
        return anchors, valid_mask

    def forward(self, x):
        f = self.backbone(x)
        bs, c, h, w = f.shape
        memory = f.flatten(2).permute(0, 2, 1)
        anchors, valid_mask = self._generate_anchors([(h, w)], device=memory.device)
        memory = valid_mask.to(memory.dtype) * memory
        output_memory = self.enc_output(memory)
        enc_outputs_class = self.enc_score_head(output_memory)
        enc_outputs_coord_unact = self.enc_bbox_head(output_memory) + anchors
        _, topk_ind = torch.topk(enc_outputs_class.max(-1).values, self.num_queries, dim=1)
        reference_points_unact = enc_outputs_coord_unact.gather(
            dim=1, index=topk_ind.unsqueeze(-1).repeat(1, 1, enc_outputs_coord_unact.shape[-1]))
        target = output_memory.gather(dim=1, index=topk_ind.unsqueeze(-1).repeat(1, 1, output_memory.shape[-1]))
        ref = F.sigmoid(reference_points_unact.detach())
        q = target + self.query_pos_head(ref)
        tgt = target + self.self_attn(q, q, target)[0]
        tgt = tgt + self.cross_attn(tgt + self.query_pos_head(ref), memory, memory)[0]
        inv = torch.log(ref.clamp(min=1e-5) / (1 - ref).clamp(min=1e-5))
        boxes = F.sigmoid(self.dec_bbox_head(tgt) + inv)
        return self.dec_score_head(tgt), boxes


def rtdetr_select():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    bb, h, w = B(), Dim("h", min=3, max=64), Dim("w", min=4, max=64)
    spec = ({0: bb, 2: 8 * h, 3: 8 * w},)
    return C(RTDETRSelect(), mk, spec, (2, 48, 64), [(1, 24, 32), (3, 80, 40)], (2, 48, 60), edges=[(1, 512, 32), (1, 24, 512)])


def window_partition(x, window_size):
    B_, H, W, C_ = x.shape
    x = x.view(B_, H // window_size, window_size, W // window_size, window_size, C_)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C_)


def window_reverse(windows, window_size, H, W):
    C_ = windows.shape[-1]
    x = windows.view(-1, H // window_size, W // window_size, window_size, window_size, C_)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, H, W, C_)


class SwinShiftBlock(nn.Module):
    """Swin block whose shifted-window mask is built in forward from the padded size
    (img_mask slice assignment, as HF / torchvision do for dynamic resolution)."""

    def __init__(self, dim=16, heads=2, ws=4, shift=2):
        super().__init__()
        self.dim, self.heads, self.ws, self.shift = dim, heads, ws, shift
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.relative_position_bias_table = nn.Parameter(torch.randn((2 * ws - 1) * (2 * ws - 1), heads) * 0.02)
        coords = torch.stack(torch.meshgrid([torch.arange(ws), torch.arange(ws)], indexing="ij"))
        cf = torch.flatten(coords, 1)
        rel = (cf[:, :, None] - cf[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += ws - 1
        rel[:, :, 1] += ws - 1
        rel[:, :, 0] *= 2 * ws - 1
        self.register_buffer("relative_position_index", rel.sum(-1))
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def calculate_mask(self, Hp, Wp, device):
        img_mask = torch.zeros((1, Hp, Wp, 1), device=device)
        h_slices = (slice(0, -self.ws), slice(-self.ws, -self.shift), slice(-self.shift, None))
        w_slices = (slice(0, -self.ws), slice(-self.ws, -self.shift), slice(-self.shift, None))
        cnt = 0
        for h in h_slices:
            for w in w_slices:
                img_mask[:, h, w, :] = cnt
                cnt += 1
        mask_windows = window_partition(img_mask, self.ws).view(-1, self.ws * self.ws)
        attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
        return attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(attn_mask == 0, float(0.0))

    def forward(self, x, H, W):
        Bn, L, C_ = x.shape
        shortcut = x
        x = self.norm1(x).view(Bn, H, W, C_)
        pad_r, pad_b = (self.ws - W % self.ws) % self.ws, (self.ws - H % self.ws) % self.ws
        x = F.pad(x, (0, 0, 0, pad_r, 0, pad_b))
        _, Hp, Wp, _ = x.shape
        shifted = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        attn_mask = self.calculate_mask(Hp, Wp, x.device)
        xw = window_partition(shifted, self.ws).view(-1, self.ws * self.ws, C_)
        B_, N, _ = xw.shape
        qkv = self.qkv(xw).reshape(B_, N, 3, self.heads, C_ // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * (C_ // self.heads) ** -0.5) @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(N, N, -1)
        attn = attn + bias.permute(2, 0, 1).contiguous().unsqueeze(0)
        nW = attn_mask.shape[0]
        attn = attn.view(B_ // nW, nW, self.heads, N, N) + attn_mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, self.heads, N, N).softmax(-1)
        y = self.proj((attn @ v).transpose(1, 2).reshape(B_, N, C_)).view(-1, self.ws, self.ws, C_)
        x = torch.roll(window_reverse(y, self.ws, Hp, Wp), shifts=(self.shift, self.shift), dims=(1, 2))
        if pad_r > 0 or pad_b > 0:
            x = x[:, :H, :W, :].contiguous()
        x = shortcut + x.view(Bn, H * W, C_)
        return x + self.mlp(self.norm2(x))


class SwinMask(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, 16, 2, 2)
        self.blk = SwinShiftBlock()
        self.head = nn.Linear(16, 7)

    def forward(self, x):
        x = self.patch_embed(x)
        Wh, Ww = x.size(2), x.size(3)
        x = self.blk(x.flatten(2).transpose(1, 2), Wh, Ww)
        return self.head(x.mean(1))


def swin_mask():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    bb, h, w = B(), Dim("h", min=3, max=64), Dim("w", min=3, max=64)
    spec = ({0: bb, 2: 2 * h, 3: 2 * w},)
    return C(SwinMask(), mk, spec, (2, 16, 22), [(1, 6, 6), (3, 32, 14)], (2, 4, 22), edges=[(1, 128, 8), (2, 8, 10)])


class MLPMixer(nn.Module):
    """lucidrains mlp-mixer: token-mixing Linear over num_patches (needs a fixed image size)."""

    def __init__(self, image_size=16, patch=4, dim=16, depth=2, nc=5):
        super().__init__()
        n = (image_size // patch) ** 2
        self.patch = patch
        self.embed = nn.Linear(patch * patch * 3, dim)
        self.layers = nn.ModuleList()
        for _ in range(depth):
            self.layers.append(nn.ModuleList([nn.LayerNorm(dim), nn.Sequential(nn.Conv1d(n, 2 * n, 1), nn.GELU(), nn.Conv1d(2 * n, n, 1)),
                                              nn.LayerNorm(dim), nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))]))
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, nc)

    def forward(self, img):
        b, c, H, W = img.shape
        p = self.patch
        # Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)')
        x = img.reshape(b, c, H // p, p, W // p, p).permute(0, 2, 4, 3, 5, 1).reshape(b, (H // p) * (W // p), p * p * c)
        x = self.embed(x)
        for n1, tok, n2, ch in self.layers:
            x = x + tok(n1(x))
            x = x + ch(n2(x))
        return self.head(self.norm(x).mean(1))


def mlp_mixer():
    mk = lambda b, h: ((rn(b, 3, h, h),), {})
    bb, s = B(), Dim("s", min=1, max=16)
    spec = ({0: bb, 2: 4 * s, 3: 4 * s},)
    return C(MLPMixer(), mk, spec, (2, 16), [(1, 16), (5, 16)], (2, 15), note="expected: patches specialize")


class MAE(nn.Module):
    """facebookresearch/mae random_masking with the noise given as an input; 1D sin-cos
    positions built from the number of patches; MSE loss on masked patches."""

    def __init__(self, patch=4, dim=16, dec=8, mask_ratio=0.75):
        super().__init__()
        self.p, self.dim, self.dec_dim, self.mask_ratio = patch, dim, dec, mask_ratio
        self.patch_embed = nn.Conv2d(3, dim, patch, patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.blocks = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 2, 32, 0.0, batch_first=True, norm_first=True), 1)
        self.norm = nn.LayerNorm(dim)
        self.decoder_embed = nn.Linear(dim, dec)
        self.mask_token = nn.Parameter(torch.randn(1, 1, dec) * 0.02)
        self.decoder_pred = nn.Linear(dec, patch * patch * 3)

    @staticmethod
    def pos1d(n, d):
        pos = torch.arange(n, dtype=torch.float32)
        omega = 1.0 / 10000 ** (torch.arange(d // 2, dtype=torch.float32) / (d / 2.0))
        out = pos[:, None] * omega[None]
        return torch.cat([torch.sin(out), torch.cos(out)], dim=1)

    def patchify(self, imgs):
        p = self.p
        h, w = imgs.shape[2] // p, imgs.shape[3] // p
        x = imgs.reshape(shape=(imgs.shape[0], 3, h, p, w, p))
        x = torch.einsum("nchpwq->nhwpqc", x)
        return x.reshape(shape=(imgs.shape[0], h * w, p ** 2 * 3))

    def random_masking(self, x, noise, mask_ratio):
        N, L, D = x.shape
        len_keep = int(L * (1 - mask_ratio))
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        ids_keep = ids_shuffle[:, :len_keep]
        x_masked = torch.gather(x, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, D))
        mask = torch.ones([N, L], device=x.device)
        mask[:, :len_keep] = 0
        mask = torch.gather(mask, dim=1, index=ids_restore)
        return x_masked, mask, ids_restore

    def forward(self, imgs, noise):
        x = self.patch_embed(imgs).flatten(2).transpose(1, 2)
        x = x + self.pos1d(x.shape[1] + 1, self.dim)[None, 1:, :]
        x, mask, ids_restore = self.random_masking(x, noise, self.mask_ratio)
        cls_tokens = self.cls_token.expand(x.shape[0], -1, -1)
        x = self.norm(self.blocks(torch.cat((cls_tokens, x), dim=1)))
        x = self.decoder_embed(x)
        mask_tokens = self.mask_token.repeat(x.shape[0], ids_restore.shape[1] + 1 - x.shape[1], 1)
        x_ = torch.cat([x[:, 1:, :], mask_tokens], dim=1)
        x_ = torch.gather(x_, dim=1, index=ids_restore.unsqueeze(-1).repeat(1, 1, x.shape[2]))
        x = torch.cat([x[:, :1, :], x_], dim=1)
        x = x + self.pos1d(x.shape[1], self.dec_dim)[None]
        pred = self.decoder_pred(x)[:, 1:, :]
        target = self.patchify(imgs)
        loss = ((pred - target) ** 2).mean(dim=-1)
        loss = (loss * mask).sum() / mask.sum()
        return loss, pred, mask


def mae():
    def mk(b, h, w):
        return (rn(b, 3, 4 * h, 4 * w), torch.rand(b, h * w, generator=gen("noise", b, h, w))), {}
    bb, h, w = B(), Dim("h", min=1, max=16), Dim("w", min=1, max=16)
    spec = ({0: bb, 2: 4 * h, 3: 4 * w}, {0: bb, 1: Dim.DYNAMIC})
    return C(MAE(), mk, spec, (2, 4, 4), [(1, 3, 5), (3, 2, 2)], (2, 17, 4), edges=[(1, 16, 16), (1, 1, 2), (1, 1, 4)])


# =========================================================================================
# Point clouds / graphs / fields
# =========================================================================================
def square_distance(src, dst):
    Bn, N, _ = src.shape
    _, M, _ = dst.shape
    dist = -2 * torch.matmul(src, dst.permute(0, 2, 1))
    dist += torch.sum(src ** 2, -1).view(Bn, N, 1)
    dist += torch.sum(dst ** 2, -1).view(Bn, 1, M)
    return dist


def index_points(points, idx):
    device = points.device
    Bn = points.shape[0]
    view_shape = list(idx.shape)
    view_shape[1:] = [1] * (len(view_shape) - 1)
    repeat_shape = list(idx.shape)
    repeat_shape[0] = 1
    batch_indices = torch.arange(Bn, dtype=torch.long).to(device).view(view_shape).repeat(repeat_shape)
    return points[batch_indices, idx, :]


def farthest_point_sample(xyz, npoint):
    device = xyz.device
    Bn, N, C_ = xyz.shape
    centroids = torch.zeros(Bn, npoint, dtype=torch.long).to(device)
    distance = torch.ones(Bn, N).to(device) * 1e10
    farthest = torch.zeros(Bn, dtype=torch.long).to(device)   # randint in the original
    batch_indices = torch.arange(Bn, dtype=torch.long).to(device)
    for i in range(npoint):
        centroids[:, i] = farthest
        centroid = xyz[batch_indices, farthest, :].view(Bn, 1, 3)
        dist = torch.sum((xyz - centroid) ** 2, -1)
        mask = dist < distance
        distance[mask] = dist[mask]
        farthest = torch.max(distance, -1)[1]
    return centroids


class PointNetSetAbstraction(nn.Module):
    """yanx27/Pointnet_Pointnet2_pytorch, ball query replaced by kNN (topk on distances)."""

    def __init__(self, npoint=6, nsample=4, in_channel=3 + 2, mlp=(8, 16)):
        super().__init__()
        self.npoint, self.nsample = npoint, nsample
        self.mlp_convs, self.mlp_bns = nn.ModuleList(), nn.ModuleList()
        last = in_channel
        for out in mlp:
            self.mlp_convs.append(nn.Conv2d(last, out, 1))
            self.mlp_bns.append(nn.BatchNorm2d(out))
            last = out

    def forward(self, xyz, points):
        xyz, points = xyz.permute(0, 2, 1), points.permute(0, 2, 1)
        Bn, N, C_ = xyz.shape
        fps_idx = farthest_point_sample(xyz, self.npoint)
        new_xyz = index_points(xyz, fps_idx)
        idx = torch.topk(square_distance(new_xyz, xyz), self.nsample, dim=-1, largest=False)[1]
        grouped_xyz = index_points(xyz, idx)
        grouped_xyz_norm = grouped_xyz - new_xyz.view(Bn, self.npoint, 1, C_)
        new_points = torch.cat([grouped_xyz_norm, index_points(points, idx)], dim=-1)
        new_points = new_points.permute(0, 3, 2, 1)
        for conv, bn in zip(self.mlp_convs, self.mlp_bns):
            new_points = F.relu(bn(conv(new_points)))
        new_points = torch.max(new_points, 2)[0]
        return new_xyz.permute(0, 2, 1), new_points


def pointnet2_sa():
    mk = lambda b, n: ((rn(b, 3, n), rn(b, 2, n)), {})
    bb, n = B(), Dim("points", min=6, max=4096)
    spec = ({0: bb, 2: n}, {0: bb, 2: n})
    return C(PointNetSetAbstraction(), mk, spec, (2, 20), [(1, 6), (3, 57)], (2, 5), edges=[(1, 4096)])


class GraphTransformer(nn.Module):
    """Graphormer-lite: degree centrality embedding from the adjacency, attention masked by
    the adjacency (plus self loops), node padding mask, masked mean readout."""

    def __init__(self, fin=6, d=16, heads=2, max_degree=8, nc=3):
        super().__init__()
        self.h, self.max_degree = heads, max_degree
        self.inp = nn.Linear(fin, d)
        self.deg = nn.Embedding(max_degree + 1, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.out = nn.Linear(d, nc)

    def forward(self, x, adj, node_mask):
        Bn, N, _ = x.shape
        degree = adj.sum(-1).clamp(max=self.max_degree).long()
        h = self.inp(x) + self.deg(degree)
        eye = torch.eye(N, dtype=torch.bool, device=x.device).unsqueeze(0)
        allowed = (adj.bool() | eye) & node_mask[:, None, :]
        q, k, v = self.qkv(self.ln1(h)).view(Bn, N, 3, self.h, -1).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(q.size(-1))
        att = att.masked_fill(~allowed[:, None], float("-inf")).softmax(-1)
        h = h + self.o((att @ v).transpose(1, 2).reshape(Bn, N, -1))
        h = h + self.ff(self.ln2(h))
        m = node_mask.unsqueeze(-1).float()
        return self.out((h * m).sum(1) / m.sum(1).clamp(min=1))


def graph_transformer():
    def mk(b, n):
        adj = (torch.rand(b, n, n, generator=gen("adj", b, n)) > 0.6).float()
        adj = ((adj + adj.transpose(1, 2)) > 0).float()
        nm = torch.ones(b, n, dtype=torch.bool)
        nm[0, n // 2 + 1:] = False
        return (rn(b, n, 6), adj, nm), {}
    bb, n = B(), Dim("nodes", min=1, max=256)
    spec = ({0: bb, 1: n}, {0: bb, 1: n, 2: n}, {0: bb, 1: n})
    return C(GraphTransformer(), mk, spec, (2, 9), [(1, 1), (3, 40)], (2, 257), edges=[(1, 256), (32, 2)])


class NeRFPE(nn.Module):
    """NeRF (yenchenlin/nerf-pytorch) Embedder: 2.**linspace frequency bands as 0-d tensors
    in lambdas, plus a 2**arange buffer variant for view dirs; skip connection at layer 2."""

    def __init__(self, multires=6, multires_views=3, W=32):
        super().__init__()
        embed_fns = [lambda x: x]
        freq_bands = 2.0 ** torch.linspace(0.0, multires - 1, steps=multires)
        for freq in freq_bands:
            for p_fn in (torch.sin, torch.cos):
                embed_fns.append(lambda x, p_fn=p_fn, freq=freq: p_fn(x * freq))
        self.embed_fns = embed_fns
        self.register_buffer("view_freqs", 2.0 ** torch.arange(multires_views).float())
        in_ch, in_views = 3 + 3 * 2 * multires, 3 + 3 * 2 * multires_views
        self.pts_linears = nn.ModuleList([nn.Linear(in_ch, W), nn.Linear(W, W), nn.Linear(W + in_ch, W)])
        self.alpha_linear = nn.Linear(W, 1)
        self.feature_linear = nn.Linear(W, W)
        self.views_linears = nn.Linear(W + in_views, W // 2)
        self.rgb_linear = nn.Linear(W // 2, 3)

    def embed(self, inputs):
        return torch.cat([fn(inputs) for fn in self.embed_fns], -1)

    def embed_views(self, d):
        xb = (d[..., None, :] * self.view_freqs[:, None]).flatten(-2)
        return torch.cat([d, torch.sin(xb), torch.cos(xb)], -1)

    def forward(self, pts, viewdirs):
        input_pts = self.embed(pts.reshape(-1, 3))
        dirs = viewdirs[:, None].expand(pts.shape)
        input_views = self.embed_views(dirs.reshape(-1, 3))
        h = input_pts
        for i, l in enumerate(self.pts_linears):
            h = F.relu(l(h))
            if i == 1:
                h = torch.cat([input_pts, h], -1)
        alpha = self.alpha_linear(h)
        h = F.relu(self.views_linears(torch.cat([self.feature_linear(h), input_views], -1)))
        out = torch.cat([self.rgb_linear(h), alpha], -1)
        return out.reshape(list(pts.shape[:-1]) + [out.shape[-1]])


def nerf_pe():
    mk = lambda r, s: ((rn(r, s, 3), F.normalize(rn(r, 3), dim=-1)), {})
    rr, s = Dim("rays", min=1, max=4096), Dim("samples", min=1, max=128)
    spec = ({0: rr, 1: s}, {0: rr})
    return C(NeRFPE(), mk, spec, (8, 5), [(1, 1), (33, 64)], (8, 129), edges=[(4096, 1), (1, 128)])


# =========================================================================================
# Time series / sequence models
# =========================================================================================
class MovingAvg(nn.Module):
    """Autoformer moving_avg: replicate the ends by repeat + cat, AvgPool1d."""

    def __init__(self, kernel_size, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.avg = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=0)

    def forward(self, x):
        front = x[:, 0:1, :].repeat(1, (self.kernel_size - 1) // 2, 1)
        end = x[:, -1:, :].repeat(1, (self.kernel_size - 1) // 2, 1)
        x = torch.cat([front, x, end], dim=1)
        return self.avg(x.permute(0, 2, 1)).permute(0, 2, 1)


class SeriesDecomp(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.moving_avg = MovingAvg(kernel_size, stride=1)

    def forward(self, x):
        moving_mean = self.moving_avg(x)
        return x - moving_mean, moving_mean
