"""Core ATen forms of operators vision models leave after torch's core table (timm: EVA's
rotary embedding, ViTs resampling their position embedding to the input's grid, EdgeNeXt's
``expand_as`` and vector norm, CAFormer's ``square``, LeViT's ``reshape_as``, Swin's and
DaViT's ``roll``).

Like interop/composites.py: each is the operator's documented meaning written with core
ATen calls, checked against eager in the tests.  ``run_decompositions`` uses them with
composites.TABLE.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from safetrace.interop.composites import TABLE as BASE, registrar

aten = torch.ops.aten
TABLE: dict[Any, Callable] = {}
_register = registrar(TABLE)


@_register(aten.type_as.default)
def type_as(x: Any, other: Any) -> Any:
    """``x.to(other.dtype)``: x itself when the dtype is already other's."""
    return x if x.dtype == other.dtype else aten._to_copy.default(x, dtype=other.dtype)


@_register(aten.repeat_interleave.self_int)
def repeat_interleave(x: Any, repeats: Any, dim: Any = None, output_size: Any = None) -> Any:
    """Each element `repeats` times in a row along `dim` (of the flattened x without one):
    a new axis after `dim` expanded to `repeats`, then merged into `dim`."""
    if dim is None:
        x, dim = aten.view.default(_contiguous(x), [-1]), 0
    dim = dim % x.dim()
    shape = list(x.shape)
    wide = aten.expand.default(aten.unsqueeze.default(x, dim + 1),
                               shape[:dim + 1] + [repeats] + shape[dim + 1:])
    return aten.view.default(_contiguous(wide),
                             shape[:dim] + [shape[dim] * repeats] + shape[dim + 1:])


@_register(aten.square.default)
def square(x: Any) -> Any:
    """``pow(x, 2)``, as eager computes it (CAFormer's StarReLU)."""
    return aten.pow.Tensor_Scalar(x, 2)


@_register(aten.expand_as.default)
def expand_as(x: Any, other: Any) -> Any:
    return aten.expand.default(x, list(other.shape))


@_register(aten.reshape_as.default)
def reshape_as(x: Any, other: Any) -> Any:
    """``x.reshape(other.shape)`` through the reshape form of composites.py (LeViT)."""
    return BASE[aten.reshape.default](x, list(other.shape))


@_register(aten.linalg_vector_norm.default)
def linalg_vector_norm(x: Any, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                       dtype: Any = None) -> Any:
    """The vector norm of real x over `dim` (every dim for None): max/min of |x| for +-inf,
    the count of non-zeros for 0, ``sum(|x|**p) ** (1/p)`` otherwise (2: a square root)."""
    if x.is_complex():
        return aten.linalg_vector_norm.default(x, ord, dim, keepdim, dtype=dtype)
    if dtype is not None:
        x = aten._to_copy.default(x, dtype=dtype)
    dims = list(range(x.dim())) if dim is None else [dim] if type(dim) is int else list(dim)
    mag = aten.abs.default(x)
    if ord == math.inf:
        return aten.amax.default(mag, dims, keepdim)
    if ord == -math.inf:
        return aten.amin.default(mag, dims, keepdim)
    if ord == 0:
        return aten.sum.dim_IntList(aten._to_copy.default(aten.ne.Scalar(x, 0), dtype=x.dtype),
                                    dims, keepdim)
    if ord == 1:
        return aten.sum.dim_IntList(mag, dims, keepdim)
    if ord == 2:
        return aten.sqrt.default(aten.sum.dim_IntList(aten.mul.Tensor(x, x), dims, keepdim))
    return aten.pow.Tensor_Scalar(aten.sum.dim_IntList(aten.pow.Tensor_Scalar(mag, ord), dims,
                                                       keepdim), 1.0 / ord)


@_register(aten.roll.default)
def roll(x: Any, shifts: Any, dims: Any = ()) -> Any:
    """``torch.roll``: along each dim, output i is input ``(i - shift) mod size``: an
    ``index_select`` by ``remainder(arange(size) - shift, size)``; without dims, the
    flattened tensor rolled and viewed back.  torch's reference asks ``numel() == 0``
    first, a decision the program (one ``roll``) never made (Swin's shifted windows:
    the count of windows is not provably non-zero); here an empty tensor takes the same
    index ops (an empty index), so no size is decided."""
    shifts, dims = list(shifts), list(dims)
    if not dims:
        if len(shifts) != 1:
            return aten.roll.default(x, shifts, dims)  # (eager's error)
        flat = aten.view.default(_contiguous(x), [-1])
        return aten.view.default(roll(flat, shifts, [0]), list(x.shape))
    if len(shifts) != len(dims) or x.dim() == 0:
        return aten.roll.default(x, shifts, dims)  # (eager's error)
    for shift, dim in zip(shifts, dims):
        size = x.shape[dim]
        at = aten.add.Tensor(aten.arange.default(size, dtype=torch.int64, device=x.device),
                             -shift)
        # (the divisor of an empty index is never used: max(size, 1) keeps it non-zero
        # without a decision)
        x = aten.index_select.default(x, dim, aten.remainder.Scalar(at, torch.sym_max(size, 1)))
    return x


def _contiguous(x: Any) -> Any:
    return aten.clone.default(x, memory_format=torch.contiguous_format)


@_register(aten._upsample_bicubic2d_aa.default)
def upsample_bicubic2d_aa(x: Any, output_size: Any, align_corners: bool,
                          scales_h: Any = None, scales_w: Any = None) -> Any:
    """Antialiased bicubic resampling (PIL's, as torch's kernel): per axis, output i is a
    normalized sum of the inputs j within ``support = 2 * max(scale, 1)`` of its center
    ``scale * (i + 0.5)``, weighted by the cubic filter (a = -0.5) at ``(j - center + 0.5)
    / max(scale, 1)``. Both axes are a matrix of weights: ``Wh @ x @ Ww.T`` (bmm). Other
    calls (corners aligned, scales given) are kept as they are."""
    if align_corners or scales_h is not None or scales_w is not None or x.dim() != 4:
        return aten._upsample_bicubic2d_aa.default(x, output_size, align_corners, scales_h,
                                                   scales_w)
    n, c, h, w = x.shape
    out_h, out_w = output_size
    wh = _aa_weights(h, out_h, x.dtype)  # [out_h, h]
    ww = _aa_weights(w, out_w, x.dtype)  # [out_w, w]
    # torch's CPU kernel (2.13) gives every output row the first row's values when the
    # output is one column wide and the height changes (bilinear too): eager's result,
    # so the form's (a tensor condition: no decision on the sizes)
    first = aten.expand.default(aten.slice.Tensor(wh, 0, 0, 1), [out_h, h])
    f64 = torch.float64
    repeats = aten.logical_and.default(
        aten.eq.Scalar(aten.full.default([], out_w, dtype=f64), 1),
        aten.ne.Scalar(aten.full.default([], out_h, dtype=f64), h))
    wh = aten.where.self(repeats, first, wh)
    flat = aten.view.default(_contiguous(x), [n * c, h, w])
    rows = aten.bmm.default(aten.expand.default(wh, [n * c, out_h, h]), flat)
    both = aten.bmm.default(rows, aten.expand.default(aten.permute.default(ww, [1, 0]),
                                                      [n * c, w, out_w]))
    return aten.view.default(both, [n, c, out_h, out_w])


def _aa_weights(size: Any, out: Any, dtype: Any) -> Any:
    """[out, size] weights of one axis, computed in float64 (without a decision on the
    sizes: the scale's comparisons with 1 are tensor ops)."""
    f64 = torch.float64
    i = aten.arange.start_step(0, out, 1, dtype=f64)
    j = aten.unsqueeze.default(aten.arange.start_step(0, size, 1, dtype=f64), 0)
    scale = aten.div.Scalar(aten.full.default([], size, dtype=f64), out)
    center = aten.unsqueeze.default(aten.mul.Tensor(aten.add.Scalar(i, 0.5), scale), 1)
    wide = aten.clamp.default(scale, 1.0, None)  # max(scale, 1)
    support = aten.mul.Scalar(wide, 2.0)
    lo = aten.clamp.default(aten.trunc.default(
        aten.add.Scalar(aten.sub.Tensor(center, support), 0.5)), 0.0, None)
    hi = aten.minimum.default(aten.trunc.default(
        aten.add.Scalar(aten.add.Tensor(center, support), 0.5)),
        aten.full.default([], size, dtype=f64))
    t = aten.abs.default(aten.div.Tensor(aten.add.Scalar(aten.sub.Tensor(j, center), 0.5),
                                         wide))
    a = -0.5
    near = aten.add.Scalar(aten.mul.Tensor(aten.mul.Tensor(
        aten.sub.Scalar(aten.mul.Scalar(t, a + 2), a + 3), t), t), 1.0)
    far = aten.mul.Scalar(aten.sub.Scalar(aten.mul.Tensor(aten.add.Scalar(
        aten.mul.Tensor(aten.sub.Scalar(t, 5.0), t), 8.0), t), 4.0), a)
    zero = aten.full.default([], 0.0, dtype=f64)
    weight = aten.where.self(aten.lt.Scalar(t, 1.0), near,
                             aten.where.self(aten.lt.Scalar(t, 2.0), far, zero))
    inside = aten.logical_and.default(aten.ge.Tensor(j, lo), aten.lt.Tensor(j, hi))
    weight = aten.where.self(inside, weight, zero)
    total = aten.sum.dim_IntList(weight, [1], True)
    normed = aten.div.Tensor(weight, aten.where.self(aten.ne.Scalar(total, 0.0), total,
                                                     aten.full.default([], 1.0, dtype=f64)))
    return aten._to_copy.default(normed, dtype=dtype)


__all__ = ["TABLE"]
