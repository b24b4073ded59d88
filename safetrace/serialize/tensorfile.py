"""The container of format 2: one safetensors file (written by ``writer.py``), read here.

Layout (the safetensors format): an 8-byte little-endian header length N, N bytes of JSON
``{name: {"dtype", "shape", "data_offsets"}, "__metadata__": {str: str}}``, then the data.
The program's JSON document is the metadata entry ``safetrace.program``; tensors are named
``state:<name>`` and ``constant:<name>``.  Any safetensors reader opens the weights.  A
dtype the layout has no code for travels as a view (``AS_STORED``: complex128 as float64
pairs, float4 and the bit/sub-byte dtypes as bytes) and the metadata entry
``safetrace.dtypes`` (``{tensor name: dtype}``) names its true dtype.

Reading validates the header first (sizes, budgets, names, dtypes, tiling, alignment;
a file that is not a safetensors file is named by ``sniff.py``).  From a path, where the
kernel grants a read lease (taken before the first byte is read), the file is then mapped
copy-on-write and ``lease.py`` turns the mapping into a private copy before any writer of
the file goes on.  Otherwise it reads the data
straight into memory of the program's own (from a path: ``preadv`` of the whole data into
one fresh mapping the tensors view, ``destination.py``; from a file object: ``readinto``
each tensor; from a buffer given to ``st.load``: one copy): nothing done to the file or
the buffer afterwards reaches the program.  ``st.load(path, mmap=True)`` maps the file
instead (``MAP_PRIVATE``: untouched weights cost no memory; the file must then stay
unchanged, see docs/saving.md).  A tensor off torch's 64-byte alignment, and every bool
tensor of a mapped file, is copied.  Paths are opened once, refused unless they are regular files.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import stat
import struct
from typing import Any

import torch

from safetrace.errors.load import bad_file, over_budget, truncated
from safetrace.serialize import destination, lease, sniff
from safetrace.serialize.budgets import Budgets, json_shape, text_cost

CODES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL", torch.complex64: "C64",
}
for _name, _code in (("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64"),
                     ("float8_e4m3fn", "F8_E4M3"), ("float8_e5m2", "F8_E5M2"),
                     ("float8_e4m3fnuz", "F8_E4M3FNUZ"), ("float8_e5m2fnuz", "F8_E5M2FNUZ"),
                     ("float8_e8m0fnu", "F8_E8M0")):
    if hasattr(torch, _name):
        CODES[getattr(torch, _name)] = _code
DTYPE_OF = {code: dt for dt, code in CODES.items()}
# dtypes without a safetensors code, stored as a view: complex as (real, imag) pairs of
# its float dtype (a last dim of 2), the others as same-sized unsigned ints (same shape).
# (float4_e2m1fn_x2 holds two values per byte; the layout's F4 counts values: bytes.)
AS_STORED: dict[torch.dtype, tuple[torch.dtype, bool]] = {
    torch.complex128: (torch.float64, True), torch.complex32: (torch.float16, True)}
for _name in ("float4_e2m1fn_x2", "bits8", "bits1x8", "bits2x4", "bits4x2", "bits16",
              *(f"int{i}" for i in range(1, 8)), *(f"uint{i}" for i in range(1, 8))):
    _dt = getattr(torch, _name, None)
    if isinstance(_dt, torch.dtype) and _dt not in CODES:
        AS_STORED[_dt] = (torch.uint8 if _dt.itemsize == 1 else torch.uint16, False)
STORED_DTYPES = {str(dt).removeprefix("torch."): dt for dt in AS_STORED}
DTYPES_KEY = "safetrace.dtypes"
_VALUES_PER_TENSOR = 80
ALIGN = 64  # torch's CPU allocator aligns every tensor to 64 bytes
_DATA_ALIGN = 8  # safetensors pads its header so that the data starts at a multiple of 8


def stored_form(dtype: torch.dtype, shape: tuple) -> tuple[str, tuple]:
    """The safetensors code and shape a tensor of ``dtype`` and ``shape`` is stored as."""
    if dtype in AS_STORED:
        base, pairs = AS_STORED[dtype]
        return CODES[base], (*shape, 2) if pairs else shape
    return CODES[dtype], shape


class Container:
    """A parsed file: its metadata strings, and its tensors.

    ``buffer``: the memory tensors view, at ``start`` + their offset in the data: memory
    of the program's own the data was read into (the default, ``destination.py``), or a
    mapping of the file (``st.load(..., mmap=True)``, ``mapped`` then names the file); or
    ``tensors``: each tensor's bytes read into a tensor of its own (bytes, file objects).
    """

    def __init__(self, metadata: dict, header: dict, spans: dict | None = None,
                 buffer: Any = None, start: int = 0, tensors: dict | None = None,
                 mapped: tuple | None = None, leased: Any = None) -> None:
        self.metadata = metadata
        self.header = header  # tensor name -> (dtype, shape), the true dtype and shape
        self._spans = spans or {}  # tensor name -> (begin, end) in the data
        self._buffer = buffer  # memory of the program's own, or a mapping of the file
        self._start = start  # where the data starts in the buffer
        self._tensors = tensors or {}  # tensor name -> its bytes (uint8), privately read
        self.mapped = mapped  # (st_dev, st_ino) of the file mapped, if any (mmap=True)
        self.leased = leased  # the read lease (lease.py) its mapping of the file is under

    def tensor(self, name: str) -> torch.Tensor:
        dtype, shape = self.header[name]
        begin, end = self._spans[name]
        if begin == end:
            return torch.empty(shape, dtype=dtype)
        raw = self._tensors.get(name)
        if raw is None:
            raw = torch.frombuffer(self._buffer, dtype=torch.uint8, count=end - begin,
                                   offset=self._start + begin)
            if raw.data_ptr() % ALIGN or (dtype is torch.bool and self.mapped):
                # kernels assume aligned elements (misaligned complex128 crashes them), and
                # some compute other bits for operands off torch's 64-byte alignment (oneDNN
                # convolutions): a tensor off that alignment is copied into aligned memory;
                # so is a bool tensor of a mapped file, whose bytes are checked on the copy
                # the program uses (the file's may change)
                raw = raw.clone()
        if dtype is torch.bool and bool((raw > 1).any()):
            raise bad_file(None, f"tensor {name!r} holds bool bytes other than 0 and 1")
        return raw.view(dtype).view(shape)


# --- reading -------------------------------------------------------------------------------
def open_regular(path: Any, what: str = "file") -> int:
    """An fd of ``path``, refused (before opening) unless it is a regular file."""
    try:
        path = os.fspath(path)
        st = os.stat(path)
    except (OSError, TypeError, ValueError) as err:
        raise bad_file(None, f"cannot open {what} {str(path)[:200]!r}: {err}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise bad_file(None, f"{what} {str(path)[:200]!r} is {kind} (FIFOs, devices and "
                             "directories are refused)")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise bad_file(None, f"cannot open {what} {str(path)[:200]!r}: {err}") from None
    st2 = os.fstat(fd)
    if not stat.S_ISREG(st2.st_mode) or (st2.st_dev, st2.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        raise bad_file(None, f"{what} {str(path)[:200]!r} changed while being opened")
    return fd


def read_fd(fd: int, budgets: Budgets, where: str, mapped: bool = False,
            check: Any = None) -> Container:
    """Parse the container behind ``fd`` and read its tensors into memory of their own
    (``mapped``: map the file copy-on-write instead); the fd may be closed after.

    By default the file is mapped too where the kernel grants a read lease on it, taken
    before anything is read (``lease.py``: a writer of the file then waits until the
    mapping is copied into private memory); elsewhere the data is read into private
    memory.  ``check(metadata, header)``, if given, runs once the header is parsed and
    before any tensor's data is read or mapped (it raises to refuse the file)."""
    own = None if mapped else lease.take(fd)
    try:
        return _read_fd(fd, budgets, where, mapped, own, check)
    except BaseException:
        if own is not None:
            lease.release(own)
        raise


def _read_fd(fd: int, budgets: Budgets, where: str, mapped: bool, own: Any,
             check: Any = None) -> Container:
    st = os.fstat(fd)
    size = st.st_size
    first = os.pread(fd, sniff.HEAD_BYTES, 0)
    _start(first, lambda: os.pread(fd, sniff.TAIL_BYTES, max(0, size - sniff.TAIL_BYTES)),
           where)
    n = _header_length(first[:8], size, budgets, where)
    raw = os.pread(fd, n, 8)
    if len(raw) != n:
        raise truncated(where, "truncated header (the file changed while being read?)")
    metadata, header, spans = parse_header(raw, size - 8 - n, budgets, where)
    if check is not None:
        check(metadata, header)
    if size == 8 + n:
        if own is not None:
            lease.release(own)
        return Container(metadata, header, spans)
    if not mapped and own is None:
        if hasattr(os, "posix_fadvise"):
            # start the disk on the whole data now: the reads below then find it arriving
            # while they fault in fresh memory
            os.posix_fadvise(fd, 8 + n, size - 8 - n, os.POSIX_FADV_WILLNEED)
        data = size - 8 - n
        dest = destination.Destination(data)
        destination.read_into(
            fd, 8 + n, dest, min(READ_THREADS, max(1, data // _THREAD_MIN)),
            lambda: truncated(where, "the file ended while its tensors were read (it was "
                                     "truncated or changed while being loaded)"))
        return Container(metadata, header, spans, dest.mapping, dest.offset)
    try:
        mapping = mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE,
                            prot=mmap.PROT_READ | mmap.PROT_WRITE)
    except (OSError, ValueError) as err:
        if own is not None:  # (out of address space or descriptors): read it instead
            lease.release(own)
            return _read_fd(fd, budgets, where, mapped, None, check)  # (checked again)
        raise bad_file(where, f"cannot map the file: {err}") from None
    if os.fstat(fd).st_size != size:
        raise bad_file(where, "the file changed size while being read")
    if hasattr(mapping, "madvise") and hasattr(mmap, "MADV_WILLNEED"):
        # a program reads all its weights in its first call: start reading them now
        mapping.madvise(mmap.MADV_WILLNEED)
    if own is not None:
        lease.guard(own, mapping)
        return Container(metadata, header, spans, mapping, 8 + n, leased=own)
    return Container(metadata, header, spans, mapping, 8 + n, mapped=(st.st_dev, st.st_ino))


def read_bytes(buf: Any, budgets: Budgets, where: str, check: Any = None) -> Container:
    """Parse a container held in memory; its tensors are copies (``buf`` is never written
    through them, and may change or go after the load)."""
    view = memoryview(buf)
    if not view.c_contiguous:
        raise bad_file(where, "the buffer given to st.load is not contiguous")
    view = view.cast("B") if view.format != "B" or view.ndim != 1 else view
    _start(bytes(view[:sniff.HEAD_BYTES]),
           lambda: bytes(view[max(0, view.nbytes - sniff.TAIL_BYTES):]), where)
    n = _header_length(bytes(view[:8]), view.nbytes, budgets, where)
    metadata, header, spans = parse_header(bytes(view[8:8 + n]), view.nbytes - 8 - n,
                                           budgets, where)
    if check is not None:
        check(metadata, header)
    tensors = _allocate(spans)
    for name, t in tensors.items():
        begin, end = spans[name]
        _memory_of(t)[:] = view[8 + n + begin:8 + n + end]
    return Container(metadata, header, spans, tensors=tensors)


def read_stream(f: Any, budgets: Budgets, where: str, check: Any = None) -> Container:
    """Parse a container from a binary file object: the header first, then exactly the
    data it declares, each tensor read into its own memory; never more than the object
    holds (its real size, where it can tell) or the budget."""
    left = _stream_left(f)
    head = b""
    while len(head) < 8:
        piece = _read(f, 8 - len(head))
        if not piece:
            _start(head, lambda: b"", where)  # (a stream of under 8 bytes)
        head += piece
    brace = _read(f, 1)  # (the header's first byte: "{" in every safetensors file)
    if sniff.is_zip(head) or brace != b"{":
        more = _read(f, sniff.HEAD_BYTES - 9) if brace else b""
        _start(head + brace + more, lambda: b"", where)
    limit = budgets.max_file_bytes if left is None else min(left, budgets.max_file_bytes)
    n = _header_length(head, limit, budgets, where)
    raw = brace + _read_exactly(f, n - 1, where) if n else b""
    metadata, header, spans = parse_header(raw, None, budgets, where)
    size = max((e for _, e in spans.values()), default=0)
    if 8 + n + size > limit:
        what = (f"the file object holds {left} bytes" if left is not None and limit == left
                else f"over the budget (max_file_bytes={budgets.max_file_bytes})")
        raise bad_file(where, f"the header declares {8 + n + size} bytes; {what}")
    if check is not None:
        check(metadata, header)
    tensors = {}
    for name in sorted(spans, key=lambda k: spans[k][0]):
        begin, end = spans[name]
        if begin == end:
            continue
        if left is None and end - begin > _STREAM_PIECE:
            # a stream of unknown size: the bytes first (a short stream costs only what it
            # holds), then the tensor
            data = _read_exactly(f, end - begin, where, "tensor data")
            t = _stream_tensor(name, end - begin, left, where)
            _memory_of(t)[:] = data
            del data
        else:
            t = _stream_tensor(name, end - begin, left, where)
            _readinto(f, _memory_of(t), where)
        tensors[name] = t
    extra = _read(f, 1)
    if extra:
        raise bad_file(where, "trailing bytes after the last tensor")
    return Container(metadata, header, spans, tensors=tensors)


_STREAM_PIECE = 1 << 24


def _stream_tensor(name: str, n: int, left: int | None, where: str) -> torch.Tensor:
    """Memory for a tensor's ``n`` bytes of a file object: sized by the header, which the
    object's own claim of its size bounds (a claim a lying object makes 2**50): memory the
    process cannot have is a refusal of the file, not torch's RuntimeError."""
    try:
        return torch.empty(n, dtype=torch.uint8)
    except (RuntimeError, MemoryError):
        said = f" (the file object says it holds {left} bytes)" if left is not None else ""
        raise bad_file(where, f"no memory for tensor {name!r} of {n} bytes{said}",
                       "give st.load the file's path, or a file object that holds the "
                       "bytes its header declares") from None
READ_THREADS = min(4, os.cpu_count() or 1)  # threads reading a large file's data at once
_THREAD_MIN = 64 << 20  # bytes each of them reads at least


def _start(first: bytes, tail: Any, where: str) -> None:
    """Refuse a file that is not a safetensors file, saying what it is instead."""
    if sniff.is_zip(first) or not sniff.looks_like_safetensors(first):
        what, fix = sniff.describe(first, tail() if sniff.is_zip(first) else None)
        raise bad_file(None, f"{where}: {what}", fix)


def _seekable(f: Any) -> bool:
    try:
        return bool(f.seekable())
    except Exception:  # noqa: BLE001 - one that cannot say (or fails saying): read it in order
        return False


def _stream_left(f: Any) -> int | None:
    """How many bytes a file object holds from its position on (None: it cannot tell)."""
    if not _seekable(f):
        return None
    try:
        pos = f.tell()
        end = f.seek(0, os.SEEK_END)
        f.seek(pos)
    except Exception:  # noqa: BLE001 - one whose seek or tell fails: of unknown size
        return None
    return max(0, end - pos) if isinstance(end, int) and isinstance(pos, int) else None


def _allocate(spans: dict) -> dict[str, torch.Tensor]:
    """One uint8 tensor per nonempty span, in file order (torch aligns each to 64 bytes)."""
    return {name: torch.empty(spans[name][1] - spans[name][0], dtype=torch.uint8)
            for name in sorted(spans, key=lambda k: spans[k][0])
            if spans[name][1] > spans[name][0]}


def _memory_of(t: torch.Tensor) -> memoryview:
    """The bytes of a contiguous uint8 CPU tensor, writable, without numpy."""
    return memoryview((ctypes.c_char * t.numel()).from_address(t.data_ptr())).cast("B")


def _readinto(f: Any, view: memoryview, where: str) -> None:
    done = 0
    readinto = getattr(f, "readinto", None)
    while done < view.nbytes:
        got = None
        if readinto is not None:
            try:
                got = readinto(view[done:done + _STREAM_PIECE])
            except NotImplementedError:  # (a RawIOBase that implements read only)
                readinto = None
            except Exception as err:  # noqa: BLE001 - the file object's own failure
                raise _failed(f"readinto() of {min(view.nbytes - done, _STREAM_PIECE)} "
                              "bytes", err) from err
        if got is None and readinto is not None:
            raise bad_file(None, "the file object would block (a non-blocking stream): give "
                                 "st.load a blocking file")
        if readinto is not None and (type(got) is not int or not
                                     0 <= got <= min(view.nbytes - done, _STREAM_PIECE)):
            raise _lied(f"readinto() of {min(view.nbytes - done, _STREAM_PIECE)} bytes", got)
        if readinto is None:
            piece = _read(f, min(view.nbytes - done, _STREAM_PIECE))
            got = len(piece)
            view[done:done + got] = piece
        if not got:
            raise truncated(where, "truncated: the file object ended inside the tensor data")
        done += got


def _read(f: Any, n: int) -> bytes:
    """``f.read(n)``: bytes, at most ``n`` of them (a file object that returns more would
    shift what the loader reads where, or run its count of what is left below zero)."""
    try:
        piece = f.read(n)
    except Exception as err:  # noqa: BLE001 - the file object's own failure (closed, EIO)
        raise _failed(f"read({n})", err) from err
    _binary(piece)
    size = memoryview(piece).nbytes  # (a memoryview of wider items: its bytes)
    if size > n:
        raise _lied(f"read({n})", f"{size} bytes")
    return piece if isinstance(piece, bytes) else bytes(memoryview(piece).cast("B"))


def _lied(call: str, got: Any) -> Exception:
    return bad_file(None, f"the file object's {call} returned {str(got)[:40]}: a binary file "
                          "object gives at most the bytes asked for",
                    "give st.load the file's path, its bytes, or a file object of the io "
                    "module (open(path, 'rb'), io.BytesIO)")


def _failed(call: str, err: Exception) -> Exception:
    """A LoadError for an exception the file object's own method raised (its cause)."""
    return bad_file(None, f"the file object's {call} raised {type(err).__name__}: "
                          f"{str(err)[:200]}",
                    "give st.load an open, readable binary file object, the file's path or "
                    "its bytes (the original exception is this error's __cause__)")


def _binary(piece: Any) -> None:
    if not isinstance(piece, (bytes, bytearray, memoryview)):
        raise bad_file(None, "the file object must be opened in binary mode")


def _read_exactly(f: Any, n: int, where: str, what: str = "header") -> bytes:
    chunks, left = [], n
    while left:
        piece = _read(f, min(left, 1 << 24))
        if not piece:
            if n == 8 and left == n:
                raise truncated(where, "truncated (no header length)")
            raise truncated(where, f"truncated {what} ({n - left} of {n} bytes)")
        _binary(piece)
        chunks.append(bytes(piece))
        left -= len(piece)
    return b"".join(chunks)


def _header_length(head: bytes, size: int, budgets: Budgets, where: str) -> int:
    if len(head) < 8:
        raise truncated(where, "truncated (no header length)")
    (n,) = struct.unpack("<Q", head)
    if n > budgets.max_header_bytes:
        raise over_budget(where, f"header of {n} bytes, {budgets.max_header_bytes} allowed",
                          "max_header_bytes", n)
    if 8 + n > size:
        raise bad_file(where, f"header length {n} exceeds the file ({size} bytes): "
                              "truncated or not a safetrace file")
    return n


def parse_header(raw: bytes, data_size: int | None, budgets: Budgets,
                 where: str) -> tuple[dict, dict, dict]:
    """Metadata strings, {name: (dtype, shape)} and {name: (begin, end)}; every
    inconsistency is a LoadError.  ``data_size`` None: a stream, whose size is what the
    header declares (the caller checks that it holds that many bytes)."""
    # The header is flat but holds the program as one long string: bound its entries by
    # their keys (a raw `"data_offsets"` cannot occur inside a JSON string) before parsing.
    entries = raw.count(b'"data_offsets"')
    if entries > budgets.max_tensors:
        raise over_budget(where, f"{entries} tensors, {budgets.max_tensors} allowed",
                          "max_tensors", entries)
    values = json_shape(raw, budgets, f"{where} header", max_depth=3, count_values=False)
    if values > _VALUES_PER_TENSOR * (entries + 1):
        # (a tensor entry holds at most 70 values: its dtype, up to 64 sizes, two offsets)
        raise bad_file(where, f"the header holds about {values} JSON values for {entries} "
                              f"tensors (at most {_VALUES_PER_TENSOR} each)")
    cost = text_cost(raw)
    if cost > budgets.max_text_bytes:
        raise over_budget(where, f"the header's text would take about {cost} bytes of memory "
                          f"({budgets.max_text_bytes} allowed; one astral character makes its "
                          "string take 4 bytes a character)", "max_text_bytes", cost)
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=no_duplicate_keys,
                            parse_constant=_no_constant)
    except (ValueError, RecursionError, UnicodeDecodeError) as err:
        raise bad_file(where, f"header is not valid JSON: {str(err)[:200]}") from None
    if not isinstance(header, dict):
        raise bad_file(where, "header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise bad_file(where, "__metadata__ must map strings to strings")
    for k in metadata:
        _text(k, f"{where}: __metadata__ key")
    if len(header) > budgets.max_tensors:
        raise over_budget(where, f"{len(header)} tensors, {budgets.max_tensors} allowed",
                          "max_tensors", len(header))
    if header and (len(raw) + 8) % _DATA_ALIGN:
        raise bad_file(where, f"the data starts at byte {len(raw) + 8}, not a multiple of "
                              f"{_DATA_ALIGN} (safetensors pads its header with spaces): its "
                              "tensors would be misaligned")
    true_dtypes = _true_dtypes(metadata.get(DTYPES_KEY), header, budgets, where)
    spans, out = {}, {}
    for name, info in header.items():
        _text(name, f"{where}: tensor name")
        dtype, shape, begin, end = _entry(name, info, where)
        numel = 1
        for s in shape:
            numel *= s
        if numel * dtype.itemsize != end - begin:
            raise bad_file(where, f"tensor {name!r} declares shape {shape} of {dtype} "
                                  f"({numel * dtype.itemsize} bytes) but spans {end - begin} bytes")
        if data_size is not None and end > data_size:
            raise bad_file(where, f"tensor {name!r} ends at byte {end}, past the data "
                                  f"({data_size} bytes): truncated file?")
        if _huge(shape):
            raise bad_file(where, f"tensor {name!r} has shape {str(shape)[:80]}, whose "
                                  "nonzero sizes multiply past 2**62")
        if begin % dtype.itemsize:
            raise bad_file(where, f"tensor {name!r} starts at data byte {begin}, not a "
                                  f"multiple of its element size ({dtype.itemsize}): misaligned")
        true = true_dtypes.get(name)
        if true is not None:
            dtype, shape = _as_true(name, true, dtype, shape, begin, where)
        spans[name] = (begin, end)
        out[name] = (dtype, tuple(shape))
    pos = 0
    for begin, end, name in sorted((b, e, k) for k, (b, e) in spans.items()):
        if begin != pos:
            raise bad_file(where, f"tensor {name!r} starts at byte {begin}, expected {pos} "
                                  "(tensors must tile the data without gaps or overlaps)")
        pos = end
    if data_size is not None and pos != data_size:
        raise bad_file(where, f"{data_size - pos} trailing bytes after the last tensor")
    return metadata, out, spans


def _true_dtypes(text: Any, header: dict, budgets: Budgets, where: str) -> dict:
    """The ``safetrace.dtypes`` entry: {stored tensor name: dtype it is a view of}."""
    if text is None:
        return {}
    # bounded before parsing: one flat object of at most one entry per tensor
    raw = text.encode("utf-8", "replace")
    values = json_shape(raw, budgets, f"{where}: {DTYPES_KEY}", max_depth=1,
                        count_values=False, max_string=1024)
    if values > 2 * len(header) + 1:
        raise bad_file(where, f"{DTYPES_KEY} holds about {values} JSON values for "
                              f"{len(header)} tensors")
    try:
        value = json.loads(text, object_pairs_hook=no_duplicate_keys,
                           parse_constant=_no_constant)
    except (ValueError, RecursionError) as err:
        raise bad_file(where, f"{DTYPES_KEY} is not valid JSON: {str(err)[:100]}") from None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise bad_file(where, f"{DTYPES_KEY} must map tensor names to dtype names")
    out = {}
    for name, dt in value.items():
        if name not in header:
            raise bad_file(where, f"{DTYPES_KEY} names {name[:80]!r}, which is not a tensor "
                                  "of the file")
        if dt not in STORED_DTYPES:
            raise bad_file(where, f"{DTYPES_KEY}: {name[:80]!r} has dtype {dt[:40]!r}, not "
                                  f"one stored as a view ({', '.join(sorted(STORED_DTYPES))})")
        out[name] = STORED_DTYPES[dt]
    return out


def _as_true(name: str, true: torch.dtype, dtype: torch.dtype, shape: list, begin: int,
             where: str) -> tuple:
    base, pairs = AS_STORED[true]
    if dtype is not base or (pairs and shape[-1:] != [2]):
        form = f"{CODES[base]} with a last dim of 2" if pairs else CODES[base]
        raise bad_file(where, f"tensor {name!r} is declared {true} ({DTYPES_KEY}), which is "
                              f"stored as {form}, but it is {CODES[dtype]} {shape}")
    if begin % true.itemsize:
        raise bad_file(where, f"tensor {name!r} ({true}) starts at data byte {begin}, not "
                              f"a multiple of {true.itemsize}: misaligned")
    return true, shape[:-1] if pairs else shape


def _huge(shape: list) -> bool:
    numel = 1
    for s in shape:
        numel *= s or 1
    return numel >= 1 << 62


def _text(s: str, what: str) -> None:
    """A string from the file that Python can encode (no lone surrogates from escapes)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise bad_file(None, f"{what} {s[:40]!a} is not valid Unicode (a lone surrogate escape)") \
            from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON")


def _entry(name: str, info: object, where: str) -> tuple:
    if len(name) > 1000:
        raise bad_file(where, f"tensor name of {len(name)} characters")
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise bad_file(where, f"tensor {name[:80]!r}: expected dtype, shape and data_offsets")
    dtype = DTYPE_OF.get(info["dtype"]) if isinstance(info["dtype"], str) else None
    if dtype is None:
        raise bad_file(where, f"tensor {name[:80]!r}: unknown dtype {str(info['dtype'])[:20]!r}")
    shape, offs = info["shape"], info["data_offsets"]
    if (not isinstance(shape, list) or len(shape) > 64
            or not all(type(s) is int and 0 <= s < 1 << 62 for s in shape)):
        raise bad_file(where, f"tensor {name[:80]!r}: bad shape {str(shape)[:80]}")
    if (not isinstance(offs, list) or len(offs) != 2
            or not all(type(o) is int and 0 <= o < 1 << 62 for o in offs) or offs[0] > offs[1]):
        raise bad_file(where, f"tensor {name[:80]!r}: bad data_offsets {str(offs)[:80]}")
    return dtype, shape, offs[0], offs[1]


def no_duplicate_keys(pairs: list) -> dict:
    """json object_pairs_hook: a key given twice is an error, not a silent overwrite."""
    out = dict(pairs)
    if len(out) != len(pairs):  # (rare: the loop only then)
        seen: set = set()
        for k, _ in pairs:
            if k in seen:
                raise ValueError(f"duplicate key {k[:80]!r}")
            seen.add(k)
    return out
