"""A file object given to ``st.load`` that returns other than a binary file does: more
bytes than asked for, or a ``readinto`` count outside the buffer it was given, is refused
with a LoadError naming the call; one whose size queries lie loads what it holds, or
refuses it as truncated.

Before (session 30): ``read(8)`` returning 13 bytes made the loader read the header from
the wrong place (refused as "not a safetrace program" by luck), a longer read in the
header's loop ran its count of what is left below zero, and a ``readinto`` returning -1
or ``2**40`` counted the tensor's bytes as read.
"""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st


def _data() -> bytes:
    buf = io.BytesIO()
    lin = torch.nn.Linear(300, 200)  # (a weight of 240,000 bytes: read in one readinto)
    st.save(st.export(lin, (torch.randn(2, 300),)), buf)
    return buf.getvalue()


DATA = _data()


class _Reader(io.RawIOBase):
    """A faithful reader whose ``read`` or ``readinto`` a case overrides."""

    def __init__(self) -> None:
        self.b = io.BytesIO(DATA)

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        return self.b.read(n)

    def readinto(self, view) -> int:
        return self.b.readinto(view)


class _ReadsMore(_Reader):
    def read(self, n: int = -1) -> bytes:
        return self.b.read(n) + (b"\0" * 5 if n and n > 0 else b"")


class _MoreLater(_Reader):  # (faithful for the header, longer inside it)
    def read(self, n: int = -1) -> bytes:
        piece = self.b.read(n)
        return piece + b" " if self.b.tell() > 100 and n and n > 0 else piece


def _into(result):
    class Lying(_Reader):
        def readinto(self, view) -> int:
            got = self.b.readinto(view)
            return result(got)
    return Lying


@pytest.mark.parametrize("reader", [
    _ReadsMore, _MoreLater, _into(lambda k: -1), _into(lambda k: 1 << 40),
    _into(lambda k: k + 1), _into(lambda k: float(k)), _into(lambda k: True)],
    ids=["read_more", "read_more_in_header", "readinto_negative", "readinto_huge",
         "readinto_one_more", "readinto_float", "readinto_bool"])
def test_a_file_object_returning_more_than_asked_is_refused(reader):
    with pytest.raises(st.LoadError, match=r"the file object's (read|readinto)\(.* "
                                           r"returned .*: a binary file object gives at "
                                           r"most the bytes asked for"):
        st.load(reader())


class _ReadsLess(_Reader):
    def read(self, n: int = -1) -> bytes:
        return self.b.read(max(1, n // 2) if n and n > 0 else n)

    readinto = None  # (read only)


class _SeekLies(io.BytesIO):
    def __init__(self, end) -> None:
        super().__init__(DATA)
        self.end = end

    def seekable(self) -> bool:
        return True

    def seek(self, pos, whence=0):
        return self.end if whence == 2 else super().seek(pos, whence)


@pytest.mark.parametrize("reader", [
    _ReadsLess, lambda: _SeekLies(1 << 50), lambda: _SeekLies(1e30),
    lambda: _SeekLies("x")], ids=["short_reads", "seek_huge", "seek_float", "seek_str"])
def test_a_file_object_giving_its_bytes_in_pieces_or_lying_of_its_size_loads(reader):
    ep = st.load(reader())
    x = torch.randn(2, 300)
    torch.testing.assert_close(ep.module()(x), st.load(DATA).module()(x))


@pytest.mark.parametrize("end", [-5, 100, len(DATA) - 1])
def test_a_file_object_claiming_fewer_bytes_than_it_holds_is_refused(end):
    with pytest.raises(st.LoadError):
        st.load(_SeekLies(end))


def _declaring(nbytes: int) -> bytes:
    """DATA with its weight declared ``nbytes`` long (its shape to match; the bytes not
    there)."""
    import json
    import struct
    (n,) = struct.unpack("<Q", DATA[:8])
    head = json.loads(DATA[8:8 + n])
    begin, end = head["state:weight"]["data_offsets"]
    for entry in head.values():  # (the tensors after it: moved along)
        if isinstance(entry, dict) and "data_offsets" in entry and \
                entry["data_offsets"][0] >= end:
            entry["data_offsets"] = [o + begin + nbytes - end for o in entry["data_offsets"]]
    head["state:weight"].update(shape=[nbytes // 4], data_offsets=[begin, begin + nbytes])
    text = json.dumps(head).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + DATA[8 + n:]


class _ClaimsHuge(io.BytesIO):
    def seek(self, pos, whence=0):
        end = super().seek(pos, whence)
        return 1 << 50 if whence == 2 else end


def test_a_file_object_lying_of_its_size_cannot_make_the_loader_allocate_its_header():
    """A 512 GiB weight its header declares, in an object claiming 2**50 bytes: memory
    the process cannot have is a LoadError naming the tensor (before: torch's RuntimeError
    from the allocator); one it can have is refused as truncated."""
    (n,) = __import__("struct").unpack("<Q", DATA[:8])
    assert b"state:weight" in DATA[8:8 + n]
    with pytest.raises(st.LoadError, match="weight"):
        st.load(_ClaimsHuge(_declaring(1 << 39)))
    with pytest.raises(st.LoadError):
        st.load(_ClaimsHuge(_declaring(1 << 22)))
