"""Decompositions of composite operators (CompositeImplicitAutograd) into core ATen.

torch decomposes these in C++ (``op.decompose()``), below the level safetrace's tracer
sees, so ``run_decompositions`` uses these Python forms instead: each is the operator's
documented meaning written with core ATen calls, and each is checked against eager in the
tests (same numerics on the programs that use it).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

aten = torch.ops.aten
TABLE: dict[Any, Callable] = {}
# operators torch's core ATen table leaves in a program (not core, no decomposition there;
# ``empty_like`` becomes ``empty_permuted``): lowering to ExecuTorch and ONNX decomposes
# them with these forms first (``beyond_torch``)
BEYOND_TORCH = (aten.histc.default, aten.empty_permuted.default)
LEADS_BEYOND = BEYOND_TORCH + (aten.empty_like.default,)


def registrar(table: dict) -> Callable:
    """``@register(op, ...)``: the function is `table`'s form of each op."""
    def register(*ops: Any) -> Callable:
        def deco(fn: Callable) -> Callable:
            for op in ops:
                table[op] = fn
            return fn
        return deco
    return register


_register = registrar(TABLE)


def _mm(a: Any, b: Any) -> Any:
    """a @ b for a of rank >= 1 and b of rank 2, through mm on a flattened a."""
    if a.dim() == 2:
        return aten.mm.default(a, b)
    lead = list(a.shape[:-1])
    flat = aten.view.default(_contiguous(a), [_product(lead), a.shape[-1]])
    return aten.view.default(aten.mm.default(flat, b), lead + [b.shape[-1]])


def _product(sizes: list) -> Any:
    """The product of `sizes`, where a view would take -1: inferring -1 asks whether the
    other sizes' product is non-zero and divides the count of elements, decisions the
    program never made (timm DaViT's window counts are not provably non-zero); the product
    is the same expression as the tensor's element count, so the view needs none."""
    out: Any = 1
    for s in sizes:
        out = out * s
    return out


def _contiguous(x: Any) -> Any:
    return aten.clone.default(x, memory_format=torch.contiguous_format)


@_register(aten.linear.default)
def linear(x: Any, w: Any, b: Any = None) -> Any:
    y = _mm(x, aten.permute.default(w, [1, 0]))
    return y if b is None else aten.add.Tensor(y, b)


@_register(aten.matmul.default)
def matmul(a: Any, b: Any) -> Any:
    if a.dim() >= 1 and b.dim() == 2:
        if a.dim() == 1:
            return aten.squeeze.dims(aten.mm.default(aten.unsqueeze.default(a, 0), b), [0])
        return _mm(a, b)
    if a.dim() == 2 and b.dim() == 1:
        return aten.squeeze.dims(aten.mm.default(a, aten.unsqueeze.default(b, 1)), [1])
    if a.dim() == 1 and b.dim() == 1:
        return aten.sum.default(aten.mul.Tensor(a, b))
    if a.dim() == b.dim() and a.dim() >= 3 and list(a.shape[:-2]) == list(b.shape[:-2]):
        lead = list(a.shape[:-2])
        a3 = aten.view.default(_contiguous(a), [_product(lead), a.shape[-2], a.shape[-1]])
        b3 = aten.view.default(_contiguous(b), [_product(lead), b.shape[-2], b.shape[-1]])
        return aten.view.default(aten.bmm.default(a3, b3), lead + [a.shape[-2], b.shape[-1]])
    return aten.matmul.default(a, b)  # broadcasting batch dims: left as it is


@_register(aten.softmax.int)
def softmax(x: Any, dim: int, dtype: Any = None) -> Any:
    if dtype is not None:
        x = aten._to_copy.default(x, dtype=dtype)
    return aten._softmax.default(x, dim, False)


@_register(aten.log_softmax.int)
def log_softmax(x: Any, dim: int, dtype: Any = None) -> Any:
    if dtype is not None:
        x = aten._to_copy.default(x, dtype=dtype)
    return aten._log_softmax.default(x, dim, False)


@_register(aten.layer_norm.default)
def layer_norm(x: Any, shape: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> Any:
    return aten.native_layer_norm.default(x, shape, weight, bias, eps)[0]


@_register(aten.conv1d.default, aten.conv2d.default, aten.conv3d.default)
def conv(x: Any, w: Any, b: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
         groups: int = 1) -> Any:
    n = w.dim() - 2

    def rep(v: Any) -> list:
        return list(v) * (n if len(list(v)) == 1 else 1) if isinstance(v, (list, tuple)) \
            else [v] * n

    return aten.convolution.default(x, w, b, rep(stride), rep(padding), rep(dilation), False,
                                    [0] * n, groups)


@_register(aten.contiguous.default)
def contiguous(x: Any, memory_format: Any = torch.contiguous_format) -> Any:
    return aten.clone.default(x, memory_format=memory_format)


@_register(aten.flatten.using_ints)
def flatten(x: Any, start: int = 0, end: int = -1) -> Any:
    if x.dim() == 0:
        return aten.view.default(x, [1])
    start, end = start % x.dim(), end % x.dim()
    shape = list(x.shape)
    merged = 1
    for s in shape[start:end + 1]:
        merged = merged * s
    return aten.view.default(_contiguous(x), shape[:start] + [merged] + shape[end + 1:])


@_register(aten.reshape.default)
def reshape(x: Any, shape: Any) -> Any:
    return aten.view.default(_contiguous(x), shape)


@_register(aten.dropout.default)
def dropout(x: Any, p: float, train: bool) -> Any:
    if not train or p == 0:
        return aten.clone.default(x)
    return aten.native_dropout.default(x, p, train)[0]


@_register(aten.adaptive_avg_pool2d.default)
def adaptive_avg_pool2d(x: Any, size: Any) -> Any:
    return aten._adaptive_avg_pool2d.default(x, size)


@_register(aten.adaptive_avg_pool3d.default)
def adaptive_avg_pool3d(x: Any, size: Any) -> Any:
    return aten._adaptive_avg_pool3d.default(x, size)


@_register(aten.scaled_dot_product_attention.default)
def sdpa(q: Any, k: Any, v: Any, attn_mask: Any = None, dropout_p: float = 0.0,
         is_causal: bool = False, scale: Any = None, enable_gqa: bool = False) -> Any:
    if dropout_p:
        return aten.scaled_dot_product_attention.default(
            q, k, v, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    if enable_gqa and k.dim() >= 3 and k.shape[-3] != q.shape[-3]:
        k, v = _repeat_heads(k, q.shape[-3]), _repeat_heads(v, q.shape[-3])
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    dims = list(range(k.dim()))
    dims[-2], dims[-1] = dims[-1], dims[-2]
    scores = aten.mul.Tensor(matmul(q, aten.permute.default(k, dims)), s)
    neg_inf = aten.full.default([], -math.inf, dtype=scores.dtype, device=scores.device)
    if is_causal:
        n, m = q.shape[-2], k.shape[-2]
        rows = aten.view.default(aten.arange.start_step(0, n, 1, device=q.device), [n, 1])
        cols = aten.view.default(aten.arange.start_step(0, m, 1, device=q.device), [1, m])
        scores = aten.where.self(aten.le.Tensor(cols, rows), scores, neg_inf)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = aten.where.self(attn_mask, scores, neg_inf)
        else:
            scores = aten.add.Tensor(scores, attn_mask)
    probs = aten._softmax.default(scores, -1, False)
    if is_causal or attn_mask is not None:
        # a row with every position masked attends to nothing (0), as torch's kernels do,
        # not NaN
        empty = aten.eq.Scalar(aten.amax.default(scores, [-1], True), -math.inf)
        probs = aten.where.self(empty, aten.full.default([], 0.0, dtype=probs.dtype,
                                                         device=probs.device), probs)
    out = matmul(probs, v)
    if q.dim() == 4 and not enable_gqa and type(q.shape[-1]) is int and \
            q.shape[-1] == v.shape[-1]:
        # torch's CPU kernel allocates the result like the query (a transpose of it is
        # contiguous again: the program may view it): a where that reads q first keeps
        # q's dim order (torch's own decomposition transposes for the same reason)
        no = aten.full.default([], False, dtype=torch.bool, device=out.device)
        out = aten.where.self(no, q, out)
    return out


def _repeat_heads(x: Any, heads: Any) -> Any:
    """(..., h, S, D) -> (..., heads, S, D), each of the h heads repeated heads // h times
    in place (``repeat_interleave`` on the head dim: sdpa's ``enable_gqa``)."""
    lead, h, n, d = list(x.shape[:-3]), x.shape[-3], x.shape[-2], x.shape[-1]
    wide = aten.expand.default(aten.unsqueeze.default(x, -3), lead + [h, heads // h, n, d])
    return aten.view.default(_contiguous(wide), lead + [heads, n, d])


@_register(aten.batch_norm.default)
def batch_norm(x: Any, weight: Any, bias: Any, mean: Any, var: Any, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool = True) -> Any:
    if training and mean is None and var is None:  # the batch's statistics, none kept
        return aten._native_batch_norm_legit.no_stats(x, weight, bias, True, momentum, eps)[0]
    if training or mean is None:  # updates running statistics: left as it is
        return aten.batch_norm.default(x, weight, bias, mean, var, training, momentum, eps,
                                       cudnn_enabled)
    return aten._native_batch_norm_legit_no_training.default(x, weight, bias, mean, var,
                                                             momentum, eps)[0]


@_register(aten.pad.default)
def pad(x: Any, sizes: Any, mode: str = "constant", value: Any = None) -> Any:
    """torch's C++ form of constant padding (Swin's window padding); other modes stay."""
    if mode != "constant":
        return aten.pad.default(x, sizes, mode, value)
    return aten.constant_pad_nd.default(x, list(sizes), 0.0 if value is None else value)


@_register(aten.instance_norm.default)
def instance_norm(x: Any, weight: Any, bias: Any, mean: Any, var: Any, use_input_stats: bool,
                  momentum: float, eps: float, cudnn_enabled: bool = True) -> Any:
    """torch's C++ form: a batch norm of (1, N*C, *) with the parameters repeated N
    times.  With running statistics (which it writes back averaged) it stays as it is."""
    if mean is not None or var is not None:
        return aten.instance_norm.default(x, weight, bias, mean, var, use_input_stats,
                                          momentum, eps, cudnn_enabled)
    n, c = x.shape[0], x.shape[1]
    flat = aten.view.default(_contiguous(x), [1, n * c, *x.shape[2:]])
    w = None if weight is None else aten.repeat.default(weight, [n])
    b = None if bias is None else aten.repeat.default(bias, [n])
    out = batch_norm(flat, w, b, None, None, use_input_stats, momentum, eps, cudnn_enabled)
    return aten.view.default(out, list(x.shape))


@_register(aten.grid_sampler.default)
def grid_sampler(x: Any, grid: Any, mode: int, padding: int, align_corners: bool) -> Any:
    """torch's C++ form off CUDA (where cuDNN's kernel may serve instead): the 2-D or 3-D
    sampler by the input's rank."""
    if x.device.type == "cuda" or x.dim() not in (4, 5):
        return aten.grid_sampler.default(x, grid, mode, padding, align_corners)
    op = aten.grid_sampler_2d.default if x.dim() == 4 else aten.grid_sampler_3d.default
    return op(x, grid, mode, padding, align_corners)


@_register(aten.meshgrid.indexing, aten.meshgrid.default)
def meshgrid(tensors: Any, indexing: str = "ij") -> Any:
    """torch's C++ form: each 0-d or 1-d tensor viewed along its own dim and expanded to
    the grid ("xy": the first two inputs and outputs swapped around the "ij" grid)."""
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.numel() for t in ts]
    out = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = -1
        out.append(aten.expand.default(aten.view.default(t, view), shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return out


@_register(aten.max_pool2d.default)
def max_pool2d(x: Any, kernel: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False) -> Any:
    return aten.max_pool2d_with_indices.default(x, kernel, stride, padding, dilation,
                                                ceil_mode)[0]


@_register(aten.to.dtype, aten.to.device, aten.to.dtype_layout)
def to(x: Any, *args: Any, **kwargs: Any) -> Any:
    """``_to_copy`` when the dtype or device changes (or ``copy=True``), else x itself."""
    if args and isinstance(args[0], torch.device) or "device" in kwargs and len(args) < 1:
        device = args[0] if args else kwargs.get("device")
        dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
        rest = args[2:]
    else:
        device = kwargs.get("device")
        dtype = args[0] if args else kwargs.get("dtype")
        rest = args[1:]
    copy = rest[1] if len(rest) > 1 else kwargs.get("copy", False)
    fmt = rest[2] if len(rest) > 2 else kwargs.get("memory_format")
    dtype = x.dtype if dtype is None else dtype
    # (no torch.device(...) call here: the tracer would record it)
    moves = device is not None and str(device) != str(x.device)
    if dtype == x.dtype and not moves and not copy and fmt is None:
        return x
    out = {"dtype": dtype}
    if moves:
        out["device"] = device
    if fmt is not None:
        out["memory_format"] = fmt
    return aten._to_copy.default(x, **out)


@_register(aten.chunk.default)
def chunk(x: Any, chunks: int, dim: int = 0) -> Any:
    n = x.shape[dim]
    if not isinstance(n, int):  # the number of parts would depend on the size: kept
        return aten.chunk.default(x, chunks, dim)
    size = -(-n // chunks) if n else 0
    sizes = [size] * (n // size) + ([n % size] if size and n % size else []) if size else [0]
    return aten.split_with_sizes.default(x, sizes, dim)


@_register(aten.unflatten.int)
def unflatten(x: Any, dim: int, sizes: Any) -> Any:
    dim = dim % x.dim()
    shape = list(x.shape)
    return aten.view.default(x, shape[:dim] + list(sizes) + shape[dim + 1:])


@_register(aten.min.other)
def min_other(a: Any, b: Any) -> Any:
    return aten.minimum.default(a, b)


@_register(aten.max.other)
def max_other(a: Any, b: Any) -> Any:
    return aten.maximum.default(a, b)


@_register(aten.where.ScalarOther)
def where_scalar_other(cond: Any, x: Any, other: Any) -> Any:
    dtype = torch.get_default_dtype() if isinstance(other, float) and \
        not (x.dtype.is_floating_point or x.dtype.is_complex) else x.dtype
    return aten.where.self(cond, x, aten.full.default([], other, dtype=dtype, device=x.device))


@_register(aten.group_norm.default)
def group_norm(x: Any, groups: int, weight: Any = None, bias: Any = None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Any:
    n, c = x.shape[0], x.shape[1]
    hw = 1
    for s in x.shape[2:]:
        hw = hw * s
    return aten.native_group_norm.default(x, weight, bias, n, c, hw, groups, eps)[0]


@_register(aten.conv_transpose1d.default, aten.conv_transpose2d.input,
           aten.conv_transpose3d.input)
def conv_transpose(x: Any, w: Any, b: Any = None, stride: Any = 1, padding: Any = 0,
                   output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Any:
    n = w.dim() - 2

    def rep(v: Any) -> list:
        return list(v) * (n if len(list(v)) == 1 else 1) if isinstance(v, (list, tuple)) \
            else [v] * n

    return aten.convolution.default(x, w, b, rep(stride), rep(padding), rep(dilation), True,
                                    rep(output_padding), groups)


@_register(aten.where.ScalarSelf)
def where_scalar_self(cond: Any, x: Any, other: Any) -> Any:
    dtype = torch.get_default_dtype() if isinstance(x, float) and \
        not (other.dtype.is_floating_point or other.dtype.is_complex) else other.dtype
    return aten.where.self(cond, aten.full.default([], x, dtype=dtype, device=other.device),
                           other)


def _nearest(vec: Any) -> Callable:
    def upsample_nearest(x: Any, output_size: Any, *scales: Any) -> Any:
        """``.default(x, size, scales...)`` as the core ``.vec``: with no scales, the same
        call on the size (the scales then come from the sizes in both); with every scale,
        ``.vec`` on the scales (which computes the size as ``floor(in * scale)``, as the
        caller did); a mix is kept as it is."""
        given = [s for s in scales if s is not None]
        if not given:
            return vec(x, list(output_size), None)
        if len(given) == x.dim() - 2:
            return vec(x, None, list(given))
        return vec.overloadpacket.default(x, output_size, *scales)
    return upsample_nearest


for _d in (1, 2, 3):
    _packet = getattr(aten, f"upsample_nearest{_d}d")
    TABLE[_packet.default] = _nearest(_packet.vec)


def _interpolating(vec: Any) -> Callable:
    def upsample(x: Any, output_size: Any, align_corners: bool, *scales: Any) -> Any:
        """``.default(x, size, align_corners, scales...)`` with no scale as the core
        ``.vec`` on the size (the kernel then takes the scales from the sizes, as
        ``.default`` does without them); with scales it is kept as it is (``.vec`` would
        compute the size from them, which need not be the size given)."""
        if any(s is not None for s in scales):
            return vec.overloadpacket.default(x, output_size, align_corners, *scales)
        return vec(x, list(output_size), align_corners, None)
    return upsample


# (bilinear's .vec is core ATen; the other modes' .vec decompose into _unsafe_index, which
# has no shape rule here: they stay as they are)
TABLE[aten.upsample_bilinear2d.default] = _interpolating(aten.upsample_bilinear2d.vec)


@_register(aten.embedding_bag.default, aten.embedding_bag.padding_idx)
def embedding_bag(weight: Any, indices: Any, offsets: Any, scale_grad_by_freq: bool = False,
                  mode: int = 0, sparse: bool = False, per_sample_weights: Any = None,
                  include_last_offset: bool = False, padding_idx: Any = None) -> Any:
    """The wrapper's call of the core ``_embedding_bag`` (a negative padding index counts
    from the end, none is -1); indices and offsets in their common integer type."""
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        padding_idx = padding_idx + weight.shape[0]
    index = torch.promote_types(indices.dtype, offsets.dtype)
    if indices.dtype != index:
        indices = aten._to_copy.default(indices, dtype=index)
    if offsets.dtype != index:
        offsets = aten._to_copy.default(offsets, dtype=index)
    return aten._embedding_bag.default(weight, indices, offsets, scale_grad_by_freq, mode,
                                       sparse, per_sample_weights, include_last_offset,
                                       padding_idx)


@_register(aten.unbind.int)
def unbind(x: Any, dim: int = 0) -> Any:
    n = x.shape[dim]
    if not isinstance(n, int):  # the number of results would depend on the size: kept
        return aten.unbind.int(x, dim)
    return [aten.select.int(x, dim, i) for i in range(n)]


def _tri_indices(upper: bool) -> Callable:
    def indices(row: Any, col: Any, offset: int = 0, *, dtype: Any = None, layout: Any = None,
                device: Any = None, pin_memory: Any = None) -> Any:
        """Of sizes known at export: the index pairs as a constant (torch has no core form
        of these; its run_decompositions keeps the operator)."""
        op = aten.triu_indices.default if upper else aten.tril_indices.default
        if not all(isinstance(v, int) for v in (row, col, offset)):
            return op(row, col, offset, dtype=dtype, layout=layout, device=device,
                      pin_memory=pin_memory)
        pairs = [(i, j) for i in range(row) for j in range(col)
                 if (j - i >= offset if upper else j - i <= offset)]
        rows = [[i for i, _ in pairs], [j for _, j in pairs]]  # (2, n), also for n == 0
        return torch.tensor(rows, dtype=torch.long if dtype is None else dtype, device=device)
    return indices


TABLE[aten.triu_indices.default] = _tri_indices(True)
TABLE[aten.tril_indices.default] = _tri_indices(False)


# -- recurrent layers: a scan over time of core ATen cells ---------------------------------
# torch's decompositions unroll LSTM/GRU over the sequence (one copy of the cell per step:
# the length becomes a constant) or call mkldnn_rnn_layer (not core); a scan keeps the
# sequence length symbolic, as the program declared it.
def _proj(x: Any, w: Any, b: Any) -> Any:
    """x (T, B, D) @ w.T (+ b): every step's input projection at once."""
    y = _mm(x, aten.permute.default(w, [1, 0]))
    return y if b is None else aten.add.Tensor(y, b)


def _lstm_cell(carry: Any, xw: Any, w_hh: Any, b_hh: Any) -> Any:
    h, c = carry
    gates = aten.add.Tensor(xw, aten.mm.default(h, aten.permute.default(w_hh, [1, 0])))
    if b_hh is not None:
        gates = aten.add.Tensor(gates, b_hh)
    i, f, g, o = aten.split.Tensor(gates, h.shape[-1], -1)
    c = aten.add.Tensor(aten.mul.Tensor(aten.sigmoid.default(f), c),
                        aten.mul.Tensor(aten.sigmoid.default(i), aten.tanh.default(g)))
    h = aten.mul.Tensor(aten.sigmoid.default(o), aten.tanh.default(c))
    return (h, c), aten.clone.default(h)


def _gru_cell(carry: Any, xw: Any, w_hh: Any, b_hh: Any) -> Any:
    (h,) = carry
    hw = aten.mm.default(h, aten.permute.default(w_hh, [1, 0]))
    if b_hh is not None:
        hw = aten.add.Tensor(hw, b_hh)
    xr, xz, xn = aten.split.Tensor(xw, h.shape[-1], -1)
    hr, hz, hn = aten.split.Tensor(hw, h.shape[-1], -1)
    r = aten.sigmoid.default(aten.add.Tensor(xr, hr))
    z = aten.sigmoid.default(aten.add.Tensor(xz, hz))
    n = aten.tanh.default(aten.add.Tensor(xn, aten.mul.Tensor(r, hn)))
    h = aten.add.Tensor(n, aten.mul.Tensor(z, aten.sub.Tensor(h, n)))
    return (h,), aten.clone.default(h)


def _rnn(cell: Any, x: Any, carries: list, params: list, has_biases: bool, layers: int,
         bidirectional: bool, batch_first: bool) -> tuple:
    """Every layer and direction as a scan of `cell` over time; the final carries of each,
    in torch's order (layer-major, forward before backward)."""
    from torch._higher_order_ops import scan  # (the tracer's own while it traces)

    dirs = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    if batch_first:
        x = aten.permute.default(x, [1, 0, 2])
    finals: list = []
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            k = (layer * dirs + d) * per
            w_ih, w_hh = params[k], params[k + 1]
            b_ih, b_hh = (params[k + 2], params[k + 3]) if has_biases else (None, None)
            init = tuple(c[layer * dirs + d] for c in carries)
            xw = _proj(x, w_ih, b_ih)

            def step(carry: Any, xw_t: Any, w_hh: Any = w_hh, b_hh: Any = b_hh) -> Any:
                return cell(carry, xw_t, w_hh, b_hh)

            last, ys = scan(step, init, xw, dim=0, reverse=d == 1)
            outs.append(ys)
            finals.append(last)
        x = outs[0] if dirs == 1 else aten.cat.default(outs, 2)
    if batch_first:
        x = aten.permute.default(x, [1, 0, 2])
    stacked = [aten.stack.default([f[i] for f in finals], 0) for i in range(len(carries))]
    return (x, *stacked)


def _plain(x: Any, params: list, has_biases: bool, dropout: float, train: bool,
           per_gate: int, hidden: int) -> bool:
    """A layer this form covers: 3-d input, no projection, no dropout at work."""
    per = 4 if has_biases else 2
    return x.dim() == 3 and len(params) % per == 0 and \
        all(p.shape[0] == per_gate * hidden for p in params[::per]) and \
        not (train and dropout > 0)


@_register(aten.lstm.input)
def lstm(x: Any, hx: Any, params: Any, has_biases: bool, num_layers: int, dropout: float,
         train: bool, bidirectional: bool, batch_first: bool) -> Any:
    params, hx = list(params), list(hx)
    if not (_plain(x, params, has_biases, dropout, train, 4, hx[1].shape[-1]) and
            hx[0].shape[-1] == hx[1].shape[-1]):
        return aten.lstm.input(x, hx, params, has_biases, num_layers, dropout, train,
                               bidirectional, batch_first)
    return _rnn(_lstm_cell, x, hx, params, has_biases, num_layers, bidirectional,
                batch_first)


@_register(aten.gru.input)
def gru(x: Any, hx: Any, params: Any, has_biases: bool, num_layers: int, dropout: float,
        train: bool, bidirectional: bool, batch_first: bool) -> Any:
    params = list(params)
    if not _plain(x, params, has_biases, dropout, train, 3, hx.shape[-1]):
        return aten.gru.input(x, hx, params, has_biases, num_layers, dropout, train,
                              bidirectional, batch_first)
    return _rnn(_gru_cell, x, [hx], params, has_biases, num_layers, bidirectional,
                batch_first)


@_register(aten.histc.default)
def histc(x: Any, bins: int = 100, min: Any = 0, max: Any = 0) -> Any:
    """torch.histc in core ATen, with eager's bins: torch's CPU kernel places an element
    at ``int((x - lo) * bins / (hi - lo))`` computed in x's dtype (each step rounded as
    there), an element equal to ``hi`` in the last bin, and leaves out elements outside
    ``[lo, hi]`` (and NaN); ``lo``, ``hi`` are ``min``, ``max`` in x's dtype.  With ``min ==
    max`` the range is the data's (its smallest and largest element; widened by 1 each way
    where they are equal, or for an empty x).  Non-finite data bounds give an empty
    histogram where eager raises."""
    dtype, dev = x.dtype, x.device
    flat = aten.view.default(_contiguous(x), [-1])
    if min == max:
        where = aten.full.default([flat.shape[0]], 0, dtype=torch.int64, device=dev)
        lo, hi = (aten.scatter_reduce.two(aten.full.default([1], min, dtype=dtype, device=dev),
                                          0, where, flat, how, include_self=False)
                  for how in ("amin", "amax"))
        same = aten.eq.Tensor(lo, hi)
        lo = aten.where.self(same, aten.sub.Tensor(lo, 1), lo)
        hi = aten.where.self(same, aten.add.Tensor(hi, 1), hi)
    else:
        lo = aten.full.default([1], min, dtype=dtype, device=dev)
        hi = aten.full.default([1], max, dtype=dtype, device=dev)
    scaled = aten.div.Tensor(aten.mul.Tensor(aten.sub.Tensor(flat, lo), bins),
                             aten.sub.Tensor(hi, lo))
    inside = aten.logical_and.default(aten.ge.Tensor(flat, lo), aten.le.Tensor(flat, hi))
    pos = aten._to_copy.default(aten.where.self(inside, scaled, aten.zeros_like.default(scaled)),
                                dtype=torch.int64)  # truncation, as the kernel's cast
    pos = aten.clamp.default(pos, 0, bins - 1)  # hi itself: the last bin
    return aten.scatter_add.default(aten.full.default([bins], 0, dtype=dtype, device=dev), 0,
                                    pos, aten._to_copy.default(inside, dtype=dtype))


@_register(aten.empty_permuted.default)
def empty_permuted(size: Any, physical_layout: Any, dtype: Any = None, layout: Any = None,
                   device: Any = None, pin_memory: Any = None) -> Any:
    """An uninitialized tensor of `size` whose memory holds the dims in `physical_layout`
    order: ``empty`` in that order, permuted back (torch's table turns ``empty_like`` into
    this operator, which is not core ATen)."""
    order = list(physical_layout)
    x = aten.empty.memory_format([size[d] for d in order], dtype=dtype, device=device,
                                 pin_memory=pin_memory)
    inverse = [order.index(d) for d in range(len(order))]
    return x if inverse == list(range(len(order))) else aten.permute.default(x, inverse)


def grouped_mm_fallback(input: Any, weight: Any, offs: Any) -> Any:
    """transformers' ``grouped_mm_fallback`` (its MoE experts' default on CPU: rows
    ``offs[i-1]:offs[i]`` of `input` times ``weight[i]``, rows past ``offs[-1]`` zero) in
    core ATen, for non-decreasing `offs` (cumulative token counts, as transformers passes
    them): row s's expert is the number of offsets <= s, its weight gathered and applied
    by one ``bmm`` (sums may round differently from the per-expert ``mm``)."""
    n, experts = input.shape[0], weight.shape[0]
    rows = aten.arange.start_step(0, n, 1, dtype=offs.dtype, device=input.device)
    group = aten.sum.dim_IntList(aten.ge.Tensor(aten.unsqueeze.default(rows, 1),
                                                aten.unsqueeze.default(offs, 0)), [1])
    used = aten.lt.Scalar(group, experts)
    w = aten.index.Tensor(weight, [aten.clamp.default(group, 0, experts - 1)])
    out = aten.squeeze.dims(aten.bmm.default(aten.unsqueeze.default(input, 1), w), [1])
    return aten.where.self(aten.unsqueeze.default(used, 1), out,
                           aten.full.default([], 0, dtype=out.dtype, device=out.device))


def beyond_torch(gm: torch.fx.GraphModule) -> dict:
    """The forms above for the operators `gm` (and its subgraphs) call that torch's tables
    leave (none when it calls none): ``{op: form}``."""
    leads: dict[Any, Any] = {op: TABLE[op] for op in BEYOND_TORCH}
    extra = _transformers_op()
    if extra is not None:
        leads[extra] = grouped_mm_fallback
    called = {n.target for m in gm.modules() if isinstance(m, torch.fx.GraphModule)
              for n in m.graph.nodes if n.op == "call_function"}
    if not called & (set(leads) | set(LEADS_BEYOND)):
        return {}
    return leads


def _transformers_op() -> Any:
    ns = getattr(torch.ops, "transformers", None)
    try:
        return ns.grouped_mm_fallback.default if ns is not None else None
    except (AttributeError, RuntimeError):
        return None
