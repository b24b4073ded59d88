"""Small programs covering the torch API surface real models use (one per pattern)."""
import math, torch, torch.nn as nn, torch.nn.functional as F
C = {}
def case(*shapes, dyn=True):
    def reg(fn):
        C[fn.__name__] = (fn, shapes, dyn)
        return fn
    return reg
@case((4, 6))
def transpose_T(x): return x.T @ x + x.mT.sum()
@case((4, 6))
def where_scalar(x): return torch.where(x > 0, x, 0.0) + torch.where(x < 0, 1.0, x)
@case((4, 6))
def masked_fill_inf(x): return x.masked_fill(x > 0.5, float("-inf")).softmax(-1)
@case((4, 6), (6, 5))
def einsum_(x, y): return torch.einsum("ij,jk->ik", x, y) + torch.einsum("ij->j", x).sum()
@case((4, 6))
def chunk_(x):
    a, b, c = x.chunk(3, -1); return a * b + c
@case((4, 6))
def stack_unbind(x): return torch.stack(x.unbind(0), dim=1).sum(1) + sum(r for r in x)
@case((2, 3, 4))
def permute_flatten(x): return x.permute(2, 0, 1).flatten(1).unsqueeze(-1).squeeze(-1)
@case((1, 2, 4, 6))
def interp_(x): return F.interpolate(x, scale_factor=2, mode="nearest") .mean() + F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False).sum()
@case((1, 2, 4, 6))
def pad_(x): return F.pad(x, (1, 2, 0, 1)) .sum() + F.pad(x, (1, 1, 1, 1), mode="reflect").sum()
@case((4, 6), (4, 6))
def casts(x, y): return x.to(torch.float16).float() + y.type_as(x) + x.double().float()
@case((4, 6))
def factories(x):
    return torch.full_like(x, 2.0) + x.new_ones(x.shape) + torch.arange(x.shape[1], device=x.device).float() + torch.zeros_like(x)
@case((4, 6))
def cumsum_topk(x):
    v, i = x.topk(2, dim=-1); return x.cumsum(-1).sum() + v.sum() + i.float().sum()
@case((4, 6))
def max_namedtuple(x):
    m = torch.max(x, dim=1); return m.values + m.indices.float()
@case((4, 6))
def sort_(x):
    s = x.sort(dim=-1, descending=True); return s.values[:, 0] + s[1][:, 0].float()
@case((4,))
def one_hot_(x): return F.one_hot((x.abs() * 2).long() % 3, num_classes=3).float()
@case((4, 6))
def ellipsis_none(x): return x[..., None].sum(-1) + x[:, None, :].squeeze(1)
@case((4, 6))
def setitem_mask(x):
    y = x.clone(); y[y > 0] = 0; y[:, 0] = 1.0; return y
@case((4, 6))
def clamp_norm(x): return x.clamp(min=0) + x.norm(dim=-1, keepdim=True) + F.normalize(x, dim=-1)
@case((4, 6))
def cross_entropy_(x):
    t = (x.abs().sum(-1) * 10).long() % 6
    return F.cross_entropy(x, t) + F.nll_loss(F.log_softmax(x, -1), t)
@case((4, 6))
def scale_math(x):
    d = x.shape[-1]; return x * (d ** -0.5) + x / math.sqrt(x.size(-1)) + x * int(x.shape[0] / 2)
@case((4, 6))
def size_unpack(x):
    b, n = x.size(); return x.reshape(b * n).view(b, n) + len(x) + x.dim() + x.numel()
@case((4, 6))
def tensor_const(x): return x + torch.tensor(3.0) + torch.tensor([1.0] * 6)
@case((4, 6), (4, 6))
def bmm_repeat(x, y): return torch.bmm(x.unsqueeze(0), y.t().unsqueeze(0)).squeeze(0).repeat(2, 1).sum() + x.expand_as(y).sum() + x.view_as(y).sum()
@case((4, 6))
def split_list(x):
    a, b = torch.split(x, [2, 4], dim=1); c = x.split(1); return a.sum() + b.sum() + len(c)
@case((4, 6))
def var_std(x): return x.var(-1) + x.std(0).sum() + x.mean((0, 1))
@case((4, 6))
def logic(x): return ((x > 0) & (x < 1) | ~(x == 0)).float() + (x != 0).any(-1, keepdim=True).float()
@case((4, 6))
def inplace_ops(x):
    y = x * 1; y += 1; y *= 2; y -= x; y /= 3; y.clamp_(max=5); return y
@case((4, 6))
def gather_scatter(x):
    idx = x.argsort(-1)[:, :2]; g = x.gather(1, idx); return torch.zeros_like(x).scatter(1, idx, g)
@case((4, 6))
def index_select_(x): return x.index_select(1, torch.tensor([0, 2])) + x[:, [1, 3]]
@case((4, 6))
def tril_triu(x): return x.tril() + x.triu(1) + torch.ones(x.shape[0], x.shape[0]).tril() @ x
@case((3, 4, 5))
def flip_roll(x): return x.flip(-1).roll(1, 0).narrow(2, 1, 3).contiguous()
@case((2, 3, 8))
def conv1d_(x): return F.conv1d(x, torch.ones(4, 3, 3), padding=1) + F.avg_pool1d(x, 1).sum()
@case((2, 3, 8, 8))
def conv_transpose(x): return F.conv_transpose2d(x, torch.ones(3, 2, 2, 2), stride=2).sum() + F.pixel_shuffle(x[:, :1].repeat(1, 4, 1, 1), 2).sum()
@case((4, 6))
def float_pow(x): return x.pow(2) + 2 ** x + x ** 0.5 + x.abs().sqrt().rsqrt().exp().log1p()
@case((4, 6))
def amax_argmax(x): return x.amax(-1) + x.argmax(-1).float() + x.max() + x.min(dim=0)[0].sum()
@case((4, 6))
def where_cond_only(x): return torch.nonzero(x > 0).shape[0] + x.sum()
@case((4, 6))
def list_comp_shape(x): return torch.cat([x[i:i + 1] * i for i in range(x.shape[0])])
_mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
@case((2, 5, 8))
def mha(x): return _mha(x, x, x, need_weights=False)[0]
_gn = nn.Sequential(nn.Conv1d(4, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU()).eval()
@case((2, 4, 10))
def groupnorm_conv1d(x): return _gn(x)
_up = nn.Sequential(nn.ConvTranspose2d(3, 4, 2, stride=2), nn.Upsample(scale_factor=2), nn.InstanceNorm2d(4)).eval()
@case((1, 3, 4, 4))
def upsample_seq(x): return _up(x)
_lstm = nn.LSTM(6, 5, batch_first=True, num_layers=2).eval()
@case((2, 7, 6))
def lstm_bf(x): return _lstm(x)[0]
_emb = nn.Embedding(10, 4)
@case((3, 5))
def embedding_(x): return _emb((x.abs() * 3).long() % 10).sum(1)
_dec = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
@case((2, 4, 8), (2, 6, 8))
def decoder_layer(x, m): return _dec(x, m)
@case((2, 3, 4), (2, 4, 5), (2, 3, 5))
def baddbmm_(x, y, z): return torch.baddbmm(z, x, y, beta=0.5, alpha=2.0)
@case((4, 6))
def softplus_etc(x): return F.softplus(x) + F.elu(x) + F.leaky_relu(x, 0.1) + F.hardswish(x) + F.mish(x) + torch.sigmoid(x) * torch.tanh(x)
@case((4, 6))
def dropout_eval(x): return F.dropout(x, 0.5, training=False) + nn.Dropout(0.2).eval()(x)
@case((5, 6))
def bool_index_assign(x):
    y = x.clone(); m = y.sum(-1) > 0; y[m] = y[m] * 2; return y
@case((4, 6))
def reductions_keep(x): return x.sum(dim=(0, 1), keepdim=True) + x.prod(-1, keepdim=True) + x.logsumexp(-1, keepdim=True)
@case((2, 3, 4))
def movedim_swap(x): return x.movedim(0, -1).swapaxes(0, 1).reshape(-1, 2)
@case((4, 6))
def new_tensor_ops(x): return x.new_zeros((2, x.shape[1])).sum() + x.new_full((3,), 1.5).sum() + x.new_empty(0).numel()
@case((6,))
def arange_step(x): return torch.arange(0, x.shape[0], 2).float() + torch.linspace(0, 1, 3).sum()
@case((4, 6))
def triu_mask_attention(x):
    n = x.shape[0]; mask = torch.ones(n, n, dtype=torch.bool).triu(1)
    s = (x @ x.T).masked_fill(mask, float("-inf")); return s.softmax(-1) @ x
@case((2, 5, 8))
def rotary(x):
    b, t, d = x.shape
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    ang = torch.arange(t, device=x.device).float()[:, None] * inv[None, :]
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)
@case((2, 3, 4), (2, 5, 4))
def kv_cache(q, kv):
    k = torch.cat([kv, q], dim=1)
    s = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
    return s.softmax(-1) @ k
@case((5, 4))
def causal_mask_full(x):
    n = x.shape[0]
    m = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
    return ((x @ x.T) + m).softmax(-1)
@case((3, 4))
def meshgrid_anchors(x):
    h, w = x.shape
    ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    return torch.stack([xs, ys], -1).float().sum(-1) + x
_dw = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1, groups=4), nn.BatchNorm2d(4), nn.ReLU6()).eval()
@case((2, 4, 6, 6))
def depthwise_se(x):
    y = _dw(x); s = F.adaptive_avg_pool2d(y, 1).sigmoid(); return y * s
@case((1, 2, 6, 6))
def unfold_fold(x): return F.unfold(x, kernel_size=2, stride=2).sum() + x.unfold(2, 2, 2).sum()
@case((6, 3), (6,))
def scatter_add_graph(x, w):
    idx = (w.abs() * 10).long() % 4
    out = torch.zeros(4, x.shape[1]).index_add(0, idx, x)
    return out + torch.zeros(4, x.shape[1]).scatter_add(0, idx[:, None].expand_as(x), x)
@case((2, 3, 4))
def einsum_heads(x): return torch.einsum("bqd,bkd->bqk", x, x).softmax(-1)
@case((4, 5))
def where_single_arg(x):
    rows, cols = torch.where(x > 0)
    return rows.float().sum() + cols.shape[0]
@case((3, 4), (5, 4))
def cdist_cos(x, y): return torch.cdist(x, y) + F.cosine_similarity(x[:, None], y[None], dim=-1)
@case((6,))
def diff_cumsum_bool(x): return torch.diff(x) .sum() + (x > 0).cumsum(0).float()
@case((2, 3, 8, 8))
def adaptive_max(x): return F.adaptive_max_pool2d(x, (2, 3)) + F.adaptive_avg_pool2d(x, (2, 3))
@case((1, 1, 4, 4))
def grid_sample_(x):
    theta = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    g = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, g, align_corners=False)
@case((6, 4))
def searchsorted_(x): return torch.searchsorted(torch.tensor([-1.0, 0.0, 1.0]), x).float() + torch.bucketize(x, torch.tensor([0.0])).float()

@case((4, 6), (4, 6))
def assert_sizes(x, y):
    assert x.size(0) == y.size(0), f"mismatch {x.shape} vs {y.shape}"
    return x + y
@case((4, 6))
def torch_size(x):
    s = torch.Size([x.shape[0], 2, x.shape[1] // 2]); return x.view(s).sum(1)
@case((4, 6))
def shape_list(x):
    shape = list(x.shape); shape[-1] = -1; return x.reshape(*shape[:-1], 2, 3).sum(-1)
@case((4, 6))
def print_tensor(x):
    s = f"{x.shape} {x}"; return x + len(s) * 0
_enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 2).eval()
@case((2, 5, 8))
def encoder_padding_mask(x):
    m = torch.zeros(x.shape[0], x.shape[1], dtype=torch.bool); m[:, -1] = True
    return _enc(x, src_key_padding_mask=m)
@case((3, 4))
def autocast_off(x):
    with torch.autocast("cpu", enabled=False):
        return x @ x.T
@case((4, 6))
def jit_flags(x):
    if torch.jit.is_scripting() or torch.jit.is_tracing():
        return x * 0
    return x + 1
_lstm2 = nn.LSTM(4, 3, batch_first=True)
@case((2, 5, 4))
def lstm_hidden(x):
    h0 = torch.zeros(1, x.shape[0], 3); c0 = torch.zeros(1, x.shape[0], 3)
    out, (h, c) = _lstm2(x, (h0, c0)); return out.sum(1) + h[0] + c[0]
@case((4, 6))
def chained_views(x):
    return x.view(2, 2, 6).transpose(0, 1).contiguous().view(-1, 6)[::2].t().flatten()
@case((4, 6))
def cat_mixed_dtype(x): return torch.cat([x, x.long().float(), x.half().float()], 0)
@case((4, 6))
def tensor_from_sym(x): return x + torch.tensor(x.shape[0]) * 0 + torch.as_tensor(2.0)
@case((2, 4))
def repeat_interleave_int(x): return x.repeat_interleave(2, dim=1) + x.repeat(1, 2)
@case((3, 4))
def max_with_other(x): return torch.maximum(x, torch.zeros_like(x)) + torch.max(x, torch.ones_like(x))
@case((3, 4))
def clone_detach_ops(x):
    y = x.detach().clone(); y.requires_grad_(False); return y.sum(dim=1, dtype=torch.float64).float()
@case((2, 3))
def complex_ops(x):
    z = torch.complex(x, x * 2); return torch.view_as_real(z * z).sum(-1) + z.abs()
# -- from the vision sweep (now tests/conformance/models/vision.py) ---------------------
@case((2, 4, 3, 5))
def sv_channel_shuffle(x):
    b, c, h, w = x.size()
    return torch.transpose(x.view(b, 2, c // 2, h, w), 1, 2).contiguous().view(b, -1, h, w)
@case((1, 6, 7, 3))
def sv_swin_windows(x):
    b, h, w, c = x.shape; ws = 2
    y = F.pad(x, (0, 0, 0, (ws - w % ws) % ws, 0, (ws - h % ws) % ws)).roll((-1, -1), (1, 2))
    hp, wp = y.shape[1], y.shape[2]
    win = y.view(b, hp // ws, ws, wp // ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws, c)
    win = win.softmax(1)
    y = win.view(-1, hp // ws, wp // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, hp, wp, c)
    return y.roll((1, 1), (1, 2))[:, :h, :w, :].contiguous() + x
@case((2, 6, 4, 5))
def sv_yolo_grid(p):
    b, _, ny, nx = p.shape
    p = p.view(b, 2, 3, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
    yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
    grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()
    y = p.sigmoid()
    return torch.cat(((y[..., 0:2] * 2 - 0.5 + grid) * 8, y[..., 2:]), -1).view(b, -1, 3)
_sv_tcn = nn.Conv1d(3, 3, 3, dilation=2, padding=4)
@case((2, 3, 9))
def sv_causal_chomp(x):
    z = _sv_tcn(x)[:, :, :-4].contiguous()
    return torch.tanh(z) * torch.sigmoid(F.pad(z, (2, 0))[..., :-2]) + x
@case((5, 3), (2, 7))
def sv_gnn_inplace(x, e):
    n = x.shape[0]; ei = (e.abs() * 10).long() % n; src, dst = ei[0], ei[1]
    agg = torch.zeros(n, x.shape[1]).index_add_(0, dst, x[src])
    deg = torch.zeros(n).scatter_add_(0, dst, torch.ones_like(dst, dtype=x.dtype))
    return agg / deg.clamp(min=1)[:, None] + x
_sv_pn = nn.Sequential(nn.Conv1d(3, 8, 1), nn.ReLU(), nn.Conv1d(8, 9, 1)).eval()
@case((2, 6, 3))
def sv_pointnet(pts):
    g = torch.max(_sv_pn(pts.transpose(2, 1)), 2, keepdim=True)[0].view(-1, 9)
    tr = g.view(-1, 3, 3) + torch.eye(3).view(1, 9).repeat(pts.size(0), 1).view(-1, 3, 3)
    return torch.bmm(pts, tr).max(dim=1).values
_sv_aspp = nn.ModuleList([nn.Conv2d(2, 2, 3, padding=r, dilation=r) for r in (1, 2)])
@case((1, 2, 7, 6))
def sv_aspp_interp(x):
    size = x.shape[-2:]
    pooled = F.interpolate(F.adaptive_avg_pool2d(x, 1), size=size, mode="bilinear", align_corners=False)
    y = torch.cat([m(x) for m in _sv_aspp] + [pooled], 1)[:, :, ::2, ::2]
    return F.interpolate(y, size=(x.shape[2], x.shape[3]), mode="bilinear", align_corners=False)
_sv_cn = nn.ModuleDict({"dw": nn.Conv2d(4, 4, 7, padding=3, groups=4), "ln": nn.LayerNorm(4)}).eval()
@case((2, 4, 5, 6))
def sv_convnext_ln(x):
    y = _sv_cn["ln"](_sv_cn["dw"](x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
    return x + y.mean([-2, -1], keepdim=True).flatten(1)[:, :, None, None]
@case((2, 3, 4, 4))
def sv_dense_growth(x):
    feats = [x]
    for _ in range(3):
        feats.append(torch.cat(feats, 1).mean(1, keepdim=True).relu())
    return torch.cat(feats, 1)
