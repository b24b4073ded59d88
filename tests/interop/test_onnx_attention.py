"""Masked attention through ``st.to_onnx``: a row whose every position is masked (the
padding of a left-padded prompt, ``model(ids, mask, use_cache=False)``) attends to nothing
in torch (0); torch's ONNX function masks with the dtype's lowest value instead of -inf, so
it averaged every position there.  ``st.to_onnx`` keeps torch's operator and sets those
rows to 0 from the mask (``interop/onnx_attention.py``); ``ep.run_decompositions()``
lowers masked sdpa through safetrace's core ATen form (``interop/composites.py: sdpa``),
which also repeats the key/value heads of ``enable_gqa``."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from tests.interop.harness import count_retraces


class Attention(torch.nn.Module):
    """4 query heads over 2 key/value heads, a bool padding mask as transformers makes."""

    def __init__(self, gqa: bool) -> None:
        super().__init__()
        self.q, self.kv = torch.nn.Linear(8, 16), torch.nn.Linear(8, 16)
        self.gqa = gqa

    def forward(self, x, pad):
        b, n, _ = x.shape
        q = self.q(x).view(b, n, 4, 4).transpose(1, 2)
        k, v = self.kv(x).view(b, n, 2, 2, 4).permute(3, 0, 2, 1, 4)
        if not self.gqa:
            k, v = k.repeat_interleave(2, 1), v.repeat_interleave(2, 1)
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        mask = causal[None, None] & pad[:, None, None, :].bool()
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=self.gqa)


class WritingAttention(Attention):
    """The same after an in-place write: ``st.to_onnx`` leaves it to torch.onnx's retrace
    (``interop/onnx_lean.py`` lowers only programs that write nothing)."""

    def forward(self, x, pad):
        x = x * 1.0
        x.mul_(1.0)
        return super().forward(x, pad)


def _inputs(b, n, padded):
    pad = torch.ones(b, n, dtype=torch.long)
    pad[0, :padded] = 0  # row 0 left-padded: its first `padded` queries see nothing
    return torch.randn(b, n, 8), pad


OTHERS = ((3, 7, 2), (1, 1, 0), (2, 4, 4))  # batch, length, padded positions of row 0


def _export(gqa, cls=Attention):
    torch.manual_seed(0)
    model = cls(gqa).eval()
    b, n = st.Dim("b", max=8), st.Dim("n", max=32)
    return model, st.export(model, _inputs(2, 5, 0), dynamic_shapes={"x": {0: b, 1: n},
                                                                     "pad": {0: b, 1: n}})


def test_masked_gqa_attention_decomposes_with_eagers_zero_rows():
    model, ep = _export(gqa=True)
    decomposed = ep.run_decompositions()
    assert not any(n.target is torch.ops.aten.scaled_dot_product_attention.default
                   for n in decomposed.graph.nodes)  # enable_gqa: key/value heads repeated
    for args in (_inputs(*o) for o in OTHERS):
        with torch.no_grad():
            torch.testing.assert_close(decomposed.module()(*args), model(*args),
                                       rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # two ONNX exports: ~6 s of CPU
@pytest.mark.parametrize("gqa", [True, False], ids=["gqa", "repeated"])
def test_fully_masked_rows_match_eager_through_onnx(gqa, tmp_path):
    pytest.importorskip("onnxscript")
    ort = pytest.importorskip("onnxruntime")
    model, ep = _export(gqa)
    st.to_onnx(ep, tmp_path / "m.onnx")
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"))
    for args in (_inputs(*o) for o in OTHERS):
        with torch.no_grad():
            got = sess.run(None, {"x": args[0].numpy(), "pad": args[1].numpy()})[0]
            torch.testing.assert_close(torch.from_numpy(got), model(*args), rtol=1e-5,
                                       atol=1e-5)


class Causal(torch.nn.Module):
    """Causal self-attention with no mask (a GPT block's): torch's ONNX function serves."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, 2, 4).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def _ort_run(program, *args):
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(program.model_proto.SerializeToString())
    feeds = {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)}
    return torch.from_numpy(sess.run(None, feeds)[0])


@pytest.mark.slow  # an ONNX export: ~3 s of CPU
def test_causal_attention_through_onnx_without_a_retrace(monkeypatch):
    """is_causal alone: torch's ONNX function (no form), eager's values at lengths 1..;
    no retrace (a functional program: lowered by ``interop/onnx_lean.py``)."""
    pytest.importorskip("onnxscript")
    torch.manual_seed(0)
    model = Causal().eval()
    ep = st.export(model, (torch.randn(2, 5, 8),),
                   dynamic_shapes={"x": {0: st.Dim("b", max=8), 1: st.Dim("n", max=32)}})
    calls = count_retraces(monkeypatch)
    program = st.to_onnx(ep, verbose=False)
    assert calls == []
    for b, n in ((3, 7), (1, 1), (2, 4)):
        x = torch.randn(b, n, 8)
        with torch.no_grad():
            torch.testing.assert_close(_ort_run(program, x), model(x), rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # an ONNX export: ~3 s of CPU
def test_masked_attention_form_in_torch_onnx_own_retrace(monkeypatch):
    """A program torch.onnx retraces (it writes in place): safetrace's masked-attention
    form goes into the one decomposition torch.onnx runs (not a retrace of its own
    first), and a bystander thread's table is torch's own."""
    pytest.importorskip("onnxscript")
    from torch.onnx._internal.exporter import _decomp

    model, ep = _export(gqa=True, cls=WritingAttention)
    calls = count_retraces(monkeypatch)
    program = st.to_onnx(ep, verbose=False)
    assert len(calls) == 1
    for args in (_inputs(*o) for o in OTHERS):
        with torch.no_grad():
            torch.testing.assert_close(_ort_run(program, *args), model(*args), rtol=1e-5,
                                       atol=1e-5)
    assert _decomp.create_onnx_friendly_decomposition_table.__module__ == _decomp.__name__
