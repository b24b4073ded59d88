"""An ONNX model from ``st.to_onnx`` refuses in onnxruntime every input ``ep.module()``
refuses (issue 20, item 3).  onnxruntime checks dtypes, ranks and static sizes against the
declared input shapes itself, and nothing else: a size out of its Dim's range, a size two
inputs share given differently, a derived size and a residual condition ran (or failed
inside some op, by chance) before the contract's checks were added as graph nodes.  They
fail with an error naming the check, before any op of the program runs."""

from __future__ import annotations

import pytest
import torch
from torch.utils import _pytree

import safetrace as st
from tests.interop.harness import edge_inputs, malformed_inputs, onnx_module_set_up, outcome

onnx_module_set_up()


class Pair(torch.nn.Module):
    def forward(self, x, y, w):
        return x + y + w.reshape(-1, 2, 4).sum(1)


class Pool(torch.nn.Module):
    def forward(self, x):
        torch._check(x.shape[2] % 3 != 0)
        return torch.nn.functional.max_pool2d(x, 2) * 2


def _pair():
    b = st.Dim("b", min=1, max=64)
    args = (torch.randn(3, 4), torch.randn(3, 4), torch.randn(6, 4))
    return st.export(Pair(), args, dynamic_shapes={"x": {0: b}, "y": {0: b}, "w": {0: 2 * b}})


def _pool():
    x = torch.randn(2, 3, 8, 6)
    return st.export(Pool(), (x,), dynamic_shapes={
        "x": {0: st.Dim("n", min=1, max=8), 2: st.Dim.AUTO}})


def _session(ep, path):
    import onnxruntime as ort

    st.to_onnx(ep, path)
    sess = ort.InferenceSession(str(path))

    def run(*args, **kwargs):
        leaves = [t for t in _pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        got = sess.run(None, {i.name: t.numpy() for i, t in zip(sess.get_inputs(), leaves)})
        return torch.from_numpy(got[0])
    return run


@pytest.mark.parametrize("make", [_pair, _pool], ids=["shared-and-derived", "condition"])
def test_onnxruntime_refuses_what_the_program_refuses(make, tmp_path):
    ep = make()
    run = _session(ep, tmp_path / "m.onnx")
    args, kwargs = ep.example_inputs
    inputs = [(args, kwargs), *edge_inputs(ep),
              *[(a, k) for _, a, k in malformed_inputs(ep, args, kwargs)]]
    refused = named = 0
    for a, k in inputs:
        ours, want = outcome(ep.module(), a, k)
        theirs, got = outcome(run, a, k)
        shapes = [tuple(t.shape) for t in _pytree.tree_leaves((a, k))]
        if ours == "rejected":
            refused += 1
            assert theirs == "rejected", f"onnxruntime ran {shapes}: {want}"
            named += "safetrace input check" in str(got)
        else:
            assert theirs == "ok", f"onnxruntime refused {shapes}: {got}"
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert refused >= 4 and named >= 2, (refused, named)


def test_check_values_have_names_of_their_own():
    """A value without a name is named val_<n> when the model is saved: a name the
    exporter's graph may hold already (OPT's static-cache program failed to load with
    'Duplicate definition of name (val_25)'). Every value the checks add is named."""
    program = st.to_onnx(_pair(), verbose=False)
    names = [value.name for node in program.model.graph for value in node.outputs]
    assert None not in names and len(names) == len(set(names))
    assert sum(name.startswith("safetrace_check_") for name in names) > 5
