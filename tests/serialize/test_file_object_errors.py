"""An exception a file object's own method raises while ``st.load`` reads it is a
LoadError naming the call, the original its ``__cause__`` (session 31: a closed file's
``ValueError`` and a disk's ``OSError`` passed through unchanged, so a caller catching
``st.LoadError`` for "this file cannot be loaded" missed them); one raised by its size
queries makes it a stream of unknown size, read in order."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from tests.serialize import surgery


def _data() -> bytes:
    return surgery.saved(st.export(torch.nn.Linear(300, 200), (torch.randn(2, 300),)))


DATA = _data()


class _FailsAfter(io.RawIOBase):
    """Reads faithfully, then its ``readinto`` raises ``error`` from the ``after``-th call."""

    def __init__(self, after: int, error: Exception) -> None:
        self.b, self.calls, self.after, self.error = io.BytesIO(DATA), 0, after, error

    def readable(self) -> bool:
        return True

    def readinto(self, view) -> int:
        self.calls += 1
        if self.calls >= self.after:
            raise self.error
        return self.b.readinto(view)


def test_closed_file_object_is_a_load_error():
    f = io.BytesIO(DATA)
    f.close()
    with pytest.raises(st.LoadError, match=r"the file object's read\(8\) raised ValueError: "
                                           r"I/O operation on closed file") as err:
        st.load(f)
    assert isinstance(err.value.__cause__, ValueError)


@pytest.mark.parametrize("after", [1, 3, 6])
def test_disk_error_while_reading_is_a_load_error(after):
    error = OSError(5, "Input/output error")
    with pytest.raises(st.LoadError, match=r"the file object's (read|readinto)\(.*\) raised "
                                           r"OSError: \[Errno 5\] Input/output error") as err:
        st.load(_FailsAfter(after, error))
    assert err.value.__cause__ is error


def test_error_of_its_own_kind_is_a_load_error():
    class Broken(Exception):
        pass

    with pytest.raises(st.LoadError, match=r"raised Broken: no more") as err:
        st.load(_FailsAfter(4, Broken("no more")))
    assert isinstance(err.value.__cause__, Broken)


def test_failing_size_queries_read_in_order():
    class NoSeek(io.BytesIO):
        def seekable(self) -> bool:
            raise RuntimeError("cannot say")

    class NoTell(io.BytesIO):
        def tell(self) -> int:
            raise RuntimeError("lost")

    x = torch.randn(2, 300)
    want = st.load(DATA).module()(x)
    for f in (NoSeek(DATA), NoTell(DATA)):
        torch.testing.assert_close(st.load(f).module()(x), want)


def test_interrupt_passes_through():
    with pytest.raises(KeyboardInterrupt):
        st.load(_FailsAfter(2, KeyboardInterrupt()))
