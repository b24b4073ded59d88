"""Backend and gradient kernels a file names directly, and dtypes given as int codes, are
refused at load (session 23).

Torch reaches ``mkldnn_rnn_layer``, ``miopen_*``, ``cudnn_*``, the legacy ``quantized_*``
RNNs and the ``*_backward`` kernels only through wrappers that check the arguments they
pass; a file calling one itself chooses those arguments.  ``mkldnn_rnn_layer`` given
one-element weights and a hidden size of 7 overflows a heap buffer (``free(): invalid next
size``, the process aborts); ``to.prim_dtype`` given the dtype code -1 segfaults.  The
files are loaded here, never called.
"""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from safetrace.errors import LoadError
from tests.serialize import surgery
from tests.serialize.hostile_static import parts, saved_abs


def _file(nodes: list) -> bytes:
    """The saved program of ``Abs`` with its one call replaced by ``nodes`` (the last is
    the output)."""
    return surgery.calls_replaced(saved_abs(3, 4), *nodes)


def _call(name: str, target: str, *args) -> dict:
    return {"name": name, "op": "call_function", "target": f"torch.ops.{target}",
            "args": list(args)}


X = {"node": "x"}


def _ints(*v: int) -> dict:
    return {"list": list(v)}


def test_mkldnn_rnn_layer_with_hostile_weights_is_refused_at_load():
    w = {"node": "w"}
    blob = _file([
        _call("v", "aten.view.default", X, _ints(3, 1, 4)),
        _call("w", "aten.new_ones.default", X, _ints(1)),
        _call("m", "aten.mkldnn_rnn_layer.default", {"node": "v"}, w, w, w, w, w, w, False,
              _ints(), 2, 7, 1, True, False, False, False),
        _call("y", "operator.getitem", {"node": "m"}, 0)])
    with pytest.raises(LoadError, match=r"mkldnn_rnn_layer.*exporter does not record"):
        st.load(io.BytesIO(blob))


def test_gradient_kernel_is_refused_at_load():
    blob = _file([_call("y", "aten.threshold_backward.default", X, X, 0)])
    with pytest.raises(LoadError, match=r"threshold_backward.*exporter does not record"):
        st.load(io.BytesIO(blob))


def test_control_file_loads_and_runs():
    blob = _file([_call("y", "aten.neg.default", X)])
    x = torch.randn(3, 4)
    torch.testing.assert_close(st.load(io.BytesIO(blob)).module()(x), -x)


@pytest.mark.parametrize("target,args", [
    ("aten.to.prim_dtype", [X, -1, True, False]),
    ("aten.to.prim_Device", [X, None, 6, False, True]),
])
def test_a_dtype_given_as_an_int_code_is_refused_at_load(target, args):
    """``to.prim_dtype`` types its dtype as an int; torch does not check the code (-1
    crashes the process), so a file must give a dtype."""
    blob = _file([_call("y", f"{target}", *args)])
    with pytest.raises(LoadError, match=r"argument 'dtype': expected a dtype, got int"):
        st.load(io.BytesIO(blob))


def test_undeclared_symbols_are_named_five_at_most():
    """A size over thousands of symbols the file never declares: the refusal names five
    and counts the rest (the message was the whole sorted list, ~200 KB for a big file)."""
    doc, tensors = parts(saved_abs(3, 4))
    node = next(n for n in doc["nodes"] if n["op"] == "call_function")
    names = sorted(f"s{i}" for i in range(100, 3100))
    node["meta"]["val"]["tensor"]["shape"] = [["add", *names], 4]
    with pytest.raises(LoadError, match=r"undeclared symbol\(s\) 's100', 's1000', "
                                        r"'s1001', 's1002', 's1003' and 2995 more") as info:
        surgery.load(doc, tensors)
    assert len(str(info.value)) < 300
