"""``st.to_onnx`` builds torch.onnx's operator registry once per process (issue 22, item 5:
0.7 s of every ``torch.onnx.export`` call, more than an MLP's whole export), and each
export still gets a registry of its own: a ``custom_translation_table`` given to one call
is not in the next, and torch's class method is restored after the call."""

from __future__ import annotations

import torch

import safetrace as st
from tests.interop.harness import onnx_module_set_up

onnx_module_set_up()


class Net(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


def _ops(program) -> set[str]:
    return {n.op_type for n in program.model.graph}


def _run(program, x):
    import onnxruntime as ort

    sess = ort.InferenceSession(program.model_proto.SerializeToString())
    return torch.from_numpy(sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0])


def test_registry_built_once_and_private_to_each_export():
    from onnxscript import opset18 as op
    from torch.onnx._internal.exporter._registration import ONNXRegistry

    def negate(x):  # a translation of relu that is visibly not relu
        return op.Neg(x)

    ep = st.export(Net(), (torch.randn(3, 4),),
                   dynamic_shapes={"x": {0: st.Dim("b", min=1, max=16)}})
    original = ONNXRegistry.__dict__["from_torchlib"]
    builds = []

    def counted(cls, *args, **kwargs):
        builds.append(1)
        return original.__func__(cls, *args, **kwargs)

    ONNXRegistry.from_torchlib = classmethod(counted)
    try:
        custom = st.to_onnx(ep, verbose=False,
                            custom_translation_table={torch.ops.aten.relu.default: negate})
        first = len(builds)
        plain = st.to_onnx(ep, verbose=False)
        assert len(builds) == first  # the second export built no registry
        assert ONNXRegistry.__dict__["from_torchlib"].__func__ is counted  # restored
    finally:
        ONNXRegistry.from_torchlib = original
    assert "Neg" in _ops(custom) and "Relu" not in _ops(custom)
    assert "Relu" in _ops(plain) and "Neg" not in _ops(plain)  # the table did not leak
    x = torch.randn(5, 4)
    torch.testing.assert_close(_run(plain, x), Net()(x))
    torch.testing.assert_close(_run(custom, x), -x * 2)


def test_another_threads_registry_is_torchs_own_during_our_call() -> None:
    """While st.to_onnx holds the cached registry, a bystander thread's
    ``ONNXRegistry.from_torchlib`` runs torch's own method (a build), not the cache."""
    import threading

    from torch.onnx._internal.exporter._registration import ONNXRegistry

    from safetrace.interop import onnx_registry

    builds = []
    seen = {}

    def bystander() -> None:
        seen["other"] = ONNXRegistry.from_torchlib()

    with onnx_registry.cached_registry():
        ONNXRegistry.from_torchlib()  # this opset cached
        torchs = onnx_registry._PATCH.original
        onnx_registry._PATCH.original = classmethod(
            lambda cls, **kw: builds.append(threading.get_ident()) or torchs.__func__(cls, **kw))
        try:
            mine = ONNXRegistry.from_torchlib()
            assert builds == []  # this thread: the cache
            t = threading.Thread(target=bystander)
            t.start()
            t.join(timeout=120)
        finally:
            onnx_registry._PATCH.original = torchs
    assert len(builds) == 1 and builds[0] != threading.get_ident()  # the bystander: torch's
    assert seen["other"].functions.keys() == mine.functions.keys()


def test_registry_built_without_function_irs_equals_torchs() -> None:
    """st.to_onnx's registry build (torch's ``from_torchlib`` with torchlib's function list
    made without each function's IR) registers what torch's own build registers: the same
    operators, each with the same functions, signatures and flags, in the same order."""
    from torch.onnx._internal.exporter._registration import ONNXRegistry

    from safetrace.interop import onnx_registry

    torchs = ONNXRegistry.__dict__["from_torchlib"].__func__
    fast = onnx_registry._builder(torchs)
    assert fast is not torchs  # (else this compares torch's build with itself)
    theirs, ours = torchs(ONNXRegistry, opset_version=18), fast(ONNXRegistry, opset_version=18)

    def entries(registry):
        return {k: [(m.onnx_function, m.fx_target, m.signature, m.is_custom, m.is_complex,
                     m.opset_introduced, m.device) for m in v]
                for k, v in registry.functions.items()}

    assert ours.opset_version == theirs.opset_version
    assert entries(ours) == entries(theirs)
