"""TensorMeta: what a shape rule sees of a tensor (no data, no torch.Tensor)."""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta.active import ACTIVE
from safetrace.symbolic import sym_max

Size = Any  # int or safetrace.symbolic.SymInt


class TensorMeta:
    """Shape (a tuple of ints or symbolic ints), dtype and device of a tensor.

    ``bounds`` optionally holds (lo, hi): limits every element's value is known to obey
    (``count_nonzero(x)`` lies in [0, x.numel()]); ``.item()`` turns them into the range
    of the data-dependent value it returns.  ``mask_count`` remembers how many elements
    of a bool mask are True once ``x[mask]`` asked, so ``x[m]`` and ``y[m]`` agree; masks
    computed the same way from the same values (``x > 1`` twice, no write between) share
    one count (``share_mask_count``).
    """

    __slots__ = ("shape", "dtype", "device", "_bounds", "_bounds_epoch", "_mask_cell",
                 "static", "_symbolic", "ndim")

    def __init__(self, shape: tuple, dtype: torch.dtype, device: torch.device,
                 bounds: tuple | None = None) -> None:
        self.shape = shape = tuple(shape)
        self.ndim = len(shape)  # (an attribute: rules read it often)
        self.dtype = dtype
        self.device = device
        self._bounds = bounds
        self._bounds_epoch = ACTIVE.data_epoch
        # for a bool mask: [its (symbolic) number of True elements, the epoch it holds in],
        # made when first set or shared (most metas never need one)
        self._mask_cell: list | None = None
        # (shape, dtype, device) while every size is an int and no value facts are held
        # (all a shape rule can read of this meta: the key of its answers, rulecache.py)
        self.static: tuple | None = (shape, dtype, device) if bounds is None else None
        self._symbolic: tuple | None = None  # (env, symbolic_key(env)) once asked
        for s in shape:
            if type(s) is not int:
                self.static = None
                break

    # Facts about the values hold until the next in-place write anywhere (a write through
    # any alias may change them): then they read as unknown.
    @property
    def bounds(self) -> tuple | None:
        return self._bounds if self._bounds_epoch == ACTIVE.data_epoch else None

    @bounds.setter
    def bounds(self, value: tuple | None) -> None:
        self._bounds, self._bounds_epoch = value, ACTIVE.data_epoch
        if value is not None:
            self.static = None

    @property
    def mask_count(self) -> Any:
        cell = self._mask_cell
        return cell[0] if cell is not None and cell[1] == ACTIVE.data_epoch else None

    @mask_count.setter
    def mask_count(self, value: Any) -> None:
        self.static = None
        if self._mask_cell is None:
            self._mask_cell = [value, ACTIVE.data_epoch]
        else:
            self._mask_cell[:] = [value, ACTIVE.data_epoch]

    def share_mask_count(self, other: TensorMeta) -> None:
        """This mask has the same values as `other` (the same op on the same values): one
        count for both, whichever is indexed first."""
        if other._mask_cell is None:
            other._mask_cell = [None, 0]
        self._mask_cell = other._mask_cell
        self.static = other.static = None  # (a count set through either is held by both)

    def static_key(self) -> tuple | None:
        """(shape, dtype, device) when every size is an int and no value facts are held
        (all a shape rule can read of this meta); else None."""
        return self.static

    def symbolic_key(self, env: Any) -> tuple | None:
        """(sizes, dtype, device), each symbolic size as its expression, when every size
        is an int or a size of `env` and no value facts are held: with `env`'s state (its
        epoch), all a shape rule can read of this meta; else None."""
        if self._bounds is not None or self._mask_cell is not None:
            return None
        known = self._symbolic  # (sizes, dtype and device never change: kept once made)
        if known is not None and known[0] is env:
            return known[1]
        sizes = []
        cls = env.int_cls
        for s in self.shape:
            if type(s) is int:
                sizes.append(s)
            elif type(s) is cls and s.env is env:
                sizes.append(s.expr)  # (interned: equal expressions are one object)
            else:
                return None
        key = (tuple(sizes), self.dtype, self.device)
        self._symbolic = (env, key)
        return key

    def dim(self) -> int:
        return len(self.shape)

    def numel(self) -> Size:
        n = 1
        sym: Size = None
        for s in self.shape:
            if type(s) is int:
                n *= s  # plain ints first: each symbolic product builds an expression
            else:
                sym = s if sym is None else sym * s
        return n if sym is None else (sym * n if n != 1 else sym)

    def like(self, shape: tuple | None = None, dtype: torch.dtype | None = None) -> TensorMeta:
        """A new meta on the same device, with the given shape and/or dtype."""
        return TensorMeta(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.device,
        )

    def __repr__(self) -> str:
        return f"TensorMeta({list(self.shape)}, {self.dtype}, {self.device})"


def static_meta(static: tuple) -> TensorMeta:
    """``TensorMeta(*static)`` for a static key (a tuple of int sizes, dtype, device: a
    meta's ``static``, or a real tensor's), without the constructor's look at each size.
    The hot paths (a replayed op's result, the program's state) make one per value."""
    m = _NEW(TensorMeta)
    m.shape = shape = static[0]
    m.ndim = len(shape)
    m.dtype, m.device = static[1], static[2]
    m._bounds = m._mask_cell = m._symbolic = None
    m._bounds_epoch = 0  # (read only with bounds, which the setter sets with its epoch)
    m.static = static
    return m


_NEW = object.__new__


def contiguous_strides(shape: tuple) -> tuple:
    """Row-major strides of a contiguous tensor of `shape` (size-0/1 dims as torch does)."""
    strides = []
    acc: Size = 1
    for s in reversed(shape):
        strides.append(acc)
        acc = acc * _at_least_one(s)
    return tuple(reversed(strides))


def _at_least_one(s: Size) -> Size:
    if isinstance(s, int):
        return s if s > 1 else 1
    return sym_max(s, 1)
