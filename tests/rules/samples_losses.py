"""Samples of loss functions (losses.py) and the activations of activations.py.

reduction is ATen's enum: 0 none, 1 mean, 2 sum.  Class targets carry data (``high``),
so those samples run on CPU; CPU is also the reference where the meta kernels disagree
with it (dtype rules of huber/soft_margin, nll_loss's target and weight dtypes).
"""

import torch

from tests.rules.harness import Sample, T

aten = torch.ops.aten
f64, f16, bf16, i64, i32, u8 = torch.float64, torch.float16, torch.bfloat16, torch.int64, \
    torch.int32, torch.uint8


def L(n, c=None, *rest):
    """int64 class targets of shape (n, *rest) in [0, c); n None: a 0-d target."""
    return T(dtype=i64, high=c) if n is None else T(n, *rest, dtype=i64, high=c)


SAMPLES = [
    # regression losses
    *[Sample(op, (T(3, 4), T(3, 4), r)) for op in (aten.mse_loss.default, aten.l1_loss.default,
                                                   aten.smooth_l1_loss.default,
                                                   aten.huber_loss.default,
                                                   aten.soft_margin_loss.default)
      for r in (0, 1, 2)],
    Sample(aten.mse_loss.default, (T(3, 4), T(4), 0)),
    Sample(aten.mse_loss.default, (T(4), T(3, 1, dtype=f64), 0)),
    Sample(aten.mse_loss.default, (T(3, 4, dtype=f16), T(3, 4, dtype=bf16))),
    Sample(aten.mse_loss.default, (T(3, 4, dtype=i64), T(3, 4), 2)),
    Sample(aten.mse_loss.default, (T(), T(), 0)),
    Sample(aten.l1_loss.default, (T(3, 4, dtype=i64), T(3, 4, dtype=i64), 0)),
    Sample(aten.l1_loss.default, (T(3, 4, dtype=i64), T(3, 4, dtype=i64), 2)),
    Sample(aten.l1_loss.default, (T(3, 1), T(5), 3)),
    Sample(aten.smooth_l1_loss.default, (T(3, 4), T(2, 1, 4), 0, 0.5)),
    Sample(aten.smooth_l1_loss.default, (T(3, 4), T(4), 1, 0.0)),
    Sample(aten.smooth_l1_loss.default, (T(3, 4), T(4), 3, 0.0)),
    Sample(aten.huber_loss.default, (T(3, 4), T(4, dtype=f64), 0, 2.0), device="cpu"),
    Sample(aten.huber_loss.default, (T(4), T(3, 4), 0), device="cpu"),
    Sample(aten.huber_loss.default, (T(4, dtype=bf16), T(4, dtype=f16), 1), device="cpu"),
    Sample(aten.huber_loss.default, (T(3, 4), T(3, 4), 3), device="cpu"),
    Sample(aten.soft_margin_loss.default, (T(3, 4, dtype=f16), T(4), 0), device="cpu"),
    Sample(aten.soft_margin_loss.default, (T(3, 4), T(3, 4), 3), device="cpu"),
    Sample(aten.kl_div.default, (T(3, 4), T(3, 4), 1)),
    Sample(aten.kl_div.default, (T(3, 4), T(4, dtype=f64), 0), {"log_target": True}),
    Sample(aten.kl_div.default, (T(3, 4, dtype=f16), T(3, 4), 2)),
    Sample(aten.poisson_nll_loss.default, (T(3, 4), T(3, 4), True, False, 1e-8, 1)),
    Sample(aten.poisson_nll_loss.default, (T(3, 4), T(4, dtype=f64), False, True, 1e-8, 0)),
    Sample(aten.poisson_nll_loss.default, (T(3, 4, dtype=i64), T(4), True, True, 1e-8, 0)),
    Sample(aten.poisson_nll_loss.default, (T(2, 3), T(2, 3), False, False, 1e-8, 2)),
    # nll / cross entropy
    *[Sample(aten.nll_loss_forward.default, (T(3, 4), L(3, 4), w, r, -100), device="cpu")
      for r in (0, 1, 2) for w in (None, T(4))],
    Sample(aten.nll_loss_forward.default, (T(4), L(None, 4), None, 0, -100), device="cpu"),
    Sample(aten.nll_loss_forward.default, (T(3, 4, dtype=f64), T(3, dtype=u8, high=4), None,
                                           0, 1), device="cpu"),
    Sample(aten.nll_loss_forward.default, (T(3, 4), L(3, 4), None, 3, -100), device="cpu"),
    Sample(aten.nll_loss.default, (T(3, 4), L(3, 4), None, 0), device="cpu"),
    Sample(aten.nll_loss.default, (T(0, 4), L(0, 4)), device="cpu"),
    *[Sample(aten.nll_loss2d_forward.default, (T(2, 3, 4, 5), L(2, 3, 4, 5), w, r, -100),
             device="cpu") for r in (0, 1) for w in (None, T(3))],
    Sample(aten.nll_loss2d.default, (T(2, 3, 4, 5, dtype=bf16), L(2, 3, 4, 5)), device="cpu"),
    *[Sample(aten.nll_loss_nd.default, (x, t, None, r), device="cpu")
      for r in (0, 1, 2) for x, t in ((T(3, 4), L(3, 4)), (T(4), L(None, 4)),
                                      (T(2, 3, 5), L(2, 3, 5)), (T(2, 3, 4, 5), L(2, 3, 4, 5)),
                                      (T(2, 3, 4, 5, 2), L(2, 3, 4, 5, 2)))],
    Sample(aten.nll_loss_nd.default, (T(0, 3, 5), L(0, 3, 5), T(3), 0), device="cpu"),
    Sample(aten.nll_loss_nd.default, (T(2, 3, 0), L(2, 3, 0), None, 0), device="cpu"),
    *[Sample(aten.cross_entropy_loss.default, (x, t, w, r, ii, ls), device="cpu")
      for r in (0, 1, 2) for ls in (0.0, 0.1) for x, t, w, ii in (
          (T(3, 4), L(3, 4), None, -100), (T(3, 4), L(3, 4), T(4), 1),
          (T(4), L(None, 4), None, -100), (T(4), L(None, 4), T(4), 2),
          (T(2, 3, 5), L(2, 3, 5), T(3), -100), (T(2, 3, 4, 5), L(2, 3, 4, 5), None, 0),
          (T(2, 3, 4, 5, 2, dtype=f64), L(2, 3, 4, 5, 2), T(3, dtype=f64), -100),
          (T(3, 4), T(3, 4), None, -100), (T(4), T(4), T(4), -100),
          (T(2, 3, 5), T(2, 3, 5, dtype=f64), T(3), -1),
          (T(3, 4, dtype=f16), T(3, 4), None, -100), (T(0, 4, 2), L(0, 4, 2), None, -100))],
    # binary targets
    *[Sample(aten.binary_cross_entropy.default, (T(3, 4), T(3, 4), w, r))
      for r in (0, 1, 2, 3) for w in (None, T(4), T(3, 1))],
    Sample(aten.binary_cross_entropy.default, (T(3, 4, dtype=bf16), T(4, dtype=bf16), None, 0)),
    Sample(aten.binary_cross_entropy.default, (T(3, 4, dtype=f64), T(3, 4, dtype=f64), T(4), 2)),
    Sample(aten.binary_cross_entropy.default, (T(), T(), None, 1)),
    *[Sample(aten.binary_cross_entropy_with_logits.default, (T(3, 4), T(3, 4), w, pw, r))
      for r in (0, 1, 2) for w, pw in ((None, None), (T(4), T(4)), (T(3, 1), None))],
    Sample(aten.binary_cross_entropy_with_logits.default, (T(4), T(3, 4), None, T(4), 0)),
    Sample(aten.binary_cross_entropy_with_logits.default, (T(3, 4, dtype=f64), T(3, 4), None,
                                                           None, 0)),
    Sample(aten.binary_cross_entropy_with_logits.default, (T(3, 4), T(3, 4, dtype=f64), T(4),
                                                           T(4, dtype=f16), 1)),
    # margins and embeddings
    *[Sample(aten.hinge_embedding_loss.default, (x, t, 1.0, r))
      for r in (0, 1, 2) for x, t in ((T(3, 4), T(3, 4)), (T(3, 4), T(4)), (T(4), T(3, 4)))],
    Sample(aten.hinge_embedding_loss.default, (T(3, dtype=i64), T(3), 0.5, 0)),
    Sample(aten.hinge_embedding_loss.default, (T(3, dtype=f16), T(3, dtype=f64), 0.5, 0)),
    Sample(aten.hinge_embedding_loss.default, (T(3, dtype=i32), T(1), 0.5, 2), device="cpu"),
    *[Sample(aten.margin_ranking_loss.default, (a, b, t, 0.1, r))
      for r in (0, 1, 2) for a, b, t in ((T(5), T(5), T(5)), (T(3, 4), T(1, 4), T(3, 1)),
                                         (T(3, dtype=i64), T(3, dtype=i64), T(3, dtype=i64)),
                                         (T(3, 4), T(4), T(4)))],
    *[Sample(aten.cosine_embedding_loss.default, (a, b, t, 0.2, r))
      for r in (0, 1, 2) for a, b, t in ((T(3, 4), T(3, 4), T(3)), (T(4), T(4), T()),
                                         (T(3, 4), T(1, 4), T(1)),
                                         (T(3, 4, dtype=f64), T(3, 4), T(3, dtype=i64)),
                                         (T(3, 4, dtype=i64), T(3, 4, dtype=i64), T(3)))],
    *[Sample(aten.pairwise_distance.default, (a, b, p, 1e-6, k))
      for k in (False, True) for p in (2.0, 1.0) for a, b in (
          (T(3, 4), T(3, 4)), (T(3, 4), T(4)), (T(4), T(2, 3, 4)), (T(4), T(4)), (T(), T()),
          (T(3, 4, dtype=i64), T(3, 4, dtype=i64)), (T(3, 4, dtype=f16), T(3, 4, dtype=f64)))],
    *[Sample(aten.triplet_margin_loss.default, (a, b, c, 1.0, p, 1e-6, s, r))
      for r in (0, 1, 2) for s in (False, True) for p in (2.0, 1.0) for a, b, c in (
          (T(3, 4), T(3, 4), T(3, 4)), (T(3, 4), T(1, 4), T(3, 1)))],
    Sample(aten.triplet_margin_loss.default, (T(4), T(4), T(4))),
    Sample(aten.triplet_margin_loss.default, (T(2, 3, 4, dtype=f64), T(2, 3, 4), T(2, 3, 4),
                                              0.5, 2.0, 1e-6, True, 0)),
    *[Sample(aten.multilabel_margin_loss_forward.default, (x, t, r), device="cpu")
      for r in (0, 1, 2) for x, t in ((T(3, 4), L(3, 4, 4)), (T(4), L(4, 4)),
                                      (T(0, 4, dtype=f64), L(0, 4, 4)))],
    Sample(aten.multilabel_margin_loss_forward.default, (T(), L(None, 1), 0), device="cpu"),
    Sample(aten.multilabel_margin_loss.default, (T(3, 4), L(3, 4, 4)), device="cpu"),
    Sample(aten.multilabel_margin_loss.default, (T(3, 4), L(3, 4, 4), 0), device="cpu"),
    *[Sample(aten.multi_margin_loss.default, (x, t, p, 0.5, w, r), device="cpu")
      for r in (0, 1, 2, 3) for p in (1, 2) for x, t, w in (
          (T(3, 4), L(3, 4), None), (T(3, 4), L(3, 4), T(4)), (T(4), L(None, 4), None),
          (T(4), L(1, 4), T(4)), (T(0, 4, dtype=f64), L(0, 4), None))],
    Sample(aten.multi_margin_loss.default, (T(), L(None, 1), 1, 1, None, 2), device="cpu"),
    # distances and shuffles (linalg.py, shuffles.py)
    *[Sample(op, (T(*s, dtype=d),) + p) for op in (aten.pdist.default, aten._pdist_forward.default)
      for s in ((5, 3), (1, 3), (0, 3), (5, 0)) for d in (torch.float32, f64)
      for p in ((), (1.0,))],
    Sample(aten.pdist.default, (T(6, 2), 0.0)),
    *[Sample(op, (T(*s, dtype=d), g), device="cpu") for op in (aten.channel_shuffle.default,
                                                 aten.native_channel_shuffle.default)
      for s, g, d in (((2, 4, 3), 2, torch.float32), ((2, 6, 3, 3), 3, i64),
                      ((0, 4, 3), 4, torch.bool), ((2, 4, 0, 1, 2), 1, f16))],
    # ctc (lengths are data; the output depends only on the batch)
    *[Sample(aten.ctc_loss.IntList, (T(6, 2, 5), T(2, 3, dtype=i64, high=4), [6, 5], [3, 2], 4,
                                     r), device="cpu") for r in (0, 1, 2)],
    Sample(aten.ctc_loss.IntList, (T(6, 5, dtype=f64), T(3, dtype=i64, high=4), [6], [3], 4, 0),
           device="cpu"),
    Sample(aten.ctc_loss.Tensor, (T(6, 2, 5), T(5, dtype=i64, high=4), torch.tensor([6, 6]),
                                  torch.tensor([3, 2]), 4, 0), device="cpu"),
    Sample(aten.ctc_loss.Tensor, (T(6, 2, 5), T(5, dtype=i64, high=4), torch.tensor([6, 6]),
                                  torch.tensor([3, 2]), 4, 1), device="cpu"),
    # activations
    *[Sample(op, (T(*s, dtype=d),)) for op in (aten.log_sigmoid.default,
                                               aten.log_sigmoid_forward.default)
      for s in ((3, 4), (), (0,)) for d in (torch.float32, f64, bf16)],
    Sample(aten.log_sigmoid_forward.default, (T(3, 4, dtype=f16),), device="cpu"),
    Sample(aten.rrelu.default, (T(3, 4),)),
    Sample(aten.rrelu.default, (T(3, 4, dtype=f64), 0.1, 0.3, True)),
    Sample(aten.rrelu.default, (T(2, dtype=bf16), 0.2, 0.2), device="cpu"),
    Sample(aten.rrelu_with_noise.default, (T(3, 4), T(3, 4)), device="cpu"),
    Sample(aten.rrelu_with_noise.default, (T(3, 4, dtype=f64), T(3, 4, dtype=f64), 0.1, 0.3,
                                           True), device="cpu"),
]

ERROR_SAMPLES = [
    Sample(aten.mse_loss.default, (T(3, 4), T(3, 5))),
    Sample(aten.mse_loss.default, (T(3, dtype=i64), T(3, dtype=i64), 0), device="cpu"),
    Sample(aten.mse_loss.default, (T(3), T(3), 3), device="cpu"),
    Sample(aten.l1_loss.default, (T(3, dtype=i64), T(3, dtype=i64), 1)),
    Sample(aten.l1_loss.default, (T(3, dtype=torch.bool), T(3, dtype=torch.bool), 0)),
    Sample(aten.smooth_l1_loss.default, (T(3), T(3), 1, -1.0), device="cpu"),
    Sample(aten.huber_loss.default, (T(3), T(3), 1, 0.0)),
    Sample(aten.huber_loss.default, (T(3, dtype=i64), T(3), 1), device="cpu"),
    Sample(aten.soft_margin_loss.default, (T(4), T(3, 4), 0), device="cpu"),
    Sample(aten.soft_margin_loss.default, (T(3, dtype=i64), T(3), 0), device="cpu"),
    Sample(aten.kl_div.default, (T(3, dtype=i64), T(3), 1)),
    Sample(aten.hinge_embedding_loss.default, (T(3, dtype=torch.bool), T(3), 1.0, 0)),
    Sample(aten.hinge_embedding_loss.default, (T(3, dtype=i64), T(3), 1.0, 1), device="cpu"),
    Sample(aten.nll_loss_forward.default, (T(3, 4), L(2, 4), None, 1, -100), device="cpu"),
    Sample(aten.nll_loss_forward.default, (T(3, 4), T(3, dtype=i32, high=4), None, 1, -100),
           device="cpu"),
    Sample(aten.nll_loss_forward.default, (T(3, 4), L(3, 4), T(5), 1, -100), device="cpu"),
    Sample(aten.nll_loss_forward.default, (T(3, 4), L(3, 4), T(4, dtype=f64), 1, -100),
           device="cpu"),
    Sample(aten.nll_loss_forward.default, (T(3, 4, 5), L(3, 4), None, 1, -100), device="cpu"),
    Sample(aten.nll_loss2d_forward.default, (T(2, 3, 4, 5), L(2, 4, 6, 3), None, 1, -100),
           device="cpu"),
    Sample(aten.nll_loss_nd.default, (T(3, 4), L(2, 4)), device="cpu"),
    Sample(aten.nll_loss_nd.default, (T(2, 3, 5), L(2, 4, 3)), device="cpu"),
    Sample(aten.nll_loss_nd.default, (T(2, 0, 5), L(2, 5, 1)), device="cpu"),
    Sample(aten.cross_entropy_loss.default, (T(3, 4), L(2, 4)), device="cpu"),
    Sample(aten.cross_entropy_loss.default, (T(3, 4), T(3, 4, dtype=i64, high=4)),
           device="cpu"),
    Sample(aten.cross_entropy_loss.default, (T(3, 4), T(3, 4), None, 1, 2), device="cpu"),
    Sample(aten.cross_entropy_loss.default, (T(3, 4), T(3, 4), T(5)), device="cpu"),
    Sample(aten.cross_entropy_loss.default, (T(3, 4), L(3, 4), None, 1, -100, 1.5),
           device="cpu"),
    Sample(aten.cross_entropy_loss.default, (T(3, 4, 5), L(3, 4, 4)), device="cpu"),
    Sample(aten.cross_entropy_loss.default, (T(3, 4, dtype=i64), L(3, 4)), device="cpu"),
    Sample(aten.binary_cross_entropy.default, (T(3, 4), T(3, 4), T(5, 3, 4)), device="cpu"),
    Sample(aten.binary_cross_entropy.default, (T(3, 4), T(3, 4, dtype=f64)), device="cpu"),
    Sample(aten.binary_cross_entropy_with_logits.default, (T(3, 4), T(4)), device="cpu"),
    Sample(aten.binary_cross_entropy_with_logits.default, (T(3, 4), T(3, 4), T(2, 4))),
    Sample(aten.binary_cross_entropy_with_logits.default, (T(3, dtype=i64), T(3)), device="cpu"),
    Sample(aten.binary_cross_entropy_with_logits.default, (T(3, 4), T(3, 4), None, T(2, 1, 4),
                                                           0), device="cpu"),
    Sample(aten.margin_ranking_loss.default, (T(3, 4), T(3, 4), T(3))),
    Sample(aten.margin_ranking_loss.default, (T(3), T(3), T(3, dtype=torch.bool))),
    Sample(aten.cosine_embedding_loss.default, (T(3, 4), T(3, 4), T(3, 1))),
    Sample(aten.cosine_embedding_loss.default, (T(3, 4), T(3, 4), T())),
    Sample(aten.cosine_embedding_loss.default, (T(3, 4), T(2, 4), T(3))),
    Sample(aten.pairwise_distance.default, (T(3, 4), T(3, 5))),
    Sample(aten.triplet_margin_loss.default, (T(3, 4), T(3, 4), T(4))),
    Sample(aten.multilabel_margin_loss_forward.default, (T(3, 4), L(4, 4), 1), device="cpu"),
    Sample(aten.multilabel_margin_loss_forward.default, (T(3, 0), L(3, 1, 0), 1),
           device="cpu"),
    Sample(aten.multilabel_margin_loss_forward.default, (T(3, 4), T(3, 4, dtype=i32, high=4),
                                                         1), device="cpu"),
    Sample(aten.multi_margin_loss.default, (T(3, 4), L(2, 4)), device="cpu"),
    Sample(aten.multi_margin_loss.default, (T(3, 4), L(3, 4), 3), device="cpu"),
    Sample(aten.multi_margin_loss.default, (T(3, 4), L(3, 4), 1, 1, T(5)), device="cpu"),
    Sample(aten.multi_margin_loss.default, (T(3, 4, 5), L(3, 4)), device="cpu"),
    Sample(aten.log_sigmoid.default, (T(3, dtype=i64),), device="cpu"),
    Sample(aten.pdist.default, (T(2, 5, 3),)),
    Sample(aten.pdist.default, (T(5, 3, dtype=i64),)),
    Sample(aten.pdist.default, (T(5, 3), -1.0)),
    Sample(aten.channel_shuffle.default, (T(2, 4), 2), device="cpu"),
    Sample(aten.channel_shuffle.default, (T(2, 4, 3), 3), device="cpu"),
    Sample(aten.native_channel_shuffle.default, (T(2, 4, 3), 0), device="cpu"),
    Sample(aten.rrelu.default, (T(3), 0.5, 0.1), device="cpu"),
    Sample(aten.rrelu_with_noise.default, (T(3, 4), T(2)), device="cpu"),
]
