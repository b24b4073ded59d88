"""Writing the container: the safetensors layout, written straight from each tensor's memory.

Layout (what every safetensors reader expects): an 8-byte little-endian header length N,
N bytes of JSON ``{name: {"dtype", "shape", "data_offsets"}, "__metadata__": {str: str}}``
padded with spaces so that the data starts at a multiple of 64 bytes, then the tensors'
bytes back to back.  Tensors whose size is a multiple of 64 bytes come first (each starts
64-byte aligned, as in torch's allocator: oneDNN's convolutions give other bits for other
operand alignments), then the others by alignment (largest first), each at a multiple of
its own element size (complex128, stored as float64 pairs, at 16: its kernels load it
with aligned 16-byte instructions, and crash on others); ties by name.

Nothing is copied on the way: each tensor is written from a byte view of its (CPU,
contiguous) memory.  Files of at least ``DIRECT_MIN_BYTES`` go to the device with
``O_DIRECT`` through two aligned 8 MiB buffers (one filled while the other is written):
no page-cache pages are allocated for the file, which on machines where those are costly
made saving several times slower than the disk; where the filesystem refuses ``O_DIRECT``
the same bytes are written through the page cache.  A file object gets the header and
then each tensor in pieces of at most 16 MiB (no whole-file buffer).
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import errno
import io
import json
import mmap
import os
import sys
import tempfile
from typing import Any

import torch

from safetrace.serialize.tensorfile import AS_STORED, CODES, DTYPES_KEY, stored_form

# Files whose data is at least this large are written with O_DIRECT (None: never).
DIRECT_MIN_BYTES: int | None = 64 << 20
_BLOCK = 4096            # O_DIRECT alignment of buffers, offsets and lengths
_CHUNK = 8 << 20         # one O_DIRECT buffer
_PIECE = 16 << 20        # one write to a file object
_MAX_WRITE = 1 << 30     # one os.write (Linux writes at most ~2 GiB per call)
_DATA_ALIGN = 64


def prepare(tensors: dict[str, torch.Tensor]) -> tuple[dict, dict, dict]:
    """CPU, contiguous tensors in their stored dtype, the aliases, and the true dtypes.

    Tensors that are the same view of one storage (tied weights) are written once:
    ``aliases`` maps the other names to the written one.  A dtype the safetensors layout
    has no code for travels as a view (``tensorfile.AS_STORED``); ``dtypes`` names the
    true dtype of each such tensor (the ``safetrace.dtypes`` metadata entry).
    """
    if sys.byteorder != "little":  # pragma: no cover
        raise NotImplementedError("saving on a big-endian machine is not supported")
    out: dict[str, torch.Tensor] = {}
    aliases: dict[str, str] = {}
    dtypes: dict[str, str] = {}
    seen: dict[tuple, str] = {}
    storages: set = set()
    for name, t in tensors.items():
        t = t.detach()
        if t.device.type == "meta":
            raise ValueError(name)
        if t.is_quantized or t.layout is not torch.strided:
            what = "quantized" if t.is_quantized else f"{t.layout}"
            raise TypeError(f"cannot save tensor {name!r}: a {what} tensor (the file holds "
                            f"dense tensors only).\nFix: dequantize() / to_dense() it before "
                            f"exporting")
        key = (t.device, t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape),
               t.stride(), t.dtype) if t.numel() else None
        if key is not None and key in seen:
            aliases[name] = seen[key]
            continue
        if key is not None:
            seen[key] = name
        t = t.resolve_conj().resolve_neg().cpu()
        if t.dtype not in CODES and t.dtype not in AS_STORED:
            quantized = str(t.dtype).startswith(("torch.qint", "torch.quint"))
            why = ("a quantized dtype, whose scale and zero point the format does not hold"
                   if quantized else "the format has no code for it")
            raise TypeError(f"cannot save tensor {name!r} of dtype {t.dtype}: {why}.\nFix: "
                            f"store it as a plain dtype (dequantize(), or .view(torch.uint8) "
                            f"and view it back in forward)")
        ptr = t.untyped_storage().data_ptr() if t.numel() else None
        if not t.is_contiguous() or (ptr is not None and ptr in storages):
            t = t.clone(memory_format=torch.contiguous_format)
        if ptr is not None:
            storages.add(t.untyped_storage().data_ptr())
        if t.dtype in AS_STORED:
            dtypes[name] = str(t.dtype).removeprefix("torch.")
        out[name] = t
    return out, aliases, dtypes


def layout(tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> tuple[bytes, list]:
    """The header (length prefix included, padded) and the tensors in file order."""
    # tensors of whole 64-byte lines first: each of them starts 64-byte aligned, as
    # torch's allocator places tensors (some kernels' results depend on the alignment of
    # their operands); then the rest, by alignment
    order = sorted(tensors.items(), key=lambda kv: (
        kv[1].numel() * kv[1].dtype.itemsize % _DATA_ALIGN != 0, -kv[1].dtype.itemsize, kv[0]))
    entries: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
    views, pos = [], 0
    for name, t in order:
        code, shape = stored_form(t.dtype, tuple(t.shape))
        size = t.numel() * t.dtype.itemsize
        entries[name] = {"dtype": code, "shape": list(shape), "data_offsets": [pos, pos + size]}
        pos += size
        views.append(_bytes_of(t))
    text = json.dumps(entries, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % _DATA_ALIGN)
    return len(text).to_bytes(8, "little") + text, views


def _bytes_of(t: torch.Tensor) -> memoryview:
    """The bytes of a contiguous CPU tensor, without a copy (the view keeps it alive)."""
    if t.numel() == 0:
        return memoryview(b"")
    # a ctypes array over the tensor's memory, not ``.numpy()``: numpy is not a dependency
    raw = (ctypes.c_char * (t.numel() * t.element_size())).from_address(t.data_ptr())
    raw.keep_alive = t  # type: ignore[attr-defined]
    return memoryview(raw).cast("B")


def write(path: Any, tensors: dict[str, torch.Tensor], metadata: dict[str, str],
          dtypes: dict[str, str] | None = None) -> None:
    """Write a container to a path (a temporary file renamed when complete) or a file object."""
    if dtypes:
        metadata = {**metadata, DTYPES_KEY: json.dumps(dtypes, sort_keys=True)}
    head, views = layout(tensors, metadata)
    if hasattr(path, "write"):
        _to_file_object(path, head, views)
        return
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".safetrace-", dir=folder)
    try:
        try:
            total = len(head) + sum(v.nbytes for v in views)
            direct = DIRECT_MIN_BYTES is not None and total >= DIRECT_MIN_BYTES
            if not (direct and _write_direct(tmp, head, views, total)):
                _write_buffered(fd, head, views)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _to_file_object(f: Any, head: bytes, views: list) -> None:
    for view in [memoryview(head), *views]:
        for i in range(0, view.nbytes, _PIECE):
            piece = view[i:i + _PIECE]
            while piece.nbytes:
                n = f.write(piece)
                if n is None:
                    raise BlockingIOError("the file object would block (non-blocking "
                                          "raw stream): give st.save a blocking file")
                if not isinstance(n, int) or n >= piece.nbytes or n < 0:
                    break  # buffered and text-like writers write all (or return None)
                piece = piece[n:]


def _write_buffered(fd: int, head: bytes, views: list) -> None:
    # a buffered writer gathers the small tensors; large ones go to the fd directly
    with io.open(fd, "wb", buffering=1 << 20, closefd=False) as f:
        f.write(head)
        for view in views:
            for i in range(0, view.nbytes, _MAX_WRITE):
                f.write(view[i:i + _MAX_WRITE])


def _write_direct(path: str, head: bytes, views: list, total: int) -> bool:
    """Write through O_DIRECT; False (the file left empty) if the filesystem refuses it."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return False
    try:
        fd = os.open(path, os.O_WRONLY | flag | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        if err.errno in (errno.EINVAL, errno.EOPNOTSUPP):
            return False
        raise
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            if _direct_chunks(fd, pool, head, views):
                os.ftruncate(fd, total)  # the last block was padded to the block size
                return True
        os.ftruncate(fd, 0)
        return False
    finally:
        os.close(fd)


def _direct_chunks(fd: int, pool: Any, head: bytes, views: list) -> bool:
    # two page-aligned buffers: one is filled (a memcpy) while the thread writes the other
    buffers = [memoryview(mmap.mmap(-1, _CHUNK)), memoryview(mmap.mmap(-1, _CHUNK))]
    pending: list = [None, None]
    which, fill, offset = 0, 0, 0
    for view in [memoryview(head), *views]:
        done = 0
        while done < view.nbytes:
            if fill == 0 and pending[which] is not None:
                if not _finished(pending[which]):
                    return False
                pending[which] = None
            k = min(view.nbytes - done, _CHUNK - fill)
            buffers[which][fill:fill + k] = view[done:done + k]
            fill, done = fill + k, done + k
            if fill == _CHUNK:
                pending[which] = pool.submit(_pwrite_all, fd, buffers[which], offset)
                which, fill, offset = 1 - which, 0, offset + _CHUNK
    if fill:
        if pending[which] is not None and not _finished(pending[which]):
            return False
        end = -(-fill // _BLOCK) * _BLOCK
        buffers[which][fill:end] = bytes(end - fill)
        pending[which] = pool.submit(_pwrite_all, fd, buffers[which][:end], offset)
    return all(_finished(p) for p in pending if p is not None)


def _pwrite_all(fd: int, buf: memoryview, offset: int) -> None:
    while buf.nbytes:
        n = os.pwrite(fd, buf, offset)
        buf, offset = buf[n:], offset + n


def _finished(future: Any) -> bool:
    """Wait for a write; False if the filesystem refused O_DIRECT (EINVAL)."""
    try:
        future.result()
    except OSError as err:
        if err.errno == errno.EINVAL:
            return False
        raise
    return True
