"""Shape rules of loss functions: the ATen overloads the ``F.*_loss`` functions reach.

``reduction`` is ATen's int enum: 0 none (the elementwise loss), 1 mean, 2 sum (0-d
results).  Most losses are composite in ATen (elementwise ops then a reduction); their
rules are the composition of the rules of those ops, so dtypes follow torch's promotion
exactly.  The others (nll_loss, multi-margin, binary_cross_entropy, ...) follow their
CPU kernels' checks: class targets are int64 (nll_loss also takes uint8) and weights have
the input's dtype.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import broadcast_shapes, check, every, prod, static_zero
from safetrace.rules.pointwise import FLOAT_ONLY, castable, reject, same_shape
from safetrace.rules.registry import get_rule, rule

aten = torch.ops.aten

NONE, MEAN, SUM = 0, 1, 2


def call(op: Any, *args: Any, **kwargs: Any) -> Any:
    """The answer of another op's rule (losses are mostly compositions of other ops)."""
    return get_rule(op)(*args, **kwargs)


def reduced(loss: TensorMeta, reduction: int) -> TensorMeta:
    """ATen's apply_loss_reduction: mean (floating only), sum, anything else unreduced."""
    if reduction == MEAN:
        return call(aten.mean.default, loss)
    if reduction == SUM:
        return call(aten.sum.default, loss)
    return loss


def valid_reduction(op: str, reduction: int) -> None:
    check(reduction in (NONE, MEAN, SUM), op, f"Invalid reduction type encountered in "
                                              f"{op}: {reduction}")


def floating(op: str, x: TensorMeta, kernel: str | None = None) -> None:
    reject(kernel or op, x.dtype, FLOAT_ONLY)


# -- regression losses --------------------------------------------------------------------


def _kernel_loss(op: str, self: TensorMeta, target: TensorMeta, reduction: int) -> TensorMeta:
    """mse / smooth_l1: a binary kernel on the promoted dtype, reduced to 0-d."""
    out = call(aten.sub.Tensor, self, target)
    reject(op.replace("_loss", "_cpu"), out.dtype, FLOAT_ONLY)
    valid_reduction(op, reduction)
    return out if reduction == NONE else out.like((), out.dtype)


@rule(aten.mse_loss.default)
def mse_loss(self: TensorMeta, target: TensorMeta, reduction: int = MEAN) -> TensorMeta:
    """(self - target)^2 broadcast, in the promoted floating dtype; 0-d when reduced."""
    return _kernel_loss("mse_loss", self, target, reduction)


@rule(aten.l1_loss.default)
def l1_loss(self: TensorMeta, target: TensorMeta, reduction: int = MEAN) -> TensorMeta:
    """|self - target| broadcast, then reduced (mean needs a floating dtype)."""
    return reduced(call(aten.abs.default, call(aten.sub.Tensor, self, target)), reduction)


@rule(aten.smooth_l1_loss.default)
def smooth_l1_loss(self: TensorMeta, target: TensorMeta, reduction: int = MEAN,
                   beta: float = 1.0) -> TensorMeta:
    """Like mse_loss; beta == 0 is l1_loss."""
    check(beta >= 0, "smooth_l1_loss", "smooth_l1_loss does not support negative values for "
                                       "beta.")
    if beta == 0:
        return l1_loss(self, target, reduction)
    return _kernel_loss("smooth_l1_loss", self, target, reduction)


@rule(aten.huber_loss.default)
def huber_loss(self: TensorMeta, target: TensorMeta, reduction: int = MEAN,
               delta: float = 1.0) -> TensorMeta:
    """Broadcast shape in self's (floating) dtype; the promoted dtype must cast back."""
    op = "huber_loss"
    check(delta > 0, op, "huber_loss does not support non-positive values for delta.")
    shape = broadcast_shapes(self.shape, target.shape, op=op)
    castable(op, call(aten.sub.Tensor, self, target).dtype, self.dtype)
    floating(op, self, "huber_cpu")
    return reduced(self.like(shape), reduction)


@rule(aten.soft_margin_loss.default)
def soft_margin_loss(self: TensorMeta, target: TensorMeta, reduction: int = MEAN) -> TensorMeta:
    """log(1 + exp(-self * target)) computed in place in self: target broadcasts to it."""
    op = "soft_margin_loss"
    out = call(aten.mul.Tensor, call(aten.neg.default, self), target)
    same_shape(op, self, out.shape)
    castable(op, out.dtype, self.dtype)
    castable(op, torch.get_default_dtype() if not self.dtype.is_floating_point else self.dtype,
             self.dtype)  # exp_ of an integer tensor
    return self.like() if reduction == NONE else self.like(())


@rule(aten.kl_div.default)
def kl_div(self: TensorMeta, target: TensorMeta, reduction: int = MEAN, *,
           log_target: bool = False) -> TensorMeta:
    """target * (log target - self) broadcast; floating inputs only."""
    op = "kl_div"
    for x in (self, target):
        check(not x.dtype.is_complex, op, "kl_div: Complex inputs not supported.")
        check(x.dtype.is_floating_point, op, "kl_div: Integral inputs not supported.")
    return reduced(call(aten.sub.Tensor, target, self), reduction)


@rule(aten.poisson_nll_loss.default)
def poisson_nll_loss(input: TensorMeta, target: TensorMeta, log_input: bool, full: bool,
                     eps: float, reduction: int) -> TensorMeta:
    """exp(input) - target * input (or input - target * log(input + eps)), broadcast."""
    if log_input:
        loss = call(aten.sub.Tensor, call(aten.exp.default, input),
                    call(aten.mul.Tensor, target, input))
    else:
        log = call(aten.log.default, call(aten.add.Scalar, input, eps))
        loss = call(aten.sub.Tensor, input, call(aten.mul.Tensor, target, log))
    if full:  # loss += stirling(target), in place
        stirling = call(aten.mul.Tensor, target, call(aten.log.default, target))
        out = call(aten.add.Tensor, loss, stirling)
        same_shape("poisson_nll_loss", loss, out.shape)
        castable("poisson_nll_loss", out.dtype, loss.dtype)
    return reduced(loss, reduction)


# -- classification: nll / cross entropy ----------------------------------------------------


def _nll_checks(op: str, self: TensorMeta, target: TensorMeta, weight: TensorMeta | None,
                n_classes: Any) -> None:
    floating(op, self, "nll_loss_out_frame")
    check(target.dtype in (torch.int64, torch.uint8), op,
          f"expected target dtype to be Long or Byte, but got {target.dtype}")
    if weight is not None:
        check(weight.dtype == self.dtype, op, f"expected scalar type {self.dtype} but found "
                                              f"{weight.dtype}")


@rule(aten.nll_loss_forward.default)
def nll_loss_forward(self: TensorMeta, target: TensorMeta, weight: TensorMeta | None,
                     reduction: int, ignore_index: Any) -> tuple:
    """(N, C) or (C,) log-probabilities and class targets -> (loss, total_weight)."""
    op = "nll_loss_forward"
    check(0 < self.ndim <= 2, op, "input tensor should be 1D or 2D")
    check(target.ndim <= 1, op, "0D or 1D target tensor expected, multi-target not supported")
    no_batch = self.ndim == 1 and target.ndim == 0
    check(no_batch or (target.ndim == 1 and self.shape[0] == target.shape[0]), op,
          f"size mismatch (got input: {list(self.shape)}, target: {list(target.shape)})")
    c = self.shape[-1]
    check(weight is None or (weight.ndim == 1 and weight.shape[0] == c), op,
          f"weight tensor should be defined either for all {c} classes or no classes but got "
          f"weight tensor of shape: {None if weight is None else list(weight.shape)}")
    _nll_checks(op, self, target, weight, c)
    out = (self.shape[0],) if reduction == NONE and self.ndim == 2 else ()
    return self.like(out), self.like(())


@rule(aten.nll_loss.default)
def nll_loss(self: TensorMeta, target: TensorMeta, weight: TensorMeta | None = None,
             reduction: int = MEAN, ignore_index: Any = -100) -> TensorMeta:
    """nll_loss_forward's loss."""
    return nll_loss_forward(self, target, weight, reduction, ignore_index)[0]


@rule(aten.nll_loss2d_forward.default)
def nll_loss2d_forward(self: TensorMeta, target: TensorMeta, weight: TensorMeta | None,
                       reduction: int, ignore_index: Any) -> tuple:
    """(N, C, H, W) and (N, H, W) targets -> ((N, H, W) or 0-d, total_weight)."""
    op = "nll_loss2d_forward"
    check(target.ndim == 3, op, f"only batches of spatial targets supported (3D tensors) but "
                                f"got targets of dimension: {target.ndim}")
    check(self.ndim == 4, op, f"only batches of spatial inputs supported (4D tensors), but got "
                              f"input of dimension: {self.ndim}")
    check(weight is None or weight.numel() == self.shape[1], op,
          "weight tensor should be defined either for all or no classes")
    n, _, h, w = self.shape
    check(n == target.shape[0] and h == target.shape[1] and w == target.shape[2], op,
          f"size mismatch (got input: {list(self.shape)} , target: {list(target.shape)}")
    _nll_checks(op, self, target, weight, self.shape[1])
    return self.like(target.shape if reduction == NONE else ()), self.like(())


@rule(aten.nll_loss2d.default)
def nll_loss2d(self: TensorMeta, target: TensorMeta, weight: TensorMeta | None = None,
               reduction: int = MEAN, ignore_index: Any = -100) -> TensorMeta:
    """nll_loss2d_forward's loss."""
    return nll_loss2d_forward(self, target, weight, reduction, ignore_index)[0]


@rule(aten.nll_loss_nd.default)
def nll_loss_nd(self: TensorMeta, target: TensorMeta, weight: TensorMeta | None = None,
                reduction: int = MEAN, ignore_index: Any = -100) -> TensorMeta:
    """(N, C, d1, ...) with (N, d1, ...) targets -> (N, d1, ...) unreduced, else 0-d."""
    op = "nll_loss_nd"
    check(self.ndim >= 1, op, f"Expected 1 or more dimensions (got {self.ndim})")
    if self.ndim != 1:
        check(target.ndim >= 1, op, f"Expected input batch_size ({self.shape[0]}) to match "
                                    f"target batch_size (0).")
        check(self.shape[0] == target.shape[0], op, f"Expected input batch_size "
              f"({self.shape[0]}) to match target batch_size ({target.shape[0]}).")
    if self.ndim <= 2:
        return nll_loss(self, target, weight, reduction, ignore_index)
    out_size = (self.shape[0],) + tuple(self.shape[2:])
    same = target.ndim == self.ndim - 1 and all(
        a == b for a, b in zip(target.shape[1:], self.shape[2:]))
    check(same, op, f"Expected target size {list(out_size)}, got {list(target.shape)}")
    if self.ndim > 4 or self.ndim == 3:
        # viewed as (N, C, 1, -1); an empty input is (N, C, 0, 0) while a non-empty target
        # stays (N, 1, -1): only C == 0 with a non-empty target makes them disagree
        if static_zero(self.shape[1]):
            check(prod(target.shape) == 0, op, f"size mismatch (got input: "
                  f"{[self.shape[0], self.shape[1], 0, 0]} , target: {list(target.shape)}")
    c = self.shape[1]
    check(weight is None or weight.numel() == c, op,
          "weight tensor should be defined either for all or no classes")
    _nll_checks(op, self, target, weight, c)
    return self.like(out_size if reduction == NONE else ())


@rule(aten.cross_entropy_loss.default)
def cross_entropy_loss(self: TensorMeta, target: TensorMeta, weight: TensorMeta | None = None,
                       reduction: int = MEAN, ignore_index: Any = -100,
                       label_smoothing: float = 0.0) -> TensorMeta:
    """log_softmax over the class dim (1, or 0 for a 1-d input) then nll_loss_nd; a target
    of the input's shape holds class probabilities (soft targets)."""
    op = "cross_entropy_loss"
    class_dim = 0 if self.ndim == 1 else 1
    check(self.ndim >= 1, op, "Dimension specified as 1 but tensor has no dimensions")
    soft = target.ndim == self.ndim and all(a == b for a, b in zip(self.shape, target.shape))
    if not soft and label_smoothing <= 0.0:
        floating(op, self, "log_softmax")
        return nll_loss_nd(self, target, weight, reduction, ignore_index)
    if label_smoothing > 0.0:
        check(label_smoothing <= 1.0, op, f"label_smoothing must be between 0.0 and 1.0. Got: "
                                          f"{label_smoothing}")
    floating(op, self, "log_softmax")
    n_classes = self.shape[class_dim]
    if not soft:
        loss = nll_loss_nd(self, target, weight, reduction, ignore_index)
        valid_reduction("cross_entropy", reduction)
        return loss
    check(target.dtype.is_floating_point, op, f"Expected floating point type for target with "
                                              f"class probabilities, got {target.dtype}")
    check(ignore_index < 0, op, "ignore_index is not supported for floating point target")
    check(weight is None or (weight.ndim == 1 and weight.numel() == n_classes), op,
          f"cross_entropy: weight tensor should be defined either for all {n_classes} classes "
          f"or no classes but got weight tensor of shape: "
          f"{None if weight is None else list(weight.shape)}")
    valid_reduction("cross_entropy", reduction)
    prod_ = call(aten.mul.Tensor, self, target)
    if weight is not None:
        w = weight if self.ndim == 1 else weight.like(
            tuple(weight.shape[0] if i == 1 else 1 for i in range(self.ndim)))
        prod_ = call(aten.mul.Tensor, prod_, w)
    if reduction == NONE:
        return call(aten.sum.dim_IntList, prod_, [class_dim])
    return prod_.like((), prod_.dtype)


# -- binary targets -----------------------------------------------------------------------


def _squeezed(shape: tuple) -> tuple:
    """squeeze(): drops the dims that are a plain 1 (symbolic sizes are taken as not 1)."""
    return tuple(s for s in shape if not (isinstance(s, int) and s == 1))


@rule(aten.binary_cross_entropy.default)
def binary_cross_entropy(self: TensorMeta, target: TensorMeta,
                         weight: TensorMeta | None = None, reduction: int = MEAN) -> TensorMeta:
    """Probabilities and targets of one dtype -> loss in self's shape (0-d when reduced);
    the kernel iterates over the squeezed tensors; weight multiplies the loss in place."""
    op = "binary_cross_entropy"
    check(target.dtype == self.dtype, op, f"Found dtype {target.dtype} but expected "
                                          f"{self.dtype}")
    floating(op, self, "binary_cross_entropy")
    sq = _squeezed(self.shape)
    out = broadcast_shapes(sq, _squeezed(target.shape), op=op)
    check(len(out) == len(sq) and every(a == b for a, b in zip(out, sq)), op,
          f"output with shape {list(sq)} doesn't match the broadcast shape {list(out)}")
    if weight is not None:
        same_shape(op, self, broadcast_shapes(self.shape, weight.shape, op=op))
        castable(op, call(aten.mul.Tensor, self, weight).dtype, self.dtype)
    return self.like(()) if reduction in (MEAN, SUM) else self.like()


@rule(aten.binary_cross_entropy_with_logits.default)
def binary_cross_entropy_with_logits(self: TensorMeta, target: TensorMeta,
                                     weight: TensorMeta | None = None,
                                     pos_weight: TensorMeta | None = None,
                                     reduction: int = MEAN) -> TensorMeta:
    """((1 - target) * self - log_sigmoid(self) [* pos-weighting]) [* weight], computed in
    place in a target-shaped temporary (self, weight broadcast into it), then reduced."""
    op = "binary_cross_entropy_with_logits"

    def inplace(acc: TensorMeta, other: TensorMeta) -> TensorMeta:
        grown = call(aten.mul.Tensor, acc, other)
        same_shape(op, acc, grown.shape)
        castable(op, grown.dtype, acc.dtype)
        return acc

    log_sig = call(aten.log_sigmoid.default, self)
    if pos_weight is not None:
        log_weight = call(aten.add.Scalar, call(aten.mul.Tensor, call(
            aten.sub.Scalar, pos_weight, 1), target), 1)
        log_sig = inplace(log_weight, log_sig)
    loss = inplace(inplace(call(aten.rsub.Scalar, target, 1), self), log_sig)
    if weight is not None:
        loss = inplace(loss, weight)
    return reduced(loss, reduction)


# -- margin and embedding losses ----------------------------------------------------------


@rule(aten.hinge_embedding_loss.default)
def hinge_embedding_loss(self: TensorMeta, target: TensorMeta, margin: float = 1.0,
                         reduction: int = MEAN) -> TensorMeta:
    """where(target != 1, max(margin - self, 0), 0) + where(target != -1, self, 0); margin
    is taken as a tensor of self's dtype (bool self: a bool subtraction, rejected)."""
    clamp = call(aten.sub.Tensor, self, self)
    out = call(aten.where.self, call(aten.ne.Scalar, target, 1), clamp, self)
    return reduced(out, reduction)


@rule(aten.margin_ranking_loss.default)
def margin_ranking_loss(input1: TensorMeta, input2: TensorMeta, target: TensorMeta,
                        margin: float = 0.0, reduction: int = MEAN) -> TensorMeta:
    """max(0, -target * (input1 - input2) + margin), broadcast (F.margin_ranking_loss
    checks that all three have one rank; the op does not)."""
    diff = call(aten.mul.Tensor, call(aten.neg.default, target),
                call(aten.sub.Tensor, input1, input2))
    return reduced(call(aten.add.Scalar, diff, margin), reduction)


@rule(aten.cosine_embedding_loss.default)
def cosine_embedding_loss(input1: TensorMeta, input2: TensorMeta, target: TensorMeta,
                          margin: float = 0.0, reduction: int = MEAN) -> TensorMeta:
    """(N, D) inputs with (N,) targets, or (D,) with a 0-d target; cosine over D."""
    op = "cosine_embedding_loss"
    t = target.ndim
    check(t in (0, 1), op, "0D or 1D target tensor expected, multi-target not supported")
    want = 2 if t == 1 else 1
    check(input1.ndim == want and input2.ndim == want, op,
          f"{t}D target tensor expects {want}D input tensors, but found inputs with sizes "
          f"{list(input1.shape)} and {list(input2.shape)}.")
    prod_sum = call(aten.sum.dim_IntList, call(aten.mul.Tensor, input1, input2), [t])
    mag = call(aten.add.Scalar, call(aten.sum.dim_IntList, call(
        aten.mul.Tensor, input1, input1), [t]), 1e-12)
    cos = call(aten.div.Tensor, prod_sum, mag)
    out = call(aten.where.self, call(aten.eq.Scalar, target, 1), cos, cos)
    return reduced(out, reduction)


@rule(aten.pairwise_distance.default)
def pairwise_distance(x1: TensorMeta, x2: TensorMeta, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> TensorMeta:
    """norm(x1 - x2 + eps, p) over the last dim of the broadcast shape."""
    diff = call(aten.add.Scalar, call(aten.sub.Tensor, x1, x2), eps)
    return call(aten.norm.ScalarOpt_dim, diff, p, [max(x1.ndim, x2.ndim) - 1], keepdim)


@rule(aten.triplet_margin_loss.default)
def triplet_margin_loss(anchor: TensorMeta, positive: TensorMeta, negative: TensorMeta,
                        margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, reduction: int = MEAN) -> TensorMeta:
    """max(d(a, p) - d(a, n) + margin, 0) with pairwise distances; one rank for all three."""
    op = "triplet_margin_loss"
    dims = (anchor.ndim, positive.ndim, negative.ndim)
    check(dims[0] == dims[1] == dims[2], op,
          f"The anchor, positive, and negative tensors are expected to have the same number "
          f"of dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative "
          f"{dims[2]}D inputs")
    pos = pairwise_distance(anchor, positive, p, eps)
    neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        neg = call(aten.min.other, neg, pairwise_distance(positive, negative, p, eps))
    loss = call(aten.sub.Tensor, call(aten.add.Scalar, pos, margin), neg)
    return reduced(call(aten.clamp_min.default, loss, 0), reduction)


def _margin_shape(op: str, self: TensorMeta) -> tuple:
    """(nframe, dim) of multi(label)_margin_loss: a non-empty vector or (N, C) matrix."""
    n = self.ndim
    ok = (n == 2 and self.shape[1] != 0) or (n == 1 and self.shape[0] != 0) or n == 0
    check(ok, op, f"Expected non-empty vector or matrix with optional 0-dim batch size, but "
                  f"got: {list(self.shape)}")
    if n <= 1:
        return 1, (1 if n == 0 else self.shape[0])
    return self.shape[0], self.shape[1]


@rule(aten.multilabel_margin_loss_forward.default)
def multilabel_margin_loss_forward(self: TensorMeta, target: TensorMeta,
                                   reduction: int) -> tuple:
    """(output, is_target): int64 targets of the input's shape; is_target is target-shaped."""
    op = "multilabel_margin_loss_forward"
    nframe, dim = _margin_shape(op, self)
    if self.ndim <= 1:
        ok = target.ndim <= 1 and target.numel() == dim
    else:
        ok = target.ndim == 2 and target.shape[0] == nframe and target.shape[1] == dim
    check(ok, op, f"inconsistent target size: {list(target.shape)} for input of size: "
                  f"{list(self.shape)}")
    check(target.dtype == torch.int64, op, f"expected scalar type Long but found "
                                           f"{target.dtype}")
    floating(op, self, "multilabel_margin_loss_forward_out_frame")
    out = (nframe,) if reduction == NONE and self.ndim == 2 else ()
    return self.like(out), self.like(target.shape)


@rule(aten.multilabel_margin_loss.default)
def multilabel_margin_loss(self: TensorMeta, target: TensorMeta,
                           reduction: int = MEAN) -> TensorMeta:
    """multilabel_margin_loss_forward's output."""
    return multilabel_margin_loss_forward(self, target, reduction)[0]


@rule(aten.multi_margin_loss.default)
def multi_margin_loss(self: TensorMeta, target: TensorMeta, p: Any = 1, margin: Any = 1,
                      weight: TensorMeta | None = None, reduction: int = MEAN) -> TensorMeta:
    """(N, C) scores, (N,) int64 class targets -> (N,) unreduced, else 0-d; p is 1 or 2."""
    op = "multi_margin_loss"
    check(p in (1, 2), op, "only p == 1 and p == 2 supported")
    nframe, dim = _margin_shape(op, self)
    check(target.ndim <= 1 and target.numel() == nframe, op,
          f"inconsistent target size, expected {nframe} but got {list(target.shape)}")
    if weight is not None:
        check(weight.ndim <= 1 and weight.numel() == dim, op,
              f"inconsistent weight size, expected {dim} but got {list(weight.shape)}")
    check(target.dtype == torch.int64, op, f"expected scalar type Long but found "
                                           f"{target.dtype}")
    floating(op, self, "multi_margin_loss_cpu_kernel")
    if weight is not None:
        check(weight.dtype == self.dtype, op, f"expected scalar type {self.dtype} but found "
                                              f"{weight.dtype}")
    return self.like((nframe,) if reduction == NONE and target.ndim > 0 else ())


# -- ctc ----------------------------------------------------------------------------------


def _ctc(log_probs: TensorMeta, targets: TensorMeta, reduction: int) -> TensorMeta:
    op = "ctc_loss"
    check(log_probs.ndim in (2, 3), op, f"ctc_loss expects log_probs to be (T, N, C) or "
                                        f"(T, C), got {list(log_probs.shape)}")
    floating(op, log_probs, "ctc_loss_cpu")
    check(log_probs.numel() != 0, op, "log_probs tensor must not be empty")
    batched = log_probs.ndim == 3
    out = (log_probs.shape[1],) if batched else ()
    return log_probs.like(out if reduction == NONE else ())


@rule(aten.ctc_loss.IntList, aten.ctc_loss.Tensor)
def ctc_loss(log_probs: TensorMeta, targets: TensorMeta, input_lengths: Any,
             target_lengths: Any, blank: int = 0, reduction: int = MEAN,
             zero_infinity: bool = False) -> TensorMeta:
    """(T, N, C) log-probabilities -> (N,) losses unreduced, else 0-d (tensor lengths are
    data; list lengths size a 1-d, concatenated targets)."""
    out = _ctc(log_probs, targets, reduction)
    batch = log_probs.shape[1] if log_probs.ndim == 3 else 1
    expected = None
    if targets.ndim == 2 and log_probs.ndim == 3:
        expected = batch
    elif targets.ndim == 1 and isinstance(target_lengths, (list, tuple)):
        expected = sum(target_lengths)
    if expected is not None:
        check(targets.shape[0] == expected, "ctc_loss", f"Expected tensor to have size "
              f"{expected} at dimension 0, but got size {targets.shape[0]} for argument #2 "
              f"'targets'")
    if targets.ndim == 2 and isinstance(target_lengths, (list, tuple)) and target_lengths:
        longest = max(target_lengths)
        check(targets.shape[1] >= longest, "ctc_loss", f"Expected tensor to have size at "
              f"least {longest} at dimension 1, but got size {targets.shape[1]} for argument "
              f"#2 'targets'")
    return out
