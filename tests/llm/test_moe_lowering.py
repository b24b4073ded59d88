"""Mixtral's default experts (transformers' grouped_mm path: ``sort``, ``histc`` and the
``transformers::grouped_mm_fallback`` custom op) lowered to ExecuTorch and ONNX: the
operators no torch table decomposes get safetrace's core ATen forms
(``interop/composites.py``), checked here against the operators themselves."""

import importlib.util
import os

import pytest
import torch

import safetrace as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")
if importlib.util.find_spec("transformers") is None:
    pytest.skip("needs transformers", allow_module_level=True)


def _fallback():
    # transformers.integrations.moe registers the op; imported here, not at collection
    # (~3 s of CPU in every xdist worker, most of which never runs these tests)
    pytest.importorskip("transformers.integrations.moe")
    try:
        return torch.ops.transformers.grouped_mm_fallback.default
    except (AttributeError, RuntimeError):
        pytest.skip("this transformers has no grouped_mm_fallback op")


@pytest.mark.parametrize("counts", [[3, 0, 2, 4], [0, 0, 0, 1], [2, 2, 2, 2], [0, 0, 0, 0]])
def test_grouped_mm_form_matches_transformers_op(counts):
    from safetrace.interop.composites import grouped_mm_fallback

    op = _fallback()
    torch.manual_seed(0)
    rows = 9  # past the last offset: rows the op leaves zero
    x, w = torch.randn(rows, 5), torch.randn(len(counts), 5, 3)
    offs = torch.tensor(counts).cumsum(0).to(torch.int32)
    want = op(x, w, offs)
    got = grouped_mm_fallback(x, w, offs)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert (got[int(offs[-1]):] == 0).all()


@pytest.mark.slow
def test_default_mixtral_lowers_to_onnx_and_executorch_with_core_ops(tmp_path):
    pytest.importorskip("transformers.integrations.moe")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("executorch")
    import onnxruntime as ort

    from tests.llm import test_generate as G

    model = G.tiny("mixtral")
    model.generation_config.cache_implementation = "static"
    model.generation_config.use_cache = True
    wrapper = G.TorchExportableModuleWithStaticCache(model, batch_size=1, max_cache_len=32)
    seq = st.Dim("seq", min=1, max=32)
    ep = st.export(wrapper, (), {"input_ids": torch.randint(0, G.VOCAB, (1, 5)),
                                 "cache_position": torch.arange(5)},
                   dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}})
    model.generation_config.cache_implementation = None
    tep = ep.to_torch()
    called = {str(n.target) for m in tep.graph_module.modules()
              if isinstance(m, torch.fx.GraphModule) for n in m.graph.nodes}
    assert "aten.histc.default" in called and "transformers.grouped_mm_fallback.default" in called
    prompt = torch.randint(0, G.VOCAB, (1, 7))
    with torch.no_grad():
        want = model(prompt).logits
    st.to_onnx(ep, tmp_path / "m.onnx")
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"))
    got = sess.run(None, {"input_ids": prompt.numpy(), "cache_position": torch.arange(7).numpy()})
    torch.testing.assert_close(torch.from_numpy(got[0]), want, rtol=1e-4, atol=1e-4)
    program = st.to_executorch(ep)  # lowers: every operator is core ATen
    ops = {o.name for o in program.executorch_program.execution_plan[0].operators}
    assert not {o for o in ops if "histc" in o or "grouped_mm" in o or "sort" in o}, ops
    # the .pte runs (ExecuTorch has no sort kernel: sort lowers as topk) and keeps seq
    # dynamic (`empty_like` lowers as full: ExecuTorch's empty took an int[] size)
    from executorch.runtime import Runtime

    for n in (7, 1):
        method = Runtime.get().load_program(program.buffer).load_method("forward")
        with torch.no_grad():
            want = model(prompt[:, :n]).logits
        got = method.execute([prompt[:, :n], torch.arange(n)])[0]
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
