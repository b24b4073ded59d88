"""The deploy tools' own lowerings of the contract's checks (ONNX graph nodes, ExecuTorch
scalar operators, AOTInductor's C++) on a condition holding a division whose divisor may be
0 beside a side that holds there: ``(n <= 2) or ((n + (n+1)//2 - 1)//((n+1)//2) >= 1)`` from
``z.unsafe_chunk(2, 0)[-1]`` at n == 0. Each evaluates every side, so each now lowers the
condition with its divisions made safe (``interop/divisions.py`` ``safe_conditions``, as
``to_torch``'s asserts): before, onnxruntime stopped with ``Integer modulo by zero`` and the
ExecuTorch check refused n == 0, which ``ep.module()`` accepts."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st
from safetrace import Dim
from safetrace.interop import executorch_checks
from safetrace.interop.divisions import safe_conditions
from safetrace.symbolic.semantics import lower

SIZES = (0, 1, 2, 5)


class Chunked(torch.nn.Module):
    def forward(self, z):
        v0 = z.sum(dim=[], keepdim=False) if z.shape[0] > 2 else z.sum(dim=0, keepdim=False)
        return v0, z.unsafe_chunk(2, 0)[-1] * 2


@pytest.fixture(scope="module")
def ep():
    return st.export(Chunked(), (torch.randn(2),), dynamic_shapes=({0: Dim("d0", max=16)},))


def _holds(cond, n):
    try:
        return bool(cond.evaluate({"s0": n}))
    except ZeroDivisionError:
        return None


def test_safe_conditions_agree_and_never_divide_by_zero(ep):
    for c, safe in zip(ep.contract.conditions, safe_conditions(ep.contract)):
        for n in range(0, 17):
            want = _holds(c.cond, n)
            assert want is None or bool(safe.evaluate({"s0": n})) == want


def test_executorch_checks_accept_what_the_program_accepts(ep):
    # each check lowered as st.to_executorch lowers it (ExecuTorch's scalar operators,
    # run here by their Python kernels); before, the check failed wherever a divisor is 0
    plan = [b for text, b in executorch_checks._plan(ep.contract) if "satisfy" in text]
    assert plan
    for build in plan:
        g = torch.fx.Graph()
        checks = executorch_checks._Checks(g)
        n = g.placeholder("n")
        g.output(checks.verdict(lambda: build(checks, [], {"s0": n})))
        verdict = torch.fx.GraphModule(torch.nn.Module(), g)
        for size in SIZES:
            ep.module()(torch.randn(size))  # (accepted by the program)
            assert verdict(size), size


def test_onnx_checks_accept_what_the_program_accepts(ep, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        st.to_onnx(ep, str(tmp_path / "m.onnx"))
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"))
    name = sess.get_inputs()[0].name
    for n in SIZES:
        z = torch.randn(n)
        got = sess.run(None, {name: z.numpy()})
        for g, w in zip(got, Chunked()(z)):
            assert g.shape == tuple(w.shape) and torch.allclose(torch.from_numpy(g), w), n
    with pytest.raises(Exception, match="safetrace input check"):
        sess.run(None, {name: torch.randn(17).numpy()})
