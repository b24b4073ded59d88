"""Tensors in the safetensors layout, written and read without pickle.

Layout: an 8-byte little-endian header length N, N bytes of JSON
``{name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {}}``,
then the data, each tensor row-major little-endian at ``8 + N + begin``.  Reading checks
that every declared size matches its bytes and that the tensors tile the data exactly.
"""

from __future__ import annotations

import json
import struct
import sys

import torch

from safetrace.errors import LoadError

CODES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL", torch.complex64: "C64",
}
for _name, _code in (("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64"),
                     ("float8_e4m3fn", "F8_E4M3"), ("float8_e5m2", "F8_E5M2"),
                     ("complex128", "C128")):
    if hasattr(torch, _name):
        CODES[getattr(torch, _name)] = _code
DTYPE_OF = {code: dt for dt, code in CODES.items()}
MAX_HEADER = 64 << 20
MAX_TENSORS = 1_000_000


def dump(tensors: dict[str, torch.Tensor]) -> bytes:
    """The safetensors bytes of ``tensors`` (copied to CPU, contiguous)."""
    if sys.byteorder != "little":  # pragma: no cover
        raise NotImplementedError("saving on a big-endian machine is not supported")
    header: dict = {"__metadata__": {"format": "pt"}}
    chunks = []
    offset = 0
    for name, t in tensors.items():
        code = CODES.get(t.dtype)
        if code is None:
            raise ValueError(f"cannot save tensor {name!r} of dtype {t.dtype}")
        data = t.detach().to("cpu").contiguous().reshape(-1).clone()
        raw = bytes(data.untyped_storage()) if data.numel() else b""
        header[name] = {"dtype": code, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # align the data as the reference writer does
    return struct.pack("<Q", len(head)) + head + b"".join(chunks)


def load(buf: bytes, where: str = "tensors") -> dict[str, torch.Tensor]:
    """Tensors from safetensors bytes; any inconsistency is a LoadError."""
    if sys.byteorder != "little":  # pragma: no cover
        raise LoadError("loading on a big-endian machine is not supported")
    if len(buf) < 8:
        raise LoadError(f"{where}: truncated (no header length)")
    (n,) = struct.unpack("<Q", buf[:8])
    if n > MAX_HEADER or 8 + n > len(buf):
        raise LoadError(f"{where}: header length {n} exceeds the file ({len(buf)} bytes) "
                        f"or the limit ({MAX_HEADER})")
    try:
        header = json.loads(bytes(buf[8:8 + n]).decode("utf-8"),
                            object_pairs_hook=no_duplicate_keys)
    except (ValueError, RecursionError, UnicodeDecodeError) as err:
        raise LoadError(f"{where}: header is not valid JSON: {err}") from None
    if not isinstance(header, dict):
        raise LoadError(f"{where}: header is not a JSON object")
    header.pop("__metadata__", None)
    if len(header) > MAX_TENSORS:
        raise LoadError(f"{where}: too many tensors ({len(header)})")
    data = memoryview(buf)[8 + n:]
    spans = []
    out = {}
    for name, info in header.items():
        dtype, shape, begin, end = _entry(name, info, where)
        itemsize = torch.empty((), dtype=dtype).element_size()
        numel = 1
        for s in shape:
            numel *= s
        if numel * itemsize != end - begin:
            raise LoadError(f"{where}: tensor {name!r} declares shape {shape} of {dtype} "
                            f"({numel * itemsize} bytes) but spans {end - begin} bytes")
        if end > len(data):
            raise LoadError(f"{where}: tensor {name!r} ends at byte {end}, past the data "
                            f"({len(data)} bytes): truncated file?")
        spans.append((begin, end, name))
        raw = data[begin:end]
        if dtype is torch.bool and raw.tobytes().strip(b"\x00\x01"):
            raise LoadError(f"{where}: tensor {name!r} holds bool bytes other than 0 and 1")
        if numel == 0:
            out[name] = torch.empty(shape, dtype=dtype)
        else:
            out[name] = torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape)
    pos = 0
    for begin, end, name in sorted(spans):
        if begin != pos:
            raise LoadError(f"{where}: tensor {name!r} starts at byte {begin}, expected {pos} "
                            "(tensors must tile the data without gaps or overlaps)")
        pos = end
    if pos != len(data):
        raise LoadError(f"{where}: {len(data) - pos} trailing bytes after the last tensor")
    return out


def _entry(name: str, info: object, where: str) -> tuple:
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise LoadError(f"{where}: tensor {name!r}: expected dtype, shape and data_offsets")
    dtype = DTYPE_OF.get(info["dtype"]) if isinstance(info["dtype"], str) else None
    if dtype is None:
        raise LoadError(f"{where}: tensor {name!r}: unknown dtype {info['dtype']!r}")
    shape, offs = info["shape"], info["data_offsets"]
    if (not isinstance(shape, list) or len(shape) > 64
            or not all(type(s) is int and 0 <= s < 1 << 62 for s in shape)):
        raise LoadError(f"{where}: tensor {name!r}: bad shape {str(shape)[:80]}")
    if (not isinstance(offs, list) or len(offs) != 2
            or not all(type(o) is int and 0 <= o < 1 << 62 for o in offs) or offs[0] > offs[1]):
        raise LoadError(f"{where}: tensor {name!r}: bad data_offsets {str(offs)[:80]}")
    return dtype, shape, offs[0], offs[1]


def no_duplicate_keys(pairs: list) -> dict:
    """json object_pairs_hook: a key given twice is an error, not a silent overwrite."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out
