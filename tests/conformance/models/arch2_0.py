"""Realistic architectures, part 1 of 4 (the cases are listed in tests/conformance/table_models.py)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetrace import Dim
from tests.conformance.models.base import C, B32 as B
from tests.conformance.inputs import rn, ri, gen


# =========================================================================================
# Diffusion / generative
# =========================================================================================
def timestep_embedding(timesteps, dim, max_period=10000):
    """openai/guided-diffusion (also DiT, SD): sinusoidal embedding from arange/exp."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float32) / half).to(
        device=timesteps.device)
    args = timesteps[:, None].float() * freqs[None]
    embedding = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        embedding = torch.cat([embedding, torch.zeros_like(embedding[:, :1])], dim=-1)
    return embedding


def Normalize(c):
    return nn.GroupNorm(num_groups=4, num_channels=c, eps=1e-6, affine=True)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, temb):
        super().__init__()
        self.in_layers = nn.Sequential(Normalize(cin), nn.SiLU(), nn.Conv2d(cin, cout, 3, padding=1))
        self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(temb, cout))
        self.out_layers = nn.Sequential(Normalize(cout), nn.SiLU(), nn.Dropout(0.1), nn.Conv2d(cout, cout, 3, padding=1))
        self.skip_connection = nn.Identity() if cin == cout else nn.Conv2d(cin, cout, 1)

    def forward(self, x, emb):
        h = self.in_layers(x)
        emb_out = self.emb_layers(emb).type(h.dtype)
        while len(emb_out.shape) < len(h.shape):
            emb_out = emb_out[..., None]
        h = h + emb_out
        h = self.out_layers(h)
        return self.skip_connection(x) + h


class CrossAttention(nn.Module):
    def __init__(self, query_dim, context_dim=None, heads=2, dim_head=8):
        super().__init__()
        inner = heads * dim_head
        context_dim = context_dim or query_dim
        self.scale, self.heads = dim_head ** -0.5, heads
        self.to_q = nn.Linear(query_dim, inner, bias=False)
        self.to_k = nn.Linear(context_dim, inner, bias=False)
        self.to_v = nn.Linear(context_dim, inner, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner, query_dim), nn.Dropout(0.0))

    def forward(self, x, context=None, mask=None):
        h = self.heads
        q = self.to_q(x)
        context = x if context is None else context
        k, v = self.to_k(context), self.to_v(context)
        # rearrange(t, 'b n (h d) -> (b h) n d', h=h)
        q, k, v = (t.reshape(t.shape[0], t.shape[1], h, -1).permute(0, 2, 1, 3).reshape(t.shape[0] * h, t.shape[1], -1)
                   for t in (q, k, v))
        sim = torch.einsum("b i d, b j d -> b i j", q, k) * self.scale
        if mask is not None:
            mask = mask.reshape(mask.shape[0], -1)
            max_neg_value = -torch.finfo(sim.dtype).max
            mask = mask[:, None, :].repeat_interleave(h, dim=0)
            sim.masked_fill_(~mask, max_neg_value)
        attn = sim.softmax(dim=-1)
        out = torch.einsum("b i j, b j d -> b i d", attn, v)
        out = out.reshape(-1, h, out.shape[1], out.shape[2]).permute(0, 2, 1, 3).reshape(-1, out.shape[1], h * out.shape[2])
        return self.to_out(out)


class SpatialTransformer(nn.Module):
    def __init__(self, c, context_dim):
        super().__init__()
        self.norm = Normalize(c)
        self.proj_in = nn.Conv2d(c, c, 1)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(c), nn.LayerNorm(c), nn.LayerNorm(c)
        self.attn1 = CrossAttention(c)
        self.attn2 = CrossAttention(c, context_dim)
        self.ff = nn.Sequential(nn.Linear(c, 4 * c), nn.GELU(), nn.Linear(4 * c, c))
        self.proj_out = nn.Conv2d(c, c, 1)

    def forward(self, x, context=None):
        b, c, h, w = x.shape
        x_in = x
        x = self.proj_in(self.norm(x))
        x = x.permute(0, 2, 3, 1).reshape(b, h * w, c)  # rearrange(x, 'b c h w -> b (h w) c')
        x = self.attn1(self.norm1(x)) + x
        x = self.attn2(self.norm2(x), context=context) + x
        x = self.ff(self.norm3(x)) + x
        x = x.reshape(b, h, w, c).permute(0, 3, 1, 2)
        return self.proj_out(x) + x_in


class Downsample(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.op = nn.Conv2d(c, c, 3, stride=2, padding=1)

    def forward(self, x):
        return self.op(x)


class Upsample(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        x = F.interpolate(x, scale_factor=2, mode="nearest")
        return self.conv(x)


class TinySDUNet(nn.Module):
    def __init__(self, cin=4, mc=8, ctx=12):
        super().__init__()
        self.mc = mc
        temb = mc * 4
        self.time_embed = nn.Sequential(nn.Linear(mc, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.conv_in = nn.Conv2d(cin, mc, 3, padding=1)
        self.res1 = ResBlock(mc, mc, temb)
        self.down = Downsample(mc)
        self.res2 = ResBlock(mc, 2 * mc, temb)
        self.attn2 = SpatialTransformer(2 * mc, ctx)
        self.mid = ResBlock(2 * mc, 2 * mc, temb)
        self.up = Upsample(2 * mc)
        self.res3 = ResBlock(3 * mc, mc, temb)
        self.out = nn.Sequential(Normalize(mc), nn.SiLU(), nn.Conv2d(mc, cin, 3, padding=1))

    def forward(self, x, timesteps, context):
        emb = self.time_embed(timestep_embedding(timesteps, self.mc))
        h1 = self.res1(self.conv_in(x), emb)
        h = self.attn2(self.res2(self.down(h1), emb), context)
        h = self.up(self.mid(h, emb))
        h = self.res3(torch.cat([h, h1], dim=1), emb)
        return self.out(h)


def sd_unet():
    def mk(b, hw, l):
        return (rn(b, 4, hw, hw + 2), ri(1000, b).float(), rn(b, l, 12)), {}
    bb, h, w, L = B(), Dim("h", min=1, max=64), Dim("w", min=1, max=64), Dim("ctx", min=1, max=77)
    spec = ({0: bb, 2: 2 * h, 3: 2 * w}, {0: bb}, {0: bb, 1: L})
    return C(TinySDUNet(), mk, spec, (2, 8, 5), [(1, 4, 1), (3, 10, 77)], (2, 8, 78),
             edges=[(1, 2, 1), (1, 126, 3), (32, 6, 2)])


class DiTBlock(nn.Module):
    """facebookresearch/DiT: adaLN-Zero modulation."""

    def __init__(self, hidden_size, num_heads, mlp_ratio=4.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
        self.attn = nn.MultiheadAttention(hidden_size, num_heads, batch_first=True)
        self.norm2 = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(hidden_size, int(hidden_size * mlp_ratio)), nn.GELU(approximate="tanh"),
                                 nn.Linear(int(hidden_size * mlp_ratio), hidden_size))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden_size, 6 * hidden_size, bias=True))

    @staticmethod
    def modulate(x, shift, scale):
        return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)

    def forward(self, x, c):
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.adaLN_modulation(c).chunk(6, dim=1)
        h = self.modulate(self.norm1(x), shift_msa, scale_msa)
        x = x + gate_msa.unsqueeze(1) * self.attn(h, h, h, need_weights=False)[0]
        x = x + gate_mlp.unsqueeze(1) * self.mlp(self.modulate(self.norm2(x), shift_mlp, scale_mlp))
        return x


def get_2d_sincos_pos_embed_torch(embed_dim, gh, gw):
    """2D sin-cos position embedding built in forward from the grid size (dynamic resolution)."""
    gy, gx = torch.meshgrid(torch.arange(gh, dtype=torch.float32), torch.arange(gw, dtype=torch.float32), indexing="ij")
    omega = torch.arange(embed_dim // 4, dtype=torch.float32) / (embed_dim / 4.0)
    omega = 1.0 / 10000 ** omega
    oy = gy.reshape(-1)[:, None] * omega[None]
    ox = gx.reshape(-1)[:, None] * omega[None]
    return torch.cat([torch.sin(oy), torch.cos(oy), torch.sin(ox), torch.cos(ox)], dim=1)


class TinyDiT(nn.Module):
    def __init__(self, in_channels=4, patch_size=2, hidden_size=16, depth=2, num_heads=2, num_classes=10,
                 sqrt_unpatchify=True):
        super().__init__()
        self.in_channels = self.out_channels = in_channels
        self.p, self.hidden, self.sqrt_unpatchify = patch_size, hidden_size, sqrt_unpatchify
        self.x_embedder = nn.Conv2d(in_channels, hidden_size, patch_size, patch_size)
        self.t_embedder = nn.Sequential(nn.Linear(32, hidden_size), nn.SiLU(), nn.Linear(hidden_size, hidden_size))
        self.y_embedder = nn.Embedding(num_classes + 1, hidden_size)
        self.blocks = nn.ModuleList([DiTBlock(hidden_size, num_heads) for _ in range(depth)])
        self.norm_final = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
        self.linear = nn.Linear(hidden_size, patch_size * patch_size * self.out_channels)
        self.adaLN_final = nn.Sequential(nn.SiLU(), nn.Linear(hidden_size, 2 * hidden_size))

    def unpatchify(self, x, gh=None, gw=None):
        c, p = self.out_channels, self.p
        if self.sqrt_unpatchify:
            h = w = int(x.shape[1] ** 0.5)   # DiT's original code
            assert h * w == x.shape[1]
        else:
            h, w = gh, gw
        x = x.reshape(shape=(x.shape[0], h, w, p, p, c))
        x = torch.einsum("nhwpqc->nchpwq", x)
        return x.reshape(shape=(x.shape[0], c, h * p, w * p))

    def forward(self, x, t, y):
        gh, gw = x.shape[-2] // self.p, x.shape[-1] // self.p
        x = self.x_embedder(x).flatten(2).transpose(1, 2) + get_2d_sincos_pos_embed_torch(self.hidden, gh, gw)
        c = self.t_embedder(timestep_embedding(t, 32)) + self.y_embedder(y)
        for block in self.blocks:
            x = block(x, c)
        shift, scale = self.adaLN_final(c).chunk(2, dim=1)
        x = self.linear(DiTBlock.modulate(self.norm_final(x), shift, scale))
        return self.unpatchify(x, gh, gw)


def dit():
    def mk(b, hw):
        return (rn(b, 4, hw, hw), ri(1000, b), ri(10, b)), {}
    bb, s = B(), Dim("s", min=1, max=32)
    spec = ({0: bb, 2: 2 * s, 3: 2 * s}, {0: bb}, {0: bb})
    return C(TinyDiT(), mk, spec, (2, 8), [(1, 2), (3, 12)], (2, 66), edges=[(32, 64)])


def dit_hw():
    def mk(b, h, w):
        return (rn(b, 4, h, w), ri(1000, b), ri(10, b)), {}
    bb, h, w = B(), Dim("h", min=1, max=32), Dim("w", min=1, max=32)
    spec = ({0: bb, 2: 2 * h, 3: 2 * w}, {0: bb}, {0: bb})
    return C(TinyDiT(sqrt_unpatchify=False), mk, spec, (2, 8, 6), [(1, 2, 2), (3, 12, 4)], (2, 66, 4),
             edges=[(1, 64, 2), (2, 2, 64)])


class VectorQuantizer(nn.Module):
    """zalandoresearch/pytorch-vq-vae VectorQuantizer (eval, no EMA)."""

    def __init__(self, num_embeddings=16, embedding_dim=8, commitment_cost=0.25):
        super().__init__()
        self._embedding_dim, self._num_embeddings = embedding_dim, num_embeddings
        self._embedding = nn.Embedding(num_embeddings, embedding_dim)
        self._embedding.weight.data.uniform_(-1 / num_embeddings, 1 / num_embeddings)
        self._commitment_cost = commitment_cost

    def forward(self, inputs):
        inputs = inputs.permute(0, 2, 3, 1).contiguous()
        input_shape = inputs.shape
        flat_input = inputs.view(-1, self._embedding_dim)
        distances = (torch.sum(flat_input ** 2, dim=1, keepdim=True) + torch.sum(self._embedding.weight ** 2, dim=1)
                     - 2 * torch.matmul(flat_input, self._embedding.weight.t()))
        encoding_indices = torch.argmin(distances, dim=1).unsqueeze(1)
        encodings = torch.zeros(encoding_indices.shape[0], self._num_embeddings, device=inputs.device)
        encodings.scatter_(1, encoding_indices, 1)
        quantized = torch.matmul(encodings, self._embedding.weight).view(input_shape)
        e_latent_loss = F.mse_loss(quantized.detach(), inputs)
        q_latent_loss = F.mse_loss(quantized, inputs.detach())
        loss = q_latent_loss + self._commitment_cost * e_latent_loss
        quantized = inputs + (quantized - inputs).detach()
        avg_probs = torch.mean(encodings, dim=0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))
        return loss, quantized.permute(0, 3, 1, 2).contiguous(), perplexity, encodings


class VQVAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 8, 4, 2, 1), nn.ReLU(), nn.Conv2d(8, 8, 4, 2, 1), nn.ReLU(),
                                 nn.Conv2d(8, 8, 1))
        self.vq = VectorQuantizer()
        self.dec = nn.Sequential(nn.ConvTranspose2d(8, 8, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(8, 3, 4, 2, 1))

    def forward(self, x):
        loss, q, perp, enc = self.vq(self.enc(x))
        x_recon = self.dec(q)
        recon_error = F.mse_loss(x_recon, x)
        return loss + recon_error, x_recon, perp, enc.argmax(1)


def vqvae():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    bb, h, w = B(), Dim("h", min=1, max=64), Dim("w", min=1, max=64)
    spec = ({0: bb, 2: 4 * h, 3: 4 * w},)
    return C(VQVAE(), mk, spec, (2, 16, 12), [(1, 4, 4), (3, 32, 8)], (2, 16, 14), edges=[(1, 256, 4)])


class DDIMStep(nn.Module):
    """One DDIM sampling step (guided-diffusion _extract_into_tensor / extract with gather)."""

    def __init__(self, T=100):
        super().__init__()
        betas = torch.linspace(1e-4, 0.02, T, dtype=torch.float64)
        alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.register_buffer("alphas_cumprod", alphas_cumprod.float())
        self.register_buffer("alphas_cumprod_prev", torch.cat([torch.ones(1), alphas_cumprod[:-1].float()]))
        self.eps_model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.SiLU(), nn.Conv2d(8, 3, 3, padding=1))
        self.t_proj = nn.Linear(8, 8)

    @staticmethod
    def extract(a, t, x_shape):
        b, *_ = t.shape
        out = a.gather(-1, t.cpu())
        return out.reshape(b, *((1,) * (len(x_shape) - 1))).to(t.device)

    def forward(self, x, t, eta: float = 0.0):
        eps = self.eps_model(x) + self.t_proj(timestep_embedding(t, 8))[:, :3, None, None]
        a_t = self.extract(self.alphas_cumprod, t, x.shape)
        a_prev = self.extract(self.alphas_cumprod_prev, t, x.shape)
        x0 = (x - (1 - a_t).sqrt() * eps) / a_t.sqrt()
        x0 = x0.clamp(-1, 1)
        sigma = eta * ((1 - a_prev) / (1 - a_t) * (1 - a_t / a_prev)).sqrt()
        dir_xt = (1.0 - a_prev - sigma ** 2).sqrt() * eps
        return a_prev.sqrt() * x0 + dir_xt, x0


def ddim_step():
    mk = lambda b, h, w: ((rn(b, 3, h, w), ri(100, b)), {})
    bb = B()
    spec = ({0: bb, 2: Dim("h", min=1, max=128), 3: Dim("w", min=1, max=128)}, {0: bb})
    return C(DDIMStep(), mk, spec, (2, 8, 6), [(1, 1, 1), (5, 17, 9)], (2, 129, 6), edges=[(32, 128, 2)])


class MaskedConv2d(nn.Conv2d):
    """PixelCNN masked convolution (jzbontar/pixelcnn-pytorch): mask applied in forward."""

    def __init__(self, mask_type, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register_buffer("mask", self.weight.data.clone())
        _, _, kH, kW = self.weight.size()
        self.mask.fill_(1)
        self.mask[:, :, kH // 2, kW // 2 + (mask_type == "B"):] = 0
        self.mask[:, :, kH // 2 + 1:] = 0
        self.weight.data *= self.mask   # so the in-forward masking below is idempotent

    def forward(self, x):
        self.weight.data *= self.mask
        return super().forward(x)


class PixelCNN(nn.Module):
    def __init__(self, fm=8):
        super().__init__()
        self.net = nn.Sequential(
            MaskedConv2d("A", 1, fm, 7, 1, 3, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
            MaskedConv2d("B", fm, fm, 7, 1, 3, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
            nn.Conv2d(fm, 256, 1))

    def forward(self, x, target):
        logits = self.net(x)
        return logits, F.cross_entropy(logits, target)


class MaskedConv2dF(MaskedConv2d):
    """the common alternative: mask the weight functionally in forward."""

    def forward(self, x):
        return F.conv2d(x, self.weight * self.mask, self.bias, self.stride, self.padding)


def pixelcnn_functional():
    m = PixelCNN()
    for i in (0, 3):
        old = m.net[i]
        new = MaskedConv2dF("A" if i == 0 else "B", old.in_channels, old.out_channels, 7, 1, 3, bias=False)
        new.load_state_dict(old.state_dict())
        m.net[i] = new
    mk = lambda b, h, w: ((torch.rand(b, 1, h, w, generator=gen(b, h, w)), ri(256, b, h, w)), {})
    bb, h, w = B(), Dim("h", min=1, max=64), Dim("w", min=1, max=64)
    spec = ({0: bb, 2: h, 3: w}, {0: bb, 1: h, 2: w})
    return C(m, mk, spec, (2, 9, 7), [(1, 1, 1), (3, 28, 28)], (2, 65, 7), edges=[(1, 64, 64)])


def pixelcnn():
    mk = lambda b, h, w: ((torch.rand(b, 1, h, w, generator=gen(b, h, w)), ri(256, b, h, w)), {})
    bb, h, w = B(), Dim("h", min=1, max=64), Dim("w", min=1, max=64)
    spec = ({0: bb, 2: h, 3: w}, {0: bb, 1: h, 2: w})
    return C(PixelCNN(), mk, spec, (2, 9, 7), [(1, 1, 1), (3, 28, 28)], (2, 65, 7), edges=[(1, 64, 64)])


# =========================================================================================
# Detection / segmentation / vision
# =========================================================================================
def autopad(k, p=None, d=1):
    if d > 1:
        k = d * (k - 1) + 1 if isinstance(k, int) else [d * (x - 1) + 1 for x in k]
    if p is None:
        p = k // 2 if isinstance(k, int) else [x // 2 for x in k]
    return p


class Conv(nn.Module):
    default_act = nn.SiLU()

    def __init__(self, c1, c2, k=1, s=1, p=None, g=1, d=1, act=True):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, autopad(k, p, d), groups=g, dilation=d, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = self.default_act if act is True else act if isinstance(act, nn.Module) else nn.Identity()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class DFL(nn.Module):
    def __init__(self, c1=16):
        super().__init__()
        self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
        x = torch.arange(c1, dtype=torch.float)
        self.conv.weight.data[:] = nn.Parameter(x.view(1, c1, 1, 1))
        self.c1 = c1

    def forward(self, x):
        b, _, a = x.shape
        return self.conv(x.view(b, 4, self.c1, a).transpose(2, 1).softmax(1)).view(b, 4, a)


def make_anchors(feats, strides, grid_cell_offset=0.5):
    anchor_points, stride_tensor = [], []
    assert feats is not None
    dtype, device = feats[0].dtype, feats[0].device
    for i, stride in enumerate(strides):
        _, _, h, w = feats[i].shape
        sx = torch.arange(end=w, device=device, dtype=dtype) + grid_cell_offset
        sy = torch.arange(end=h, device=device, dtype=dtype) + grid_cell_offset
        sy, sx = torch.meshgrid(sy, sx, indexing="ij")
        anchor_points.append(torch.stack((sx, sy), -1).view(-1, 2))
        stride_tensor.append(torch.full((h * w, 1), stride, dtype=dtype, device=device))
    return torch.cat(anchor_points), torch.cat(stride_tensor)


def dist2bbox(distance, anchor_points, xywh=True, dim=-1):
    lt, rb = distance.chunk(2, dim)
    x1y1 = anchor_points - lt
    x2y2 = anchor_points + rb
    if xywh:
        c_xy = (x1y1 + x2y2) / 2
        wh = x2y2 - x1y1
        return torch.cat((c_xy, wh), dim)
    return torch.cat((x1y1, x2y2), dim)


class YOLOv8(nn.Module):
    """ultralytics Detect head (anchor-free, DFL), with its anchor cache on self."""
    dynamic = False
    shape = None
    anchors = torch.empty(0)
    strides = torch.empty(0)

    def __init__(self, nc=3, ch=(8, 16, 16), reg_max=4, tensor_stride=True):
        super().__init__()
        self.backbone = nn.ModuleList([nn.Sequential(Conv(3, 8, 3, 2), Conv(8, ch[0], 3, 2), Conv(ch[0], ch[0], 3, 2)),
                                       Conv(ch[0], ch[1], 3, 2), Conv(ch[1], ch[2], 3, 2)])
        self.nc, self.nl, self.reg_max = nc, len(ch), reg_max
        self.no = nc + reg_max * 4
        self.stride = torch.tensor([8.0, 16.0, 32.0]) if tensor_stride else [8.0, 16.0, 32.0]
        c2, c3 = max((16, ch[0] // 4, self.reg_max * 4)), max(ch[0], min(self.nc, 100))
        self.cv2 = nn.ModuleList(nn.Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * self.reg_max, 1)) for x in ch)
        self.cv3 = nn.ModuleList(nn.Sequential(Conv(x, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, self.nc, 1)) for x in ch)
        self.dfl = DFL(self.reg_max)

    def forward(self, img):
        x, f = [], img
        for m in self.backbone:
            f = m(f)
            x.append(f)
        for i in range(self.nl):
            x[i] = torch.cat((self.cv2[i](x[i]), self.cv3[i](x[i])), 1)
        shape = x[0].shape
        x_cat = torch.cat([xi.view(shape[0], self.no, -1) for xi in x], 2)
        if self.dynamic or self.shape != shape:
            self.anchors, self.strides = (x.transpose(0, 1) for x in make_anchors(x, self.stride, 0.5))
            self.shape = shape
        box, cls = x_cat.split((self.reg_max * 4, self.nc), 1)
        dbox = dist2bbox(self.dfl(box), self.anchors.unsqueeze(0), xywh=True, dim=1) * self.strides
        return torch.cat((dbox, cls.sigmoid()), 1)


def yolov8():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    bb, h, w = B(), Dim("h", min=1, max=20), Dim("w", min=1, max=20)
    spec = ({0: bb, 2: 32 * h, 3: 32 * w},)
    return C(YOLOv8(), mk, spec, (2, 64, 96), [(1, 32, 32), (3, 128, 64)], (2, 64, 100), edges=[(1, 640, 32)])


def yolov8_float_stride():
    """the same with Python float strides (torch.full gets a float, not a 0-d tensor)."""
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    bb, h, w = B(), Dim("h", min=1, max=20), Dim("w", min=1, max=20)
    spec = ({0: bb, 2: 32 * h, 3: 32 * w},)
    return C(YOLOv8(tensor_stride=False), mk, spec, (2, 64, 96), [(1, 32, 32), (3, 128, 64)], (2, 64, 100), edges=[(1, 640, 32)])


class ASPPPooling(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.AdaptiveAvgPool2d(1), nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

    def forward(self, x):
        size = x.shape[-2:]
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class ASPP(nn.Module):
    """torchvision.models.segmentation.deeplabv3.ASPP."""

    def __init__(self, cin, rates=(2, 4), cout=8):
        super().__init__()
        mods = [nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())]
        for r in rates:
            mods.append(nn.Sequential(nn.Conv2d(cin, cout, 3, padding=r, dilation=r, bias=False), nn.BatchNorm2d(cout), nn.ReLU()))
        mods.append(ASPPPooling(cin, cout))
        self.convs = nn.ModuleList(mods)
        self.project = nn.Sequential(nn.Conv2d(len(self.convs) * cout, cout, 1, bias=False), nn.BatchNorm2d(cout),
                                     nn.ReLU(), nn.Dropout(0.5))

    def forward(self, x):
        return self.project(torch.cat([conv(x) for conv in self.convs], dim=1))


class DeepLabV3Plus(nn.Module):
    def __init__(self, nc=5):
        super().__init__()
        self.low = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, 2, 1), nn.ReLU())   # /4
        self.high = nn.Sequential(nn.Conv2d(8, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 16, 3, 2, 1), nn.ReLU())  # /16
        self.aspp = ASPP(16)
        self.low_proj = nn.Sequential(nn.Conv2d(8, 4, 1, bias=False), nn.BatchNorm2d(4), nn.ReLU())
        self.classifier = nn.Sequential(nn.Conv2d(12, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                                        nn.Conv2d(8, nc, 1))

    def forward(self, x):
        input_shape = x.shape[-2:]
        low = self.low(x)
        out = self.aspp(self.high(low))
        out = F.interpolate(out, size=low.shape[2:], mode="bilinear", align_corners=False)
        out = self.classifier(torch.cat([self.low_proj(low), out], dim=1))
        return {"out": F.interpolate(out, size=input_shape, mode="bilinear", align_corners=False)}


def deeplabv3plus():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    spec = ({0: B(), 2: Dim("h", min=1, max=512), 3: Dim("w", min=1, max=512)},)
    return C(DeepLabV3Plus(), mk, spec, (2, 37, 50), [(1, 1, 1), (3, 64, 17)], (2, 513, 50),
             edges=[(1, 2, 3), (1, 512, 16)])


class FPNPAN(nn.Module):
    """torchvision FeaturePyramidNetwork top-down (interpolate to the lateral's size) + a
    PANet/YOLO neck bottom-up path (stride-2 convs), backbone with k3 s2 p1 convs."""

    def __init__(self, chs=(8, 16, 32), oc=8):
        super().__init__()
        self.body = nn.ModuleList()
        cin = 3
        for c in chs:
            self.body.append(nn.Sequential(nn.Conv2d(cin, c, 3, 2, 1), nn.BatchNorm2d(c), nn.ReLU()))
            cin = c
        self.inner_blocks = nn.ModuleList(nn.Conv2d(c, oc, 1) for c in chs)
        self.layer_blocks = nn.ModuleList(nn.Conv2d(oc, oc, 3, padding=1) for _ in chs)
        self.downs = nn.ModuleList(nn.Conv2d(oc, oc, 3, 2, 1) for _ in chs[1:])

    def forward(self, x):
        feats = []
        for m in self.body:
            x = m(x)
            feats.append(x)
        last_inner = self.inner_blocks[-1](feats[-1])
        results = [self.layer_blocks[-1](last_inner)]
        for idx in range(len(feats) - 2, -1, -1):
            inner_lateral = self.inner_blocks[idx](feats[idx])
            feat_shape = inner_lateral.shape[-2:]
            inner_top_down = F.interpolate(last_inner, size=feat_shape, mode="nearest")
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.layer_blocks[idx](last_inner))
        outs = [results[0]]
        for i, d in enumerate(self.downs):
            outs.append(results[i + 1] + d(outs[-1]))
        pooled = F.max_pool2d(outs[-1], 1, 2, 0)   # LastLevelMaxPool
        return {str(i): o for i, o in enumerate(outs + [pooled])}


def fpn_panet():
    mk = lambda b, h, w: ((rn(b, 3, h, w),), {})
    spec = ({0: B(), 2: Dim("h", min=1, max=512), 3: Dim("w", min=1, max=512)},)
    return C(FPNPAN(), mk, spec, (2, 37, 50), [(1, 1, 1), (3, 64, 17)], (2, 513, 50), edges=[(1, 8, 9), (1, 512, 5)])
