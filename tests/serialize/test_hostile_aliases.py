"""A file's ``aliases`` (tied tensors, stored once) cannot make the loader read a size from
a tensor the program writes (session 24).

The loader reads a size from a state tensor's values at load (``zeros(self.n.item())``)
unless the program writes that tensor, and then checks it at each call.  A file that tied
the read buffer ``n`` to the written buffer ``m`` made ``n`` change with every call while
the loader had read it once: ``m.mul_(10)`` grew the allocation tenfold per call past the
budget (12 GB asked for at the ninth call).  Tied names are now one tensor to the loader:
written if any of them is.
"""

from __future__ import annotations

import functools
import io

import pytest
import torch

import safetrace as st
from tests.serialize.hostile_static import pack, parts
from tests.serialize import surgery


class Grows(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("n", torch.tensor(3))
        self.register_buffer("m", torch.tensor(3))

    def forward(self, x):
        self.m.mul_(10)
        return x + torch.zeros(self.n.item()).sum()


@functools.lru_cache(maxsize=1)
def _saved() -> bytes:
    return surgery.saved(st.export(Grows(), (torch.randn(3),)))


def _tied(read: str, written: str) -> bytes:
    doc, tensors = parts(_saved())
    doc["aliases"] = [[read, written]]
    del tensors[read]
    return pack(doc, tensors)


def test_a_read_buffer_tied_to_a_written_one_is_checked_at_each_call():
    ep = st.load(io.BytesIO(_tied("state:n", "state:m")),
                 budgets={"max_alloc_numel": 1 << 20})
    mod = ep.module()
    for _ in range(4):  # 30 .. 30,000 elements: within the budget
        mod(torch.randn(3))
    with pytest.raises(st.RuntimeAssertionError, match=r"node 'zeros'.*over the budget"):
        for _ in range(4):  # (300,000 elements: 4 * 2**20 allowed; then 3,000,000)
            mod(torch.randn(3))


def test_the_untied_file_reads_the_size_at_load_and_runs():
    mod = st.load(io.BytesIO(_saved())).module()
    x = torch.randn(3)
    for _ in range(3):
        torch.testing.assert_close(mod(x), x)
