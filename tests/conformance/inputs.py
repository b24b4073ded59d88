"""Deterministic input factories for the case tables (seeded by the sizes, not by hash(),
which Python randomizes per process for strings)."""

from __future__ import annotations

import zlib

import torch


def gen(*key) -> torch.Generator:
    return torch.Generator().manual_seed(zlib.crc32(repr(key).encode()))


def rn(*shape):
    return torch.randn(*shape, generator=gen("rn", *shape))


def ri(hi, *shape, lo=0):
    return torch.randint(lo, hi, shape, generator=gen("ri", hi, lo, *shape))
