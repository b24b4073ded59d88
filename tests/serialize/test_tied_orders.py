"""Names the file ties to one stored tensor (``aliases``) are one tensor in the loaded
program; one laid out in another ``order`` than the tensor's other names would be a copy
of its own, and is refused (session 31: it loaded untied, so a buffer the graph writes in
place was not what its tied name read: eager gave 1 then 2, the loaded program 0 and 0).
The writer ties only tensors of one storage, offset, shape and strides: one order."""

from __future__ import annotations

import copy

import pytest
import torch

import safetrace as st
from tests.serialize import hostile
from tests.serialize import surgery


class _Counter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("a", torch.zeros(3, 4))

    def forward(self, x):
        self.a.add_(1)
        return x + self.a


def _tied(order_a, order_b) -> bytes:
    """The saved program with a second buffer ``b`` tied to ``a`` (``aliases``), which the
    graph reads where it read ``a`` after writing it."""
    doc, tensors = hostile.parts(surgery.saved(st.export(_Counter(), (torch.randn(3, 4),))))
    a = doc["state"][0]
    b = dict(a, name="b")
    for entry, order in ((a, order_a), (b, order_b)):
        if order is not None:
            entry["order"] = order
    doc["state"].append(b)
    doc["aliases"] = [["state:b", "state:a"]]
    doc["inputs"].insert(1, {"kind": "buffer", "name": "b_b", "target": "b", "leaf": None,
                             "persistent": True})
    placeholder = copy.deepcopy(doc["nodes"][0])
    placeholder["name"] = "b_b"
    placeholder["meta"]["extra"]["target"] = "b"
    doc["nodes"].insert(1, placeholder)
    add = next(n for n in doc["nodes"] if n["name"] == "add")
    add["args"][1] = {"node": "b_b"}
    return hostile.pack(doc, tensors)


@pytest.mark.parametrize("orders", [(None, None), ([1, 0], [1, 0])])
def test_tied_names_of_one_order_are_one_tensor(orders):
    mod = st.load(_tied(*orders)).module()
    for n in (1, 2, 3):  # (the write to ``a`` is what ``b`` reads: as eager)
        torch.testing.assert_close(mod(torch.ones(3, 4)), torch.full((3, 4), n + 1.0))
    with pytest.raises(st.InputMismatchError):
        mod(torch.zeros(2, 4))


@pytest.mark.parametrize("orders", [(None, [1, 0]), ([1, 0], None)])
def test_tied_names_of_other_orders_are_refused(orders):
    with pytest.raises(st.LoadError, match=r"state\[1\]: tied \(aliases\) to a tensor the "
                                           r"file lays out in order"):
        st.load(_tied(*orders))
