"""The container layer: how st.save writes (direct I/O, buffered, file objects) and how
st.load reads each source (into memory of its own, or mapped on request)."""

from __future__ import annotations

import errno
import io
import os

import pytest
import torch
from safetensors.torch import load_file

import safetrace as st
from safetrace.serialize.reader import Builder
from safetrace.serialize import writer
from tests.models import MLP


@pytest.fixture(scope="module")
def program():
    model = MLP()
    ep = st.export(model, (torch.randn(4, 16),), dynamic_shapes={"x": {0: st.Dim("b")}})
    return model, ep


def _check(ep, model):
    for n in (0, 1, 5):
        x = torch.randn(n, 16)
        torch.testing.assert_close(ep.module()(x), model(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 15))


def test_direct_io_writes_the_same_bytes_as_the_page_cache(program, tmp_path, monkeypatch):
    model, ep = program
    st.save(ep, tmp_path / "buffered.st")
    monkeypatch.setattr(writer, "DIRECT_MIN_BYTES", 0)
    monkeypatch.setattr(writer, "_CHUNK", 8192)  # many buffer swaps, a padded last block
    st.save(ep, tmp_path / "direct.st")
    data = (tmp_path / "direct.st").read_bytes()
    assert data == (tmp_path / "buffered.st").read_bytes()
    assert len(data) % 4096  # the padding of the last block was cut off
    sd = load_file(tmp_path / "direct.st")
    assert all(torch.equal(sd[f"state:{k}"], v) for k, v in model.state_dict().items())
    _check(st.load(tmp_path / "direct.st"), model)


def test_direct_io_refused_by_the_filesystem_falls_back(program, tmp_path, monkeypatch):
    model, ep = program
    monkeypatch.setattr(writer, "DIRECT_MIN_BYTES", 0)
    real_open = os.open

    def no_direct(path, flags, *args):
        if flags & getattr(os, "O_DIRECT", 0):
            raise OSError(errno.EINVAL, "O_DIRECT not supported")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", no_direct)
    st.save(ep, tmp_path / "m.st")
    monkeypatch.undo()
    _check(st.load(tmp_path / "m.st"), model)
    assert [p.name for p in tmp_path.iterdir()] == ["m.st"]  # no temporary left


def test_saving_to_a_file_object_streams_in_pieces(program, monkeypatch):
    model, ep = program
    monkeypatch.setattr(writer, "_PIECE", 1000)

    class Sink(io.RawIOBase):  # a raw stream: writes may be partial
        def __init__(self) -> None:
            self.data, self.largest = bytearray(), 0

        def writable(self) -> bool:
            return True

        def write(self, b) -> int:
            b = memoryview(b)[:700]  # accept at most 700 bytes per call
            self.largest = max(self.largest, b.nbytes)
            self.data += b
            return b.nbytes

    sink = Sink()
    st.save(ep, sink)
    buf = io.BytesIO()
    st.save(ep, buf)
    assert bytes(sink.data) == buf.getvalue() and sink.largest <= 1000
    _check(st.load(bytes(sink.data)), model)


def test_loading_bytes_copies_and_never_writes_the_buffer(program):
    model, ep = program
    buf = io.BytesIO()
    st.save(ep, buf)
    data = buf.getvalue()
    for source in (data, bytearray(data), memoryview(bytearray(b"." + data))[1:]):
        ep3 = st.load(source)  # at any alignment: private, aligned copies
        assert all(t.data_ptr() % 64 == 0 for t in ep3.state_dict.values())
        mod = ep3.module()
        for n in (0, 1, 3):
            x = torch.randn(n, 16)
            assert torch.equal(mod(x), ep.module()(x))
        if not isinstance(source, bytes):
            source[:] = b"\xff" * len(source)  # the caller reuses its buffer
            x = torch.randn(2, 16)
            assert torch.equal(mod(x), ep.module()(x))  # the program keeps its weights
        with pytest.raises(st.InputMismatchError):
            mod(torch.randn(2, 15))
    store = bytearray(data)
    ep4 = st.load(store)
    for t in ep4.state_dict.values():
        t.data.add_(1)  # writing the loaded weights
    assert store == data  # never writes the caller's buffer
    _check(st.load(data), model)


def test_loading_a_stream_of_small_pieces(program):
    model, ep = program
    buf = io.BytesIO()
    st.save(ep, buf)

    class Trickle(io.RawIOBase):  # not seekable, returns at most 333 bytes per read
        def __init__(self, data: bytes) -> None:
            self.data, self.pos = data, 0

        def readable(self) -> bool:
            return True

        def read(self, n=-1) -> bytes:
            n = 333 if n is None or n < 0 else min(n, 333)
            out = self.data[self.pos:self.pos + n]
            self.pos += len(out)
            return out

    _check(st.load(Trickle(buf.getvalue())), model)
    with pytest.raises(st.LoadError, match="truncated"):
        st.load(Trickle(buf.getvalue()[:-3]))
    with pytest.raises(st.LoadError, match="trailing"):
        st.load(Trickle(buf.getvalue() + b"\0"))


def test_non_bmp_text_round_trips(tmp_path):
    class M(torch.nn.Module):
        def forward(self, x):
            return x + 1

    ep = st.export(M(), (torch.ones(2),))
    node = next(n for n in ep.graph.nodes if n.op == "call_function")
    node.meta["stack_trace"] = "model.py:1 `x + 1`  # \U0001F600 and \u00e9"
    st.save(ep, tmp_path / "e.st")
    ep2 = st.load(tmp_path / "e.st")
    assert any("\U0001F600" in n.meta.get("stack_trace", "") for n in ep2.graph.nodes)


def test_an_internal_error_keeps_its_cause_and_traceback(program, monkeypatch):
    _, ep = program
    buf = io.BytesIO()
    st.save(ep, buf)

    def broken(self):
        raise TypeError("a bug inside the loader")

    monkeypatch.setattr(Builder, "build", broken)
    with pytest.raises(st.LoadError, match="malformed program") as info:
        st.load(buf.getvalue())
    cause = info.value.__cause__
    assert isinstance(cause, TypeError) and "a bug inside the loader" in str(cause)
    assert any("in broken" in note for note in cause.__notes__)  # the frames, as text
