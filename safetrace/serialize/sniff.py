"""What a file that is not a safetrace program is, told from its first and last bytes.

A safetensors file (so every safetrace file of format 2) starts with an 8-byte header
length and then ``{``.  Anything else is named as well as a few magic numbers allow (a
``torch.save`` checkpoint, a ``torch.export`` ``.pt2``, a format-1 safetrace archive, a
pickle, ONNX, text ...), so that ``st.load`` on the wrong file says which file it got
instead of quoting a header length made of its first eight characters.  Only a bounded
prefix and suffix are read.
"""

from __future__ import annotations

import struct

HEAD_BYTES = 4096     # read from the start of a file to tell what it is
TAIL_BYTES = 1 << 16  # read from its end (a zip's central directory lists its names there)
_ZIP = b"PK\x03\x04"
_MAGICS = [
    (b"\x80\x02", "a Python pickle (an old torch.save checkpoint?)"),
    (b"\x80\x03", "a Python pickle"), (b"\x80\x04", "a Python pickle"),
    (b"\x80\x05", "a Python pickle"), (b"\x93NUMPY", "a NumPy .npy array"),
    (b"\x89HDF", "an HDF5 file (Keras?)"), (b"GGUF", "a GGUF model (llama.cpp)"),
    (b"\x7fELF", "an executable (ELF)"), (b"\x1f\x8b", "a gzip archive"),
    (b"PTMF", "a TorchScript mobile model"), (b"FlatB", "a FlatBuffer"),
]


def is_zip(first: bytes) -> bool:
    return first[:4] == _ZIP


def looks_like_safetensors(first: bytes) -> bool:
    """An 8-byte length then a JSON object (what every safetensors file starts with)."""
    return len(first) >= 9 and first[8:9] == b"{"


def describe(first: bytes, tail: bytes | None = None) -> tuple[str, str]:
    """What the file that starts with ``first`` (and ends with ``tail``) is, and the fix
    where one is known ("" where not)."""
    if is_zip(first):
        return _zip(_zip_names(first, tail or b""))
    shown = repr(first[:24])
    for magic, what in _MAGICS:
        if first.startswith(magic):
            return f"{what}, not a safetrace program (it starts with {shown})", ""
    if _onnx(first):
        return f"an ONNX model, not a safetrace program (it starts with {shown})", ""
    if first and _text(first):
        return f"a text file, not a safetrace program (it starts with {shown})", ""
    if len(first) < 9:
        return (f"not a safetrace program: the file holds only {len(first)} bytes ({shown})",
                "")
    return f"not a safetrace program (it starts with {shown})", ""


def _zip(names: list[str]) -> tuple[str, str]:
    fix = ("st.load reads files written by st.save (a safetensors file whose metadata holds "
           "the program)")
    if any(n.endswith(("archive_format", "archive_version")) or "/models/" in n
           or n.startswith("models/") or "data/weights/" in n for n in names):
        return ("a torch.export program archive (.pt2, written by torch.export.save), not a "
                "safetrace program", fix + "; load it with torch.export.load, or export the "
                "model with st.export and st.save it")
    if any(n.endswith("data.pkl") for n in names):
        return ("a torch.save checkpoint (pickled objects in a zip), not a safetrace program "
                "(st.load never unpickles)", fix + "; for the weights of a program saved with "
                "weights=False: safetensors.torch.save_file(torch.load(path, weights_only=True)"
                ", 'weights.safetensors'), then st.load(program, weights='weights."
                "safetensors')")
    if "program.json" in names:
        return ("a format 1 file (a zip archive, written by safetrace before format 2); "
                "this safetrace reads format 2 only, which checks every operator and "
                "weight.", "re-save it: with the safetrace that wrote it, ep = st.load("
                "path); then with this one, st.save(ep, path) (or export the model again and "
                "st.save it)")
    listed = ", ".join(repr(n[:60]) for n in names[:3])
    return f"a zip archive ({listed or 'no names read'}), not a safetrace program", fix


def _zip_names(first: bytes, tail: bytes) -> list[str]:
    """Names of the zip's first local entry and of the central directory entries in the
    tail: bounded by the bytes given."""
    names = []
    if len(first) >= 30:
        (n,) = struct.unpack("<H", first[26:28])
        names.append(first[30:30 + n].decode("utf-8", "replace"))
    pos = tail.find(b"PK\x01\x02")
    while pos >= 0 and pos + 46 <= len(tail) and len(names) < 256:
        (n,) = struct.unpack("<H", tail[pos + 28:pos + 30])
        names.append(tail[pos + 46:pos + 46 + n].decode("utf-8", "replace"))
        pos = tail.find(b"PK\x01\x02", pos + 46)
    return names


def _onnx(first: bytes) -> bool:
    # a ModelProto: field 1 (ir_version, varint) then usually 2..8 (producer, graph, ...)
    return len(first) >= 4 and first[0] == 0x08 and first[1] < 0x20 and first[2] in (
        0x12, 0x1a, 0x22, 0x2a, 0x32, 0x3a, 0x42)


def _text(first: bytes) -> bool:
    try:
        text = first.decode("utf-8")
    except UnicodeDecodeError:
        text = first[:-3].decode("utf-8", "ignore")  # (a character cut at the end)
    return all(c.isprintable() or c in "\n\r\t" for c in text)
