"""Devices a file names: the meta device in a call, and device indices torch would wrap
(session 26).  A file whose call names ``meta`` loaded and ran: a tensor made there has no
data (``item`` raised torch's error; one returned stood for the program's values); a
device index past torch's 8 bits (``cuda:9999``) was read as another device (``cuda:15``).
A program exported on meta, saved without weights, still loads with them (its recorded
metadata names meta)."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from safetrace.errors import LoadError
from tests.models import MLP
from tests.serialize.test_load_ops import SIZES, X, _call, _file


@pytest.mark.parametrize("make", [
    lambda: _call("aten._to_copy.default", X, device={"device": "meta"}),
    lambda: _call("aten.zeros.default", SIZES, device={"device": "meta"}),
], ids=["to", "zeros"])
def test_a_call_naming_the_meta_device_is_refused_at_load(make):
    with pytest.raises(LoadError, match=r"argument 'device': names the meta device: a tensor "
                                        r"made there has no data(.|\n)*model.to_empty"):
        st.load(io.BytesIO(_file(make())))


@pytest.mark.parametrize("device", ["cuda:9999", "cuda:128", "cuda:255", "cpu:256"])
def test_a_device_index_torch_would_wrap_is_refused_at_load(device):
    blob = _file(_call("aten._to_copy.default", X, device={"device": device}))
    with pytest.raises(LoadError, match=rf"bad device '{device}': its index is out of the "
                                        r"range torch holds \(0 to 127\)"):
        st.load(io.BytesIO(blob), allow_cuda=True)
    assert st.load(io.BytesIO(_file(_call("aten._to_copy.default", X, device={
        "device": "cuda:127"}))), allow_cuda=True).graph is not None


def test_a_program_exported_on_meta_loads_with_its_weights():
    """Its metadata names meta (each node's recorded device): that is no call's device."""
    with torch.device("meta"):
        meta_model = MLP()
    ep = st.export(meta_model, (torch.randn(4, 16, device="meta"),),
                   dynamic_shapes={"x": {0: st.Dim("b")}})
    buf = io.BytesIO()
    st.save(ep, buf, weights=False)
    real = MLP()
    loaded = st.load(io.BytesIO(buf.getvalue()), weights=real.state_dict())
    for n in (0, 1, 5):
        x = torch.randn(n, 16)
        torch.testing.assert_close(loaded.module()(x), real(x))


def test_a_cuda_device_this_process_lacks_is_refused_at_call_naming_it():
    """``allow_cuda=True`` lets the file name ``cuda:127``; a call on a process without that
    device raised torch's own error from inside the graph (session 27): refused before
    the call runs, naming the device and the devices there are.  A graph naming no CUDA
    device asks nothing."""
    blob = _file(_call("aten._to_copy.default", X, device={"device": "cuda:127"}))
    mod = st.load(io.BytesIO(blob), allow_cuda=True).module()
    with pytest.raises(st.RuntimeAssertionError, match=r"names the device cuda:127, but this "
                                                       r"process has (no CUDA device|\d+ CUDA)"):
        mod(torch.randn(3, 4))
    x = torch.randn(3, 4)
    plain = st.load(io.BytesIO(_file(_call("aten.abs.default", X))), allow_cuda=True)
    torch.testing.assert_close(plain.module()(x), x.abs())
