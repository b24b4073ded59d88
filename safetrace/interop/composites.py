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


def _register(*ops: Any) -> Callable:
    def deco(fn: Callable) -> Callable:
        for op in ops:
            TABLE[op] = fn
        return fn
    return deco


def _mm(a: Any, b: Any) -> Any:
    """a @ b for a of rank >= 1 and b of rank 2, through mm on a flattened a."""
    if a.dim() == 2:
        return aten.mm.default(a, b)
    lead = list(a.shape[:-1])
    flat = aten.view.default(_contiguous(a), [-1, a.shape[-1]])
    return aten.view.default(aten.mm.default(flat, b), lead + [b.shape[-1]])


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
        a3 = aten.view.default(_contiguous(a), [-1, a.shape[-2], a.shape[-1]])
        b3 = aten.view.default(_contiguous(b), [-1, b.shape[-2], b.shape[-1]])
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


@_register(aten.scaled_dot_product_attention.default)
def sdpa(q: Any, k: Any, v: Any, attn_mask: Any = None, dropout_p: float = 0.0,
         is_causal: bool = False, scale: Any = None, enable_gqa: bool = False) -> Any:
    if dropout_p or enable_gqa:
        return aten.scaled_dot_product_attention.default(
            q, k, v, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
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
    return matmul(probs, v)


@_register(aten.batch_norm.default)
def batch_norm(x: Any, weight: Any, bias: Any, mean: Any, var: Any, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool = True) -> Any:
    if training or mean is None:  # updates running statistics: left as it is
        return aten.batch_norm.default(x, weight, bias, mean, var, training, momentum, eps,
                                       cudnn_enabled)
    return aten._native_batch_norm_legit_no_training.default(x, weight, bias, mean, var,
                                                             momentum, eps)[0]


@_register(aten.max_pool2d.default)
def max_pool2d(x: Any, kernel: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False) -> Any:
    return aten.max_pool2d_with_indices.default(x, kernel, stride, padding, dilation,
                                                ceil_mode)[0]
