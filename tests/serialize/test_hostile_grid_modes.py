"""``grid_sampler`` with a mode it does not know is refused at call (session 34).

``grid_sampler_2d(x, grid, 9, 0, False)`` (an ``interpolation_mode`` or ``padding_mode``
other than 0, 1 or 2) writes nothing into its output and returns the memory it allocated:
a file choosing the mode made the loaded program return whatever the heap held
(``1e+18``, ``4.6e-41``).  An exported ``F.grid_sample`` records modes the kernel knows,
and its loaded program holds no check.
"""

from __future__ import annotations

import io

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from safetrace.errors import InputMismatchError, RuntimeAssertionError
from tests.serialize.hostile_static import pack, parts, saved_abs


def _hostile(target: str, interpolation: int, padding: int) -> bytes:
    """The saved program of ``x.abs()`` made ``target(x, zeros(1, 2, 2, 2), modes)``."""
    doc, tensors = parts(saved_abs(1, 1, 4, 4))
    kept = [n for n in doc["nodes"] if n["op"] != "call_function"]
    out = kept.pop()
    out["args"] = [{"tuple": [{"node": "z"}]}]
    doc["nodes"] = kept + [
        {"name": "g", "op": "call_function", "target": "torch.ops.aten.new_zeros.default",
         "args": [{"node": "x"}, {"list": [1, 2, 2, 2]}]},
        {"name": "z", "op": "call_function", "target": f"torch.ops.aten.{target}.default",
         "args": [{"node": "x"}, {"node": "g"}, interpolation, padding, False]}, out]
    return pack(doc, tensors)


@pytest.mark.parametrize("target,interpolation,padding", [
    ("grid_sampler_2d", 9, 0), ("grid_sampler_2d", 0, 9), ("grid_sampler", -1, 0),
    ("grid_sampler", 0, 3)])
def test_unknown_mode_is_refused_at_call(target, interpolation, padding):
    ep = st.load(io.BytesIO(_hostile(target, interpolation, padding)))
    with pytest.raises(RuntimeAssertionError, match=r"_mode=-?\d, not 0, 1 or 2"):
        ep.module()(torch.randn(1, 1, 4, 4))


class Sample(torch.nn.Module):
    def forward(self, x, grid):
        return F.grid_sample(x, grid, mode="bilinear", padding_mode="border",
                             align_corners=False)


def test_exported_grid_sample_round_trips_without_a_check():
    n = st.Dim("n", max=8)
    ep = st.export(Sample(), (torch.randn(2, 3, 5, 6), torch.rand(2, 4, 4, 2) * 2 - 1),
                   dynamic_shapes={"x": {0: n}, "grid": {0: n}})
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(io.BytesIO(buf.getvalue()))
    assert not any(getattr(node.target, "__module__", "") ==
                   "safetrace.serialize.operand_checks" for node in loaded.graph.nodes)
    for b in (0, 1, 3):
        x, grid = torch.randn(b, 3, 5, 6), torch.rand(b, 4, 4, 2) * 2 - 1
        torch.testing.assert_close(loaded.module()(x, grid), Sample()(x, grid))
    with pytest.raises(InputMismatchError):
        loaded.module()(torch.randn(9, 3, 5, 6), torch.rand(9, 4, 4, 2))
    loaded.to_torch()
