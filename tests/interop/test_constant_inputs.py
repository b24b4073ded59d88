"""bool / int / float inputs (``model(ids, mask, use_cache=False)``) through ``to_torch()``,
torch's ``run_decompositions``, ONNX and ExecuTorch.

torch's retrace makes a symbol of every int-like input it finds on the program; a bool
used to reach torch's range check as a symbol of value False (``AssertionError: upper must
be a sympy.Expr when lower is a sympy.Expr``) because the conversion's ShapeEnv did not
specialize 0/1, and our type checks of specialized inputs (``type(n) is int``) then
failed on torch's stand-ins.  torch.export's own program is the reference in each test.
"""

from __future__ import annotations

import importlib.util
import warnings

import pytest
import torch

import safetrace as st

warnings.filterwarnings("ignore", category=st.ConversionWarning)


class Decoderish(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, ids, mask, use_cache=True, scale=1.0, n=2):
        y = self.proj(ids) * mask[..., None]
        if use_cache:
            y = y + 1
        return y * scale * n


KW = {"use_cache": False, "scale": 0.5, "n": 3}


def _programs(kwargs=KW):
    model = Decoderish().eval()
    ids, mask = torch.randn(2, 5, 8), torch.ones(2, 5)
    b, s = st.Dim("b", max=64), st.Dim("s", max=64)
    spec = {"ids": {0: b, 1: s}, "mask": {0: b, 1: s}, **{k: None for k in kwargs}}
    ep = st.export(model, (ids, mask), dict(kwargs), dynamic_shapes=spec)
    tb, ts = torch.export.Dim("b", max=64), torch.export.Dim("s", max=64)
    ref = torch.export.export(model, (ids, mask), dict(kwargs), dynamic_shapes={
        "ids": {0: tb, 1: ts}, "mask": {0: tb, 1: ts}, **{k: None for k in kwargs}})
    return model, ep, ref


def _other():
    return torch.randn(3, 7, 8), torch.rand(3, 7)


@pytest.mark.parametrize("kwargs", [KW, {"use_cache": True, "scale": 0.0, "n": 1},
                                    {"use_cache": False, "scale": 1.0, "n": 0}],
                         ids=["false-half-3", "true-zero-1", "false-one-0"])
def test_bool_int_float_inputs_decompose_like_torch_exports(kwargs):
    model, ep, ref = _programs(kwargs)
    ours = ep.to_torch().run_decompositions()
    theirs = ref.run_decompositions()
    args = _other()
    with torch.no_grad():
        want = model(*args, **kwargs)
        torch.testing.assert_close(ours.module()(*args, **kwargs), want)
        torch.testing.assert_close(theirs.module()(*args, **kwargs), want)
    assert ours.graph_signature.input_specs[-3:] == theirs.graph_signature.input_specs[-3:]
    flipped = dict(kwargs, use_cache=not kwargs["use_cache"])
    for program in (ours, theirs):  # both refuse another value of a specialized input
        with pytest.raises(AssertionError, match="use_cache"):
            program.module()(*args, **flipped)
    with pytest.raises(AssertionError, match="<= 64"):  # our contract, kept in the graph
        ours.module()(torch.randn(3, 65, 8), torch.rand(3, 65), **kwargs)


def test_specialized_inputs_keep_their_type_on_the_converted_program():
    """Stricter than torch.export, whose guard compares by ``==`` only (it accepts
    ``n=3.0`` for 3 and ``use_cache=0`` for False; eager may then compute in another
    dtype).  torch's own run_decompositions recomputes its guards and drops this one."""
    model, ep, ref = _programs()
    args = _other()
    tep = ep.to_torch()
    for bad in ({"n": 3.0}, {"use_cache": 0}):
        with pytest.raises(AssertionError, match=f"type\\({next(iter(bad))}\\)"):
            tep.module()(*args, **dict(KW, **bad))
        with torch.no_grad():
            ref.module()(*args, **dict(KW, **bad))  # torch accepts


def test_onnx_with_bool_keyword_matches_eager_at_another_size(tmp_path):
    pytest.importorskip("onnxscript")
    ort = pytest.importorskip("onnxruntime")
    model, ep, _ = _programs()
    st.to_onnx(ep, tmp_path / "m.onnx")
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"))
    assert [i.name for i in sess.get_inputs()] == ["ids", "mask"]
    for args in (_other(), (torch.randn(1, 1, 8), torch.rand(1, 1))):
        got = sess.run(None, {"ids": args[0].numpy(), "mask": args[1].numpy()})[0]
        with torch.no_grad():
            torch.testing.assert_close(torch.from_numpy(got), model(*args, **KW))


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("executorch") is None,
                    reason="ExecuTorch is not installed: pip install --no-deps "
                           "executorch==1.5.1 flatbuffers ruamel.yaml pyyaml tabulate")
def test_executorch_with_bool_keyword_matches_eager_and_torch(tmp_path):
    """The .pte takes the specialized inputs too (5 inputs), as torch.export's does."""
    from executorch.exir import to_edge
    from executorch.runtime import Runtime

    model, ep, ref = _programs()
    st.to_executorch(ep, tmp_path / "ours.pte")
    (tmp_path / "torch.pte").write_bytes(to_edge(ref).to_executorch().buffer)
    args = _other()
    with torch.no_grad():
        want = model(*args, **KW)
    for name in ("ours", "torch"):
        method = Runtime.get().load_program(tmp_path / f"{name}.pte").load_method("forward")
        got = method.execute([*args, *KW.values()])[0]
        torch.testing.assert_close(got, want)
