"""Shape rules of padding: constant_pad_nd, pad (all modes), reflection/replication pads.

Pad lists run from the last dim backwards: ``[left, right, top, bottom, front, back]``.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from safetrace.errors import shape_error
from safetrace.meta import TensorMeta
from safetrace.rules.common import broadcast_shapes, check, decided_max, every
from safetrace.rules.registry import op_name, rule
from safetrace.symbolic import sym_min

aten = torch.ops.aten
Size = Any


def _padded(shape: tuple, pad: Sequence[Size]) -> list:
    """Shape with pad[2i] + pad[2i+1] added to dim -1-i."""
    out = list(shape)
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        out[d] = shape[d] + pad[2 * i] + pad[2 * i + 1]
    return out


@rule(aten.constant_pad_nd.default)
def constant_pad_nd(self: TensorMeta, pad: Sequence[Size], value: Any = 0) -> TensorMeta:
    """Each padded dim grows by its two pads (negative pads crop, never below 0)."""
    op = "constant_pad_nd"
    check(len(pad) % 2 == 0, op, f"Length of pad must be even but instead it equals {len(pad)}")
    check(len(pad) // 2 <= self.ndim, op,
          f"Length of pad should be no more than twice the number of dimensions of the "
          f"input. Pad length is {len(pad)} while the input has {self.ndim} dimensions.")
    out = _padded(self.shape, pad)
    for i in range(len(pad) // 2):
        d = self.ndim - 1 - i
        # eager crops a negative left pad first: that narrow alone must fit
        left = pad[2 * i]
        crop = (left if left < 0 else 0) if isinstance(left, int) else sym_min(left, 0)
        if not (isinstance(crop, int) and crop == 0):
            check(self.shape[d] + crop >= 0, op, "narrow(): length must be non-negative.")
        check(out[d] >= 0, op,
              f"The input size {self.shape[d]}, plus negative padding {pad[2 * i]} and "
              f"{pad[2 * i + 1]} resulted in a negative output size, which is invalid. Check "
              f"dimension {d} of your input.")
    return self.like(shape=tuple(out))


@rule(aten._pad_circular.default)
def pad_circular(self: TensorMeta, pad: Sequence[Size]) -> TensorMeta:
    """Each padded dim grows by its pads; a pad may not exceed the dim (one wrap at most)."""
    op = "_pad_circular"
    n = len(pad) // 2
    check(self.ndim - n in (1, 2), op,
          f"Invalid padding size, expected 1 or 2 non-padded dimensions, which would be "
          f"equivalent to padding of length {(self.ndim - 1) * 2} or {(self.ndim - 2) * 2} "
          f"respectively but got {len(pad)}")
    out = _padded(self.shape, pad[:2 * n])
    for i in range(n):
        d = self.ndim - 1 - i
        size = self.shape[d]
        check(pad[2 * i] <= size, op, "Padding value causes wrapping around more than once.")
        check(pad[2 * i + 1] <= size, op, "Padding value causes wrapping around more than once.")
        check(out[d] >= 0, op, "Negative padding value is resulting in an empty dimension")
    return self.like(shape=tuple(out))


def _pad_nd(self: TensorMeta, padding: Sequence[Size], k: int, reflection: bool,
            op: str) -> TensorMeta:
    """reflection_pad{k}d / replication_pad{k}d: the last k dims padded, one optional batch."""
    check(len(padding) == 2 * k, op, f"padding size is expected to be {2 * k}, but got: "
                                     f"{len(padding)}")
    check(self.dtype is not torch.bool, op, f'"{op}" not implemented for \'Bool\'')
    batch = self.ndim == k + 2
    # Sizes other than the batch must be non-zero: one guard per symbolic dim.
    nonzero = all(not s == 0 for s in self.shape[1 if batch else 0:])
    check(self.ndim in (k + 1, k + 2) and nonzero, op,
          f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and "
          f"other non-zero dimensions for input, but got: {list(self.shape)}")
    out = _padded(self.shape, padding)
    if reflection:
        for i in range(k):
            d = self.ndim - 1 - i
            lo, hi = padding[2 * i], padding[2 * i + 1]
            msg = (f"Argument #{4 + 2 * i}: Padding size should be less than the "
                   f"corresponding input dimension, but got: padding ({lo}, {hi}) at dimension "
                   f"{d} of input {list(self.shape)}")
            check(lo < self.shape[d], op, msg)
            check(hi < self.shape[d], op, msg)
    # torch accepts the output if any padded dim stays non-empty (its kernels' own test).
    padded = out[self.ndim - k:]
    if not any(s >= 1 for s in padded):
        raise shape_error(op, f"input {list(self.shape[self.ndim - k:])} is too small. "
                              f"Calculated output {padded}")
    return self.like(shape=tuple(out))


# op, padded dims, reflection (else replication)
PAD_OPS = [
    (aten.reflection_pad1d.default, 1, True),
    (aten.reflection_pad2d.default, 2, True),
    (aten.reflection_pad3d.default, 3, True),
    (aten.replication_pad1d.default, 1, False),
    (aten.replication_pad2d.default, 2, False),
    (aten.replication_pad3d.default, 3, False),
]


def _pad_rule(k: int, reflection: bool, opname: str) -> Any:
    def pad_rule(self: TensorMeta, padding: Sequence[Size]) -> TensorMeta:
        return _pad_nd(self, padding, k, reflection, opname)

    pad_rule.__doc__ = f"{opname}: the last {k} dims grow by their pads."
    pad_rule.__name__ = pad_rule.__qualname__ = opname
    return pad_rule


for _op, _k, _reflection in PAD_OPS:
    rule(_op)(_pad_rule(_k, _reflection, op_name(_op)))

_MODES = ("constant", "reflect", "replicate", "circular")


@rule(aten.pad.default)
def pad(self: TensorMeta, pad: Sequence[Size], mode: str = "constant",
        value: float | None = None) -> TensorMeta:
    """F.pad: constant pads any dims; other modes pad the last 1-3 dims of batched inputs."""
    op = "pad"
    check(mode in _MODES, op, f"Unrecognised padding mode {mode}")
    check(len(pad) % 2 == 0, op, "Padding length must be divisible by 2")
    check(len(pad) // 2 <= self.ndim, op,
          f"Padding length should be less than or equal to two times the input dimension but "
          f"got padding length {len(pad)} and input of dimension {self.ndim}")
    if mode == "constant":
        return constant_pad_nd(self, pad, 0 if value is None else value)
    check(value is None or value == 0, op,
          f'Padding mode "{mode}" doesn\'t take in value argument')
    k = len(pad) // 2
    check(k in (1, 2, 3) and self.ndim in (k + 1, k + 2), op,
          f"Padding size {len(pad)} is not supported for {self.ndim}D input tensor.")
    if mode == "circular":
        return pad_circular(self, pad)
    name = "reflection" if mode == "reflect" else "replication"
    return _pad_nd(self, pad, k, mode == "reflect", f"{name}_pad{k}d")


@rule(aten.pad_sequence.default)
def pad_sequence(sequences: Sequence[TensorMeta], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> TensorMeta:
    """Sequences stacked along a new dim (0 with batch_first, else 1), each padded to the
    longest: (n, max_len, *trailing) of the first sequence's trailing dims and dtype (the
    others are copied in, so their trailing dims broadcast to it)."""
    op = "aten.pad_sequence"
    check(len(sequences) > 0, op, "received an empty list of sequences")
    check(padding_side in ("left", "right"), op, f"Expected padding_side to be one of left "
          f"or right, but got {padding_side}.")
    first = sequences[0]
    check(first.ndim >= 1, op, "Dimension specified as 0 but tensor has no dimensions")
    trailing = tuple(first.shape[1:])
    longest = first.shape[0]
    for seq in sequences[1:]:
        check(seq.ndim >= 1, op, "Dimension specified as 0 but tensor has no dimensions")
        dest = (seq.shape[0],) + trailing  # the sequence is copied into this slice
        shape = broadcast_shapes(dest, seq.shape, op=op)
        check(len(shape) == len(dest) and every(a is b or a == b
                                              for a, b in zip(shape, dest)), op,
              f"The expanded size of the tensor {list(seq.shape)} must match the "
              f"existing size {list(dest)}")
        longest = decided_max(longest, seq.shape[0])
    n = len(sequences)
    lead = (n, longest) if batch_first else (longest, n)
    return first.like(lead + trailing)
