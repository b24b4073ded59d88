"""A node's argument that names a node returning nothing is refused at load (session 26).

The graph's run-time checks (``assert_sym``), a loaded program's value-size checks and the
grad-mode switch run for their effect and return None.  A file rewired so that a kernel
takes one of them as an operand (``add(assert_sym, sum_1)``, found by
``benchmarks/hostile_probe.py``) loaded and then failed inside the kernel at call, with
torch's "Expected a proper Tensor but got None"; a callee that reads None as "absent"
could run another computation than the one recorded.  The loader refuses it by name.
"""

from __future__ import annotations

import functools
import io

import pytest
import torch

import safetrace as st
from tests.serialize.hostile_static import parts
from tests.serialize import surgery


class Checked(torch.nn.Module):
    def forward(self, x):
        v = x.max().int().item()
        torch._check(v >= 0)
        return x + x.sum() + v


@functools.lru_cache(maxsize=1)
def _saved() -> bytes:
    buf = io.BytesIO()
    ep = st.export(Checked(), (torch.tensor([1.0, 5.0, 2.0, 0.5]),),
                   dynamic_shapes=({0: st.Dim.DYNAMIC},))
    st.save(ep, buf)
    return buf.getvalue()


def test_the_unchanged_file_loads_and_checks():
    ep = st.load(io.BytesIO(_saved()))
    for n in (0, 1, 7):
        x = torch.arange(float(n)) + 1
        if n:
            torch.testing.assert_close(ep.module()(x), Checked()(x))
    with pytest.raises(RuntimeError, match=">= 0"):
        ep.module()(-torch.ones(5))


def test_a_kernel_taking_a_checks_result_is_refused():
    doc, tensors = parts(_saved())
    nodes = doc["nodes"]
    check = next(n["name"] for n in nodes if n.get("target") == "safetrace.assert_sym")
    add = next(n for n in nodes if n.get("target") == "torch.ops.aten.add.Tensor")
    add["args"][0] = {"node": check}
    with pytest.raises(st.LoadError, match=f"takes the result of node '{check}', which "
                                           "returns nothing"):
        surgery.load(doc, tensors)
