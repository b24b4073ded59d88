"""A loaded program never changes the shape or layout of the caller's input (session 38,
load38).  st.export and torch.export refuse ``x.unsqueeze_(0)`` / ``x.t_()`` on an input
(the caller's tensor would have another shape after the call); a file could still say it,
and the loaded program then did it: the caller's ``[8, 8]`` tensor came back ``[1, 8, 8]``
or transposed.  Writes of values into an input stay as eager's (``x.add_(1)``)."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from safetrace.errors import LoadError
from tests.serialize import surgery
from tests.serialize.hostile_static import saved_abs

X = {"node": "x"}


def _file(target: str, *args: object) -> bytes:
    """``Abs``'s program at ``[8, 8]``, its call replaced by ``target(x, *args)``, then
    ``x * 2`` (the output)."""
    return surgery.calls_replaced(
        saved_abs(8, 8),
        {"name": "w", "op": "call_function", "target": f"torch.ops.aten.{target}",
         "args": [X, *args]},
        {"name": "y", "op": "call_function", "target": "torch.ops.aten.mul.Tensor",
         "args": [X, 2]})


@pytest.mark.parametrize("target,args", [
    ("unsqueeze_.default", (0,)), ("t_.default", ()), ("transpose_.default", (0, 1)),
    ("squeeze_.dim", (0,)), ("swapdims_.default", (0, 1)),
])
def test_an_in_place_change_of_an_inputs_shape_is_refused_at_load(target, args):
    # (before: loaded, and the call left the caller's [8, 8] tensor [1, 8, 8] / transposed)
    with pytest.raises(LoadError, match="changes the shape or layout of the input 'x'"):
        st.load(io.BytesIO(_file(target, *args)))


def test_an_in_place_change_through_a_chain_of_in_place_ops_is_refused():
    blob = surgery.calls_replaced(
        saved_abs(8, 8),
        {"name": "a", "op": "call_function", "target": "torch.ops.aten.add_.Tensor",
         "args": [X, 1]},
        {"name": "w", "op": "call_function", "target": "torch.ops.aten.t_.default",
         "args": [{"node": "a"}]},
        {"name": "y", "op": "call_function", "target": "torch.ops.aten.mul.Tensor",
         "args": [X, 2]})
    with pytest.raises(LoadError, match="input 'x'"):
        st.load(io.BytesIO(blob))


@pytest.mark.parametrize("target,args,eager", [
    ("add_.Tensor", (1,), lambda x: x.add_(1)),
    ("detach_.default", (), lambda x: x.detach_()),
])
def test_value_writes_and_detach_of_an_input_load_and_act_as_eager(target, args, eager):
    ep = st.load(io.BytesIO(_file(target, *args)))
    for shape in ((8, 8),):
        x = torch.randn(*shape)
        want = x.clone()
        eager(want)
        got = ep.module()(x)
        torch.testing.assert_close(x, want)  # (the caller's tensor, written as eager writes)
        torch.testing.assert_close(got, want * 2)
        assert x.shape == want.shape and x.stride() == want.stride()
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1, 8))


def test_an_exported_program_that_writes_its_input_still_loads():
    class Bump(torch.nn.Module):
        def forward(self, x):
            x.add_(1)
            return x.unsqueeze(0) * 2

    ep = st.export(Bump(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("n")}})
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(io.BytesIO(buf.getvalue())).module()
    for n in (0, 1, 5):
        x = torch.randn(n, 4)
        ref = x.clone()
        got = loaded(x)
        torch.testing.assert_close(x, ref + 1)
        torch.testing.assert_close(got, (ref + 1).unsqueeze(0) * 2)
