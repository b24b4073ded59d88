"""The container of format 2: one safetensors file, written and mapped by ``safetensors``.

Layout (the safetensors format): an 8-byte little-endian header length N, N bytes of JSON
``{name: {"dtype", "shape", "data_offsets"}, "__metadata__": {str: str}}``, then the data.
The program's JSON document is the metadata entry ``safetrace.program``; tensors are named
``state:<name>`` and ``constant:<name>``.  Any safetensors reader opens the weights.

Reading validates the header here first (sizes, budgets, names, tiling), then lets the
``safetensors`` package map the data: tensors are copy-on-write views of the file
(``MAP_PRIVATE``), so untouched weights cost no memory and writing one copies only its
pages.  Paths are opened once, refused unless they are regular files, and mapped through
``/proc/self/fd`` so the mapped file is the one that was checked.
"""

from __future__ import annotations

import json
import os
import stat
import struct
import sys
import tempfile
from typing import Any

import safetensors
import safetensors.torch
import torch

from safetrace.errors import LoadError
from safetrace.serialize.budgets import Budgets

CODES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL", torch.complex64: "C64",
}
for _name, _code in (("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64"),
                     ("float8_e4m3fn", "F8_E4M3"), ("float8_e5m2", "F8_E5M2")):
    if hasattr(torch, _name):
        CODES[getattr(torch, _name)] = _code
DTYPE_OF = {code: dt for dt, code in CODES.items()}
# dtypes safetensors lacks travel as a real view: complex128 as float64 pairs
AS_REAL = {torch.complex128: torch.float64}
MAGIC_V1 = b"PK\x03\x04"


class Container:
    """A parsed file: its metadata strings and a way to get each tensor."""

    def __init__(self, metadata: dict, header: dict, getter: Any) -> None:
        self.metadata = metadata
        self.header = header  # tensor name -> (dtype, shape)
        self._get = getter

    def tensor(self, name: str) -> torch.Tensor:
        dtype, shape = self.header[name]
        if 0 in shape:
            return torch.empty(shape, dtype=dtype)
        t = self._get(name)
        if t.dtype is not dtype or tuple(t.shape) != tuple(shape):  # pragma: no cover
            raise LoadError(f"tensor {name!r}: the reader returned {t.dtype} {list(t.shape)}")
        if dtype is torch.bool and bool(((t.view(torch.uint8)) > 1).any()):
            raise LoadError(f"tensor {name!r} holds bool bytes other than 0 and 1")
        return t


# --- writing -------------------------------------------------------------------------------
def prepare(tensors: dict[str, torch.Tensor]) -> tuple[dict, dict]:
    """CPU, contiguous tensors for safetensors (copies only where needed) and the aliases.

    Tensors that are the same view of one storage (tied weights) are written once:
    ``aliases`` maps the other names to the written one.
    """
    if sys.byteorder != "little":  # pragma: no cover
        raise NotImplementedError("saving on a big-endian machine is not supported")
    out: dict[str, torch.Tensor] = {}
    aliases: dict[str, str] = {}
    seen: dict[tuple, str] = {}
    storages: set = set()
    for name, t in tensors.items():
        t = t.detach()
        if t.device.type == "meta":
            raise ValueError(name)
        key = (t.device, t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape),
               t.stride(), t.dtype) if t.numel() else None
        if key is not None and key in seen:
            aliases[name] = seen[key]
            continue
        if key is not None:
            seen[key] = name
        if t.dtype in AS_REAL:
            t = torch.view_as_real(t.resolve_conj())
        if t.dtype not in CODES:
            raise TypeError(f"cannot save tensor {name!r} of dtype {t.dtype}: the safetensors "
                            f"layout has no code for it")
        t = t.cpu()
        ptr = t.untyped_storage().data_ptr() if t.numel() else None
        if not t.is_contiguous() or (ptr is not None and ptr in storages):
            t = t.clone(memory_format=torch.contiguous_format)
        if ptr is not None:
            storages.add(t.untyped_storage().data_ptr())
        out[name] = t
    return out, aliases


def write(path: Any, tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> None:
    """Write a container: streamed by safetensors to a temporary file, then renamed."""
    if hasattr(path, "write"):
        path.write(safetensors.torch.save(tensors, metadata=metadata))
        return
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".safetrace-", dir=folder)
    os.close(fd)
    try:
        safetensors.torch.save_file(tensors, tmp, metadata=metadata)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# --- reading -------------------------------------------------------------------------------
def open_regular(path: Any, what: str = "file") -> int:
    """An fd of ``path``, refused (before opening) unless it is a regular file."""
    try:
        path = os.fspath(path)
        st = os.stat(path)
    except (OSError, TypeError, ValueError) as err:
        raise LoadError(f"cannot open {what} {str(path)[:200]!r}: {err}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise LoadError(f"{what} {str(path)[:200]!r} is {kind} (FIFOs, devices and "
                        "directories are refused)")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise LoadError(f"cannot open {what} {str(path)[:200]!r}: {err}") from None
    st2 = os.fstat(fd)
    if not stat.S_ISREG(st2.st_mode) or (st2.st_dev, st2.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        raise LoadError(f"{what} {str(path)[:200]!r} changed while being opened")
    return fd


def read_fd(fd: int, budgets: Budgets, where: str) -> Container:
    """Parse the container behind ``fd`` and map its tensors (the fd may be closed after)."""
    size = os.fstat(fd).st_size
    head = os.pread(fd, 8, 0)
    n = _header_length(head, size, budgets, where)
    raw = os.pread(fd, n, 8)
    if len(raw) != n:
        raise LoadError(f"{where}: truncated header")
    metadata, header = parse_header(raw, size - 8 - n, budgets, where)
    if not header:
        return Container(metadata, header, None)
    target = f"/proc/self/fd/{fd}"
    if not os.path.exists(target):  # pragma: no cover - no /proc: read instead of mapping
        data = os.pread(fd, size - 8 - n, 8 + n)
        tensors = safetensors.torch.load(head + raw + data)
        return Container(metadata, header, tensors.__getitem__)
    try:
        handle = safetensors.safe_open(target, framework="pt")
    except Exception as err:  # noqa: BLE001 - the package's own validation failed
        raise LoadError(f"{where}: invalid safetensors data: {str(err)[:200]}") from None
    return Container(metadata, header, handle.get_tensor)


def read_bytes(buf: bytes, budgets: Budgets, where: str) -> Container:
    """Parse a container held in memory (the tensors are copied out of ``buf``)."""
    n = _header_length(buf[:8], len(buf), budgets, where)
    metadata, header = parse_header(buf[8:8 + n], len(buf) - 8 - n, budgets, where)
    if not header:
        return Container(metadata, header, None)
    try:
        tensors = safetensors.torch.load(bytes(buf))
    except Exception as err:  # noqa: BLE001
        raise LoadError(f"{where}: invalid safetensors data: {str(err)[:200]}") from None
    return Container(metadata, header, tensors.__getitem__)


def _header_length(head: bytes, size: int, budgets: Budgets, where: str) -> int:
    if head[:4] == MAGIC_V1:
        raise LoadError(
            f"{where}: this is a format 1 file (a zip archive, written by safetrace before "
            f"format 2); this safetrace reads format 2 only, which maps weights and checks "
            f"every operator.\nFix: re-save it: with the safetrace that wrote it, "
            f"ep = st.load(path); then with this one, st.save(ep, path) (or export the "
            f"model again and st.save it)")
    if len(head) < 8:
        raise LoadError(f"{where}: truncated (no header length)")
    (n,) = struct.unpack("<Q", head)
    if n > budgets.max_header_bytes:
        raise LoadError(f"{where}: header of {n} bytes is over the budget "
                        f"(max_header_bytes={budgets.max_header_bytes})")
    if 8 + n > size:
        raise LoadError(f"{where}: header length {n} exceeds the file ({size} bytes): "
                        "truncated or not a safetrace file")
    return n


def parse_header(raw: bytes, data_size: int, budgets: Budgets, where: str) -> tuple[dict, dict]:
    """Metadata strings and {name: (dtype, shape)}; every inconsistency is a LoadError."""
    # The header is flat but holds the program as one long string: bound its entries by
    # their keys (a raw `"data_offsets"` cannot occur inside a JSON string) before parsing.
    entries = raw.count(b'"data_offsets"')
    if entries > budgets.max_tensors:
        raise LoadError(f"{where}: {entries} tensors, over the budget "
                        f"(max_tensors={budgets.max_tensors})")
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=no_duplicate_keys)
    except (ValueError, RecursionError, UnicodeDecodeError) as err:
        raise LoadError(f"{where}: header is not valid JSON: {str(err)[:200]}") from None
    if not isinstance(header, dict):
        raise LoadError(f"{where}: header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise LoadError(f"{where}: __metadata__ must map strings to strings")
    if len(header) > budgets.max_tensors:
        raise LoadError(f"{where}: {len(header)} tensors, over the budget "
                        f"(max_tensors={budgets.max_tensors})")
    spans, out = [], {}
    for name, info in header.items():
        dtype, shape, begin, end = _entry(name, info, where)
        numel = 1
        for s in shape:
            numel *= s
        itemsize = dtype.itemsize
        if numel * itemsize != end - begin:
            raise LoadError(f"{where}: tensor {name!r} declares shape {shape} of {dtype} "
                            f"({numel * itemsize} bytes) but spans {end - begin} bytes")
        if end > data_size:
            raise LoadError(f"{where}: tensor {name!r} ends at byte {end}, past the data "
                            f"({data_size} bytes): truncated file?")
        spans.append((begin, end, name))
        out[name] = (dtype, tuple(shape))
    pos = 0
    for begin, end, name in sorted(spans):
        if begin != pos:
            raise LoadError(f"{where}: tensor {name!r} starts at byte {begin}, expected {pos} "
                            "(tensors must tile the data without gaps or overlaps)")
        pos = end
    if pos != data_size:
        raise LoadError(f"{where}: {data_size - pos} trailing bytes after the last tensor")
    return metadata, out


def _entry(name: str, info: object, where: str) -> tuple:
    if len(name) > 1000:
        raise LoadError(f"{where}: tensor name of {len(name)} characters")
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise LoadError(f"{where}: tensor {name[:80]!r}: expected dtype, shape and data_offsets")
    dtype = DTYPE_OF.get(info["dtype"]) if isinstance(info["dtype"], str) else None
    if dtype is None:
        raise LoadError(f"{where}: tensor {name[:80]!r}: unknown dtype {str(info['dtype'])[:20]!r}")
    shape, offs = info["shape"], info["data_offsets"]
    if (not isinstance(shape, list) or len(shape) > 64
            or not all(type(s) is int and 0 <= s < 1 << 62 for s in shape)):
        raise LoadError(f"{where}: tensor {name[:80]!r}: bad shape {str(shape)[:80]}")
    if (not isinstance(offs, list) or len(offs) != 2
            or not all(type(o) is int and 0 <= o < 1 << 62 for o in offs) or offs[0] > offs[1]):
        raise LoadError(f"{where}: tensor {name[:80]!r}: bad data_offsets {str(offs)[:80]}")
    return dtype, shape, offs[0], offs[1]


def no_duplicate_keys(pairs: list) -> dict:
    """json object_pairs_hook: a key given twice is an error, not a silent overwrite."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k[:80]!r}")
        out[k] = v
    return out
