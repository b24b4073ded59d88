"""``_weight_norm`` with a ``g`` smaller than ``v``'s normed dim is refused at call
(session 34).

``_weight_norm(v, g, 0)`` (and at ``v``'s last dim) runs a fused kernel that reads ``g``
and writes its norms, a tensor of ``g``'s shape, at ``v.size(dim)`` elements without a
check: a file whose ``g`` has one element for a ``[300, 4]`` ``v`` corrupted the heap
(``malloc_consolidate(): invalid chunk size``, the process aborted).  A weight-normed
layer's parameters fit, and their loaded program holds no check (``to_torch()`` converts
it).
"""

from __future__ import annotations

import io
import os
import subprocess
import warnings

import pytest
import torch

import safetrace as st
from safetrace.errors import InputMismatchError
from tests import child
from tests.serialize.hostile_static import pack, parts, saved_abs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _hostile(g_shape: list, dim: int = 0) -> bytes:
    """The saved program of ``x.abs()`` at ``[300, 4]`` made ``_weight_norm(x, ones(g_shape),
    dim)``."""
    doc, tensors = parts(saved_abs(300, 4))
    kept = [n for n in doc["nodes"] if n["op"] != "call_function"]
    out = kept.pop()
    out["args"] = [{"tuple": [{"node": "z"}]}]
    doc["nodes"] = kept + [
        {"name": "g", "op": "call_function", "target": "torch.ops.aten.new_ones.default",
         "args": [{"node": "x"}, {"list": g_shape}]},
        {"name": "z", "op": "call_function", "target": "torch.ops.aten._weight_norm.default",
         "args": [{"node": "x"}, {"node": "g"}, dim]}, out]
    return pack(doc, tensors)


def _call_in_child(blob: bytes) -> subprocess.CompletedProcess:
    """(A process forked from one that imported torch: tests/child.py.)"""
    code = ("import io, sys, torch, safetrace as st\n"
            "ep = st.load(io.BytesIO(sys.stdin.buffer.read()))\n"
            "try:\n"
            "    ep.module()(torch.randn(300, 4))\n"
            "    print('ran')\n"
            "except st.errors.RuntimeAssertionError as e:\n"
            "    print('refused', e)\n")
    return child.run(["-c", code], input=blob, env=dict(os.environ, PYTHONPATH=ROOT),
                     timeout=300)


@pytest.mark.parametrize("g_shape,dim", [([1], 0), ([1, 1], 0), ([2], 1)])
def test_small_g_is_refused_at_call_without_crashing(g_shape, dim):
    out = _call_in_child(_hostile(g_shape, dim))
    assert out.returncode == 0, out.stderr[-500:]
    assert out.stdout.startswith(b"refused"), out.stdout
    assert b"_weight_norm" in out.stdout and b"unchecked" in out.stdout


def test_g_that_broadcasts_off_the_fused_dims_runs_as_eager():
    ep = st.load(io.BytesIO(_hostile([1, 1], -1)))  # (dim -1 of a 2-d v: not fused)
    x = torch.randn(300, 4)
    want = torch._weight_norm(x, torch.ones(1, 1), -1)
    torch.testing.assert_close(ep.module()(x), want)


@pytest.mark.parametrize("dim", [0, 1])
def test_weight_normed_layer_round_trips_without_a_check(dim):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3), dim=dim)
    ep = st.export(m, (torch.randn(2, 4),), dynamic_shapes={"input": {0: st.Dim("n", max=8)}})
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(io.BytesIO(buf.getvalue()))
    assert not any("operand_checks" in str(n.target) for n in loaded.graph.nodes)
    for n in (0, 1, 5):
        x = torch.randn(n, 4)
        torch.testing.assert_close(loaded.module()(x), m(x))
    with pytest.raises(InputMismatchError):
        loaded.module()(torch.randn(9, 4))
    loaded.to_torch()
