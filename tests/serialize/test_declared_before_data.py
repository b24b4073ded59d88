"""A file whose stored tensors do not match the program's state is refused from its header,
before any tensor's data is read or mapped (session 33).

Before: a path whose file was 1 GiB of holes (sparse: no disk), its header declaring the
program's ``[4]`` buffer as ``[2**28]`` float32, was read completely (1 GiB of fresh
memory and a full read, within ``max_file_bytes``) or mapped, and only then refused by the
state's shape check.  The same for a ``weights=`` file and a file object.
"""

from __future__ import annotations

import io
import json
import os
import struct
import types

import pytest
import torch

import safetrace as st
from safetrace.serialize import destination, lease, tensorfile
from tests.serialize import surgery

_BIG = 1 << 28  # float32 elements: 1 GiB


class _Buf(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("b", torch.arange(4.0))

    def forward(self, x):
        return x + self.b


def _program() -> tuple[dict, dict]:
    raw = surgery.saved(st.export(_Buf(), (torch.randn(3, 4),)))
    (n,) = struct.unpack("<Q", raw[:8])
    head = json.loads(raw[8:8 + n])
    return head.pop("__metadata__"), head


def _sparse(path, tensors: dict, metadata: dict | None) -> None:
    """A safetensors file of ``tensors`` ({name: (code, shape)}), its data all holes."""
    head, pos = {}, 0
    for name, (code, shape) in tensors.items():
        size = {"F32": 4, "F64": 8}[code]
        for s in shape:
            size *= s
        head[name] = {"dtype": code, "shape": shape, "data_offsets": [pos, pos + size]}
        pos += size
    if metadata is not None:
        head["__metadata__"] = metadata
    text = json.dumps(head).encode()
    text += b" " * (-(len(text) + 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
    os.truncate(path, 8 + len(text) + pos)


@pytest.fixture
def no_data(monkeypatch):
    """Reading or mapping a file's data fails the test."""
    def boom(*_args, **_kwargs):
        raise AssertionError("the tensor data was read or mapped")

    fake = types.SimpleNamespace(**{k: getattr(tensorfile.mmap, k) for k in dir(
        tensorfile.mmap) if k.isupper()}, mmap=boom)
    monkeypatch.setattr(tensorfile, "mmap", fake)
    monkeypatch.setattr(destination, "read_into", boom)
    monkeypatch.setattr(destination, "Destination", boom)
    monkeypatch.setattr(tensorfile, "_allocate", boom)
    monkeypatch.setattr(tensorfile, "_stream_tensor", boom)


@pytest.mark.parametrize("how", ["leased", "read", "mmap"])
def test_a_sparse_state_of_another_shape_is_refused_before_its_data(tmp_path, monkeypatch,
                                                                    no_data, how):
    metadata, _ = _program()
    p = tmp_path / "big.st"
    _sparse(p, {"state:b": ("F32", [_BIG])}, metadata)
    assert os.stat(p).st_size > 1 << 30
    if how == "read":
        monkeypatch.setattr(lease, "ENABLED", False)
    with pytest.raises(st.LoadError, match=r"state\[0\].*'state:b' is torch.float32 \[268435456\].*declares "
                                           r"torch.float32 \[4\]"):
        st.load(p, mmap=how == "mmap")


def test_a_stored_tensor_of_another_dtype_or_a_placeholder_mismatch(tmp_path, no_data):
    metadata, _ = _program()
    p = tmp_path / "f64.st"
    _sparse(p, {"state:b": ("F64", [4])}, metadata)
    with pytest.raises(st.LoadError, match="declares torch.float32"):
        st.load(p)
    doc = json.loads(metadata["safetrace.program"])
    doc["state"][0]["shape"] = [_BIG]  # the state entry agrees; the placeholder does not
    p2 = tmp_path / "placeholder.st"
    _sparse(p2, {"state:b": ("F32", [_BIG])}, {**metadata,
                                                "safetrace.program": json.dumps(doc)})
    with pytest.raises(st.LoadError, match=r"nodes\[0\] \(b_b\).*declares torch.float32 \[4\]"):
        st.load(p2)


def test_a_stored_tensor_the_program_never_names_is_refused_before_its_data(tmp_path,
                                                                            no_data):
    metadata, _ = _program()
    p = tmp_path / "extra.st"
    _sparse(p, {"state:b": ("F32", [4]), "state:junk": ("F32", [_BIG])}, metadata)
    with pytest.raises(st.LoadError, match="not declared by the program.*state:junk"):
        st.load(p)


def test_a_file_object_declaring_other_state_is_refused_before_its_data(no_data):
    metadata, _ = _program()
    head = {"state:b": {"dtype": "F32", "shape": [_BIG], "data_offsets": [0, 4 * _BIG]},
            "__metadata__": metadata}
    text = json.dumps(head).encode()
    text += b" " * (-(len(text) + 8) % 8)

    class Reads(io.RawIOBase):  # a header, then 1 GiB of zeros it would hand out
        def __init__(self) -> None:
            self.head, self.pos, self.size = struct.pack("<Q", len(text)) + text, 0, 0
            self.size = len(self.head) + 4 * _BIG

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:
            n = min(len(b), self.size - self.pos)
            part = self.head[self.pos:self.pos + n]
            b[:len(part)] = part
            b[len(part):n] = bytes(n - len(part))
            self.pos += n
            return n

    f = Reads()
    with pytest.raises(st.LoadError, match="declares torch.float32 \\[4\\]"):
        st.load(io.BufferedReader(f))
    assert f.pos < 1 << 20


def test_a_sparse_weights_file_of_other_shapes_is_refused_before_its_data(tmp_path,
                                                                         no_data):
    ep = st.export(_Buf(), (torch.randn(3, 4),))
    st.save(ep, tmp_path / "g.st", weights=False)
    w = tmp_path / "w.safetensors"
    _sparse(w, {"b": ("F32", [_BIG])}, None)
    with pytest.raises(st.LoadError, match=r"(?s)weights= does not match.*b: expected float32 "
                                           r"\[4\], got float32 \[268435456\]"):
        st.load(tmp_path / "g.st", weights=w)


def test_matching_files_still_load(tmp_path):
    ep = st.export(_Buf(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("n")}})
    st.save(ep, tmp_path / "a.st")
    for kwargs in ({}, {"mmap": True}):
        got = st.load(tmp_path / "a.st", **kwargs)
        for n in (0, 1, 5):
            x = torch.randn(n, 4)
            torch.testing.assert_close(got.module()(x), _Buf()(x))
        with pytest.raises(st.InputMismatchError):
            got.module()(torch.randn(2, 5))
    st.save(ep, tmp_path / "g.st", weights=False)
    from safetensors.torch import save_file
    save_file({"b": torch.arange(4.0)}, tmp_path / "w.safetensors")
    got = st.load(tmp_path / "g.st", weights=tmp_path / "w.safetensors")
    torch.testing.assert_close(got.module()(torch.ones(2, 4)), torch.ones(2, 4) +
                               torch.arange(4.0))
