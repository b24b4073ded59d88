"""An upsample kernel given an output size and a tiny scale is refused at call (session 34).

``upsample_nearest2d.default(x, [9, 11], 1e-30, 1e-30)`` maps output index ``i`` to
``i / 1e-30`` in the input, casts that to an int64 (overflow: ``-2**63``) and clamps it
only from above: on a uint8 tensor the kernel reads ~2**63 bytes away and the process
crashed; on a float tensor it read element 0 by accident.  A file chooses the overload and
its scales (the exporter records ``.vec``, whose scales make the output size), so the
loader checks each scale before the kernel runs.
"""

from __future__ import annotations

import io
import os

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from safetrace.errors import InputMismatchError, RuntimeAssertionError
from tests import child
from tests.serialize.hostile_static import pack, parts
from tests.serialize import surgery

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Up(torch.nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=2.0, mode="nearest")


def _saved(dtype: torch.dtype, dynamic: bool = False) -> bytes:
    x = torch.arange(105).reshape(1, 3, 5, 7).to(dtype)
    shapes = {"x": {0: st.Dim("n", max=8)}} if dynamic else None
    return surgery.saved(st.export(Up(), (x,), dynamic_shapes=shapes))


def _edited(dtype: torch.dtype, target: str, size: list, scales: list) -> bytes:
    """The saved program with its upsample call made ``target(x, size, [False,] *scales)``."""
    doc, tensors = parts(_saved(dtype))
    node = next(n for n in doc["nodes"] if n["op"] == "call_function")
    node["target"] = f"torch.ops.aten.{target}.default"
    corners = [False] if "linear" in target or "cubic" in target else []
    node["args"] = [{"node": "x"}, {"list": size}, *corners,
                    *({"float": repr(s)} for s in scales)]
    node["meta"]["val"]["tensor"]["shape"] = [1, 3, *size]
    return pack(doc, tensors)


@pytest.mark.parametrize("target,size", [
    ("upsample_nearest2d", [9, 11]), ("_upsample_nearest_exact2d", [9, 11]),
    ("upsample_bilinear2d", [9, 11]), ("upsample_bicubic2d", [9, 11])])
def test_tiny_scale_is_refused_at_call(target, size):
    ep = st.load(io.BytesIO(_edited(torch.float32, target, size, [1e-30, 1e-30])))
    with pytest.raises(RuntimeAssertionError, match=r"scale of 1e-30 for an output size of 9"):
        ep.module()(torch.randn(1, 3, 5, 7))


def test_tiny_scale_of_a_uint8_tensor_does_not_crash_the_process():
    blob = _edited(torch.uint8, "upsample_nearest2d", [9, 11], [1e-30, 1e-30])
    code = ("import io, sys, torch, safetrace as st\n"
            "ep = st.load(io.BytesIO(sys.stdin.buffer.read()))\n"
            "try:\n"
            "    ep.module()(torch.zeros(1, 3, 5, 7, dtype=torch.uint8))\n"
            "except st.errors.RuntimeAssertionError as e:\n"
            "    print('refused', e)\n")
    out = child.run(["-c", code], input=blob, env=dict(os.environ, PYTHONPATH=ROOT),
                    timeout=300)  # (forked from a process that imported torch)
    assert out.returncode == 0, out.stderr[-500:]
    assert b"refused" in out.stdout


def test_scales_that_fit_their_sizes_run_as_eager():
    scales = [9 / 5, 11 / 7]
    ep = st.load(io.BytesIO(_edited(torch.uint8, "upsample_nearest2d", [9, 11], scales)))
    x = torch.randint(0, 200, (1, 3, 5, 7), dtype=torch.uint8)
    want = torch.ops.aten.upsample_nearest2d(x, [9, 11], *scales)
    assert torch.equal(ep.module()(x), want)
    with pytest.raises(InputMismatchError):
        ep.module()(torch.zeros(1, 3, 6, 7, dtype=torch.uint8))
    # (constant sizes and scales that fit: no check in the graph, to_torch() converts it)
    assert not any("operand_checks" in str(n.target) for n in ep.graph.nodes)
    ep.to_torch()


def test_exported_interpolate_round_trips_at_other_sizes():
    ep = st.load(io.BytesIO(_saved(torch.uint8, dynamic=True)))
    for n in (0, 1, 2, 5):
        x = torch.randint(0, 200, (n, 3, 5, 7), dtype=torch.uint8)
        assert torch.equal(ep.module()(x), Up()(x))
    with pytest.raises(InputMismatchError):
        ep.module()(torch.zeros(9, 3, 5, 7, dtype=torch.uint8))


@pytest.mark.parametrize("target", ["_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa"])
def test_anti_aliased_window_of_a_small_scale_is_refused_at_call(target):
    # (1e-7: the kernel allocated 3-6 GiB for this 5 x 7 uint8 image, or worked for
    # minutes on float32; far below 2**52.  1e-5 here: it runs in a second unchecked)
    ep = st.load(io.BytesIO(_edited(torch.float32, target, [9, 11], [1e-5, 1e-5])))
    with pytest.raises(RuntimeAssertionError, match=r"anti-aliasing window"):
        ep.module()(torch.randn(1, 3, 5, 7))


def test_anti_aliased_scales_of_the_sizes_run_as_eager():
    scales = [9 / 5, 11 / 7]
    ep = st.load(io.BytesIO(_edited(torch.float32, "_upsample_bicubic2d_aa", [9, 11], scales)))
    x = torch.randn(1, 3, 5, 7)
    want = torch.ops.aten._upsample_bicubic2d_aa(x, [9, 11], False, *scales)
    torch.testing.assert_close(ep.module()(x), want)
