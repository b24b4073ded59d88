"""Samples of scaled dot product attention (attention.py)."""

import torch

from tests.rules.harness import Sample, T

aten = torch.ops.aten
f64, f16, bf16, b = torch.float64, torch.float16, torch.bfloat16, torch.bool
SDPA = aten.scaled_dot_product_attention.default
FLASH = aten._scaled_dot_product_flash_attention_for_cpu.default
NMHA = aten._native_multi_head_attention.default


def mha(q, k, v, *flags, **kw):
    """nn.MultiheadAttention's fused kernel (E = 8, 2 heads) on CPU: meta gives a tensor
    where the CPU kernel returns no weights."""
    return Sample(NMHA, (q, k, v, 8, 2, T(24, 8), T(24), T(6, 8), T(6), None, *flags), kw,
                  device="cpu")

SAMPLES = [
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 4, 6, 8), T(2, 4, 6, 3))),
    Sample(SDPA, (T(4, 5, 8), T(4, 6, 8), T(4, 6, 3))),
    Sample(SDPA, (T(5, 8), T(6, 8), T(6, 3))),
    Sample(SDPA, (T(2, 4, 5, 8), T(1, 4, 6, 8), T(2, 1, 6, 3))),
    Sample(SDPA, (T(2, 4, 5, 8), T(4, 6, 8), T(4, 6, 3))),
    Sample(SDPA, (T(3, 2, 4, 5, 8), T(3, 2, 4, 6, 8), T(3, 2, 4, 6, 3))),
    Sample(SDPA, (T(2, 4, 5, 8, dtype=f16), T(2, 4, 6, 8, dtype=f16), T(2, 4, 6, 3, dtype=f16))),
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 4, 6, 8), T(2, 4, 6, 3), T(5, 6, dtype=b))),
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 4, 6, 8), T(2, 4, 6, 3), T(2, 1, 1, 6))),
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 4, 6, 8), T(2, 4, 6, 3)), {"is_causal": True,
                                                                 "scale": 0.5}),
    Sample(SDPA, (T(2, 8, 5, 8), T(2, 2, 6, 8), T(2, 2, 6, 3)), {"enable_gqa": True}),
    Sample(SDPA, (T(2, 8, 5, 8), T(2, 2, 6, 8), T(2, 4, 6, 3)), {"enable_gqa": True}),
    Sample(SDPA, (T(8, 5, 8), T(2, 6, 8), T(2, 6, 3)), {"enable_gqa": True}),
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 4, 6, 8), T(2, 4, 6, 3)), {"enable_gqa": True}),
    Sample(SDPA, (T(2, 4, 0, 8), T(2, 4, 6, 8), T(2, 4, 6, 3))),
    # nothing to attend (an empty value or no query position): eager returns zeros of the
    # query's shape without looking at the heads or broadcasting the batch
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 0, 6, 8), T(2, 0, 6, 3)), {"enable_gqa": True}),
    Sample(SDPA, (T(2, 3, 0, 8), T(2, 2, 6, 8), T(2, 2, 6, 3)), {"enable_gqa": True}),
    Sample(SDPA, (T(1, 4, 5, 8), T(2, 4, 6, 8), T(2, 4, 6, 0))),
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 4, 0, 8), T(2, 4, 0, 3)), {"dropout_p": 0.0}),
    Sample(FLASH, (T(2, 4, 5, 8), T(2, 4, 6, 8), T(2, 4, 6, 8))),
    Sample(FLASH, (T(2, 4, 5, 8, dtype=bf16), T(2, 4, 6, 8, dtype=bf16),
                   T(2, 4, 6, 8, dtype=bf16)), {"is_causal": True}),
    Sample(FLASH, (T(2, 8, 5, 8), T(2, 2, 6, 8), T(2, 2, 6, 8))),
    Sample(FLASH, (T(2, 4, 5, 8), T(2, 4, 6, 8), T(2, 4, 6, 8)), {"attn_mask": T(5, 6)}),
    Sample(FLASH, (T(1, 1, 3, 4, dtype=f64), T(1, 1, 3, 4, dtype=f64),
                   T(1, 1, 3, 4, dtype=f64)), {"attn_mask": T(1, 1, 3, 3, dtype=b)}),
    mha(T(2, 5, 8), T(2, 5, 8), T(2, 5, 8)),
    mha(T(2, 5, 8), T(2, 5, 8), T(2, 5, 8), True, False),
    mha(T(1, 3, 8), T(1, 3, 8), T(1, 3, 8), False),
    mha(T(0, 3, 8), T(0, 3, 8), T(0, 3, 8)),
]

ERROR_SAMPLES = [
    Sample(SDPA, (T(8), T(8), T(8))),
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 4, 6, 7), T(2, 4, 6, 3))),
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 4, 6, 8), T(2, 4, 7, 3))),
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 4, 6, 8, dtype=f64), T(2, 4, 6, 3))),
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 4, 6, 8), T(2, 4, 6, 3), T(3, 2, 4, 5, 6)),
           device="cpu"),
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 4, 6, 8), T(2, 4, 6, 3), T(5, 7))),
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 4, 6, 8), T(2, 4, 6, 3), T(5, 6, dtype=f64))),
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 4, 6, 8), T(2, 4, 6, 3), T(5, 6)), {"is_causal": True}),
    Sample(SDPA, (T(2, 8, 5, 8), T(2, 3, 6, 8), T(2, 3, 6, 3)), {"enable_gqa": True}),
    Sample(SDPA, (T(2, 4, 5, 8), T(2, 0, 6, 8), T(2, 2, 6, 3)), {"enable_gqa": True}),
    Sample(SDPA, (T(2, 8, 5, 8), T(2, 2, 6, 8), T(2, 2, 6, 3))),
    Sample(FLASH, (T(2, 4, 5, 8), T(2, 4, 6, 8), T(2, 4, 6, 3)), device="cpu"),
    Sample(FLASH, (T(4, 5, 8), T(4, 6, 8), T(4, 6, 8)), device="cpu"),
    mha(T(2, 5, 8), T(2, 4, 8), T(2, 4, 8)),
    mha(T(2, 5, 7), T(2, 5, 7), T(2, 5, 7)),
    mha(T(5, 8), T(5, 8), T(5, 8)),
]
