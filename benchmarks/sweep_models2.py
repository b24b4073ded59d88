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

Run: .venv/bin/python benchmarks/sweep_models2.py [name ...] [-v] [--no-torch]   (~2 min, 2 cores)

First run (torch 2.13.0 CPU, transformers 5.24.0): safetrace 32/40 ok, torch.export 29/40
exported (18 also ran all other sizes); no wrong result, no internal crash, save/load
identical everywhere. What it shows:
- dit / mae: a named Dim silently pinned by a residual check instead of a
  ConstraintViolationError. `int((s*s) ** 0.5)` (DiT's unpatchify) and `int(L * 0.25)` with
  L = (H//4)*(W//4) (MAE's len_keep) become `requires s*s == 16` / `(h*w)//4 == 4` in the
  contract; the same code on a single symbol (`int(x.shape[1] ** 0.5)`) is refused with
  "was specialized to 16". Export succeeds, then every other declared size is rejected.
- mamba2_ssd: `torch.ones(T, T, dtype=bool)` (the Python type, as ssd_minimal.py writes it;
  also float/int) is an UnsupportedOpError ("no overload of aten.ones accepts these
  arguments"); dtype=torch.bool exports (mamba2_ssd_torchbool).
- yolov8: `torch.full((h*w, 1), stride)` with a 0-d tensor fill value (ultralytics'
  make_anchors iterates a stride tensor) is an UnsupportedOpError; float strides export.
- pixelcnn: `self.weight.data *= self.mask` in forward: UnsupportedOpError on
  getset_descriptor.__set__ (torch.export fails too); the functional variant exports.
- nn_transformer: nn.TransformerDecoder's `_detect_is_causal_mask` calls bool() on
  `(mask == causal).all()`: DataDependentError located at the user's call (torch.export:
  GuardOnDataDependentSymNode); passing tgt_is_causal=True exports.
- autoformer: `int(factor * math.log(L))` specializes L (ConstraintViolationError, clear).
- swin_mask: the `if pad_r > 0 or pad_b > 0` branch is a residual check (by design).
- HF models need seq min=2 (SDPA's `is_causal = q_len > 1`), with a clear error.
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
    mk = lambda b, h, w: ((torch.rand(b, 1, h, w, generator=_g(b, h, w)), ri(256, b, h, w)), {})
    bb, h, w = B(), Dim("h", min=1, max=64), Dim("w", min=1, max=64)
    spec = ({0: bb, 2: h, 3: w}, {0: bb, 1: h, 2: w})
    return C(m, mk, spec, (2, 9, 7), [(1, 1, 1), (3, 28, 28)], (2, 65, 7), edges=[(1, 64, 64)])


def pixelcnn():
    mk = lambda b, h, w: ((torch.rand(b, 1, h, w, generator=_g(b, h, w)), ri(256, b, h, w)), {})
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
        return (rn(b, 3, 4 * h, 4 * w), torch.rand(b, h * w, generator=_g("noise", b, h, w))), {}
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
        adj = (torch.rand(b, n, n, generator=_g("adj", b, n)) > 0.6).float()
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


class TimeReduction(nn.Module):
    """wenet Squeezeformer TimeReductionLayer1D + recover by repeat_interleave and crop."""

    def __init__(self, d=16, stride=2):
        super().__init__()
        self.stride = stride
        self.dw_conv = nn.Conv1d(d, d, 3, stride, padding=1, groups=d)
        self.pw_conv = nn.Conv1d(d, d, 1)

    def forward(self, xs, xs_lens, mask, mask_pad):
        xs = xs.transpose(1, 2)
        xs = xs.masked_fill(mask_pad.eq(0), 0.0)
        xs = self.pw_conv(self.dw_conv(xs)).transpose(1, 2)
        B_, T, D = xs.size()
        mask = mask[:, ::self.stride, ::self.stride]
        mask_pad = mask_pad[:, :, ::self.stride]
        L = mask_pad.size(-1)
        if L - T < 0:
            xs = xs[:, :L - T, :].contiguous()
        else:
            dummy_pad = torch.zeros(B_, L - T, D, device=xs.device)
            xs = torch.cat([xs, dummy_pad], dim=1)
        xs_lens = torch.div(xs_lens + 1, 2, rounding_mode="trunc")
        return xs, xs_lens, mask, mask_pad


class Squeezeformer(nn.Module):
    def __init__(self, feat=8, d=16, vocab=10):
        super().__init__()
        self.embed = nn.Linear(feat, d)
        self.pre = nn.TransformerEncoderLayer(d, 2, 32, 0.0, batch_first=True)
        self.reduce = TimeReduction(d)
        self.mid = nn.TransformerEncoderLayer(d, 2, 32, 0.0, batch_first=True)
        self.time_recover_layer = nn.Linear(d, d)
        self.out = nn.Linear(d, vocab)

    def forward(self, feats, feat_lens):
        T = feats.size(1)
        mask_pad = (torch.arange(T, device=feats.device)[None, :] < feat_lens[:, None]).unsqueeze(1)
        mask = mask_pad & mask_pad.transpose(1, 2)
        xs = self.pre(self.embed(feats), src_key_padding_mask=~mask_pad.squeeze(1))
        recover_tensor = xs
        xs, lens, m2, mp2 = self.reduce(xs, feat_lens, mask, mask_pad)
        xs = self.mid(xs, src_key_padding_mask=~mp2.squeeze(1))
        xs = xs.repeat_interleave(2, dim=1)
        xs = xs[:, :recover_tensor.size(1), :].contiguous()
        xs = recover_tensor + self.time_recover_layer(xs)
        return self.out(xs).log_softmax(-1), lens, m2.sum((1, 2))


def squeezeformer():
    def mk(b, t):
        lens = torch.full((b,), t, dtype=torch.long)
        lens[0] = max(1, t - 3)
        return (rn(b, t, 8), lens), {}
    bb = B()
    spec = ({0: bb, 1: Dim("t", min=1, max=3000)}, {0: bb})
    return C(Squeezeformer(), mk, spec, (2, 21), [(1, 1), (3, 64)], (2, 3001), edges=[(1, 2), (1, 3000), (4, 7)])


# =========================================================================================
# Tabular / retrieval / losses
# =========================================================================================
class TabTransformer(nn.Module):
    """lucidrains/tab-transformer-pytorch: categories offset by a cumsum buffer, a transformer
    over the column embeddings, LayerNorm on continuous features, MLP head."""

    def __init__(self, categories=(3, 5, 4, 7), num_continuous=4, dim=8, num_special_tokens=2, out=1):
        super().__init__()
        total_tokens = sum(categories) + num_special_tokens
        categories_offset = F.pad(torch.tensor(list(categories)), (1, 0), value=num_special_tokens)
        categories_offset = categories_offset.cumsum(dim=-1)[:-1]
        self.register_buffer("categories_offset", categories_offset)
        self.num_categories, self.num_continuous = len(categories), num_continuous
        self.embeds = nn.Embedding(total_tokens, dim)
        self.transformer = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 2, 16, 0.0, batch_first=True), 2)
        self.norm = nn.LayerNorm(num_continuous)
        d_in = dim * len(categories) + num_continuous
        self.mlp = nn.Sequential(nn.Linear(d_in, 2 * d_in), nn.ReLU(), nn.Linear(2 * d_in, out))

    def forward(self, x_categ, x_cont, return_attn=False):
        assert x_categ.shape[-1] == self.num_categories, f"you must pass in {self.num_categories} values for your categories input"
        x_categ = x_categ + self.categories_offset
        x = self.transformer(self.embeds(x_categ))
        flat_categ = x.flatten(1)
        assert x_cont.shape[1] == self.num_continuous
        normed_cont = self.norm(x_cont)
        return self.mlp(torch.cat((flat_categ, normed_cont), dim=-1))


def tabtransformer():
    def mk(b):
        cat = torch.stack([ri(c, b) for c in (3, 5, 4, 7)], 1)
        return (cat, rn(b, 4)), {}
    bb = Dim("batch", min=1, max=1024)
    spec = ({0: bb}, {0: bb})
    return C(TabTransformer(), mk, spec, (5,), [(1,), (64,)], (1025,), edges=[(1024,)])


class TwoTower(nn.Module):
    """DPR / sentence-transformers style retrieval: two encoders, masked mean pooling,
    normalized embeddings, logits = q @ d.T / temperature, in-batch negatives loss."""

    def __init__(self, vocab=40, d=16, temperature=0.05):
        super().__init__()
        self.q_emb, self.d_emb = nn.Embedding(vocab, d, padding_idx=0), nn.Embedding(vocab, d, padding_idx=0)
        self.q_enc = nn.TransformerEncoderLayer(d, 2, 32, 0.0, batch_first=True)
        self.d_enc = nn.TransformerEncoderLayer(d, 2, 32, 0.0, batch_first=True)
        self.temperature = temperature

    @staticmethod
    def mean_pooling(token_embeddings, attention_mask):
        input_mask_expanded = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
        return torch.sum(token_embeddings * input_mask_expanded, 1) / torch.clamp(input_mask_expanded.sum(1), min=1e-9)

    def forward(self, q_ids, q_mask, d_ids, d_mask):
        q = self.mean_pooling(self.q_enc(self.q_emb(q_ids)), q_mask)
        d = self.mean_pooling(self.d_enc(self.d_emb(d_ids)), d_mask)
        q, d = F.normalize(q, dim=-1), F.normalize(d, dim=-1)
        scores = q @ d.T / self.temperature
        labels = torch.arange(scores.size(0), device=scores.device, dtype=torch.long)
        loss = F.cross_entropy(scores, labels)
        acc = (scores.argmax(-1) == labels).float().mean()
        return loss, scores, acc


def two_tower():
    def mk(b, lq, ld):
        qm = torch.ones(b, lq, dtype=torch.long)
        qm[0, (lq + 1) // 2:] = 0
        dm = torch.ones(b, ld, dtype=torch.long)
        dm[-1, (ld + 1) // 2:] = 0
        return (ri(40, b, lq, lo=1) * qm, qm, ri(40, b, ld, lo=1) * dm, dm), {}
    bb, lq, ld = B(), Dim("q_len", min=1, max=64), Dim("d_len", min=1, max=512)
    spec = ({0: bb, 1: lq}, {0: bb, 1: lq}, {0: bb, 1: ld}, {0: bb, 1: ld})
    return C(TwoTower(), mk, spec, (4, 6, 20), [(1, 1, 1), (8, 64, 33)], (4, 65, 20), edges=[(32, 2, 512)])


class CTCModel(nn.Module):
    """ESPnet/wenet-style: Conv2dSubsampling4 (two stride-2 convs), encoder layer,
    log_softmax, F.ctc_loss with lengths ((L - 1) // 2 - 1) // 2."""

    def __init__(self, idim=8, d=16, vocab=7):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, d, 3, 2), nn.ReLU(), nn.Conv2d(d, d, 3, 2), nn.ReLU())
        self.out = nn.Linear(d * (((idim - 1) // 2 - 1) // 2), d)
        self.enc = nn.TransformerEncoderLayer(d, 2, 32, 0.0, batch_first=True)
        self.ctc_lo = nn.Linear(d, vocab)

    def forward(self, xs, xs_lens, ys, ys_lens):
        x = self.conv(xs.unsqueeze(1))
        b, c, t, f = x.size()
        x = self.out(x.transpose(1, 2).contiguous().view(b, t, c * f))
        hlens = ((xs_lens - 1) // 2 - 1) // 2
        pad = torch.arange(t, device=x.device)[None, :] >= hlens[:, None]
        x = self.enc(x, src_key_padding_mask=pad)
        log_probs = self.ctc_lo(x).log_softmax(2)
        loss = F.ctc_loss(log_probs.transpose(0, 1), ys, hlens, ys_lens, blank=0, reduction="sum", zero_infinity=True)
        return loss / log_probs.size(0), log_probs, hlens


def ctc_loss():
    def mk(b, t, s):
        lens = torch.full((b,), t, dtype=torch.long)
        lens[-1] = max(7, t - 4)
        ys_lens = torch.full((b,), s, dtype=torch.long)
        ys_lens[0] = max(1, s - 1)
        return (rn(b, t, 8), lens, ri(7, b, s, lo=1), ys_lens), {}
    bb, t, s = B(), Dim("frames", min=7, max=2000), Dim("labels", min=1, max=100)
    spec = ({0: bb, 1: t}, {0: bb}, {0: bb, 1: s}, {0: bb})
    return C(CTCModel(), mk, spec, (2, 40, 4), [(1, 7, 1), (3, 99, 9)], (2, 6, 4), edges=[(1, 2000, 100), (2, 8, 2)])


class PositionalEncoding(nn.Module):
    """pytorch/examples word_language_model PositionalEncoding (batch_first variant)."""

    def __init__(self, d_model, dropout=0.1, max_len=512):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return self.dropout(x + self.pe[:, :x.size(1), :])


class Seq2SeqTransformer(nn.Module):
    """PyTorch translation tutorial: nn.Transformer with generate_square_subsequent_mask on
    the target length and key padding masks from PAD ids, batch_first."""

    PAD = 1

    def __init__(self, src_vocab=30, tgt_vocab=25, d=16, tgt_is_causal=None):
        super().__init__()
        self.tgt_is_causal = tgt_is_causal
        self.transformer = nn.Transformer(d_model=d, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                          dim_feedforward=32, dropout=0.1, batch_first=True)
        self.generator = nn.Linear(d, tgt_vocab)
        self.src_tok_emb, self.tgt_tok_emb = nn.Embedding(src_vocab, d), nn.Embedding(tgt_vocab, d)
        self.positional_encoding = PositionalEncoding(d)
        self.d = d

    def forward(self, src, tgt):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), device=tgt.device)
        src_padding_mask, tgt_padding_mask = src == self.PAD, tgt == self.PAD
        src_emb = self.positional_encoding(self.src_tok_emb(src) * math.sqrt(self.d))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(tgt) * math.sqrt(self.d))
        outs = self.transformer(src_emb, tgt_emb, None, tgt_mask, None, src_padding_mask, tgt_padding_mask, src_padding_mask,
                                tgt_is_causal=self.tgt_is_causal)
        return self.generator(outs)


def nn_transformer():
    def mk(b, s, t):
        src, tgt = ri(30, b, s, lo=2), ri(25, b, t, lo=2)
        src[0, (s + 1) // 2:] = 1
        tgt[-1, (t + 1) // 2:] = 1
        return (src, tgt), {}
    bb, s, t = B(), Dim("src", min=1, max=512), Dim("tgt", min=1, max=512)
    spec = ({0: bb, 1: s}, {0: bb, 1: t})
    return C(Seq2SeqTransformer(), mk, spec, (2, 9, 7), [(1, 1, 1), (3, 40, 13)], (2, 513, 7), edges=[(2, 512, 512)])


class RNNModel(nn.Module):
    """pytorch/examples word_language_model RNNModel (LSTM, tied weights) + loss."""

    def __init__(self, ntoken=40, ninp=16, nhid=16, nlayers=2, dropout=0.2):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.decoder.weight = self.encoder.weight
        self.nlayers, self.nhid = nlayers, nhid

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))

    def forward(self, data, targets):   # data: (T, B), as in the example's batchify
        hidden = self.init_hidden(data.size(1))
        emb = self.drop(self.encoder(data))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        output = F.log_softmax(decoded, dim=1)
        loss = F.nll_loss(output, targets.reshape(-1))
        return loss, output, hidden


def nn_transformer_causal():
    """the same with tgt_is_causal=True (skips nn.TransformerDecoder's mask inspection)."""
    c = nn_transformer()
    m = Seq2SeqTransformer(tgt_is_causal=True)
    m.load_state_dict(c.model.state_dict())
    c.model = m
    return c


def lstm_lm():
    mk = lambda t, b: ((ri(40, t, b), ri(40, t, b)), {})
    bb, t = B(), Dim("bptt", min=1, max=256)
    spec = ({0: t, 1: bb}, {0: t, 1: bb})
    return C(RNNModel(), mk, spec, (7, 3), [(1, 1), (35, 20)], (257, 3), edges=[(256, 2)])


# =========================================================================================
# transformers models called with labels
# =========================================================================================
def _cfg(cls, **kw):
    import transformers
    cfg = getattr(transformers, cls)(**kw)
    cfg.use_cache = False
    return cfg


def _hf_text(model, *, labels="copy", seq_max=64, sizes=((2, 12), (1, 2), (3, 33)), edges=((1, 64), (32, 2))):
    def mk(b, t):
        ids = ri(50, b, t, lo=3)
        mask = torch.ones(b, t, dtype=torch.long)
        if t > 1:
            mask[0, -(t // 3 + 1):] = 0
        if labels == "copy":
            lab = ids.clone()
            lab[mask == 0] = -100
        elif labels == "mlm":
            lab = torch.full_like(ids, -100)
            lab[:, ::3] = ids[:, ::3]
        else:
            lab = ri(3, b)
        return (), {"input_ids": ids, "attention_mask": mask, "labels": lab}
    bb, t = B(), Dim("seq", min=2, max=seq_max)   # min=1 is refused: SDPA's is_causal = q_len > 1
    spec = {"input_ids": {0: bb, 1: t}, "attention_mask": {0: bb, 1: t},
            "labels": {0: bb} if labels == "cls" else {0: bb, 1: t}}
    return C(model.eval(), mk, spec, sizes[0], list(sizes[1:]), (2, seq_max + 1), edges=edges, mode="values")


def hf_bert_mlm():
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("BertConfig", vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=64)
    return _hf_text(tf.BertForMaskedLM(cfg), labels="mlm")


def hf_bert_cls():
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("BertConfig", vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=64, num_labels=3)
    return _hf_text(tf.BertForSequenceClassification(cfg), labels="cls")


def hf_gpt2_lm():
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("GPT2Config", vocab_size=50, n_embd=32, n_layer=2, n_head=4, n_positions=64)
    return _hf_text(tf.GPT2LMHeadModel(cfg))


def hf_llama_lm():
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("LlamaConfig", vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return _hf_text(tf.LlamaForCausalLM(cfg))


CASES = {
    # diffusion / generative
    "sd_unet": sd_unet,
    "dit": dit,
    "dit_hw": dit_hw,
    "vqvae": vqvae,
    "ddim_step": ddim_step,
    "pixelcnn": pixelcnn,
    "pixelcnn_functional": pixelcnn_functional,
    # detection / segmentation / vision
    "yolov8": yolov8,
    "yolov8_float_stride": yolov8_float_stride,
    "deeplabv3plus": deeplabv3plus,
    "fpn_panet": fpn_panet,
    "bifpn": bifpn,
    "centernet": centernet,
    "rtdetr_select": rtdetr_select,
    "swin_mask": swin_mask,
    "mlp_mixer": mlp_mixer,
    "mae": mae,
    # points / graphs / fields
    "pointnet2_sa": pointnet2_sa,
    "graph_transformer": graph_transformer,
    "nerf_pe": nerf_pe,
    # sequence / time series
    "autoformer": autoformer,
    "informer": informer,
    "wavenet": wavenet,
    "mamba2_ssd": mamba2_ssd,
    "mamba2_ssd_torchbool": mamba2_ssd_torchbool,
    "rwkv_v2": rwkv_v2,
    "retnet": retnet,
    "performer": performer,
    "local_attn": local_attn,
    "squeezeformer": squeezeformer,
    # tabular / retrieval / losses
    "tabtransformer": tabtransformer,
    "two_tower": two_tower,
    "ctc_loss": ctc_loss,
    "nn_transformer": nn_transformer,
    "nn_transformer_causal": nn_transformer_causal,
    "lstm_lm": lstm_lm,
    "hf_bert_mlm": hf_bert_mlm,
    "hf_bert_cls": hf_bert_cls,
    "hf_gpt2_lm": hf_gpt2_lm,
    "hf_llama_lm": hf_llama_lm,
}
# =========================================================================================
# The harness
# =========================================================================================










def main(argv):
    return sweep_main("sweep_models2", CASES, argv, roundtrip=True)

if __name__ == "__main__":
    main(sys.argv[1:])
