"""Shape rules of scaled dot product attention.

The math path (what CPU runs for torch.nn.functional.scaled_dot_product_attention) is
``softmax(q @ k.T * scale + mask) @ v``: batch dims broadcast as in matmul, the mask is
added in place (it broadcasts to the scores, never the other way), and with
``enable_gqa`` the key/value heads (dim -3) are repeated to the query's head count.
"""

from __future__ import annotations

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import (broadcast_shapes, check, decided_max, divides, either,
                                    every, known)
from safetrace.rules.linalg import matmul
from safetrace.rules.registry import rule
from safetrace.symbolic import sym_not

aten = torch.ops.aten


def check_qkv(op: str, query: TensorMeta, key: TensorMeta, value: TensorMeta) -> None:
    check(query.dtype == key.dtype == value.dtype, op, f"Expected query, key, and value to "
          f"have the same dtype, but got query.dtype: {query.dtype} key.dtype: {key.dtype} "
          f"and value.dtype: {value.dtype} instead")
    check(query.ndim >= 2 and key.ndim >= 2 and value.ndim >= 2, op,
          f"Expected query, key, and value to all be at least 2 dimensional, but got "
          f"query.dim: {query.ndim} key.dim: {key.ndim} and value.dim: {value.ndim} instead")


def check_mask(op: str, query: TensorMeta, attn_mask: TensorMeta | None,
               is_causal: bool) -> None:
    if attn_mask is None:
        return
    check(attn_mask.dtype in (torch.bool, query.dtype), op,
          f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
          f"attn_mask.dtype: {attn_mask.dtype} and query.dtype: {query.dtype} instead")
    check(not is_causal, op, "Explicit attn_mask should not be set when is_causal=True")


def repeat_heads(op: str, query: TensorMeta, kv: TensorMeta, skipped: object = False
                 ) -> TensorMeta:
    """GQA: kv's heads (dim -3) repeated to the query's head count, which they divide
    (`skipped`: where eager returns before looking at the heads, ``nothing_to_attend``)."""
    if query.ndim < 3 or kv.ndim < 3:
        return kv
    hq, hkv = query.shape[-3], kv.shape[-3]
    # eager divides by the kv head count (a crash at 0); where it may skip that, the
    # modulo is by max(hkv, 1): the check's code, evaluated whole in a converted program
    # (`x or y` as `x | y`), never divides by zero
    ok = divides(hkv, hq) if skipped is False else every(
        (hkv != 0, hq % decided_max(hkv, 1) == 0))
    check(either((skipped, ok)), op, f"Number of heads in key and value must divide the "
                                     f"number of heads in query, got {hkv} and {hq}")
    return kv.like(kv.shape[:-3] + (hq,) + kv.shape[-2:])


def nothing_to_attend(query: TensorMeta, value: TensorMeta) -> object:
    """Where eager's scaled_dot_product_attention returns zeros of the query's shape with
    the value's last size at once, without looking at the heads or batch dims: no query
    position (``L == 0``) or an empty value (torch 2.13, CPU, measured: zero kv heads
    with ``enable_gqa`` run there, and a batch of 1 in the query stays 1)."""
    return either((query.shape[-2] == 0, value.numel() == 0))


@rule(aten.scaled_dot_product_attention.default)
def scaled_dot_product_attention(query: TensorMeta, key: TensorMeta, value: TensorMeta,
                                 attn_mask: TensorMeta | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, *, scale: float | None = None,
                                 enable_gqa: bool = False) -> TensorMeta:
    """q (..., L, E), k (..., S, E), v (..., S, Ev) -> (..., L, Ev), batch dims broadcast;
    q's shape with Ev last where there is nothing to attend (``nothing_to_attend``)."""
    op = "aten.scaled_dot_product_attention"
    check_qkv(op, query, key, value)
    check_mask(op, query, attn_mask, is_causal)
    skipped = nothing_to_attend(query, value)
    zeros = query.like(query.shape[:-1] + (value.shape[-1],))
    if skipped is True:
        return zeros
    if enable_gqa:
        key = repeat_heads(op, query, key, skipped)
        value = repeat_heads(op, query, value, skipped)
    scores = matmul(query, key.like(key.shape[:-2] + (key.shape[-1], key.shape[-2])))
    if attn_mask is not None:
        shape = broadcast_shapes(scores.shape, attn_mask.shape, op=op)
        check(len(shape) == scores.ndim and every(a is b or a == b
                                                for a, b in zip(shape, scores.shape)), op,
              f"output with shape {list(scores.shape)} doesn't match the broadcast shape "
              f"{list(shape)}")
    out = matmul(scores, value)
    if skipped is False or (out.ndim == zeros.ndim and all(
            a is b or (a == b) is True or known(a, "le", b) and known(a, "ge", b)
            for a, b in zip(out.shape, zeros.shape))):
        return out
    # (the batch dims broadcast: where eager skips and its zeros have the shape `out` has,
    # e.g. every batch 0, both agree; a guard only on the inputs where they differ)
    same = every(a == b for a, b in zip(out.shape, zeros.shape)) \
        if out.ndim == zeros.ndim else False
    return zeros if every((skipped, sym_not(same))) else out


@rule(aten._scaled_dot_product_flash_attention_for_cpu.default)
def _scaled_dot_product_flash_attention_for_cpu(
        query: TensorMeta, key: TensorMeta, value: TensorMeta, dropout_p: float = 0.0,
        is_causal: bool = False, *, attn_mask: TensorMeta | None = None,
        scale: float | None = None) -> tuple[TensorMeta, TensorMeta]:
    """(B, H, L, E) inputs -> (out (B, H, L, E), logsumexp (B, H, L), float32 for
    half/bfloat16 inputs)."""
    op = "aten._scaled_dot_product_flash_attention_for_cpu"
    check_qkv(op, query, key, value)
    check(query.ndim == 4 and key.ndim == 4 and value.ndim == 4, op,
          "scaled_dot_product_attention_flash_attention: Accept only 4 dims inputs shape of "
          "{B, H, T, K}")
    check(query.shape[3] == key.shape[3] == value.shape[3], op,
          "scaled_dot_product_attention_flash_attention: Q/K/V should have the same head size")
    b, h, length, e = query.shape
    check(every((key.shape[0] == b, value.shape[0] == b)), op, f"batch sizes of query, key and "
          f"value must be equal, got {b}, {key.shape[0]} and {value.shape[0]}")
    check(every((key.shape[1] == value.shape[1], key.shape[2] == value.shape[2])), op,
          f"key {list(key.shape)} and value {list(value.shape)} must have the same heads and "
          f"sequence length")
    # the CPU kernel divides by these sizes: it crashes the process where one is 0
    check(every((h != 0, key.shape[1] != 0, length != 0, key.shape[2] != 0)), op,
          f"the CPU flash attention kernel needs non-empty heads and sequences, got query "
          f"{list(query.shape)} and key {list(key.shape)}; scaled_dot_product_attention "
          f"handles empty inputs")
    check(h % key.shape[1] == 0, op, f"Number of heads in key and value must divide the "
                                     f"number of heads in query, got {key.shape[1]} and {h}")
    if attn_mask is not None:
        check(attn_mask.dtype in (torch.bool, query.dtype), op,
              f"Expected attn_mask dtype to be bool or to match query dtype, got "
              f"{attn_mask.dtype}")
        full = (b, h, length, key.shape[2])
        shape = broadcast_shapes(full, attn_mask.shape, op=op)
        check(len(shape) == 4 and every(x is y or x == y for x, y in zip(shape, full)), op,
              f"attn_mask {list(attn_mask.shape)} does not broadcast to {list(full)}")
    lse = torch.float32 if query.dtype in (torch.float16, torch.bfloat16) else query.dtype
    return query.like(), query.like((b, h, length), lse)


def _required_equal(op: str, sizes: tuple, message: str) -> None:
    """Sizes the op needs equal where the result's shape depends on the first alone: two
    sizes of independent symbols equal at the example are checked at run time, not made
    one (torch.export's program leaves them independent too and the kernel raises); a
    difference at the example raises, as eager does."""
    first = sizes[0]
    for other in sizes[1:]:
        cond = first == other
        env = getattr(cond, "env", None)
        if env is not None and env.decide(cond.expr) is None and env.hint(cond.expr):
            env.require(cond.expr, f"{op} ({message})", precondition=True)
            continue
        check(cond, op, message)


@rule(aten._native_multi_head_attention.default)
def _native_multi_head_attention(
        query: TensorMeta, key: TensorMeta, value: TensorMeta, embed_dim: int,
        num_head: int, qkv_weight: TensorMeta, qkv_bias: TensorMeta, proj_weight: TensorMeta,
        proj_bias: TensorMeta, mask: TensorMeta | None = None, need_weights: bool = True,
        average_attn_weights: bool = True, mask_type: int | None = None,
) -> tuple[TensorMeta, TensorMeta | None]:
    """nn.MultiheadAttention's fused path: q, k, v (B, T, E) of one shape -> (B, T, P) for
    P = proj_weight.shape[0], and the weights (B, T, T) averaged over heads or
    (B, H, T, T), or None without need_weights; an empty query gives itself back and None
    (so an empty query is a guard where weights are asked for)."""
    op = "aten._native_multi_head_attention"
    check(query.ndim == 3, op, f"expected 3-D `query`, got {query.ndim}-D tensor")
    check(query.shape[2] == embed_dim, op, f"passed-in embed_dim {embed_dim} didn't match "
                                           f"last dim of query {query.shape[2]}")
    check(key.ndim == 3, op, f"expected 3-D `key`, got {key.ndim}-D tensor")
    check(value.ndim == 3, op, f"expected 3-D `value`, got {value.ndim}-D tensor")
    for sizes in zip(query.shape, key.shape, value.shape):
        _required_equal(op, sizes, "expected `query`/`key`/`value` shapes to match")
    check(qkv_weight.ndim == 2, op, f"expected 2-D `qkv_weight`, got {qkv_weight.ndim}-D "
                                    f"tensor")
    check(qkv_weight.shape[0] == 3 * embed_dim, op,
          "expected `qkv_weight` first dim to be 3x embed_dim")
    check(qkv_weight.shape[1] == embed_dim, op,
          "expected `qkv_weight` second dim to be embed_Dim")
    check(qkv_bias.ndim == 1, op, f"expected 1-D `qkv_bias`, got {qkv_bias.ndim}-D tensor")
    check(qkv_bias.shape[0] == 3 * embed_dim, op,
          "expected `qkv_bias` first dim and first dim of query to be equal")
    check(divides(num_head, embed_dim), op,
          "`embed_dim` must divide evenly by `num_heads`")
    b, t, _ = query.shape
    out = query.like((b, t, proj_weight.shape[0]))
    # an empty query comes back as it is (its last dim E, not P), with no weights: a
    # question (a guard) only where the answer changes the result
    if (need_weights or not proj_weight.shape[0] == embed_dim) and query.numel() == 0:
        return query.like(), None
    if not need_weights:
        return out, None
    weights = (b, t, t) if average_attn_weights else (b, num_head, t, t)
    return out, query.like(weights)
