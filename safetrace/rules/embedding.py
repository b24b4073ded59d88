"""Shape rules of embedding lookups: embedding, embedding_bag, one_hot.

embedding_bag has four outputs whose shapes differ between CPU and the meta kernel; the
rule gives the CPU kernel's answer for CPU tensors (its fast path for sum mode returns an
empty offset2bag; the rule assumes a contiguous weight, as nn.EmbeddingBag's is) and the
meta kernel's answer for other devices.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.errors import one_hot_num_classes
from safetrace.meta import TensorMeta
from safetrace.rules.common import check, either
from safetrace.rules.registry import rule

aten = torch.ops.aten

INDEX_DTYPES = (torch.int64, torch.int32)
SUM, MEAN, MAX = 0, 1, 2


def check_indices(op: str, t: TensorMeta, name: str, arg: int) -> None:
    check(t.dtype in INDEX_DTYPES, op, f"Expected tensor for argument #{arg} '{name}' to have "
                                       f"one of the following scalar types: Long, Int; but got "
                                       f"{t.dtype} instead")


@rule(aten.embedding.default)
def embedding(weight: TensorMeta, indices: TensorMeta, padding_idx: Any = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> TensorMeta:
    """weight (V, D) looked up at indices of any shape -> indices.shape + (D,)."""
    op = "aten.embedding"
    check(weight.ndim == 2, op, "'weight' must be 2-D")
    check_indices(op, indices, "indices", 1)
    check(either((weight.shape[0] != 0, indices.numel() == 0)), op,
          "index_select(): self indexing axis dim should be positive")
    return weight.like(indices.shape + (weight.shape[1],))


def embedding_bag_outputs(weight: TensorMeta, indices: TensorMeta, offsets: TensorMeta,
                          mode: int, per_sample_weights: TensorMeta | None,
                          include_last_offset: bool, padding_idx: int | None,
                          wrapper: bool = True) -> tuple:
    op = "aten.embedding_bag"
    check(weight.ndim == 2, op, "'weight' must be 2-D")
    check_indices(op, indices, "indices", 2)
    check_indices(op, offsets, "offsets", 3)
    # (CPU also runs 2-d indices here, with unclear semantics; the rule rejects them)
    check(indices.ndim == 1, op, f"input has to be a 1D Tensor, but got Tensor of dimension "
                                 f"{indices.ndim}")
    check(offsets.ndim == 1, op, f"offsets has to be a 1D Tensor, but got Tensor of dimension "
                                 f"{offsets.ndim}")
    check(mode in (SUM, MEAN, MAX), op, "`mode` must be sum, mean, or max.")
    if per_sample_weights is not None:
        check(mode == SUM, op, "embedding_bag: per_sample_weights only supported with "
                               "mode='sum'")
        check(per_sample_weights.ndim == 1, op, "per_sample_weights must be 1-D")
        check(per_sample_weights.numel() == indices.numel(), op,
              f"Expected per_sample_weights.numel() == indices.numel(), got "
              f"{per_sample_weights.numel()} and {indices.numel()}")
        check(per_sample_weights.dtype == weight.dtype, op, f"expected per_sample_weights to "
              f"have dtype {weight.dtype}, got {per_sample_weights.dtype}")
    n_offsets = offsets.shape[0]
    # CPU reads offsets[0] of any non-empty input (a crash when there are none)
    check(either((n_offsets != 0, indices.shape[0] == 0)), op,
          f"offsets is empty but input has {indices.shape[0]} indices; give one offset per "
          f"bag (offsets[0] = 0)")
    if include_last_offset:
        check(n_offsets >= 1, op, "include_last_offset: number of offsets should be at least 1")
    bags = n_offsets - 1 if include_last_offset else n_offsets
    dim = weight.shape[1]
    index = torch.promote_types(indices.dtype, offsets.dtype)
    output = weight.like((bags, dim))
    if weight.device.type != "cpu":  # the meta kernel's answer
        return (output, indices.like((indices.shape[0],), index),
                indices.like((n_offsets,), index),
                indices.like((bags, dim) if mode == MAX else (0,), index))
    fast = mode == SUM and padding_idx is None and weight.dtype in (
        torch.float32, torch.float16, torch.bfloat16)
    offset2bag = (0,) if fast else (indices.shape[0],)
    # the embedding_bag wrapper keeps one entry per offset in sum mode; _embedding_bag not
    bag_size = (n_offsets,) if mode == SUM and wrapper else (bags,)
    max_indices = (bags, dim) if mode == MAX else bag_size
    return (output, indices.like(offset2bag, index), indices.like(bag_size, index),
            indices.like(max_indices, index))


@rule(aten.embedding_bag.default)
def embedding_bag(weight: TensorMeta, indices: TensorMeta, offsets: TensorMeta,
                  scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                  per_sample_weights: TensorMeta | None = None,
                  include_last_offset: bool = False) -> tuple:
    """(output (bags, D), offset2bag, bag_size, max_indices); bags = offsets - last."""
    return embedding_bag_outputs(weight, indices, offsets, mode, per_sample_weights,
                                 include_last_offset, None)


@rule(aten.embedding_bag.padding_idx)
def embedding_bag_padding_idx(weight: TensorMeta, indices: TensorMeta, offsets: TensorMeta,
                              scale_grad_by_freq: bool, mode: int, sparse: bool,
                              per_sample_weights: TensorMeta | None,
                              include_last_offset: bool, padding_idx: int | None) -> tuple:
    """embedding_bag with a padding index (None: no padding; negative counts from the end)."""
    if padding_idx is not None:
        check(-weight.shape[0] <= padding_idx < weight.shape[0], "aten.embedding_bag",
              f"padding_idx must be within the number of embeddings, -{weight.shape[0]} "
              f"through {weight.shape[0] - 1}, but got {padding_idx}")
    return embedding_bag_outputs(weight, indices, offsets, mode, per_sample_weights,
                                 include_last_offset, padding_idx)


@rule(aten._embedding_bag.default)
def _embedding_bag(weight: TensorMeta, indices: TensorMeta, offsets: TensorMeta,
                   scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                   per_sample_weights: TensorMeta | None = None,
                   include_last_offset: bool = False, padding_idx: int = -1) -> tuple:
    """The kernel behind embedding_bag; here padding_idx -1 means no padding."""
    return embedding_bag_outputs(weight, indices, offsets, mode, per_sample_weights,
                                 include_last_offset, None if padding_idx < 0 else padding_idx,
                                 wrapper=False)


@rule(aten.one_hot.default)
def one_hot(self: TensorMeta, num_classes: int = -1) -> TensorMeta:
    """int64 indices -> self.shape + (num_classes,) int64; num_classes=-1 reads the data."""
    op = "aten.one_hot"
    check(self.dtype == torch.int64, op, "one_hot is only applicable to index tensor of type "
                                         "LongTensor.")
    if num_classes == -1:
        raise one_hot_num_classes()
    check(num_classes >= 0, op, f"num_classes should be positive, got {num_classes}")
    return self.like(self.shape + (num_classes,), torch.int64)


@rule(aten.embedding_renorm_.default)
def embedding_renorm_(self: TensorMeta, indices: TensorMeta, max_norm: float,
                      norm_type: float) -> TensorMeta:
    """In place: the looked-up rows of weight (V, D) rescaled to max_norm; returns self."""
    op = "aten.embedding_renorm_"
    check(self.ndim == 2, op, f"Expected 2-dimensional tensor, but got {self.ndim}-dimensional "
                              f"tensor for argument #1 'self' (while checking arguments for "
                              f"embedding_renorm_)")
    check_indices(op, indices, "indices", 2)
    check(self.dtype.is_floating_point or self.dtype.is_complex, op,
          f"norm(): input dtype should be either floating point or complex. Got "
          f"{self.dtype} instead.")
    return self.like()
