"""``st.to_onnx`` of a functional program without torch.onnx's retrace
(``interop/onnx_lean.py``): the operators torch.onnx's registry lacks are decomposed node
by node, masked attention gets its form in the graph (the empty rows of a mask computed
once, however many attention calls share it), and torch.onnx's own retrace runs only
where the program writes in place.  Each model's onnxruntime output is checked against
eager at other sizes (1 included), and out-of-space inputs are still refused."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from tests.interop.harness import count_retraces

pytest.importorskip("onnxscript")
ort = pytest.importorskip("onnxruntime")


class TwoAttentions(torch.nn.Module):
    """Two attention calls over one padding mask, a dtype cast and ``diff`` (an operator
    torch.onnx's registry has no ONNX function for)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 24), torch.nn.Linear(8, 24)

    def forward(self, x, pad):
        b, n, _ = x.shape
        mask = torch.ones(n, n, dtype=torch.bool).tril()[None, None] & \
            pad[:, None, None, :].bool()
        h = x
        for qkv in (self.a, self.b):
            q, k, v = qkv(h).view(b, n, 3, 2, 4).permute(2, 0, 3, 1, 4)
            h = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            h = h.transpose(1, 2).reshape(b, n, 8)
        steps = torch.diff(pad, dim=1, prepend=pad[:, :1])
        return h * 2, steps.to(h.dtype), x.diff(dim=-1)  # (the last two: rewritten outputs)


class Writes(torch.nn.Module):
    """An in-place write on an intermediate: left to torch.onnx's retrace."""

    def forward(self, x):
        y = x * 2
        y.add_(1)
        return y.diff(dim=1)


class Cache(torch.nn.Module):
    """A static cache, written in place as transformers' StaticCache writes it: the new
    rows by ``index_copy_`` at their positions, a counter by ``add_``, a last row by
    ``copy_``; the output reads the written cache."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("k", torch.zeros(1, 16, 4))
        self.register_buffer("seen", torch.zeros((), dtype=torch.long))
        self.register_buffer("last", torch.zeros(1, 4))

    def forward(self, x, pos):
        before = self.k.sum()  # (read before the write: the cache as it was)
        self.k.index_copy_(1, pos, x)
        self.seen.add_(x.shape[1])
        self.last.copy_(x[:, -1])
        return self.k.cumsum(1) * self.last + before, self.seen * 2


class ViewAcrossWrite(torch.nn.Module):
    """A view of the buffer taken before a write and read after it (it sees the write):
    left to torch.onnx's retrace."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("k", torch.ones(1, 16, 4))

    def forward(self, x, pos):
        head = self.k[:, :4]
        self.k.index_copy_(1, pos, x)
        return head * 2


class TwoPaths(torch.nn.Module):
    """One buffer under two attribute paths, written through one and read through the
    other: one placeholder of the graph reads both, and its write is made functional."""

    def __init__(self) -> None:
        super().__init__()
        t = torch.zeros(1, 16, 4)
        self.register_buffer("a", t)
        self.register_buffer("b", t)

    def forward(self, x, pos):
        self.a.index_copy_(1, pos, x)
        return self.b * 2


def _session(program):
    sess = ort.InferenceSession(program.model_proto.SerializeToString())

    def run(*args):
        feeds = {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)}
        got = [torch.from_numpy(out) for out in sess.run(None, feeds)]
        return got[0] if len(got) == 1 else tuple(got)
    return run


def _pad(b, n, padded):
    pad = torch.ones(b, n, dtype=torch.long)
    pad[0, :padded] = 0  # row 0 left-padded: its first queries see no key
    return pad


@pytest.mark.slow  # an ONNX export and three sessions: ~1.5 s of CPU
def test_functional_program_lowers_without_a_retrace(monkeypatch):
    from torch.onnx._internal.exporter import _fx_passes

    torch.manual_seed(0)
    model = TwoAttentions().eval()
    b, n = st.Dim("b", max=8), st.Dim("n", min=1, max=32)
    ep = st.export(model, (torch.randn(2, 5, 8), _pad(2, 5, 0)),
                   dynamic_shapes={"x": {0: b, 1: n}, "pad": {0: b, 1: n}})
    calls = count_retraces(monkeypatch)
    program = st.to_onnx(ep, verbose=False)
    assert calls == []
    targets = [node.target for node in program.exported_program.graph.nodes]
    assert targets.count(torch.ops.aten.any.dim) == 1  # the mask's empty rows, once
    assert targets.count(torch.ops.aten.where.ScalarSelf) == 2  # one per attention call
    assert torch.ops.aten.diff.default not in targets
    run = _session(program)
    for shape in ((3, 7, 2), (1, 1, 0), (2, 4, 4)):
        x, pad = torch.randn(*shape[:2], 8), _pad(*shape)
        with torch.no_grad():
            torch.testing.assert_close(run(x, pad), model(x, pad), rtol=1e-5, atol=1e-5)
    with pytest.raises(Exception, match="must be <= 32"):
        run(torch.randn(1, 33, 8), _pad(1, 33, 0))
    assert _fx_passes.decompose_with_registry.__module__ == _fx_passes.__name__


@pytest.mark.slow  # an ONNX export: ~1.5 s of CPU
def test_program_writing_in_place_takes_torch_onnx_retrace(monkeypatch):
    ep = st.export(Writes(), (torch.randn(2, 5),),
                   dynamic_shapes={"x": {0: st.Dim("b", max=8)}})
    calls = count_retraces(monkeypatch)
    run = _session(st.to_onnx(ep, verbose=False))
    assert len(calls) == 1
    for b in (1, 3):
        x = torch.randn(b, 5)
        torch.testing.assert_close(run(x), Writes()(x))


@pytest.mark.slow  # two ONNX exports: ~3 s of CPU
def test_buffer_writes_lower_without_a_retrace(monkeypatch):
    """In-place writes of buffers (a static cache) take the lean path: each write its
    functional operator, later reads the written value, the buffer's last value a
    BUFFER_MUTATION output (torch.onnx keeps the buffer an initializer); onnxruntime gives
    eager's first call at other lengths, and refuses lengths outside the space.  A view
    read across a write still takes torch.onnx's retrace, with eager's values."""
    n = st.Dim("n", min=1, max=16)
    x = torch.randn(1, 5, 4)
    ep = st.export(Cache(), (x, torch.arange(5)), dynamic_shapes=({1: n}, {0: n}))
    calls = count_retraces(monkeypatch)
    program = st.to_onnx(ep, verbose=False)
    assert calls == []
    signature = program.exported_program.graph_signature
    assert sorted(s.target for s in signature.output_specs if s.kind.name ==
                  "BUFFER_MUTATION") == ["k", "last", "seen"]
    run = _session(program)
    for length in (7, 1, 16):
        x = torch.randn(1, length, 4)
        want = Cache()(x, torch.arange(length))  # (a fresh cache: the program's first call)
        torch.testing.assert_close(run(x, torch.arange(length)), want)
    with pytest.raises(Exception, match="must be <= 16"):
        run(torch.randn(1, 17, 4), torch.arange(17))
    ep = st.export(ViewAcrossWrite(), (x, torch.arange(16)), dynamic_shapes=({1: n}, {0: n}))
    run = _session(st.to_onnx(ep, verbose=False))
    assert calls == [1]
    x = torch.randn(1, 3, 4)
    torch.testing.assert_close(run(x, torch.tensor([0, 2, 9])),
                               ViewAcrossWrite()(x, torch.tensor([0, 2, 9])))


@pytest.mark.slow  # an ONNX export: ~1.5 s of CPU
def test_a_buffer_written_under_one_path_and_read_under_another_lowers(monkeypatch):
    """The read under the other path sees the write, as in eager (torch.onnx's retrace
    fails on this program: the lean path is its only way to ONNX)."""
    n = st.Dim("n", min=1, max=16)
    ep = st.export(TwoPaths(), (torch.randn(1, 5, 4), torch.arange(5)),
                   dynamic_shapes=({1: n}, {0: n}))
    calls = count_retraces(monkeypatch)
    run = _session(st.to_onnx(ep, verbose=False))
    assert calls == []
    for length in (3, 1):
        x, pos = torch.randn(1, length, 4), torch.arange(2, 2 + length)
        torch.testing.assert_close(run(x, pos), TwoPaths()(x, pos))


class CountedCache(torch.nn.Module):
    """OPT's pattern: the cache's length read from data with ``.item()`` and used as a
    size, then the cache written in place."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("k", torch.zeros(1, 16, 4))

    def forward(self, x, pos):
        seen = (pos[-1] + 1).item()
        torch._check(seen >= x.shape[1])
        torch._check(seen <= 16)
        self.k.index_copy_(1, pos, x)
        return self.k[:, :seen].sum(1) * torch.ones(1, seen, 1).mean(1)


@pytest.mark.slow  # an ONNX export: ~1.5 s of CPU
def test_a_length_read_with_item_lowers_without_a_retrace(monkeypatch):
    n = st.Dim("n", min=1, max=16)
    ep = st.export(CountedCache(), (torch.randn(1, 5, 4), torch.arange(5)),
                   dynamic_shapes=({1: n}, {0: n}))
    calls = count_retraces(monkeypatch)
    program = st.to_onnx(ep, verbose=False)
    assert calls == []
    run = _session(program)
    for length, start in ((7, 0), (1, 0), (3, 5), (16, 0)):
        x, pos = torch.randn(1, length, 4), torch.arange(start, start + length)
        torch.testing.assert_close(run(x, pos), CountedCache()(x, pos))
    with pytest.raises(Exception, match="must be <= 16"):
        run(torch.randn(1, 17, 4), torch.arange(17))
