"""Shape rules of the matmul family: mm, bmm, matmul, linear, addmm & co, einsum, tensordot;
also kron, distances (cdist, cosine_similarity) and linalg.norm.

Matrix products dispatch to BLAS kernels that require every operand to have the same
dtype (CPU raises "expected m1 and m2 to have the same dtype"; the meta kernels of some
of these ops are laxer than CPU, and the rules follow CPU).  Products that torch reduces
to elementwise multiplication (outer, einsum without a shared contraction) promote.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import (broadcast_shapes, check, either, is_empty, normalize_dim,
                                    result_type)
from safetrace.rules.reductions import norm_result_dtype, reduce_shape, vector_norm
from safetrace.rules.pointwise import castable, same_shape
from safetrace.rules.registry import rule
from safetrace.symbolic import SymInt

aten = torch.ops.aten


def same_dtype(op: str, *tensors: TensorMeta | None) -> torch.dtype:
    """The common dtype of BLAS operands; raises like torch when they differ."""
    present = [t for t in tensors if t is not None]
    dtype = present[0].dtype
    for t in present[1:]:
        check(t.dtype == dtype, op, f"expected m1 and m2 to have the same dtype, but got: "
                                    f"{dtype} != {t.dtype}")
    return dtype


def expect_ndim(op: str, t: TensorMeta, ndim: int, name: str) -> None:
    check(t.ndim == ndim, op, f"{name} must be a {ndim}D tensor, got {t.ndim}D")


def out_dtype_ok(op: str, dtype: torch.dtype, out_dtype: torch.dtype | None) -> torch.dtype:
    """The .dtype overloads: same as the inputs, or float32 from float16/bfloat16."""
    if out_dtype is None:
        return dtype
    check(out_dtype == dtype or (out_dtype == torch.float32
                                 and dtype in (torch.float16, torch.bfloat16)),
          op, "out_dtype must be the same as input dtype or fp32 for fp16/bf16 inputs")
    return out_dtype


def expand_to(op: str, self: TensorMeta, shape: tuple) -> None:
    """`self` of addmm-like ops must broadcast to the product's shape."""
    check(self.ndim <= len(shape), op, f"self of shape {list(self.shape)} cannot be expanded "
                                       f"to the product's shape {list(shape)}")
    out = broadcast_shapes(self.shape, shape, op=op)
    check(len(out) == len(shape), op, "self does not match the product's shape")
    for a, b in zip(out, shape):
        check(a is b or a == b, op, f"self of shape {list(self.shape)} cannot be expanded "
                                    f"to the product's shape {list(shape)}")


def mm_shape(op: str, a: TensorMeta, b: TensorMeta) -> tuple:
    expect_ndim(op, a, 2, "self")
    expect_ndim(op, b, 2, "mat2")
    check(a.shape[1] == b.shape[0], op, f"mat1 and mat2 shapes cannot be multiplied "
          f"({a.shape[0]}x{a.shape[1]} and {b.shape[0]}x{b.shape[1]})")
    return (a.shape[0], b.shape[1])


def bmm_shape(op: str, a: TensorMeta, b: TensorMeta) -> tuple:
    expect_ndim(op, a, 3, "batch1")
    expect_ndim(op, b, 3, "batch2")
    check(a.shape[0] == b.shape[0] and a.shape[2] == b.shape[1], op,
          f"Expected size for first two dimensions of batch2 tensor to be: "
          f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    return (a.shape[0], a.shape[1], b.shape[2])


@rule(aten.mm.default, aten.mm.dtype)
def mm(self: TensorMeta, mat2: TensorMeta, out_dtype: torch.dtype | None = None) -> TensorMeta:
    """(n, m) @ (m, p) -> (n, p)."""
    shape = mm_shape("aten.mm", self, mat2)
    dtype = out_dtype_ok("aten.mm", same_dtype("aten.mm", self, mat2), out_dtype)
    return self.like(shape, dtype)


@rule(aten.bmm.default, aten.bmm.dtype)
def bmm(self: TensorMeta, mat2: TensorMeta, out_dtype: torch.dtype | None = None) -> TensorMeta:
    """(b, n, m) @ (b, m, p) -> (b, n, p); no batch broadcasting."""
    shape = bmm_shape("aten.bmm", self, mat2)
    dtype = out_dtype_ok("aten.bmm", same_dtype("aten.bmm", self, mat2), out_dtype)
    return self.like(shape, dtype)


@rule(aten.addmm.default, aten.addmm.dtype)
def addmm(self: TensorMeta, mat1: TensorMeta, mat2: TensorMeta,
          out_dtype: torch.dtype | None = None, *, beta: Any = 1, alpha: Any = 1) -> TensorMeta:
    """beta * self + alpha * (mat1 @ mat2); self broadcasts to (n, p)."""
    shape = mm_shape("aten.addmm", mat1, mat2)
    dtype = same_dtype("aten.addmm", mat1, mat2)
    if out_dtype is None:
        same_dtype("aten.addmm", self, mat2)
    dtype = out_dtype_ok("aten.addmm", dtype, out_dtype)
    expand_to("aten.addmm", self, shape)
    return mat1.like(shape, dtype)


@rule(aten.baddbmm.default)
def baddbmm(self: TensorMeta, batch1: TensorMeta, batch2: TensorMeta, *, beta: Any = 1,
            alpha: Any = 1) -> TensorMeta:
    """beta * self + alpha * bmm(batch1, batch2); self broadcasts to (b, n, p).

    (baddbmm.dtype has no rule: CUDA-only, and its meta decomposition is broken.)
    """
    shape = bmm_shape("aten.baddbmm", batch1, batch2)
    dtype = same_dtype("aten.baddbmm", self, batch1, batch2)
    expand_to("aten.baddbmm", self, shape)
    return batch1.like(shape, dtype)


@rule(aten.addbmm.default)
def addbmm(self: TensorMeta, batch1: TensorMeta, batch2: TensorMeta, *, beta: Any = 1,
           alpha: Any = 1) -> TensorMeta:
    """beta * self + alpha * sum_b(batch1[b] @ batch2[b]) -> (n, p)."""
    shape = bmm_shape("aten.addbmm", batch1, batch2)[1:]
    dtype = same_dtype("aten.addbmm", self, batch1, batch2)
    expand_to("aten.addbmm", self, shape)
    return batch1.like(shape, dtype)


@rule(aten.mv.default)
def mv(self: TensorMeta, vec: TensorMeta) -> TensorMeta:
    """(n, m) @ (m,) -> (n,)."""
    check(self.ndim == 2 and vec.ndim == 1, "aten.mv",
          f"vector + matrix @ vector expected, got {self.ndim}, {vec.ndim}")
    check(self.shape[1] == vec.shape[0], "aten.mv", f"size mismatch, got input "
          f"({self.shape[0]}), mat ({self.shape[0]}x{self.shape[1]}), vec ({vec.shape[0]})")
    return self.like((self.shape[0],), same_dtype("aten.mv", self, vec))


@rule(aten.addmv.default)
def addmv(self: TensorMeta, mat: TensorMeta, vec: TensorMeta, *, beta: Any = 1,
          alpha: Any = 1) -> TensorMeta:
    """beta * self + alpha * (mat @ vec); self broadcasts to (n,)."""
    out = mv(mat, vec)
    check(self.dtype == mat.dtype == vec.dtype, "aten.addmv",
          f"addmv input tensors must have the same dtype, but got {self.dtype}, "
          f"{mat.dtype}, and {vec.dtype}")
    expand_to("aten.addmv", self, out.shape)
    broadcast = not (self.ndim == 1 and self.shape[0] is out.shape[0])
    if broadcast and not (isinstance(beta, (int, float)) and beta == 0) and is_empty(mat):
        return self.like()  # eager returns beta * self without expanding it
    return out


def vector_product(op: str, self: TensorMeta, other: TensorMeta) -> TensorMeta:
    check(self.ndim == 1 and other.ndim == 1, op, f"1D tensors expected, but got "
          f"{self.ndim}D and {other.ndim}D tensors")
    check(self.shape[0] == other.shape[0], op, f"inconsistent tensor size, expected tensor "
          f"[{self.shape[0]}] and src [{other.shape[0]}] to have the same number of elements")
    check(self.dtype == other.dtype, op, f"expected both vectors to have same dtype, but "
          f"found {self.dtype} and {other.dtype}")
    return self.like((), self.dtype)


@rule(aten.dot.default)
def dot(self: TensorMeta, tensor: TensorMeta) -> TensorMeta:
    """(n,) . (n,) -> 0-d."""
    return vector_product("aten.dot", self, tensor)


@rule(aten.vdot.default)
def vdot(self: TensorMeta, other: TensorMeta) -> TensorMeta:
    """conj(self) . other -> 0-d."""
    return vector_product("aten.vdot", self, other)


@rule(aten.outer.default)
def outer(self: TensorMeta, vec2: TensorMeta) -> TensorMeta:
    """(n,) x (m,) -> (n, m), an elementwise product, so dtypes promote."""
    check(self.ndim == 1, "aten.outer", f"Expected 1-D argument self, but got {self.ndim}-D")
    check(vec2.ndim == 1, "aten.outer", f"Expected 1-D argument vec2, but got {vec2.ndim}-D")
    return self.like((self.shape[0], vec2.shape[0]), result_type(self, vec2))


@rule(aten.matmul.default)
def matmul(self: TensorMeta, other: TensorMeta) -> TensorMeta:
    """torch.matmul: 1-d operands are promoted and squeezed, batch dims broadcast."""
    op = "aten.matmul"
    check(self.ndim >= 1 and other.ndim >= 1, op,
          f"both arguments to matmul need to be at least 1D, but they are "
          f"{self.ndim}D and {other.ndim}D")
    if self.ndim == 1 and other.ndim == 1:
        return dot(self, other)
    if self.ndim == 2 and other.ndim == 1:
        return mv(self, other)
    dtype = same_dtype(op, self, other)
    a = self.shape if self.ndim > 1 else (1,) + self.shape
    b = other.shape if other.ndim > 1 else other.shape + (1,)
    check(a[-1] == b[-2], op, f"mat1 and mat2 shapes cannot be multiplied "
          f"({'x'.join(map(str, a[-2:]))} and {'x'.join(map(str, b[-2:]))})")
    batch = broadcast_shapes(a[:-2], b[:-2], op=op)
    shape = batch + (() if self.ndim == 1 else (a[-2],)) + (() if other.ndim == 1 else (b[-1],))
    return self.like(shape, dtype)


rule(aten.linalg_matmul.default)(matmul)


@rule(aten.addr.default)
def addr(self: TensorMeta, vec1: TensorMeta, vec2: TensorMeta, *, beta: Any = 1,
         alpha: Any = 1) -> TensorMeta:
    """beta * self + alpha * outer(vec1, vec2): (n, m); an elementwise product, so dtypes
    promote; self broadcasts to (n, m); beta and alpha must fit the result's category."""
    op = "aten.addr"
    check(vec1.ndim == 1, op, f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D")
    check(vec2.ndim == 1, op, f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    shape = (vec1.shape[0], vec2.shape[0])
    dtype = result_type(self, vec1, vec2)
    for name, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, bool):
            check(dtype is torch.bool, op, f"Boolean {name} only supported for Boolean results.")
        elif isinstance(v, (float, complex)):
            check(dtype.is_floating_point or dtype.is_complex, op, f"For integral input "
                  f"tensors, argument {name} must not be a floating point number.")
            check(not isinstance(v, complex) or dtype.is_complex, op,
                  f"value cannot be converted to type {dtype} without overflow")
    expand_to(op, self, shape)
    return vec1.like(shape, dtype)


def addr_inplace(self: TensorMeta, vec1: TensorMeta, vec2: TensorMeta, *, beta: Any = 1,
                 alpha: Any = 1) -> TensorMeta:
    """addr_: the product must have self's shape and cast back to self's dtype."""
    out = addr(self, vec1, vec2, beta=beta, alpha=alpha)
    same_shape("aten.addr_", self, out.shape)
    castable("aten.addr_", out.dtype, self.dtype)
    return self.like()


rule(aten.addr_.default)(addr_inplace)


@rule(aten.kron.default)
def kron(self: TensorMeta, other: TensorMeta) -> TensorMeta:
    """Kronecker product: both padded with leading 1s to the same ndim, sizes multiply;
    the operands are reshaped first, so a 0-d tensor promotes like a dimensioned one."""
    n = max(self.ndim, other.ndim)
    a = (1,) * (n - self.ndim) + tuple(self.shape)
    b = (1,) * (n - other.ndim) + tuple(other.shape)
    return self.like(tuple(x * y for x, y in zip(a, b)),
                     torch.promote_types(self.dtype, other.dtype))


# -- distances ----------------------------------------------------------------------------


@rule(aten.cdist.default, aten._cdist_forward.default)
def cdist(x1: TensorMeta, x2: TensorMeta, p: float = 2.0,
          compute_mode: int | None = None) -> TensorMeta:
    """(*b1, r1, c) and (*b2, r2, c) -> (broadcast(b1, b2), r1, r2); one floating dtype."""
    op = "aten.cdist"
    check(x1.ndim >= 2, op, f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    check(x2.ndim >= 2, op, f"cdist only supports at least 2D tensors, X2 got: {x2.ndim}D")
    check(x1.dtype.is_floating_point, op, f"cdist only supports floating-point dtypes, X1 "
                                          f"got: {x1.dtype}")
    check(x2.dtype.is_floating_point, op, f"cdist only supports floating-point dtypes, X2 "
                                          f"got: {x2.dtype}")
    check(x1.shape[-1] == x2.shape[-1], op, f"X1 and X2 must have the same number of "
          f"columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    check(p >= 0, op, "cdist only supports non-negative p values")
    check(compute_mode is None or compute_mode in (0, 1, 2), op,
          f"possible modes: 0, 1, 2, but was: {compute_mode}")
    check(x1.dtype == x2.dtype, op, f"expected scalar type {x1.dtype} but found {x2.dtype}")
    batch = broadcast_shapes(x1.shape[:-2], x2.shape[:-2], op=op)
    return x1.like(batch + (x1.shape[-2], x2.shape[-2]), x1.dtype)


@rule(aten.pdist.default, aten._pdist_forward.default)
def pdist(self: TensorMeta, p: float = 2.0) -> TensorMeta:
    """(N, M) -> (N * (N - 1) / 2,): the distances between all pairs of rows."""
    op = "aten.pdist"
    check(self.ndim == 2, op, f"pdist only supports 2D tensors, got: {self.ndim}D")
    check(self.dtype.is_floating_point, op, "pdist only supports floating-point dtypes")
    check(p >= 0, op, "pdist only supports non-negative p values")
    n = self.shape[0]
    return self.like((n * (n - 1) // 2,))


@rule(aten.cosine_similarity.default)
def cosine_similarity(x1: TensorMeta, x2: TensorMeta, dim: int = 1,
                      eps: float = 1e-8) -> TensorMeta:
    """x1 and x2 broadcast, then `dim` is reduced; the common dtype must be floating."""
    op = "aten.cosine_similarity"
    dtype = result_type(x1, x2)
    check(dtype.is_floating_point, op, f"expected common dtype to be floating point, yet "
                                       f"common dtype is {dtype}")
    shape = broadcast_shapes(x1.shape, x2.shape, op=op)
    d = normalize_dim(dim, len(shape), op)
    return x1.like(shape[:d] + shape[d + 1:] if shape else (), dtype)


@rule(aten.linear.default)
def linear(input: TensorMeta, weight: TensorMeta, bias: TensorMeta | None = None) -> TensorMeta:
    """input (..., in) @ weight(out, in).T + bias(out) -> (..., out); weight may be 1-d."""
    op = "aten.linear"
    check(weight.ndim in (1, 2), op, f"weight must be 1D or 2D, got {weight.ndim}D")
    wt = weight.like(weight.shape[::-1])
    out = matmul(input, wt)
    if bias is not None:
        same_dtype(op, out, bias)
        if bias.ndim == 1 and out.ndim >= 1:  # the usual (out,) bias: no size-1 questions
            b, o = bias.shape[0], out.shape[-1]
            check(b is o or b == o or b == 1, op, f"bias of shape {list(bias.shape)} does not "
                                                  f"broadcast to the output {list(out.shape)}")
            return out
        shape = broadcast_shapes(out.shape, bias.shape, op=op)
        check(len(shape) == out.ndim, op, f"bias of shape {list(bias.shape)} does not "
                                          f"broadcast to the output {list(out.shape)}")
        out = out.like(shape)
    return out


@rule(aten.bilinear.default)
def bilinear(input1: TensorMeta, input2: TensorMeta, weight: TensorMeta,
             bias: TensorMeta | None = None) -> TensorMeta:
    """x1 (..., in1), x2 (..., in2), weight (out, in1, in2) -> (..., out)."""
    op = "aten.bilinear"
    check(input1.ndim == input2.ndim, op, f"bilinear(): input dimensions do not match: "
          f"got {input1.ndim} and {input2.ndim}")
    for i in range(input1.ndim - 1):
        check(input1.shape[i] == input2.shape[i], op, f"bilinear(): input batch dimensions "
              f"do not match: got {list(input1.shape)} and {list(input2.shape)}")
    check(weight.ndim == 3, op, f"bilinear(): weight must be 3D, got {weight.ndim}D")
    # eager flattens each input to (-1, features): ambiguous for no features
    check(input1.shape[-1] != 0 and input2.shape[-1] != 0, op,
          f"cannot reshape tensor of 0 elements into shape [-1, 0] (input features "
          f"{input1.shape[-1]} and {input2.shape[-1]})")
    check(input1.shape[-1] == weight.shape[1], op, f"bilinear(): input1 size does not match "
          f"weight size: got {input1.shape[-1]} but expected {weight.shape[1]}")
    check(input2.shape[-1] == weight.shape[2], op, f"bilinear(): input2 size does not match "
          f"weight size: got {input2.shape[-1]} but expected {weight.shape[2]}")
    if bias is not None:
        check(bias.ndim == 1 and bias.shape[0] == weight.shape[0], op,
              f"bilinear(): bias size does not match weight size: got "
              f"{list(bias.shape)} but expected [{weight.shape[0]}]")
    dtype = same_dtype(op, input1, input2, weight, bias)
    return input1.like(input1.shape[:-1] + (weight.shape[0],), dtype)


@rule(aten.tensordot.default)
def tensordot(self: TensorMeta, other: TensorMeta, dims_self: Sequence[int],
              dims_other: Sequence[int]) -> TensorMeta:
    """Contract dims_self with dims_other (size 1 broadcasts); free dims of self, then other."""
    op = "aten.tensordot"
    check(len(dims_self) == len(dims_other), op,
          "both dimension lists should have same length")
    ds = [normalize_dim(d, self.ndim, op) for d in dims_self]
    do = [normalize_dim(d, other.ndim, op) for d in dims_other]
    for a, b in zip(ds, do):
        s1, s2 = self.shape[a], other.shape[b]
        if s1 is s2:
            continue  # (one requirement, no branch on `== 1`: the shape is the same)
        check(either((s1 == s2, s1 == 1, s2 == 1)), op, f"contracted dimensions need to "
              f"match, but first has size {s1} in dim {a} and second has size {s2} in dim {b}")
    shape = tuple(s for i, s in enumerate(self.shape) if i not in ds) \
        + tuple(s for i, s in enumerate(other.shape) if i not in do)
    return self.like(shape, same_dtype(op, self, other))


@rule(aten.linalg_cross.default)
def linalg_cross(self: TensorMeta, other: TensorMeta, *, dim: int = -1) -> TensorMeta:
    """Cross product along a dim of size 3; the other dims broadcast."""
    return cross(self, other, dim)


@rule(aten.cross.default)
def cross(self: TensorMeta, other: TensorMeta, dim: int | None = None) -> TensorMeta:
    """torch.cross: like linalg.cross; without dim, the first dim of size 3."""
    op = "aten.cross"
    check(self.ndim == other.ndim, op, f"inputs must have the same number of dimensions, "
                                       f"got {self.ndim} and {other.ndim}")
    shape = broadcast_shapes(self.shape, other.shape, op=op)
    if dim is None:  # torch.cross without dim: the first dim of size 3
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        check(dim is not None, op, "no dimension of size 3 in input")
    d = normalize_dim(dim, len(shape), op)
    check(self.shape[d] == 3 and other.shape[d] == 3, op,
          f"inputs dimension {dim} must have length 3, got {self.shape[d]} and "
          f"{other.shape[d]}")
    return self.like(shape, same_dtype(op, self, other))


# -- einsum -----------------------------------------------------------------------------

ELLIPSIS = "."  # stands for the ellipsis in parsed subscripts


def parse_subscripts(op: str, text: str, ndim: int, index: int) -> list[str]:
    """Labels of one operand, one per dim; the ellipsis becomes '.' repeated."""
    text = text.replace(" ", "")
    if "..." in text:
        check(text.count("...") == 1 and text.replace("...", "").isalpha()
              or text.replace("...", "") == "", op,
              f"einsum(): found more than one ellipsis or an invalid character for "
              f"operand {index}")
        head, tail = text.split("...")
        n = ndim - len(head) - len(tail)
        check(n >= 0, op, f"einsum(): the number of subscripts in the equation "
                          f"({len(head) + len(tail)}) is more than the number of dimensions "
                          f"({ndim}) for operand {index}")
        return list(head) + [ELLIPSIS] * n + list(tail)
    check(text.isalpha() or text == "", op,
          f"einsum(): invalid subscript given at index {index} in the equation")
    check(len(text) == ndim, op, f"einsum(): the number of subscripts in the equation "
          f"({len(text)}) does not match the number of dimensions ({ndim}) for operand "
          f"{index}{'' if text else ' and no ellipsis was given'}")
    return list(text)


def _summed_labels(labels: list[list[str]], rhs: str | None) -> set:
    """Labels of several operands that the output lacks (`rhs`: the explicit output, None:
    the implicit one, which has the labels of one operand only)."""
    seen: dict[str, int] = {}
    for labs in labels:
        for lab in set(labs) - {ELLIPSIS}:
            seen[lab] = seen.get(lab, 0) + 1
    shared = {lab for lab, n in seen.items() if n > 1}
    return shared - set(rhs) if rhs is not None else shared


def _derived(a: Any, b: Any) -> bool:
    """Two sizes of a label, one an expression of sizes (``min(n, numel)`` of a slice), not
    both numbers or bare Dims: their broadcast is asked as eager's requirement (a == 1, b ==
    1 or a == b: exact at 0 and 1 too), not as a broadcast that assumes a == b there; bare
    Dims keep the broadcast's question (its fix names the relation: m = n)."""
    return any(isinstance(x, SymInt) and x.expr.op != "sym" for x in (a, b))


def label_order(label: str) -> int:
    """torch sorts implicit output labels A-Z before a-z."""
    return ord(label) - ord("A") if label.isupper() else 26 + ord(label) - ord("a")


def sum_dtype(dtype: torch.dtype) -> torch.dtype:
    """Summing a dim of an integer or bool tensor gives int64."""
    if dtype is torch.bool or not (dtype.is_floating_point or dtype.is_complex):
        return torch.int64
    return dtype


@rule(aten.einsum.default)
def einsum(equation: str, tensors: Sequence[TensorMeta], *,
           path: Sequence[int] | None = None) -> TensorMeta:
    """Parse the equation; labels broadcast (size 1) across operands, repeated labels in one
    operand take a diagonal, the implicit output is the ellipsis then single labels sorted.

    Dtypes follow torch's left-to-right contraction: a label only one operand has and the
    output lacks is summed there first (int/bool -> int64); a label shared with a later
    operand goes through bmm (dtypes must be equal), otherwise operands are multiplied
    (dtypes promote).  With >2 operands and opt_einsum, torch may contract in another order;
    only mixed-dtype calls can tell the difference.
    """
    op = "aten.einsum"
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    inputs = lhs.split(",")
    check(len(inputs) == len(tensors), op, "einsum(): more operands were provided than "
          "specified in the equation" if len(tensors) > len(inputs) else
          "einsum(): fewer operands were provided than specified in the equation")
    check(len(tensors) > 0, op, "einsum(): must provide at least one operand")
    labels = [parse_subscripts(op, s, t.ndim, i) for i, (s, t) in enumerate(zip(inputs, tensors))]

    # sizes: one per label (a broadcast over operands), and the ellipsis dims right-aligned
    size: dict[str, Any] = {}
    summed = _summed_labels(labels, rhs if arrow else None)
    ell_shapes = []
    for i, (labs, t) in enumerate(zip(labels, tensors)):
        own: dict[str, Any] = {}
        ell = []
        for lab, s in zip(labs, t.shape):
            if lab == ELLIPSIS:
                ell.append(s)
                continue
            if lab in own:
                check(own[lab] == s, op, f"einsum(): subscript {lab} is repeated for operand "
                                         f"{i} but the sizes don't match, {own[lab]} != {s}")
                continue
            own[lab] = s
        ell_shapes.append(tuple(ell))
        for lab, s in own.items():
            if lab not in size:
                size[lab] = s
            elif lab in summed and _derived(size[lab], s):
                # summed away: its size is not the output's, only eager's requirement
                check(either((size[lab] == 1, s == 1, size[lab] == s)), op,
                      f"einsum(): operands do not broadcast with remapped shapes "
                      f"(subscript {lab}: {size[lab]} and {s})")
            else:
                size[lab] = broadcast_shapes((size[lab],), (s,), op=op)[0]
    ell_shape = broadcast_shapes(*ell_shapes, op=op)
    has_ell = "..." in lhs  # (an operand's ellipsis may cover no dims: 'i...' of a vector)

    if arrow:
        if "..." in rhs:
            check(has_ell, op, "einsum(): ellipsis in the output but not in any operand")
            check(rhs.count("...") == 1, op, "einsum(): found more than one ellipsis in the "
                                             "output")
        out_labels = [c for c in rhs.replace("...", ELLIPSIS)]
        for c in out_labels:
            check(c == ELLIPSIS or c.isalpha(), op, f"einsum(): invalid subscript given at "
                                                    f"index {len(lhs) + 2} in the equation")
            check(c == ELLIPSIS or c in size, op, f"einsum(): output subscript {c} does not "
                                                  f"appear in the equation for any input "
                                                  f"operand")
            check(out_labels.count(c) == 1, op, f"einsum(): output subscript {c} appears "
                                                f"more than once in the output")
    else:
        counts: dict[str, int] = {}
        for labs in labels:
            for c in labs:
                counts[c] = counts.get(c, 0) + 1
        singles = sorted((c for c, n in counts.items() if n == 1 and c != ELLIPSIS),
                         key=label_order)
        out_labels = ([ELLIPSIS] if has_ell else []) + singles
    shape: list[Any] = []
    for c in out_labels:
        shape.extend(ell_shape if c == ELLIPSIS else (size[c],))

    # dtype: pre-sums, then left-to-right pairwise products (the ellipsis is one label)
    keep = set(out_labels)
    sets = [set(labs) for labs in labels]
    if len(tensors) == 1:
        dtype = tensors[0].dtype
        return tensors[0].like(tuple(shape), sum_dtype(dtype) if sets[0] - keep else dtype)
    acc: TensorMeta | None = None
    acc_labels: set = set()
    for i, t in enumerate(tensors):
        others = set().union(*(x for j, x in enumerate(sets) if j != i))
        summed = sets[i] - others - keep
        cur = TensorMeta((1,) * len(sets[i] - summed),
                         sum_dtype(t.dtype) if summed else t.dtype, t.device)
        if acc is None:
            acc, acc_labels = cur, sets[i] - summed
            continue
        later = keep.union(*sets[i + 1:])
        contracted = (acc_labels & sets[i]) - later
        if contracted:
            check(acc.dtype == cur.dtype, op, f"expected scalar type {acc.dtype} but found "
                                              f"{cur.dtype}")
            dtype = acc.dtype
        else:
            # operands are aligned to all labels (size-1 dims), so no 0-d exception
            dtype = torch.promote_types(acc.dtype, cur.dtype)
        acc_labels = (acc_labels | sets[i]) - summed - contracted
        acc = TensorMeta((1,) * len(acc_labels), dtype, t.device)
    return tensors[0].like(tuple(shape), acc.dtype)


# -- linalg.norm: a vector or a matrix norm -------------------------------------------------


def matrix_norm(op: str, self: TensorMeta, ord: Any, dim: Sequence[int], keepdim: bool,
                dtype: torch.dtype | None) -> TensorMeta:
    """linalg.matrix_norm over two dims: orders +-1, +-2, +-inf, 'fro' and 'nuc'."""
    if isinstance(ord, str):
        check(ord in ("fro", "nuc"), op, f"linalg.matrix_norm: Order {ord} not supported.")
        low_precision = ord != "nuc"
    else:
        check(abs(ord) in (1, 2, math.inf), op, f"linalg.matrix_norm: Order {ord} not "
                                                f"supported.")
        low_precision = abs(ord) != 2
    check(self.ndim >= 2, op, "linalg.matrix_norm: The input tensor A must have at least 2 "
                              "dimensions.")
    check(len(dim) == 2, op, f"linalg.matrix_norm: dim must be a 2-tuple. Got {list(dim)}")
    a = normalize_dim(dim[0], self.ndim, op)
    b = normalize_dim(dim[1], self.ndim, op)
    check(a != b, op, f"linalg.matrix_norm: dims must be different. Got ({a}, {b})")
    out = norm_result_dtype("linalg.matrix_norm", self, dtype)
    if not low_precision:
        check(self.dtype not in (torch.float16, torch.bfloat16), op,
              f"linalg.matrix_norm: Low precision dtypes not supported. Got {self.dtype}")
    if not isinstance(ord, str) and ord < 0:  # amin over a dim: no identity
        if abs(ord) == 2:
            check(self.shape[a] != 0 and self.shape[b] != 0, op,
                  "amin(): Expected reduction dim -1 to have non-zero size.")
        else:
            second = a if abs(ord) == math.inf else b
            check(self.shape[second] != 0, op, f"amin(): Expected reduction dim {second} to "
                                               f"have non-zero size.")
    return self.like(shape=reduce_shape(self, [a, b], keepdim), dtype=out)


@rule(aten.linalg_norm.default)
def linalg_norm(self: TensorMeta, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
                dtype: torch.dtype | None = None) -> TensorMeta:
    """linalg.norm: a matrix norm for a given ord over 2 dims (or of a 2-d input without
    dim), otherwise a vector norm (ord None meaning 2)."""
    op = "linalg.norm"
    if dim is not None:
        dim = [dim] if isinstance(dim, int) else list(dim)
        check(len(dim) in (1, 2), op, f"linalg.norm: If dim is specified, it must be of length "
                                      f"1 or 2. Got {dim}")
    elif ord is not None:
        check(self.ndim in (1, 2), op, f"linalg.norm: If dim is not specified but ord is, the "
                                       f"input must be 1D or 2D. Got {self.ndim}D.")
    if ord is not None and ((dim is not None and len(dim) == 2) or
                            (dim is None and self.ndim == 2)):
        return matrix_norm(op, self, ord, dim if dim is not None else [0, 1], keepdim, dtype)
    return vector_norm(self, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


@rule(aten.linalg_norm.ord_str)
def linalg_norm_str(self: TensorMeta, ord: str, dim: Any = None, keepdim: bool = False, *,
                    dtype: torch.dtype | None = None) -> TensorMeta:
    """linalg.norm with ord 'fro' or 'nuc': a matrix norm (a 1-d or 2-d input without dim)."""
    op = "linalg.norm"
    if dim is not None:
        dim = [dim] if isinstance(dim, int) else list(dim)
        check(len(dim) in (1, 2), op, f"linalg.norm: If dim is specified, it must be of length "
                                      f"1 or 2. Got {dim}")
    else:
        check(self.ndim in (1, 2), op, f"linalg.norm: If dim is not specified but ord is, the "
                                       f"input must be 1D or 2D. Got {self.ndim}D.")
    return matrix_norm(op, self, ord, dim if dim is not None else [0, 1], keepdim, dtype)
