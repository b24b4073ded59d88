"""Weights that are a mapping of the file and still cannot change under the program: a
read lease on the file (Linux ``fcntl(F_SETLEASE, F_RDLCK)``).

A private copy of the weights costs fresh memory: a page fault, zeroing and a copy for
every 4 KiB, which on a virtual machine can cost 4x what mapping the page cache costs
(docs/saving.md, "Where the time goes").  A mapping is only unsafe when the file changes
(truncated: SIGBUS at the next touch; rewritten: the weights change).  A read lease makes
every change wait for the loader: before any process (this one included) opens the file
for writing or truncates it, the kernel signals the lease holder and holds the writer
until the holder lets go (up to ``/proc/sys/fs/lease-break-time``, 45 s by default).  The
holder here is one thread of ours (``_watch``): on the signal it copies each mapping of
that file into fresh anonymous memory and moves the copy over the mapping's address
(``mremap(MREMAP_FIXED)``: one atomic replacement, tensors keep their pointers), then
releases the lease; the writer goes on and the program keeps the bytes that were checked.

The lease is taken before the first byte of the file is read (so what is checked is what
is mapped), and only where the kernel grants it: a file of this user's own (or with
``CAP_LEASE``), on a filesystem with leases, open for writing nowhere.  Otherwise the
loader reads the weights into private memory, as before.  A forked child takes a lease of
its own on the same file, or copies.  What stays: a writer whose open waits longer than
the lease-break time (this process stopped, or its threads unable to run for 45 s) goes
on, and a change after that can still reach the mapping; a writer that opens with
``O_NONBLOCK`` gets ``EWOULDBLOCK`` once (the lease is then released) and must retry.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading
import weakref
from typing import Any

ENABLED = True  # False: every load reads its weights into private memory
_F_SETSIG, _F_SETOWN_EX, _F_OWNER_TID = 10, 15, 0  # (Linux's values)
_MREMAP_MAYMOVE, _MREMAP_FIXED = 1, 2
_PROT_RW, _MAP_PRIVATE_ANON = 0x1 | 0x2, 0x02 | 0x20

try:  # Linux only; anything missing turns leases off
    import fcntl
    import signal

    _SIG = signal.SIGRTMIN + 7
    _LIBC = ctypes.CDLL(None, use_errno=True)
    _mmap, _mremap, _munmap = _LIBC.mmap, _LIBC.mremap, _LIBC.munmap
    _mmap.restype, _mremap.restype = ctypes.c_void_p, ctypes.c_void_p
    _mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
    _mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int,
                        ctypes.c_void_p]
    _munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    _signal = _LIBC.signal  # (signal.signal works only on the main thread)
    _signal.argtypes, _signal.restype = [ctypes.c_int, ctypes.c_void_p], ctypes.c_void_p
    _F_SETLEASE, _F_GETLEASE = fcntl.F_SETLEASE, fcntl.F_GETLEASE
    _AVAILABLE = sys.platform.startswith("linux") and hasattr(signal, "sigwaitinfo")
except (ImportError, AttributeError, OSError):
    _AVAILABLE = False

_lock = threading.RLock()
_held: dict[int, "_Lease"] = {}  # fd (a dup of the loader's) -> its lease
_watcher: list = []  # [native id, ident] of the watching thread once it runs


class _Lease:
    """A read lease held through ``fd``, and the mapping of the file it guards."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.mapping: Any = None  # a weakref to the mmap the tensors view, once mapped
        self.address = 0
        self.size = 0


def take(fd: int) -> "_Lease | None":
    """A read lease on the file behind ``fd``, held through a dup of it (pass the lease to
    ``guard`` or ``release``), or None where the kernel refuses one."""
    if not (ENABLED and _AVAILABLE):
        return None
    tid = _watching()
    if tid is None:
        return None
    try:
        own = os.dup(fd)
    except OSError:  # (out of file descriptors)
        return None
    with _lock:
        # Setting a lease makes the whole process its owner for a moment (until
        # F_SETOWN_EX names the watching thread): a break then would signal the process,
        # whose default action for this signal is to end.  So the signal is ignored for
        # that moment (where nothing else handles it), then set back to the default (an
        # ignored signal would stay ignored in every program this process executes); as
        # ignoring drops any notice already waiting for the watching thread, that thread
        # is then told to look at every lease once.
        quiet = _default_action(int(_SIG))
        if quiet:
            _signal(int(_SIG), 1)  # SIG_IGN
        try:
            fcntl.fcntl(own, _F_SETSIG, _SIG)
            fcntl.fcntl(own, _F_SETLEASE, fcntl.F_RDLCK)
            # the kernel signals the lease's owner: our watching thread, waiting for it
            fcntl.fcntl(own, _F_SETOWN_EX, struct.pack("ii", _F_OWNER_TID, tid))
        except OSError:  # not our file, no leases there, open for writing somewhere
            _close(own)
            return None
        finally:
            if quiet:
                _signal(int(_SIG), 0)  # SIG_DFL
                signal.pthread_kill(_watcher[1], _SIG)
        lease = _Lease(own)
        _held[own] = lease
    return lease


def _default_action(sig: int) -> bool:
    """Whether ``sig``'s action is the default one (neither caught nor ignored): the
    kernel's view, which also knows of handlers set outside Python."""
    try:
        with open("/proc/self/status") as f:
            masks = {k: int(v, 16) for k, _, v in (line.partition(":") for line in f)
                     if k in ("SigCgt", "SigIgn")}
    except (OSError, ValueError):
        return False
    return len(masks) == 2 and not (masks["SigCgt"] | masks["SigIgn"]) >> (sig - 1) & 1


def guard(lease: _Lease, mapping: Any) -> None:
    """``mapping`` (an mmap of the whole leased file, from offset 0) is what ``lease``
    protects.  Where the lease already began to break (a writer waits), it is copied now."""
    holder = ctypes.c_char.from_buffer(mapping)
    address = ctypes.addressof(holder)
    del holder
    with _lock:
        _watch_mapping(lease, mapping, address)


def _watch_mapping(lease: _Lease, mapping: Any, address: int) -> None:
    lease.mapping = weakref.ref(mapping, lambda _ref, lease=lease: release(lease))
    lease.address, lease.size = address, len(mapping)
    if fcntl.fcntl(lease.fd, _F_GETLEASE) != fcntl.F_RDLCK:
        _privatize(lease)


def privatize(lease: _Lease) -> None:
    """Copy ``lease``'s mapping into private memory now and let the lease go: for a
    program that writes its own state, before it first runs (a write racing the copy a
    lease break makes later could be lost)."""
    with _lock:
        _privatize(lease)


def release(lease: _Lease) -> None:
    """Let ``lease`` go (its mapping, if any, is gone or private); again: nothing."""
    with _lock:
        if _held.get(lease.fd) is not lease:
            return
        del _held[lease.fd]
    _unlock(lease.fd)


def _privatize(lease: _Lease) -> None:
    """Copy the lease's mapping into fresh private memory at the same address, then let the
    lease go (called with ``_lock`` held, while every writer of the file waits)."""
    mapping = lease.mapping() if lease.mapping is not None else None
    if mapping is not None and not mapping.closed:
        size = lease.size
        fresh = _mmap(None, size, _PROT_RW, _MAP_PRIVATE_ANON, -1, 0)
        if fresh is None or fresh == ctypes.c_void_p(-1).value:
            raise MemoryError(f"no memory for a private copy of {size} bytes of weights")
        ctypes.memmove(fresh, lease.address, size)
        moved = _mremap(fresh, size, size, _MREMAP_MAYMOVE | _MREMAP_FIXED, lease.address)
        if moved != lease.address:
            _munmap(fresh, size)
            raise OSError(ctypes.get_errno(), "mremap of the weights' private copy failed")
    if _held.get(lease.fd) is lease:
        del _held[lease.fd]
        _unlock(lease.fd)


def _scan() -> None:
    """Copy every mapping whose lease breaks (a writer waits for it)."""
    with _lock:
        for lease in list(_held.values()):
            try:
                breaking = fcntl.fcntl(lease.fd, _F_GETLEASE) != fcntl.F_RDLCK
            except OSError:
                breaking = True
            if breaking and lease.mapping is not None:
                try:
                    _privatize(lease)
                except (OSError, MemoryError) as err:  # the writer waits out the break time
                    print(f"safetrace: could not copy weights before their file changes: "
                          f"{err}", file=sys.stderr)


def _watching() -> int | None:
    """The native id of the thread that waits for lease breaks (started on first use)."""
    with _lock:
        if _watcher:
            return _watcher[0]
        ready = threading.Event()

        def watch() -> None:
            try:
                # (SIGIO: what the kernel sends when the signal queue is full)
                waited = {_SIG, signal.SIGIO}
                signal.pthread_sigmask(signal.SIG_BLOCK, waited)
                _watcher.extend((threading.get_native_id(), threading.get_ident()))
            finally:
                ready.set()
            while True:
                signal.sigwaitinfo(waited)
                _scan()

        try:
            threading.Thread(target=watch, name="safetrace-lease", daemon=True).start()
        except RuntimeError:  # (no thread to be had: out of memory or of threads)
            return None
        ready.wait()
        return _watcher[0] if _watcher else None


def _after_fork_in_child() -> None:
    """A forked child shares the parent's leases but not its watching thread: it takes
    leases of its own on the same files (or copies the weights)."""
    global _lock
    _lock = threading.RLock()
    _watcher.clear()
    inherited = list(_held.values())
    _held.clear()
    for lease in inherited:
        fresh = None
        try:
            fd = os.open(f"/proc/self/fd/{lease.fd}", os.O_RDONLY | os.O_CLOEXEC)
            try:
                fresh = take(fd)
            finally:
                os.close(fd)
        except OSError:
            fresh = None
        _close(lease.fd)  # (the parent's lease: not released, only this reference to it)
        mapping = lease.mapping() if lease.mapping is not None else None
        if mapping is None:
            if fresh is not None:
                release(fresh)
            continue
        if fresh is None:
            lease.fd = -1
            _privatize_unleased(lease)
            continue
        with _lock:
            _watch_mapping(fresh, mapping, lease.address)


def _privatize_unleased(lease: _Lease) -> None:
    """A forked child's copy of a mapping it could not lease (no memory: left mapped)."""
    size = lease.size
    fresh = _mmap(None, size, _PROT_RW, _MAP_PRIVATE_ANON, -1, 0)
    if fresh is None or fresh == ctypes.c_void_p(-1).value:
        return
    ctypes.memmove(fresh, lease.address, size)
    if _mremap(fresh, size, size, _MREMAP_MAYMOVE | _MREMAP_FIXED, lease.address) != \
            lease.address:
        _munmap(fresh, size)


def _unlock(fd: int) -> None:
    try:
        fcntl.fcntl(fd, _F_SETLEASE, fcntl.F_UNLCK)
    except OSError:
        pass
    _close(fd)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


if _AVAILABLE and hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
