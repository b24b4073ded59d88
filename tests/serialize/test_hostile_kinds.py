"""Hostile files that lie about what kind of tensor a name holds (session 36, load36).

- A parameter tied (``aliases``) to a buffer the program writes in place loaded and ran
  two ways: from memory of its own (bytes, a path read or leased) the write reached the
  parameter, from ``mmap=True`` it did not (``own_state`` copied each name apart).  The
  exporter refuses such a write (``state_written_through_alias``): refused at load.
- ``torch.zeros(4, dtype=torch.qint8)`` loaded and failed inside torch at every call
  (no quantized kernel makes a tensor from sizes): refused at load.
- A float8 parameter multiplied with a float32 input loaded (the rule's
  ``torch.promote_types`` raised, read as "unknown") and failed in torch at every call:
  the promotion's refusal is the rule's now, and the file is refused at load.
- A value recorded on the device ``xla`` / ``hpu`` / ``privateuseone`` loaded, and its
  ``to_torch()`` tried to initialise that backend: refused at load, as a call's device
  argument of such a kind already was.
"""

from __future__ import annotations

import functools
import os

import pytest
import torch

import safetrace as st
from tests.serialize import surgery


class Counted(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4))
        self.register_buffer("b", torch.zeros(4))

    def forward(self, x):
        self.b.add_(1)
        return x * self.w + self.b


class TiedBuffers(torch.nn.Module):
    """Two buffers of one tensor, one written: legal (the write reaches both)."""

    def __init__(self) -> None:
        super().__init__()
        t = torch.zeros(4)
        self.register_buffer("b1", t)
        self.register_buffer("b2", t)
        self.w = torch.nn.Parameter(torch.ones(4))

    def forward(self, x):
        self.b1.add_(1)
        return x * self.w + self.b2


DYN = {"x": {0: st.Dim("n", max=64)}}


@functools.lru_cache(maxsize=None)
def _saved(cls: type) -> bytes:
    return surgery.saved(cls(), (torch.randn(3, 4),), DYN)


def _sources(blob: bytes, tmp_path) -> list:
    path = os.path.join(tmp_path, "prog.st")
    with open(path, "wb") as f:
        f.write(blob)
    return [lambda: st.load(blob), lambda: st.load(path), lambda: st.load(path, mmap=True)]


def _calls(ep: st.ExportedProgram) -> list:
    mod = ep.module()
    return [mod(torch.ones(n, 4)) for n in (3, 0, 1)]


def test_a_parameter_tied_to_a_written_buffer_is_refused(tmp_path):
    doc, tensors = surgery.parts(_saved(Counted))
    doc["aliases"] = [["state:b", "state:w"]]
    del tensors["state:b"]
    blob = surgery.pack(doc, tensors)
    for load in _sources(blob, tmp_path):
        with pytest.raises(st.LoadError, match=r"aliases\[0\].*writes 'state:b' in place"):
            load()


def test_a_parameter_tied_to_the_buffer_it_writes_is_refused():
    doc, tensors = surgery.parts(_saved(Counted))
    surgery.node(doc, "add_")["args"][0] = {"node": "p_w"}
    doc["aliases"] = [["state:b", "state:w"]]
    del tensors["state:b"]
    with pytest.raises(st.LoadError, match=r"aliases\[0\].*a parameter tied"):
        surgery.load(doc, tensors)


@pytest.mark.parametrize("cls", [Counted, TiedBuffers])
def test_written_state_loads_and_runs_alike_from_every_source(cls, tmp_path):
    """(tied buffers, one written: the write reaches the other name from every source)"""
    want = _calls(cls_ep := st.export(cls(), (torch.randn(3, 4),), dynamic_shapes=DYN))
    del cls_ep
    for load in _sources(_saved(cls), tmp_path):
        for got, expected in zip(_calls(load()), want):
            torch.testing.assert_close(got, expected)


def test_a_tied_parameter_the_program_does_not_write_loads():
    doc, tensors = surgery.parts(_saved(Counted))
    doc["aliases"] = [["state:b", "state:w"]]
    doc["nodes"].remove(surgery.node(doc, "add_"))  # (x * w + b, nothing written)
    del doc["nodes"][-1]["args"][0]["tuple"][0], doc["outputs"][0]
    del tensors["state:b"]
    mod = surgery.load(doc, tensors).module()
    for n in (0, 1, 5):
        x = torch.randn(n, 4)
        torch.testing.assert_close(mod(x), x + 1)


@pytest.mark.parametrize("dtype", ["qint8", "quint8", "qint32", "quint4x2"])
def test_a_quantized_dtype_argument_is_refused_at_load(dtype):
    def edit(doc: dict) -> None:
        surgery.before_output(doc, surgery.call(
            "z", "torch.ops.aten.zeros.default", {"list": [4]},
            kwargs=[["dtype", {"dtype": dtype}]]))

    with pytest.raises(st.LoadError, match=f"quantized dtype torch.{dtype}"):
        surgery.load(surgery.edited(_saved(Counted), edit))


@pytest.mark.parametrize("name", ["x", "p_w", "mul"])
@pytest.mark.parametrize("device", ["xla", "hpu", "privateuseone", "mps"])
def test_a_value_recorded_on_another_device_kind_is_refused_at_load(name, device):
    blob = surgery.edited(_saved(Counted), lambda doc: surgery.node(doc, name)["meta"]["val"][
        "tensor"].__setitem__("device", device))
    with pytest.raises(st.LoadError, match=f"recorded on the device {device}"):
        surgery.load(blob)


@pytest.mark.parametrize("device", ["cpu", "cuda", "meta", "cuda:1"])
def test_values_recorded_on_cpu_cuda_or_meta_still_load(device):
    blob = surgery.edited(_saved(Counted), lambda doc: surgery.node(doc, "mul")["meta"]["val"][
        "tensor"].__setitem__("device", device))
    mod = surgery.load(blob).module()
    torch.testing.assert_close(mod(torch.ones(2, 4)), torch.full((2, 4), 2.0))


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_a_float8_parameter_mixed_with_float32_is_refused_at_load(dtype):
    doc, tensors = surgery.parts(_saved(Counted))
    doc["state"][0]["dtype"] = str(dtype).removeprefix("torch.")
    surgery.node(doc, "p_w")["meta"]["val"]["tensor"]["dtype"] = doc["state"][0]["dtype"]
    tensors["state:w"] = torch.ones(4, dtype=dtype)
    with pytest.raises(st.LoadError, match="node 'mul'.*fails at every call.*Float8"):
        surgery.load(doc, tensors)


class Mul(torch.nn.Module):
    def forward(self, x, w):
        return x * w


class Mixed(torch.nn.Module):
    def forward(self, x, w):
        try:
            return x * w
        except RuntimeError:  # (eager's class: the program catches it where eager does)
            return x + 1


def test_float8_promotion_exports_as_eager_raises():
    w = torch.ones(3, dtype=torch.float8_e4m3fn)
    with pytest.raises(RuntimeError, match="Promotion for Float8"):
        st.export(Mul(), (torch.ones(3), w))
    for n in (0, 1, 3):
        x = torch.randn(n)
        w = torch.ones(n, dtype=torch.float8_e4m3fn)
        ep = st.export(Mixed(), (x, w))
        torch.testing.assert_close(ep.module()(x, w), Mixed()(x, w))


class Upsample(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.interpolate(x.to(torch.float16), size=6, mode="linear")


def test_a_uint8_linear_upsample_is_refused_at_load():
    """(benchmarks/hostile_probe.py's ``scales`` class, seeds 3661 and 3662: the file loaded
    and torch raised NotImplementedError at every call)"""
    blob = surgery.saved(Upsample(), (torch.randn(2, 3, 4),),
                         {"x": {0: st.Dim("n", max=16)}})
    doc, tensors = surgery.parts(blob)
    surgery.load(doc, tensors)  # (as saved: loads)
    for n in doc["nodes"]:
        if n.get("target") == "torch.ops.aten.to.dtype":
            n["args"][1] = {"dtype": "uint8"}
        if n["op"] == "call_function":
            n["meta"]["val"]["tensor"]["dtype"] = "uint8"
    with pytest.raises(st.LoadError, match="upsample_linear1d.*not implemented for "
                                           "'torch.uint8'"):
        surgery.load(doc, tensors)


def test_a_uint8_linear_upsample_exports_as_eager_raises():
    class Bytes(torch.nn.Module):
        def forward(self, x):
            try:
                return torch.nn.functional.interpolate(x, size=6, mode="linear")
            except NotImplementedError:
                return x.float()

    for n in (1, 3):
        x = torch.randint(0, 9, (n, 2, 4), dtype=torch.uint8)
        with pytest.raises(NotImplementedError):
            torch.nn.functional.interpolate(x, size=6, mode="linear")
        ep = st.export(Bytes(), (x,))
        torch.testing.assert_close(ep.module()(x), x.float())
