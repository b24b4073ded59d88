"""Shape rules of views and reshapes: view/reshape, permutations, squeezes, expand,
windows and diagonals (the splits into pieces are in splitting.py).

Sizes may be symbolic: products, quotients and remainders stay expressions, and every
question torch asks of a size (is it 1? do these match?) is asked through ``check`` or an
``if`` so that it becomes a guard.  Only list *lengths* (how many tensors ``split`` or
``unbind`` return) must be plain ints; :func:`concrete_count` pins those with a guard.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from safetrace.errors import data_dependent_count, shape_error
from safetrace.meta import TensorMeta
from safetrace.meta.pins import pin_count
from safetrace.meta.symtypes import SYM_CLASSES
from safetrace.rules.common import (check, hint_of, normalize_dim, normalize_dims,
                                    open_question, prod, requiring, settle, wrap_index)
from safetrace.rules.registry import rule
from safetrace.symbolic import sym_max, sym_min

aten = torch.ops.aten
Size = Any


# -- helpers shared with joins / indexing ---------------------------------------------

def is_minus_one(size: Size) -> bool:
    """True for the literal -1 of a size list ("infer this" / "keep this")."""
    return type(size) not in SYM_CLASSES and isinstance(size, int) and size == -1


def concrete_count(n: Size, op: str) -> int:
    """A Python int for a count that fixes a list length; a symbolic count is pinned by a guard."""
    if isinstance(n, int):
        return n
    env = getattr(n, "env", None)
    if env is not None:  # the example's value, then the guard `n == value`
        if (k := hint_of(n)) is None:  # from data: a loop over it has no fixed length
            raise data_dependent_count(op, str(env.simplify(n.expr)))
        # a pin, not a requirement of the op (eager runs any count): a plain guard, so that
        # it is never taken for a size where eager raises (exporter/eager_raises.py); its
        # origin says a count was made (the exporter's message on a declared dim)
        pin_count(n, k, op)  # (True at the example: the hint is k)
        return k
    check(n >= 0, op, f"expected a non-negative count, got {n}")
    k = 0
    while not (n == k):  # each answer is a guard; the last one pins n == k
        k += 1
    return k


class _Invalid:
    """A lazily formatted "shape is invalid" message."""

    def __init__(self, shape: Sequence[Size], numel: Size) -> None:
        self.shape, self.numel = shape, numel

    def __str__(self) -> str:
        return f"shape '{list(self.shape)}' is invalid for input of size {self.numel}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def infer_size(shape: Sequence[Size], numel: Size, op: str,
               factors: Sequence[Size] | None = None) -> tuple:
    """Resolve one -1 in a requested shape so that the element count is `numel`."""
    out = list(shape)
    infer: int | None = None
    known: Size = 1
    for i, s in enumerate(out):
        if is_minus_one(s):
            check(infer is None, op, "only one dimension can be inferred")
            infer = i
        else:  # (a size read from data: what the op requires, checked at run time)
            check(s >= 0, op, f"invalid shape dimension {s}")
            known = known * s
    invalid = _Invalid(shape, numel)  # the message is only built if it is raised
    if infer is None:
        check(numel == known, op, invalid)
        return tuple(out)
    with requiring():  # known == 0 raises below whatever numel is: the op's requirement
        nonzero = bool(known != 0)
    if not nonzero:
        if numel == 0:
            raise shape_error(op, f"cannot reshape tensor of 0 elements into shape "
                                  f"{list(shape)} because the unspecified dimension size -1 "
                                  f"can be any value and is ambiguous")
        raise shape_error(op, invalid)
    num, den = _cancel(factors, [s for s in out if not is_minus_one(s)]) \
        if factors is not None else (numel, known)
    check(num % den == 0, op, invalid)
    out[infer] = num // den
    return tuple(out)


def _same_size(a: Size, b: Size) -> bool:
    a_int = type(a) not in SYM_CLASSES and isinstance(a, int)
    b_int = type(b) not in SYM_CLASSES and isinstance(b, int)
    if a_int or b_int:
        return a_int and b_int and a == b
    return getattr(a, "expr", a) is getattr(b, "expr", b)  # interned expressions


def _cancel(factors: Sequence[Size], requested: Sequence[Size]) -> tuple:
    """prod(factors) and prod(requested) with identical factors cancelled.

    ``view(-1, t)`` of a ``(b, t)`` tensor infers ``b``, not ``(b*t)//t``.  Sound when the
    full product of `requested` is non-zero (checked before): so is every factor.
    """
    num = list(factors)
    num_p: Size = 1
    den_p: Size = 1
    for s in requested:
        for i, f in enumerate(num):
            if _same_size(f, s):
                del num[i]
                break
        else:
            den_p = den_p * s
    for f in num:
        num_p = num_p * f
    return num_p, den_p


def replace_dim(shape: Sequence[Size], dim: int, size: Size) -> tuple:
    """`shape` with dim `dim` set to `size`."""
    out = list(shape)
    out[dim] = size
    return tuple(out)


# -- view / reshape -------------------------------------------------------------------

@rule(aten.view.default, aten._unsafe_view.default, aten.reshape.default,
      aten.view_copy.default)
def view_rule(self: TensorMeta, size: Sequence[Size]) -> TensorMeta:
    """The requested shape, with one -1 inferred by exact division of the element count."""
    # no strides here: a view of a non-viewable layout is accepted where eager may refuse it
    return self.like(shape=infer_size(size, self.numel(), "view", factors=self.shape))


@rule(aten.reshape_as.default, aten.view_as.default)
def reshape_as(self: TensorMeta, other: TensorMeta) -> TensorMeta:
    """reshape / view to `other`'s shape."""
    return view_rule(self, other.shape)


@rule(aten.view.dtype)
def view_dtype(self: TensorMeta, dtype: torch.dtype) -> TensorMeta:
    """Reinterpret the bytes: the last dim scales by the ratio of element sizes."""
    old, new = self.dtype.itemsize, dtype.itemsize
    if old == new:
        return self.like(dtype=dtype)
    what = f"to view {self.dtype} as {dtype} (different element sizes)"
    check(self.ndim > 0, "view", f"self.dim() cannot be 0 {what}")
    last = self.shape[-1]
    if new > old:
        ratio = new // old
        check(last % ratio == 0, "view",
              f"self.size(-1) must be divisible by {ratio} {what}, but got {last}")
        # an empty last dim leaves the next stride at 1 (contiguous strides count it as 1)
        check(self.ndim == 1 or last != 0, "view",
              f"self.stride({self.ndim - 2}) must be divisible by {ratio} {what}, but got 1")
        return self.like(shape=replace_dim(self.shape, -1, last // ratio), dtype=dtype)
    return self.like(shape=replace_dim(self.shape, -1, last * (old // new)), dtype=dtype)


@rule(aten.flatten.using_ints, aten.ravel.default)
def flatten(self: TensorMeta, start_dim: int = 0, end_dim: int = -1) -> TensorMeta:
    """Dims start_dim..end_dim merged into one; a 0-d tensor becomes 1-d."""
    if self.ndim == 0:
        return self.like(shape=(1,))
    s = normalize_dim(start_dim, self.ndim, "flatten")
    e = normalize_dim(end_dim, self.ndim, "flatten")
    check(s <= e, "flatten", "flatten() has invalid args: start_dim cannot come after end_dim")
    shape = self.shape
    return self.like(shape=shape[:s] + (prod(shape[s:e + 1]),) + shape[e + 1:])


@rule(aten.unflatten.int)
def unflatten(self: TensorMeta, dim: int, sizes: Sequence[Size]) -> TensorMeta:
    """Dim `dim` split into `sizes` (one -1 inferred)."""
    check(self.ndim > 0, "unflatten", "cannot unflatten a 0-dim tensor")
    d = normalize_dim(dim, self.ndim, "unflatten")
    check(len(sizes) > 0, "unflatten", "unflatten: sizes must be non-empty")
    new = infer_size(sizes, self.shape[d], "unflatten", factors=(self.shape[d],))
    return self.like(shape=self.shape[:d] + new + self.shape[d + 1:])


# -- permutations ---------------------------------------------------------------------

@rule(aten.permute.default, aten.permute_copy.default)
def permute(self: TensorMeta, dims: Sequence[int]) -> TensorMeta:
    """Dims reordered; `dims` must be a permutation of all dims."""
    check(len(dims) == self.ndim, "permute",
          f"number of dimensions in the tensor input does not match the length of the "
          f"desired ordering of dimensions i.e. input.dim() = {self.ndim} is not equal to "
          f"len(dims) = {len(dims)}")
    order = normalize_dims(dims, self.ndim, "permute")
    return self.like(shape=tuple(self.shape[d] for d in order))


def swapped(self: TensorMeta, a: int, b: int, op: str) -> TensorMeta:
    if self.ndim == 0:
        normalize_dim(a, 0, op)
        normalize_dim(b, 0, op)
        return self.like()
    a, b = normalize_dim(a, self.ndim, op), normalize_dim(b, self.ndim, op)
    shape = list(self.shape)
    shape[a], shape[b] = shape[b], shape[a]
    return self.like(shape=tuple(shape))


@rule(aten.transpose.int, aten.transpose_copy.int, aten.swapaxes.default,
      aten.swapdims.default, aten.transpose_.default, aten.swapaxes_.default,
      aten.swapdims_.default)
def transpose(self: TensorMeta, dim0: int, dim1: int) -> TensorMeta:
    """Two dims swapped."""
    return swapped(self, dim0, dim1, "transpose")


@rule(aten.t.default, aten.t_.default)
def t(self: TensorMeta) -> TensorMeta:
    """Transpose of a matrix; vectors and scalars unchanged."""
    check(self.ndim <= 2, "t", f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self.ndim}D")
    return self.like(shape=tuple(reversed(self.shape)))


@rule(aten.numpy_T.default)
def numpy_t(self: TensorMeta) -> TensorMeta:
    """All dims reversed."""
    return self.like(shape=tuple(reversed(self.shape)))


@rule(aten.mT.default, aten.adjoint.default)
def mT(self: TensorMeta) -> TensorMeta:
    """The last two dims swapped."""
    check(self.ndim >= 2, "mT", f"tensor.mT is only supported on matrices or batches of "
                                f"matrices. Got {self.ndim}-D tensor.")
    return swapped(self, -2, -1, "mT")


@rule(aten.movedim.int)
def movedim_int(self: TensorMeta, source: int, destination: int) -> TensorMeta:
    """One dim moved to position `destination`."""
    return movedim(self, [source], [destination])


@rule(aten.movedim.intlist)
def movedim(self: TensorMeta, source: Sequence[int],
            destination: Sequence[int]) -> TensorMeta:
    """Dims `source` moved to positions `destination`, the others keep their order."""
    check(len(source) == len(destination), "movedim",
          f"movedim: Invalid source or destination dims: source ({list(source)} dims) should "
          f"contain the same number of dims as destination ({list(destination)} dims)")
    src = normalize_dims(source, self.ndim, "movedim")
    dst = normalize_dims(destination, self.ndim, "movedim")
    if self.ndim == 0:
        return self.like()
    order: list[int | None] = [None] * self.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(self.ndim) if d not in src)
    full = [next(rest) if o is None else o for o in order]
    return self.like(shape=tuple(self.shape[d] for d in full))


# -- squeeze / unsqueeze --------------------------------------------------------------

@rule(aten.unsqueeze.default, aten.unsqueeze_copy.default, aten.unsqueeze_.default)
def unsqueeze(self: TensorMeta, dim: int) -> TensorMeta:
    """A size-1 dim inserted at `dim` (counted in the result)."""
    d = normalize_dim(dim, self.ndim + 1, "unsqueeze")
    return self.like(shape=self.shape[:d] + (1,) + self.shape[d:])


@rule(aten.squeeze.default, aten.squeeze_.default)
def squeeze(self: TensorMeta) -> TensorMeta:
    """Every size-1 dim removed (a guard per symbolic dim)."""
    return self.like(shape=tuple(s for i, s in enumerate(self.shape)
                                 if not _squeezed(s, i, "squeeze")))


@rule(aten.squeeze.dim, aten.squeeze_copy.dim, aten.squeeze_.dim)
def squeeze_dim(self: TensorMeta, dim: int) -> TensorMeta:
    """Dim `dim` removed if its size is 1."""
    return squeeze_dims(self, [dim])


@rule(aten.squeeze.dims, aten.squeeze_.dims)
def squeeze_dims(self: TensorMeta, dim: Sequence[int]) -> TensorMeta:
    """The listed dims of size 1 removed; others listed are kept."""
    if self.ndim == 0:
        normalize_dims(dim, 0, "squeeze")
        return self.like()
    drop = normalize_dims(dim, self.ndim, "squeeze")
    return self.like(shape=tuple(s for i, s in enumerate(self.shape)
                                 if not (i in drop and _squeezed(s, i, "squeeze"))))


def _squeezed(size: Size, i: int, op: str) -> bool:
    """Is dim `i` of size `size` removed?  A data-dependent size is kept (the rank must not
    depend on data), with a run-time assert that it is not 1 (eager would remove it)."""
    one = open_question(size == 1)
    if one is None:
        settle(size != 1, f"{op}: dim {i} of size {size} is kept (the result's rank cannot "
                          f"depend on data); at {size} == 1 eager would remove it")
        return False
    return one


# -- expand / repeat ------------------------------------------------------------------

def expand_shape(shape: Sequence[Size], size: Sequence[Size], op: str = "expand") -> tuple:
    """Target shape of expanding `shape` to `size` (-1 keeps a dim, new dims lead)."""
    check(len(size) >= len(shape), op,
          f"the number of sizes provided ({len(size)}) must be greater or equal to the "
          f"number of dimensions in the tensor ({len(shape)})")
    lead = len(size) - len(shape)
    out: list[Size] = []
    for i, new in enumerate(size):
        if i < lead:
            check(not is_minus_one(new), op, f"The expanded size of the tensor (-1) isn't "
                                             f"allowed in a leading, non-existing dimension {i}")
            check(new >= 0, op, f"Trying to create tensor with negative dimension {new}")
            out.append(new)
            continue
        old = shape[i - lead]
        if is_minus_one(new) or new is old or _same_size(new, old):
            out.append(old)
        elif (one := open_question(old == 1)) is None:
            # data-dependent: the graph's expand stretches a size-1 dim at run time and
            # keeps an equal one, so the result is `new` in both cases (asserted)
            check(new >= 0, op, f"Trying to create tensor with negative dimension {new}")
            settle((old == 1) | (new == old),
                   f"{op}: dim {i} of size {old} expands to {new} (it is 1 or equals {new})")
            out.append(new)
        elif one:
            check(new >= 0, op, f"Trying to create tensor with negative dimension {new}")
            out.append(new)
        else:
            check(new == old, op, f"The expanded size of the tensor ({new}) must match the "
                                  f"existing size ({old}) at non-singleton dimension {i}.  "
                                  f"Target sizes: {list(size)}.  Tensor sizes: {list(shape)}")
            out.append(old)
    return tuple(out)


@rule(aten.expand.default, aten.expand_copy.default)
def expand(self: TensorMeta, size: Sequence[Size], *, implicit: bool = False) -> TensorMeta:
    """Size-1 dims stretched, new leading dims added; -1 keeps a dim."""
    return self.like(shape=expand_shape(self.shape, size))


@rule(aten.broadcast_to.default)
def broadcast_to(self: TensorMeta, size: Sequence[Size]) -> TensorMeta:
    """expand under another name: size-1 dims stretched, -1 keeps a dim."""
    return self.like(shape=expand_shape(self.shape, size, "broadcast_to"))


@rule(aten.expand_as.default)
def expand_as(self: TensorMeta, other: TensorMeta) -> TensorMeta:
    """Expanded to `other`'s shape."""
    return self.like(shape=expand_shape(self.shape, other.shape, "expand_as"))


@rule(aten.repeat.default)
def repeat(self: TensorMeta, repeats: Sequence[Size]) -> TensorMeta:
    """Each dim multiplied by its repeat count; extra counts add leading dims."""
    check(len(repeats) >= self.ndim, "repeat",
          "Number of dimensions of repeat dims can not be smaller than number of "
          "dimensions of tensor")
    for i, r in enumerate(repeats):
        check(r >= 0, "repeat", f"Repeats cannot be negative, found {r} at index {i}")
    shape = (1,) * (len(repeats) - self.ndim) + self.shape
    return self.like(shape=tuple(s * r for s, r in zip(shape, repeats)))


@rule(aten.repeat_interleave.self_int)
def repeat_interleave_int(self: TensorMeta, repeats: Size, dim: int | None = None, *,
                          output_size: Any = None) -> TensorMeta:
    """Each element (or slice along `dim`) repeated `repeats` times; no dim flattens."""
    check(repeats >= 0, "repeat_interleave", "repeats can not be negative")
    d = None if dim is None else normalize_dim(dim, self.ndim, "repeat_interleave")
    n = (self.numel() if d is None else self.shape[d]) * repeats
    if output_size is not None:
        check(output_size == n, "repeat_interleave",
              f"repeat_interleave: Invalid output_size, expected {n} but got {output_size}")
    if d is None:
        return self.like(shape=(n,))
    return self.like(shape=self.shape[:d] + (n,) + self.shape[d + 1:])


@rule(aten.tile.default)
def tile(self: TensorMeta, dims: Sequence[Size]) -> TensorMeta:
    """repeat, with missing leading counts taken as 1."""
    counts = [1] * (self.ndim - len(dims)) + list(dims)
    return repeat(self, counts)


# -- same-shape reorderings -------------------------------------------------------------

@rule(aten.flip.default)
def flip(self: TensorMeta, dims: Sequence[int]) -> TensorMeta:
    """Same shape; `dims` must be valid and distinct."""
    normalize_dims(dims, self.ndim, "flip")
    return self.like()


@rule(aten.roll.default)
def roll(self: TensorMeta, shifts: Sequence[Size], dims: Sequence[int] = ()) -> TensorMeta:
    """Same shape; one shift per dim (or one shift for the flattened tensor)."""
    check(len(shifts) > 0, "roll", "`shifts` required")
    if len(dims) == 0:
        check(len(shifts) == 1, "roll", f"shifts and dimensions must align. shifts: "
                                        f"{len(shifts)}, dims: 0")
    else:
        check(len(shifts) == len(dims), "roll", f"shifts and dimensions must align. shifts: "
                                                f"{len(shifts)}, dims: {len(dims)}")
        for d in dims:
            normalize_dim(d, self.ndim, "roll")
    return self.like()


# -- windows and diagonals --------------------------------------------------------------

@rule(aten.unfold.default, aten.unfold_copy.default)
def unfold(self: TensorMeta, dimension: int, size: Size, step: Size) -> TensorMeta:
    """Windows of `size` every `step` along `dimension`, appended as a last dim."""
    d = normalize_dim(dimension, self.ndim, "unfold")
    n = self.shape[d] if self.ndim > 0 else 1
    check(size <= n, "unfold", f"maximum size for tensor at dimension {d} is {n} but size "
                               f"is {size}")
    check(size >= 0, "unfold", f"size is {size} but must be >= 0")
    check(step > 0, "unfold", f"step is {step} but must be > 0")
    if self.ndim == 0:
        return self.like(shape=(size,))
    return self.like(shape=replace_dim(self.shape, d, (n - size) // step + 1) + (size,))


@rule(aten.as_strided.default)
def as_strided(self: TensorMeta, size: Sequence[Size], stride: Sequence[Size],
               storage_offset: Size | None = None) -> TensorMeta:
    """The shape is `size`; strides must be non-negative and one per dim."""
    # The storage bound cannot be checked: a rule does not see the input's storage.
    check(len(size) == len(stride), "as_strided", "mismatch in length of strides and shape")
    for s in stride:
        check(s >= 0, "as_strided", f"Negative strides are not supported at the moment, "
                                    f"got strides: {list(stride)}")
    for s in size:
        check(s >= 0, "as_strided", f"Trying to create tensor with negative dimension {s}")
    return self.like(shape=tuple(size))


@rule(aten.diagonal.default)
def diagonal(self: TensorMeta, offset: int = 0, dim1: int = 0, dim2: int = 1) -> TensorMeta:
    """dim1 and dim2 removed, the diagonal's length appended."""
    a = normalize_dim(dim1, self.ndim, "diagonal")
    b = normalize_dim(dim2, self.ndim, "diagonal")
    check(a != b, "diagonal", f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n, m = self.shape[a], self.shape[b]
    if offset >= 0:
        length = sym_min(n, m - offset)
    else:
        length = sym_min(n + offset, m)
    length = sym_max(length, 0)
    rest = tuple(s for i, s in enumerate(self.shape) if i not in (a, b))
    return self.like(shape=rest + (length,))


@rule(aten.narrow.default, aten.narrow_copy.default)
def narrow(self: TensorMeta, dim: int, start: Size, length: Size) -> TensorMeta:
    """`length` elements of `dim` from `start` (negative start counts from the end)."""
    check(self.ndim > 0, "narrow", "narrow() cannot be applied to a 0-dim tensor.")
    check(length >= 0, "narrow", "narrow(): length must be non-negative.")
    d = normalize_dim(dim, self.ndim, "narrow")
    n = self.shape[d]
    check(start >= -n, "narrow", f"start out of range (expected to be in range of "
                                 f"[{-n}, {n}], but got {start})")
    check(start <= n, "narrow", f"start out of range (expected to be in range of "
                                f"[{-n}, {n}], but got {start})")
    start = wrap_index(start, n)
    check(start + length <= n, "narrow", f"start ({start}) + length ({length}) exceeds "
                                         f"dimension size ({n}).")
    return self.like(shape=replace_dim(self.shape, d, length))
