"""The deployment stack on converted programs: ONNX (onnxruntime parity at several sizes,
dims named after the user's Dims), AOTInductor (slow); ExecuTorch is in test_executorch.py."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from torch.utils import _pytree

import safetrace as st

from benchmarks.zoo import by_name

warnings.filterwarnings("ignore", category=st.ConversionWarning)


def _export(name: str):
    case = by_name(name).factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
    return case, ep


def _eager(case, args, kwargs):
    with torch.no_grad():
        out = case.model(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    return [t for t in _pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


# bert: 11 s (transformers import and a 100-op graph through onnxscript): slow
@pytest.mark.parametrize("name", ["mlp", pytest.param("bert", marks=pytest.mark.slow)])
def test_onnx_matches_eager_at_several_sizes_with_named_dims(name, tmp_path):
    pytest.importorskip("onnxscript")
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    if name == "bert":
        pytest.importorskip("transformers")
    case, ep = _export(name)
    path = tmp_path / f"{name}.onnx"
    st.to_onnx(ep, path)
    model = onnx.load(str(path))
    dims = {d.dim_param for i in model.graph.input for d in i.type.tensor_type.shape.dim
            if d.dim_param}
    declared = {"mlp": {"batch"}, "bert": {"batch", "seq"}}[name]
    assert dims == declared, dims
    sess = ort.InferenceSession(str(path))
    for args, kwargs in [(case.args, case.kwargs)] + case.others:
        leaves = [t for t in _pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        feeds = {i.name: t.numpy() for i, t in zip(sess.get_inputs(), leaves)}
        got = sess.run(None, feeds)
        for g, w in zip(got, _eager(case, args, kwargs)):
            torch.testing.assert_close(torch.from_numpy(g), w, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_aoti_compiled_package_matches_eager_and_keeps_the_range_checks(tmp_path):
    """One AOTInductor compile (about a minute of g++ on 2 cores: marked slow)."""
    case, ep = _export("mlp")
    tep = ep.to_torch()
    pkg = torch._inductor.aoti_compile_and_package(tep, package_path=str(tmp_path / "m.pt2"))
    runner = torch._inductor.aoti_load_package(pkg)
    for args, kwargs in [(case.args, case.kwargs)] + case.others:
        with torch.no_grad():
            got = runner(*args, **kwargs)
        torch.testing.assert_close(got, _eager(case, args, kwargs)[0], rtol=1e-4, atol=1e-4)
    with pytest.raises(Exception):
        runner(torch.randn(1025, 32))  # batch is declared <= 1024
