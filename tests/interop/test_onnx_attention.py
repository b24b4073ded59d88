"""Masked attention through ``st.to_onnx``: a row whose every position is masked (the
padding of a left-padded prompt, ``model(ids, mask, use_cache=False)``) attends to nothing
in torch (0); torch's ONNX function masks with the dtype's lowest value instead of -inf, so
it averaged every position there.  ``st.to_onnx`` lowers masked sdpa through safetrace's
core ATen form (``interop/composites.py: sdpa``), which also repeats the key/value heads
of ``enable_gqa``."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import safetrace as st


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


def _inputs(b, n, padded):
    pad = torch.ones(b, n, dtype=torch.long)
    pad[0, :padded] = 0  # row 0 left-padded: its first `padded` queries see nothing
    return torch.randn(b, n, 8), pad


OTHERS = ((3, 7, 2), (1, 1, 0), (2, 4, 4))  # batch, length, padded positions of row 0


def _export(gqa):
    torch.manual_seed(0)
    model = Attention(gqa).eval()
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
