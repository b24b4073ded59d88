"""Samples for linalg solvers and decompositions (rules/linalg_decomp.py)."""

from __future__ import annotations

import torch

from tests.rules.harness import Sample as S, T

aten = torch.ops.aten
f16, f64, i32, i64, c64 = torch.float16, torch.float64, torch.int32, torch.int64, torch.complex64

_SQUARE_OPS = [aten.linalg_inv.default, aten.inverse.default, aten.linalg_inv_ex.default,
               aten.linalg_matrix_exp.default, aten.matrix_exp.default,
               aten.cholesky_inverse.default, aten.linalg_det.default, aten.det.default,
               aten.logdet.default, aten._linalg_det.default, aten.linalg_slogdet.default,
               aten.slogdet.default, aten._linalg_slogdet.default, aten.linalg_cholesky.default,
               aten.linalg_cholesky_ex.default,
               aten.linalg_eigh.default, aten._linalg_eigh.default,
               aten.linalg_eigvalsh.default, aten.linalg_eig.default,
               aten.linalg_eigvals.default]
if hasattr(aten, "cholesky"):  # torch 2.14 dropped aten.cholesky (the rule is registered only
    _SQUARE_OPS.append(aten.cholesky.default)  # where it exists)

SAMPLES: list[S] = []
ERROR_SAMPLES: list[S] = []
for _op in _SQUARE_OPS:
    SAMPLES += [S(_op, (T(3, 3),)), S(_op, (T(2, 4, 4, dtype=f64),)), S(_op, (T(0, 2, 2),)),
                S(_op, (T(2, 2, dtype=c64),))]
    ERROR_SAMPLES += [S(_op, (T(3, 4),), device="cpu"), S(_op, (T(3),), device="cpu"),
                      S(_op, (T(3, 3, dtype=i64),), device="cpu")]

SAMPLES += [
    S(aten._linalg_eigh.default, (T(2, 3, 3), "U", False)),
    S(aten.linalg_eigh.default, (T(3, 3), "U")),
    S(aten.linalg_matrix_power.default, (T(2, 3, 3), 3)),
    S(aten.linalg_matrix_power.default, (T(3, 3, dtype=i64), 0)),
    S(aten.linalg_matrix_power.default, (T(3, 3), -2)),
    S(aten.matrix_power.default, (T(4, 2, 2, dtype=f64), 2)),
    # solve: matrix and vector right-hand sides, broadcasting batches, left=False
    S(aten.linalg_solve.default, (T(3, 3), T(3, 2))),
    S(aten.linalg_solve.default, (T(3, 3), T(3))),
    S(aten.linalg_solve.default, (T(2, 3, 3), T(2, 3))),
    S(aten.linalg_solve.default, (T(2, 3, 3), T(4, 1, 3, 2))),
    S(aten.linalg_solve.default, (T(2, 3, 3), T(3, 3))),
    S(aten.linalg_solve.default, (T(2, 3, 3), T(2, 4, 3)), {"left": False}),
    S(aten.linalg_solve_ex.default, (T(2, 3, 3, dtype=c64), T(3, 1, dtype=c64))),
    S(aten._linalg_solve_ex.default, (T(2, 3, 3), T(4, 1, 3, 2))),
    S(aten._linalg_solve_ex.default, (T(3, 3), T(3))),
    S(aten.linalg_solve_triangular.default, (T(4, 3, 3), T(2, 1, 3, 2)), {"upper": True}),
    S(aten.linalg_solve_triangular.default, (T(3, 3), T(2, 3)), {"upper": False, "left": False}),
    S(aten.triangular_solve.default, (T(2, 1, 3, 2), T(4, 3, 3))),
    S(aten.triangular_solve.default, (T(3, 2, dtype=f64), T(3, 3, dtype=f64), False, True)),
    S(aten.cholesky_solve.default, (T(2, 1, 3, 2), T(4, 3, 3))),
    S(aten.cholesky_solve.default, (T(3, 1), T(3, 3), True)),
    # lstsq: no meta kernel; full-rank random data on CPU
    S(aten.linalg_lstsq.default, (T(2, 5, 3), T(2, 5, 2)), device="cpu"),
    S(aten.linalg_lstsq.default, (T(2, 3, 5), T(2, 3, 2)), device="cpu"),
    S(aten.linalg_lstsq.default, (T(5, 3), T(5)), device="cpu"),
    S(aten.linalg_lstsq.default, (T(1, 5, 3, dtype=f64), T(2, 5, 1, dtype=f64)), device="cpu"),
    S(aten.linalg_lstsq.default, (T(2, 1, 5, 3), T(2, 3, 5, 2)), {"driver": "gelsy"}, device="cpu"),
    S(aten.linalg_lstsq.default, (T(2, 1, 5, 3), T(2, 3, 5, 2)), {"driver": "gels"}, device="cpu"),
    S(aten.linalg_lstsq.default, (T(2, 1, 3, 5), T(2, 3, 3, 2)), {"driver": "gelsd"}, device="cpu"),
    S(aten.linalg_lstsq.default, (T(2, 5, 3), T(2, 5)), {"driver": "gels"}, device="cpu"),
    S(aten.linalg_lstsq.default, (T(2, 5, 3), T(2, 5, 2)), {"driver": "gels"}, device="cpu"),
    S(aten.linalg_lstsq.default, (T(5, 3), T(5)), {"driver": "gels"}, device="cpu"),
    S(aten.linalg_lstsq.default, (T(3, 5), T(3, 2)), {"driver": "gels"}, device="cpu"),
    S(aten.linalg_lstsq.default, (T(2, 3, 5), T(2, 3, 2)), {"driver": "gelsd"}, device="cpu"),
    S(aten.linalg_lstsq.default, (T(3, 3), T(3, 2)), {"driver": "gelss"}, device="cpu"),
    # qr / svd
    *[S(aten.linalg_qr.default, (t, mode)) for t in (T(2, 5, 3), T(3, 5), T(0, 4, 4))
      for mode in ("reduced", "complete", "r")],
    *[S(aten.linalg_svd.default, (t, full)) for t in (T(2, 5, 3), T(3, 5, dtype=c64))
      for full in (True, False)],
    S(aten._linalg_svd.default, (T(2, 3, 4),)),
    S(aten._linalg_svd.default, (T(2, 3, 4), True)),
    S(aten._linalg_svd.default, (T(2, 3, 4), False, False)),
    S(aten.linalg_svdvals.default, (T(2, 3, 4),)),
    S(aten.linalg_svdvals.default, (T(5, 2, dtype=c64),)),
    # pinv
    S(aten.linalg_pinv.default, (T(2, 3, 4), 1e-5)),
    S(aten.linalg_pinv.rcond_tensor, (T(2, 3, 4), T(5, 1))),
    S(aten.linalg_pinv.atol_rtol_float, (T(3, 4, dtype=f64),), {"atol": 0.1}),
    S(aten.linalg_pinv.atol_rtol_tensor, (T(2, 3, 4),), {"atol": T(5, 1), "rtol": None}),
    S(aten.linalg_pinv.atol_rtol_tensor, (T(2, 3, 4, dtype=c64),), {"hermitian": False}),
    # trace, vecdot, matrix_norm
    S(aten.trace.default, (T(3, 4),)),
    S(aten.trace.default, (T(3, 4, dtype=i32),)),
    S(aten.trace.default, (T(0, 2, dtype=f16),)),
    S(aten.linalg_vecdot.default, (T(2, 1, 3), T(4, 3))),
    S(aten.linalg_vecdot.default, (T(2, 3, dtype=c64), T(2, 3, dtype=c64)), {"dim": 0}),
    S(aten.linalg_matrix_norm.default, (T(2, 3, 4), 1)),
    S(aten.linalg_matrix_norm.default, (T(2, 3, 4), -2, [0, 2], True)),
    S(aten.linalg_matrix_norm.str_ord, (T(2, 3, 4),)),
    S(aten.linalg_matrix_norm.str_ord, (T(2, 3, 4, dtype=c64), "nuc")),
    S(aten.linalg_matrix_norm.str_ord, (T(3, 4),), {"dtype": f64}),
]
ERROR_SAMPLES += [
    S(aten.linalg_eigh.default, (T(3, 3), "X"), device="cpu"),
    S(aten.linalg_matrix_power.default, (T(3, 4), 2), device="cpu"),
    S(aten.linalg_matrix_power.default, (T(3, 3, dtype=i64), -1), device="cpu"),
    S(aten.linalg_solve.default, (T(3, 3), T(4, 2)), device="cpu"),
    S(aten.linalg_solve.default, (T(3, 3), T(3)), {"left": False}, device="cpu"),
    S(aten.linalg_solve.default, (T(3, 3), T(3, 2, dtype=f64)), device="cpu"),
    S(aten.linalg_solve.default, (T(2, 3, 3), T(3, 3, 2)), device="cpu"),
    S(aten.linalg_solve.default, (T(3, 4), T(3, 2)), device="cpu"),
    S(aten.linalg_solve_triangular.default, (T(3, 3), T(4, 2)), {"upper": True}, device="cpu"),
    S(aten.linalg_solve_triangular.default, (T(3, 3), T(3)), {"upper": True}, device="cpu"),
    S(aten.triangular_solve.default, (T(3, 2), T(3, 3, dtype=f64)), device="cpu"),
    S(aten.cholesky_solve.default, (T(4, 2), T(3, 3)), device="cpu"),
    S(aten.linalg_lstsq.default, (T(5, 3), T(4, 2)), device="cpu"),
    S(aten.linalg_lstsq.default, (T(2, 5, 3), T(5, 2)), device="cpu"),
    S(aten.linalg_lstsq.default, (T(5, 3), T(2, 5, 2)), device="cpu"),
    S(aten.linalg_lstsq.default, (T(5, 3), T(5, 2, dtype=f64)), device="cpu"),
    S(aten.linalg_lstsq.default, (T(5, 3, dtype=i64), T(5, 2, dtype=i64)), device="cpu"),
    S(aten.linalg_lstsq.default, (T(5, 3), T(5, 2)), {"driver": "foo"}, device="cpu"),
    S(aten.linalg_qr.default, (T(3, 4), "x"), device="cpu"),
    S(aten.linalg_qr.default, (T(4),), device="cpu"),
    S(aten.linalg_svd.default, (T(4, 3, dtype=i64),), device="cpu"),
    S(aten.linalg_svdvals.default, (T(4),), device="cpu"),
    S(aten.linalg_pinv.default, (T(4, 3, dtype=i64), 1e-5), device="cpu"),
    S(aten.linalg_pinv.rcond_tensor, (T(2, 3, 4), T(5)), device="cpu"),
    S(aten.trace.default, (T(2, 3, 4),), device="cpu"),
    S(aten.trace.default, (T(3, 3, dtype=torch.bool),), device="cpu"),
    S(aten.linalg_vecdot.default, (T(2, 3), T(2, 3, dtype=f64)), device="cpu"),
    S(aten.linalg_vecdot.default, (T(2, 3, dtype=i64), T(2, 3, dtype=i64)), device="cpu"),
    S(aten.linalg_vecdot.default, (T(2, 3), T(4)), device="cpu"),
    S(aten.linalg_matrix_norm.default, (T(2, 3, 4), 3), device="cpu"),
    S(aten.linalg_matrix_norm.str_ord, (T(3),), device="cpu"),
]
