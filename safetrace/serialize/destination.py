"""Memory of the program's own for a file's tensor data, and the read that fills it.

The data is read into one anonymous mapping (``Destination``), aligned to 2 MiB, that the
loaded tensors view (each at its offset in the file's data: the tensors tile the data, so
one mapping holds them all, in file order, and every tensor the file aligns to 64 bytes is
aligned in memory).  Nothing but the program holds it: truncating or rewriting the file
afterwards cannot reach it.

What a private copy costs is the kernel's: a fresh page for every 4 KiB (a fault, zeroing,
accounting) and the copy out of the page cache.  With ``HUGE_PAGES`` (opt-in), where
transparent huge pages are on for ``madvise``, the mapping is filled ahead of the read with
2 MiB pages (``MADV_HUGEPAGE`` + ``MADV_POPULATE_WRITE``, Linux 5.14): 512 times fewer
faults, about 8x less system time than 4 KiB pages where the kernel has huge pages at
hand.  Where it has not
(a virtual machine whose free memory was returned to the host makes every fresh huge page
a host fault: 5-7x slower than 4 KiB pages), a probe tells: one huge page is made and
timed before the read starts, and every later piece is timed too; after one slower than
``HUGE_RATE`` the rest is read into 4 KiB pages as before (what a slow probe costs: one
huge page, 5-10 ms on such a machine; a slow piece after a fast probe: 2 per thread).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
import threading
import time
from typing import Any, Callable

HUGE = 2 << 20  # the size of a transparent huge page on x86-64 and arm64 (4K base pages)
HUGE_RATE = 4 << 30  # bytes/s below which huge pages cost more than 4 KiB pages would
_HUGE_PIECE = 4 << 20  # the pieces a thread makes huge pages for, then reads (each timed)
_PIECE = 64 << 20  # the pieces it reads once huge pages are out
_MADV_HUGEPAGE, _MADV_NOHUGEPAGE, _MADV_POPULATE_WRITE = 14, 15, 23  # (Linux's values)
_PREAD_MAX = 1 << 30


def _libc_madvise() -> Callable | None:
    """libc's ``madvise`` through ctypes (which lets other threads run while the kernel
    fills pages; ``mmap.madvise`` holds the GIL), on Linux only."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


_madvise = _libc_madvise()
# Ask for huge pages (opt-in: ``safetrace.serialize.destination.HUGE_PAGES = True``).  Off
# by default: on the development VM (free memory returned to the host) the probe's page
# often comes from memory just freed, and the pages after it cost a host fault each:
# st.load of 256 MiB took 0.68 s instead of 0.37 s (median of 4, 2026-12-04).
HUGE_PAGES = False


class Destination:
    """``nbytes`` of fresh anonymous memory, 2 MiB aligned: ``mapping`` (the object tensors
    keep alive) and ``offset`` (where the data starts in it)."""

    def __init__(self, nbytes: int) -> None:
        extra = HUGE if _madvise is not None else 0
        flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
        self.mapping = mmap.mmap(-1, nbytes + extra, flags=flags) if flags else \
            mmap.mmap(-1, nbytes + extra)
        holder = ctypes.c_char.from_buffer(self.mapping)
        address = ctypes.addressof(holder)
        del holder  # (the export of the buffer ends with it)
        self.offset = -address % HUGE if extra else 0
        self.address = address + self.offset
        self.nbytes = nbytes
        self.huge = HUGE_PAGES and _madvise is not None  # still worth trying
        self._lock = threading.Lock()

    def fill(self, begin: int, end: int, read: Callable[[memoryview, int], None]) -> None:
        """``read(view, offset)`` for consecutive pieces of [begin, end), each piece's
        pages made ahead of it (huge ones while they come fast)."""
        view = memoryview(self.mapping)
        try:
            pos = begin
            while pos < end:
                stop = min(end, pos + (_HUGE_PIECE if self.huge else _PIECE))
                self._prepare(pos, stop)
                read(view[self.offset + pos:self.offset + stop], pos)
                pos = stop
        finally:
            view.release()

    def probe(self) -> None:
        """Make the first huge page and time it: huge pages for the rest only if it came
        faster than ``HUGE_RATE``."""
        if self.huge and self.nbytes >= 2 * HUGE:
            self._prepare(0, HUGE)

    def _prepare(self, begin: int, end: int) -> None:
        lo, hi = begin + -begin % HUGE, end - end % HUGE  # the whole huge pages inside
        if hi <= lo or not self.huge:
            return
        t = time.perf_counter()
        ok = (_madvise(self.address + lo, hi - lo, _MADV_HUGEPAGE) == 0
              and _madvise(self.address + lo, hi - lo, _MADV_POPULATE_WRITE) == 0)
        seconds = time.perf_counter() - t
        if not ok or seconds * HUGE_RATE > hi - lo:
            # refused (no THP, a kernel before 5.14) or slower than 4 KiB pages: those for
            # the rest (faulted in by the read)
            with self._lock:
                if self.huge:  # (where THP is "always": 4 KiB pages for what is left)
                    self.huge = False
                    _madvise(self.address, self.nbytes, _MADV_NOHUGEPAGE)


def read_into(fd: int, base: int, dest: Destination, threads: int,
              ended: Callable[[], BaseException]) -> None:
    """Read the file's bytes [base, base + dest.nbytes) into ``dest``, by ``threads``
    threads each reading its own part (``os.preadv`` releases the GIL: the copies out of
    the page cache run on as many cores)."""
    total = dest.nbytes
    align = HUGE if total >= threads * HUGE else 4096
    size = -(-total // max(1, threads))
    size += -size % align
    parts = [(b, min(total, b + size)) for b in range(0, total, size)]
    errors: list = []

    def read(view: memoryview, offset: int) -> None:
        done = 0
        while done < view.nbytes:
            got = _preadv(fd, view[done:done + _PREAD_MAX], base + offset + done)
            if got <= 0:
                raise ended()
            done += got

    def run(begin: int, end: int) -> None:
        try:
            dest.fill(begin, end, read)
        except BaseException as err:  # noqa: BLE001 - re-raised on the calling thread
            errors.append(err)

    dest.probe()
    workers = [threading.Thread(target=run, args=p, daemon=True) for p in parts[1:]]
    for w in workers:
        w.start()
    run(*parts[0])
    for w in workers:
        w.join()
    if errors:
        raise errors[0]


def _preadv(fd: int, view: memoryview, offset: int) -> int:
    """``os.preadv`` into ``view``, or (where the platform lacks it) ``os.pread``."""
    if hasattr(os, "preadv"):
        return os.preadv(fd, [view], offset)
    data = os.pread(fd, view.nbytes, offset)
    view[:len(data)] = data
    return len(data)

