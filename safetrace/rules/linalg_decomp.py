"""Shape rules of torch.linalg's solvers and decompositions: inv, det, slogdet, solve,
cholesky, qr, svd, eigh, eig, pinv, lstsq, triangular solves; also trace, vecdot and
matrix_norm.

Inputs are batches of matrices ``(*, m, n)`` of a floating or complex dtype.  Results
only need shape and dtype here: LAPACK's column-major layouts are tracked by the tracer
(see trace/layout.py).  Pivots and infos are int32, ranks int64; singular values,
eigenvalues of Hermitian matrices and log-determinants are real.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from safetrace.errors import lstsq_residuals
from safetrace.meta import TensorMeta
from safetrace.rules.common import (
    broadcast_shapes, check, decided_min, is_empty, normalize_dim, to_real,
)
from safetrace.rules.linalg import matrix_norm
from safetrace.rules.registry import rule

aten = torch.ops.aten
I32, I64 = torch.int32, torch.int64


def _empty(A: TensorMeta, dtype: torch.dtype | None = None) -> TensorMeta:
    """The (0,) placeholder returned for outputs that were not computed."""
    return A.like(shape=(0,), dtype=A.dtype if dtype is None else dtype)


def matrices(op: str, A: TensorMeta, name: str = "A") -> None:
    """A batch of matrices of a floating or complex dtype."""
    check(A.ndim >= 2, op, f"{op}: The input tensor {name} must have at least 2 dimensions.")
    check(A.dtype.is_floating_point or A.dtype.is_complex, op,
          f"{op}: Expected a floating point or complex tensor as input. Got {A.dtype}")


def square(op: str, A: TensorMeta, name: str = "A") -> None:
    """A batch of square matrices of a floating or complex dtype."""
    matrices(op, A, name)
    check(A.shape[-1] == A.shape[-2], op, f"{op}: {name} must be batches of square matrices, "
                                          f"but they are {A.shape[-2]} by {A.shape[-1]} "
                                          f"matrices")


def same_dtype(op: str, A: TensorMeta, B: TensorMeta, a: str = "A", b: str = "B") -> None:
    check(A.dtype == B.dtype, op, f"{op}: Expected {a} and {b} to have the same dtype, but "
                                  f"found {a} of type {A.dtype} and {b} of type {B.dtype} "
                                  f"instead.")


def batch_of(A: TensorMeta) -> tuple:
    return A.shape[:-2]


# -- inverses and determinants --------------------------------------------------------------


@rule(aten.linalg_inv.default, aten.inverse.default, aten.linalg_matrix_exp.default,
      aten.matrix_exp.default, aten.cholesky_inverse.default)
def linalg_inv(A: TensorMeta, upper: bool = False) -> TensorMeta:
    """A square batch in, the same shape and dtype out."""
    square("linalg.inv", A)
    return A.like()


@rule(aten.linalg_inv_ex.default)
def linalg_inv_ex(A: TensorMeta, *, check_errors: bool = False) -> tuple:
    """(inverse, int32 info per matrix)."""
    square("linalg.inv_ex", A)
    return A.like(), A.like(shape=batch_of(A), dtype=I32)


@rule(aten.linalg_matrix_power.default, aten.matrix_power.default)
def matrix_power(A: TensorMeta, n: int) -> TensorMeta:
    """A square batch; integer dtypes allowed for n >= 0 (n < 0 inverts)."""
    op = "linalg.matrix_power"
    check(A.ndim >= 2, op, f"{op}: The input tensor A must have at least 2 dimensions.")
    check(A.shape[-1] == A.shape[-2], op, f"{op}: A must be batches of square matrices, but "
                                          f"they are {A.shape[-2]} by {A.shape[-1]} matrices")
    if n < 0:
        square("linalg.inv", A)
    return A.like()


@rule(aten.linalg_det.default, aten.det.default, aten.logdet.default)
def linalg_det(A: TensorMeta) -> TensorMeta:
    """One value per matrix, of A's dtype."""
    square("linalg.det", A)
    return A.like(shape=batch_of(A))


@rule(aten._linalg_det.default)
def _linalg_det(A: TensorMeta) -> tuple:
    """(det, LU, int32 pivots)."""
    det = linalg_det(A)
    return det, A.like(), A.like(shape=A.shape[:-1], dtype=I32)


@rule(aten.linalg_slogdet.default, aten.slogdet.default)
def linalg_slogdet(A: TensorMeta) -> tuple:
    """(sign of A's dtype, real log|det|), one per matrix."""
    square("linalg.slogdet", A)
    return A.like(shape=batch_of(A)), A.like(shape=batch_of(A), dtype=to_real(A.dtype))


@rule(aten._linalg_slogdet.default)
def _linalg_slogdet(A: TensorMeta) -> tuple:
    """(sign, logabsdet, LU, int32 pivots)."""
    return (*linalg_slogdet(A), A.like(), A.like(shape=A.shape[:-1], dtype=I32))


# -- solvers --------------------------------------------------------------------------------


def _is_vector_rhs(A: TensorMeta, B: TensorMeta) -> bool:
    """torch's linalg_solve_is_vector_rhs: B is (n,) or a batch of vectors (*, n)."""
    if B.ndim == 1:
        return True
    if B.ndim != A.ndim - 1:
        return False
    return all(a is b or a == b for a, b in zip(B.shape, A.shape[:-1]))  # a guard, as eager


def _solve_shape(op: str, A: TensorMeta, B: TensorMeta, left: bool) -> tuple:
    """The result's shape of solving AX = B (left) or XA = B."""
    vector = _is_vector_rhs(A, B)
    check(left or not vector, op, f"{op}: Vector broadcasting of the left hand side is not "
                                  f"supported for left=False. In this case linalg.solve is "
                                  f"equivalent to B / A.squeeze(-1)")
    B2 = B.shape + (1,) if vector else B.shape
    n = A.shape[-1]
    ok = B2[-2] == n if left else B2[-1] == n
    check(ok, op, f"{op}: Incompatible shapes of A and B for the equation "
                  f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{A.shape[-1]} and "
                  f"{B2[-2]}x{B2[-1]})")
    batch = broadcast_shapes(A.shape[:-2], B2[:-2], op=op)
    return batch + (B2[-2:-1] if vector else B2[-2:])


@rule(aten.linalg_solve.default)
def linalg_solve(A: TensorMeta, B: TensorMeta, *, left: bool = True) -> TensorMeta:
    """X with AX = B: batches broadcast; B is a matrix or a (batch of) vector(s)."""
    op = "linalg.solve"
    square(op, A)
    same_dtype(op, A, B)
    return A.like(shape=_solve_shape(op, A, B, left))


@rule(aten.linalg_solve_ex.default)
def linalg_solve_ex(A: TensorMeta, B: TensorMeta, *, left: bool = True,
                    check_errors: bool = False) -> tuple:
    """(result, int32 info per matrix of A)."""
    return linalg_solve(A, B, left=left), A.like(shape=batch_of(A), dtype=I32)


@rule(aten._linalg_solve_ex.default)
def _linalg_solve_ex(A: TensorMeta, B: TensorMeta, *, left: bool = True,
                     check_errors: bool = False) -> tuple:
    """(result, LU of A's own shape, int32 pivots, int32 info)."""
    return (linalg_solve(A, B, left=left), A.like(), A.like(shape=A.shape[:-1], dtype=I32),
            A.like(shape=batch_of(A), dtype=I32))


def _triangular_shape(op: str, A: TensorMeta, B: TensorMeta, left: bool) -> tuple:
    check(B.ndim >= 2, op, f"{op}: The input tensor B must have at least 2 dimensions.")
    n = A.shape[-1]
    ok = B.shape[-2] == n if left else B.shape[-1] == n
    check(ok, op, f"{op}: Incompatible shapes of A and B for the equation "
                  f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{A.shape[-1]} and "
                  f"{B.shape[-2]}x{B.shape[-1]})")
    return broadcast_shapes(A.shape[:-2], B.shape[:-2], op=op)


@rule(aten.linalg_solve_triangular.default)
def linalg_solve_triangular(self: TensorMeta, B: TensorMeta, *, upper: bool, left: bool = True,
                            unitriangular: bool = False) -> TensorMeta:
    """X with AX = B (or XA = B) for triangular A = self; batches broadcast."""
    op = "linalg.solve_triangular"
    square(op, self)
    same_dtype(op, self, B)
    return B.like(shape=_triangular_shape(op, self, B, left) + B.shape[-2:])


@rule(aten.triangular_solve.default)
def triangular_solve(self: TensorMeta, A: TensorMeta, upper: bool = True,
                     transpose: bool = False, unitriangular: bool = False) -> tuple:
    """(solution of A X = b with b = self, A broadcast to the common batch)."""
    op = "triangular_solve"
    square(op, A)
    check(self.dtype == A.dtype, op, f"Expected b and A to have the same dtype, but found b "
                                     f"of type {self.dtype} and A of type {A.dtype} instead.")
    batch = _triangular_shape(op, A, self, True)
    return self.like(shape=batch + self.shape[-2:]), A.like(shape=batch + A.shape[-2:])


@rule(aten.cholesky_solve.default)
def cholesky_solve(self: TensorMeta, input2: TensorMeta, upper: bool = False) -> TensorMeta:
    """X with L L^H X = B (B = self, L = input2); batches broadcast."""
    op = "cholesky_solve"
    square(op, input2)
    check(self.dtype == input2.dtype, op, f"Expected b and A to have the same dtype, but found "
                                          f"b of type {self.dtype} and A of type "
                                          f"{input2.dtype} instead.")
    return self.like(shape=_triangular_shape(op, input2, self, True) + self.shape[-2:])


@rule(aten.linalg_lstsq.default)
def linalg_lstsq(self: TensorMeta, b: TensorMeta, rcond: float | None = None, *,
                 driver: str | None = None) -> tuple:
    """(solution, residuals, rank, singular_values); which are computed depends on the
    driver (default: gelsy on CPU, gels elsewhere)."""
    op = "torch.linalg.lstsq"
    matrices(op, self, "input")
    check(b.ndim >= 1, op, f"{op}: input must have at least 1 dimension.")
    same_dtype(op, self, b, "input", "other")
    cpu = self.device.type == "cpu"
    driver = driver if driver is not None else ("gelsy" if cpu else "gels")
    allowed = ("gels", "gelsy", "gelsd", "gelss") if cpu else ("gels",)
    check(driver in allowed, op, f"{op}: parameter `driver` should be one of "
                                 f"{allowed}")
    check(0 <= self.ndim - b.ndim <= 1, op, f"{op}: input.dim() must be greater or equal to "
                                            f"other.dim() and (input.dim() - other.dim()) <= 1")
    vector = _is_vector_rhs(self, b)
    # torch misaligns the batch of a matrix `b` with one dim less than input: it raises
    check(vector or self.ndim == b.ndim, op, f"{op}: the batch dims of input "
                                             f"{list(self.shape)} and other {list(b.shape)} "
                                             f"do not broadcast")
    B = b.shape + (1,) if vector else b.shape
    m, n = self.shape[-2], self.shape[-1]
    check(B[-2] == m, op, f"{op}: input.size(-2) should match other.size(-2)")
    batch = broadcast_shapes(self.shape[:-2], B[:-2], op=op)
    solution = self.like(shape=batch + ((n,) if vector else (n, B[-1])))
    real = to_real(self.dtype)
    # rank and singular values follow input's own batch, the solution the broadcast one
    rank = self.like(shape=batch_of(self), dtype=I64) if driver != "gels" else \
        _empty(self, I64)
    svals = (self.like(shape=batch_of(self) + (decided_min(m, n),), dtype=real)
             if driver in ("gelsd", "gelss") else _empty(self, real))
    residuals = _empty(self, real)
    if driver != "gelsy" and m > n:  # a guard on symbolic sizes, as eager branches
        if driver != "gels":
            raise lstsq_residuals(op, driver)
        residuals = self.like(shape=batch + ((1,) if vector else (B[-1],)), dtype=real)
    return solution, residuals, rank, svals


# -- decompositions -------------------------------------------------------------------------


# torch 2.14 dropped aten.cholesky (torch.cholesky reaches linalg_cholesky there).
_CHOLESKY = (aten.cholesky.default,) if hasattr(aten, "cholesky") else ()


@rule(aten.linalg_cholesky.default, *_CHOLESKY)
def linalg_cholesky(self: TensorMeta, upper: bool = False) -> TensorMeta:
    """The triangular factor: A's shape and dtype."""
    square("linalg.cholesky", self)
    return self.like()


@rule(aten.linalg_cholesky_ex.default)
def linalg_cholesky_ex(self: TensorMeta, *, upper: bool = False,
                       check_errors: bool = False) -> tuple:
    """(L, int32 info per matrix)."""
    return linalg_cholesky(self), self.like(shape=batch_of(self), dtype=I32)


@rule(aten.linalg_qr.default)
def linalg_qr(A: TensorMeta, mode: str = "reduced") -> tuple:
    """(Q, R) for (*, m, n) with k = min(m, n): reduced (m,k),(k,n); complete (m,m),(m,n);
    'r' gives an empty Q."""
    op = "linalg.qr"
    check(mode in ("reduced", "complete", "r"), op,
          f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
          f"'r', or 'complete'")
    matrices(op, A)
    batch, (m, n) = batch_of(A), A.shape[-2:]
    if mode == "complete":
        return A.like(shape=batch + (m, m)), A.like()
    k = decided_min(m, n)  # (no guard: the shapes are exact either way)
    R = A.like(shape=batch + (k, n))
    return (_empty(A) if mode == "r" else A.like(shape=batch + (m, k))), R


def _svd(op: str, A: TensorMeta, full_matrices: bool, compute_uv: bool) -> tuple:
    matrices(op, A)
    batch, (m, n) = batch_of(A), A.shape[-2:]
    k = decided_min(m, n)
    S = A.like(shape=batch + (k,), dtype=to_real(A.dtype))
    if not compute_uv:
        return _empty(A), S, _empty(A)
    if full_matrices:
        return A.like(shape=batch + (m, m)), S, A.like(shape=batch + (n, n))
    return A.like(shape=batch + (m, k)), S, A.like(shape=batch + (k, n))


@rule(aten.linalg_svd.default)
def linalg_svd(A: TensorMeta, full_matrices: bool = True, *, driver: str | None = None) -> tuple:
    """(U, real S, Vh) with k = min(m, n) singular values."""
    return _svd("linalg.svd", A, full_matrices, True)


@rule(aten._linalg_svd.default)
def _linalg_svd(A: TensorMeta, full_matrices: bool = False, compute_uv: bool = True, *,
                driver: str | None = None) -> tuple:
    """linalg_svd; without compute_uv, U and Vh are empty."""
    return _svd("linalg.svd", A, full_matrices, compute_uv)


@rule(aten.linalg_svdvals.default)
def linalg_svdvals(A: TensorMeta, *, driver: str | None = None) -> TensorMeta:
    """The k = min(m, n) real singular values."""
    return _svd("linalg.svdvals", A, False, False)[1]


def _eigh(op: str, A: TensorMeta, UPLO: str, compute_v: bool) -> tuple:
    check(UPLO in ("L", "U"), op, f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    square(op, A)
    values = A.like(shape=A.shape[:-1], dtype=to_real(A.dtype))
    return values, (A.like() if compute_v else _empty(A))


@rule(aten.linalg_eigh.default)
def linalg_eigh(self: TensorMeta, UPLO: str = "L") -> tuple:
    """(real eigenvalues (*, n), eigenvectors (*, n, n))."""
    return _eigh("linalg.eigh", self, UPLO, True)


@rule(aten._linalg_eigh.default)
def _linalg_eigh(A: TensorMeta, UPLO: str = "L", compute_v: bool = True) -> tuple:
    """linalg_eigh; without compute_v the eigenvectors are empty."""
    return _eigh("linalg.eigh", A, UPLO, compute_v)


@rule(aten.linalg_eigvalsh.default)
def linalg_eigvalsh(self: TensorMeta, UPLO: str = "L") -> TensorMeta:
    """The real eigenvalues (*, n)."""
    return _eigh("linalg.eigvalsh", self, UPLO, False)[0]


_COMPLEX_OF = {torch.float32: torch.complex64, torch.float64: torch.complex128}


@rule(aten.linalg_eig.default)
def linalg_eig(self: TensorMeta) -> tuple:
    """(eigenvalues (*, n), eigenvectors (*, n, n)), both complex."""
    square("linalg.eig", self)
    dtype = _COMPLEX_OF.get(self.dtype, self.dtype)
    return self.like(shape=self.shape[:-1], dtype=dtype), self.like(dtype=dtype)


@rule(aten.linalg_eigvals.default)
def linalg_eigvals(self: TensorMeta) -> TensorMeta:
    """The complex eigenvalues (*, n)."""
    return linalg_eig(self)[0]


# -- pseudo-inverse ---------------------------------------------------------------------------


def _pinv(A: TensorMeta, *tolerances: Any) -> TensorMeta:
    op = "linalg.pinv"
    check(A.ndim >= 2 and (A.dtype.is_floating_point or A.dtype.is_complex), op,
          f"linalg.pinv({A.dtype}{list(A.shape)}): expected a tensor with 2 or more dimensions "
          f"of float, double, cfloat or cdouble types")
    shapes = [t.shape for t in tolerances if isinstance(t, TensorMeta)]
    batch = broadcast_shapes(batch_of(A), *shapes, op=op)
    same = len(batch) == A.ndim - 2 and all(x is y for x, y in zip(batch, batch_of(A)))
    if not same and is_empty(A):  # eager returns early, tolerances unbroadcast
        batch = batch_of(A)
    return A.like(shape=batch + (A.shape[-1], A.shape[-2]))


@rule(aten.linalg_pinv.default, aten.linalg_pinv.rcond_tensor)
def linalg_pinv(self: TensorMeta, rcond: Any, hermitian: bool = False) -> TensorMeta:
    """(*, n, m) for (*, m, n); a tensor rcond broadcasts with the batch."""
    return _pinv(self, rcond)


@rule(aten.linalg_pinv.atol_rtol_float, aten.linalg_pinv.atol_rtol_tensor)
def linalg_pinv_tol(self: TensorMeta, *, atol: Any = None, rtol: Any = None,
                    hermitian: bool = False) -> TensorMeta:
    """(*, n, m) for (*, m, n); tensor tolerances broadcast with the batch."""
    return _pinv(self, atol, rtol)


# -- trace, vecdot, matrix_norm ----------------------------------------------------------------


@rule(aten.trace.default)
def trace(self: TensorMeta) -> TensorMeta:
    """The sum of a matrix's diagonal: 0-d; integer and bool inputs sum into int64."""
    check(self.ndim == 2, "trace", f"trace: expected a matrix, but got tensor with dim "
                                   f"{self.ndim}")
    check(self.dtype is not torch.bool, "trace", "\"trace\" not implemented for 'Bool'")
    integral = not (self.dtype.is_floating_point or self.dtype.is_complex)
    return self.like(shape=(), dtype=I64 if integral else self.dtype)


@rule(aten.linalg_vecdot.default)
def linalg_vecdot(x: TensorMeta, y: TensorMeta, *, dim: int = -1) -> TensorMeta:
    """Broadcast x and y, then sum their product over `dim`."""
    op = "linalg.vecdot"
    same_dtype(op, x, y, "x", "y")
    check(x.dtype.is_floating_point or x.dtype.is_complex, op,
          f"{op}: Expected a floating point or complex tensor as input. Got {x.dtype}")
    shape = broadcast_shapes(x.shape, y.shape, op=op)
    d = normalize_dim(dim, len(shape), op)
    return x.like(shape=shape[:d] + shape[d + 1:])


@rule(aten.linalg_matrix_norm.default, aten.linalg_matrix_norm.str_ord)
def linalg_matrix_norm(self: TensorMeta, ord: Any = "fro", dim: Sequence[int] = (-2, -1),
                       keepdim: bool = False, *, dtype: torch.dtype | None = None) -> TensorMeta:
    """A norm of each matrix over the two dims `dim` (real result)."""
    return matrix_norm("linalg.matrix_norm", self, ord, list(dim), keepdim, dtype)

