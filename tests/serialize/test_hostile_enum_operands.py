"""A loss kernel's ``reduction`` or an FFT kernel's ``normalization`` outside 0, 1, 2 is
refused at call (session 35).

Most kernels take these ints on trust: ``soft_margin_loss(x, y, 3)`` returned a number no
reduction gives, ``_fft_c2c(x, [0], 2**40, True)`` did not normalize and at 3 divided by
n, ``nll_loss`` at -1 summed: results no torch function computes, from a value the file
chose.  An exported program records the values the kernels know, and its loaded program
holds no check.
"""

from __future__ import annotations

import io

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from safetrace.errors import InputMismatchError, LoadError, RuntimeAssertionError
from tests.serialize.hostile_static import pack, parts, saved_abs

X = {"node": "x"}


def _hostile(nodes: list) -> bytes:
    """The saved program of ``x.abs()`` (x of shape [3, 4]) made ``nodes``, the last
    returned."""
    doc, tensors = parts(saved_abs(3, 4))
    kept = [n for n in doc["nodes"] if n["op"] != "call_function"]
    out = kept.pop()
    out["args"] = [{"tuple": [{"node": nodes[-1]["name"]}]}]
    doc["nodes"] = kept + nodes + [out]
    return pack(doc, tensors)


def _call(name: str, target: str, *args) -> dict:
    return {"name": name, "op": "call_function", "target": f"torch.ops.aten.{target}",
            "args": list(args)}


def _loss(target: str, *rest) -> list:
    return [_call("z", target, X, X, *rest)]


_TARGETS = {"t": _call("t", "argmax.default", X, 1),
            "s": _call("s", "_log_softmax.default", X, 1, False)}


@pytest.mark.parametrize("nodes,match", [
    (_loss("huber_loss.default", 7, {"float": "1.0"}),
     r"aten\.huber_loss.*reduction=7, not 0, 1 or 2"),
    (_loss("soft_margin_loss.default", 3), r"aten\.soft_margin_loss.*reduction=3"),
    (_loss("l1_loss.default", -1), r"aten\.l1_loss.*reduction=-1"),
    (_loss("binary_cross_entropy_with_logits.default", None, None, 2 ** 40),
     r"reduction=1099511627776"),
    ([_TARGETS["s"], _TARGETS["t"],
      _call("z", "nll_loss_forward.default", {"node": "s"}, {"node": "t"}, None, 3, -100),
      _call("w", "getitem", {"node": "z"}, 0)], r"aten\.nll_loss_forward.*reduction=3"),
    ([_call("c", "_fft_r2c.default", X, {"list": [1]}, 3, True)],
     r"aten\._fft_r2c.*normalization=3, not 0, 1 or 2"),
    ([_call("c", "_fft_r2c.default", X, {"list": [1]}, 0, True),
      _call("z", "_fft_c2c.default", {"node": "c"}, {"list": [1]}, 2 ** 40, True)],
     r"aten\._fft_c2c.*normalization=1099511627776"),
    ([_call("c", "_fft_r2c.default", X, {"list": [1]}, 0, True),
      _call("z", "_fft_c2r.default", {"node": "c"}, {"list": [1]}, -1, 4)],
     r"aten\._fft_c2r.*normalization=-1"),
])
def test_a_value_outside_the_kernels_set_is_refused_at_call(nodes, match):
    """(mse_loss and smooth_l1_loss check their reduction themselves: the loader's
    evaluation refuses such a file at load, ``test_mse_loss_refuses_itself``.)"""
    for n in nodes:  # (operator.getitem is spelled as torch.ops.aten's by _call)
        if n["target"] == "torch.ops.aten.getitem":
            n["target"] = "operator.getitem"
    ep = st.load(io.BytesIO(_hostile(nodes)))
    with pytest.raises(RuntimeAssertionError, match=match):
        ep.module()(torch.rand(3, 4))


def test_mse_loss_refuses_itself():
    with pytest.raises(LoadError, match=r"Invalid reduction type encountered in mse_loss: 7"):
        st.load(io.BytesIO(_hostile(_loss("mse_loss.default", 7))))


def test_a_value_computed_in_the_graph_is_checked_at_call():
    """A reduction the file computes from a size (``x.shape[0] + 4``: 7) is checked when
    the call has its value."""
    nodes = [_call("n", "sym_size.int", X, 0),
             {"name": "r", "op": "call_function", "target": "operator.add",
              "args": [{"node": "n"}, 4]},
             _call("z", "l1_loss.default", X, X, {"node": "r"})]
    ep = st.load(io.BytesIO(_hostile(nodes)))
    with pytest.raises(RuntimeAssertionError, match=r"reduction=7"):
        ep.module()(torch.rand(3, 4))


class Losses(torch.nn.Module):
    def forward(self, x, y, t):
        return (F.mse_loss(x, y), F.l1_loss(x, y, reduction="sum"),
                F.soft_margin_loss(x, y.sign(), reduction="none"),
                F.cross_entropy(x, t), F.nll_loss(x.log_softmax(1), t, reduction="sum"))


class Transforms(torch.nn.Module):
    def forward(self, x):
        return (torch.fft.rfft(x, norm="ortho").abs(), torch.fft.fft(x, norm="forward").abs(),
                torch.fft.irfft(torch.fft.rfft(x), n=x.shape[1]))


def _reloaded(ep: st.ExportedProgram) -> st.ExportedProgram:
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(io.BytesIO(buf.getvalue()))
    assert not any(getattr(node.target, "__module__", "") ==
                   "safetrace.serialize.operand_checks" for node in loaded.graph.nodes)
    return loaded


def _same(got, want) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, equal_nan=True)


def test_exported_losses_round_trip_without_a_check():
    n = st.Dim("n", max=16)
    args = (torch.randn(3, 4), torch.randn(3, 4), torch.randint(0, 4, (3,)))
    ep = st.export(Losses(), args, dynamic_shapes={"x": {0: n}, "y": {0: n}, "t": {0: n}})
    loaded = _reloaded(ep)
    for b in (0, 1, 5):
        x, y, t = torch.randn(b, 4), torch.randn(b, 4), torch.randint(0, 4, (b,))
        want = Losses()(x, y, t)
        _same(ep.module()(x, y, t), want)
        _same(loaded.module()(x, y, t), want)
    with pytest.raises(InputMismatchError):
        loaded.module()(torch.randn(17, 4), torch.randn(17, 4), torch.randint(0, 4, (17,)))


def test_exported_transforms_round_trip_without_a_check():
    """(An FFT of no points, or of an empty batch, is MKL's error in eager: lengths from 1.)"""
    ep = st.export(Transforms(), (torch.randn(2, 6),),
                   dynamic_shapes={"x": {1: st.Dim("n", min=1, max=16)}})
    loaded = _reloaded(ep)
    for n in (1, 2, 7):
        x = torch.randn(2, n)
        want = Transforms()(x)
        _same(ep.module()(x), want)
        _same(loaded.module()(x), want)
    with pytest.raises(InputMismatchError):
        loaded.module()(torch.randn(2, 17))
