"""A stored tensor of no elements whose other sizes are huge (``[0, 2**30, 2**30]``),
declared so in the header, the state entry and the placeholder alike (hostile probe,
session 33, class ``zerodims``).

Before: a program taking ``.item()`` of such a buffer loaded, and every call raised
torch's ``RuntimeError: a Tensor with 0 elements cannot be converted to Scalar``.  Now
refused at load (``item`` of a tensor whose sizes are numbers and not one element fails
at every call); the same buffer summed over its empty dim, or broadcast, is bounded by
the load's memory checks.
"""

from __future__ import annotations


import pytest
import torch

import safetrace as st
from tests.serialize import hostile
from tests.serialize import surgery


class _Count(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("n", torch.tensor(3))

    def forward(self, x):
        return x + torch.zeros(self.n.item()).sum()


class _Reduce(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("w", torch.ones(2, 3))

    def forward(self, x):
        return x + self.w.sum(0).sum()


def _with_state(model: torch.nn.Module, name: str, shape: list, dtype: torch.dtype) -> bytes:
    doc, tensors = hostile.parts(surgery.saved(st.export(model, (torch.randn(3),))))
    tensors[f"state:{name}"] = torch.zeros(shape, dtype=dtype)
    next(s for s in doc["state"] if s["name"] == name)["shape"] = shape
    target = next(s["name"] for s in doc["inputs"] if s["target"] == name)
    node = next(n for n in doc["nodes"] if n["name"] == target)
    node["meta"]["val"]["tensor"]["shape"] = shape
    return hostile.pack(doc, tensors)


def test_item_of_an_empty_buffer_with_huge_sizes_is_refused_at_load():
    blob = _with_state(_Count(), "n", [0, 1 << 30, 1 << 30], torch.int64)
    with pytest.raises(st.LoadError, match=r"'item'.*one element, given one of 0 "
                                           r"\(\[0, 1073741824, 1073741824\]\)"):
        st.load(blob)
    for shape in ([2], [1, 2], []):  # (two elements; one: loads and runs as eager)
        blob = _with_state(_Count(), "n", shape, torch.int64)
        if shape == []:
            torch.testing.assert_close(st.load(blob).module()(torch.ones(3)), torch.ones(3))
            continue
        with pytest.raises(st.LoadError, match="one element, given one of 2"):
            st.load(blob)


def test_a_sum_over_the_empty_dim_of_huge_sizes_is_refused_at_load():
    blob = _with_state(_Reduce(), "w", [0, 1 << 40], torch.float32)
    with pytest.raises(st.LoadError):
        st.load(blob)
    fine = st.load(_with_state(_Reduce(), "w", [0, 3], torch.float32)).module()
    for n in (3,):
        torch.testing.assert_close(fine(torch.ones(n)), torch.ones(n))
