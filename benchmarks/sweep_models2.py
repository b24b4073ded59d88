"""Second breadth probe over realistic architectures, written the way their reference
repositories write them (not covered by benchmarks/zoo, sweep_vision.py, sweep_hf.py,
sweep_models.py or sweep_patterns.py): diffusion (SD UNet block, DiT, DDIM step), VQ-VAE,
detection heads (YOLOv8 DFL, RT-DETR query selection, CenterNet decode, BiFPN, FPN+PAN,
DeepLabV3+), time series (Autoformer, Informer), sequence models (WaveNet, Mamba-2 SSD,
RWKV-v2, RetNet, Performer, chunked local attention, Squeezeformer), retrieval / tabular /
graph / point cloud models, losses (CTC, two-tower in-batch negatives, LM losses, HF models
called with labels), MAE masking from a given noise, Swin shifted-window mask.

For each model (tiny, random weights, eval mode):

1. ``st.export`` with named Dims (batch and a natural second dim) and min/max;
2. export must not change the model (state_dict values, training flags) or the inputs;
3. ``ep.module()`` vs eager on the example, two other sizes and edge sizes (declared
   min/max boundaries; eager may reject an edge, then so must the program);
4. one input outside the declared space must raise ``st.InputMismatchError``;
5. ``st.save`` / ``st.load`` round trip: the loaded program must give identical outputs;
6. the same with every Dim replaced by ``Dim.AUTO``;
7. ``torch.export`` with the same named spec, as the reference.

status: ok | WRONG (an accepted input computed something else) | crash (a non-safetrace
exception escaped export, the run or save/load) | fail (a safetrace ExportError) | narrow
(an input of the declared space was rejected) | lax (the out-of-spec input was accepted) |
mutated (export or the run changed the model or the inputs) | rt (save/load round trip
differs).

Run: .venv/bin/python benchmarks/sweep_models2.py [name ...] [-v] [--no-torch]
"""

from __future__ import annotations

import copy
import io
import math
import sys
import time
import traceback
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
from torch.utils import _pytree as pytree  # noqa: E402

import safetrace as st  # noqa: E402
from safetrace import Dim  # noqa: E402
from safetrace.dims import DerivedDim  # noqa: E402


def _g(*k):
    return torch.Generator().manual_seed(hash(k) % (2 ** 31))


def rn(*shape):
    return torch.randn(*shape, generator=_g("rn", *shape))


def ri(hi, *shape, lo=0):
    return torch.randint(lo, hi, shape, generator=_g("ri", hi, lo, *shape))


def B(lo=1, hi=32):
    return Dim("batch", min=lo, max=hi)


@dataclass
class Case:
    model: nn.Module
    args: tuple
    kwargs: dict
    spec: Any
    others: list
    outside: tuple | None
    mode: str = "values"
    note: str = ""
    edges: list = field(default_factory=list)
    tol: float = 1e-4


def C(model, mk, spec, ex, others, outside, edges=(), **kw):
    """mk(*size) -> (args, kwargs)."""
    a, k = mk(*ex)
    return Case(model, a, k, spec, [mk(*o) for o in others], mk(*outside) if outside else None,
                edges=[mk(*e) for e in edges], **kw)


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


def pixelcnn():
    mk = lambda b, h, w: ((torch.rand(b, 1, h, w, generator=_g(b, h, w)), ri(256, b, h, w)), {})
    bb, h, w = B(), Dim("h", min=1, max=64), Dim("w", min=1, max=64)
    spec = ({0: bb, 2: h, 3: w}, {0: bb, 1: h, 2: w})
    return C(PixelCNN(), mk, spec, (2, 9, 7), [(1, 1, 1), (3, 28, 28)], (2, 65, 7), edges=[(1, 64, 64)])
