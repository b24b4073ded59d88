"""The conversion tests run torch's meta kernels on every converted node too
(``verify=True``), cross-checking our shape rules against torch's; the tests of the tools
downstream (ONNX, AOTInductor, ExecuTorch, decompositions, unflatten, torch.export.save)
take the default path users get (fake values built from our shapes), and
test_fake_values.py compares the two node by node.  An outer
``SAFETRACE_VERIFY_TO_TORCH`` setting wins (``=0`` runs every file on the fast path)."""

import os

import pytest

_TOOLS = {"test_onnx_aoti", "test_executorch", "test_decompositions",
          "test_decompose_control_flow", "test_unflatten", "test_saved",
          "test_retrace_decisions", "test_executorch_plans",
          "test_aoti_decisions", "test_retrace_oblivious", "test_branch_input_writes"}


@pytest.fixture(autouse=True)
def _verify_conversions(request, monkeypatch):
    if "SAFETRACE_VERIFY_TO_TORCH" in os.environ:
        return
    name = request.module.__name__.rsplit(".", 1)[-1]
    monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0" if name in _TOOLS else "1")
