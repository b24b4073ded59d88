"""Surgery on saved programs, shared by tests/serialize and benchmarks/hostile_*.py.

A saved program is a safetensors file: 8 bytes of header length, a JSON header (each
tensor's dtype, shape and data offsets, and ``__metadata__`` with the program document
under ``KEY``), then the tensors' bytes.  A hostile case saves a real program, takes the
file apart (``parts``: the document and the tensors; ``split``: the raw header and the
bytes), edits it, puts it together again (``pack``, ``join``) and loads it.
"""

from __future__ import annotations

import copy
import io
import json
import struct
from typing import Any, Callable

KEY = "safetrace.program"


# --- a program's file ---------------------------------------------------------------------
def saved(program: Any, args: tuple | None = None, dynamic_shapes: Any = None,
          **kwargs: Any) -> bytes:
    """The bytes ``st.save`` writes for ``program``: an ExportedProgram, or a module
    exported here at ``args`` (with ``dynamic_shapes`` and other export ``kwargs``)."""
    import safetrace as st

    if not isinstance(program, st.ExportedProgram):
        program = st.export(program, args, dynamic_shapes=dynamic_shapes, **kwargs)
    buf = io.BytesIO()
    st.save(program, buf)
    return buf.getvalue()


def parts(blob: bytes) -> tuple[dict, dict]:
    """A file's program document and its tensors (by their stored names)."""
    import safetensors.torch

    head, _ = split(blob)
    return json.loads(head["__metadata__"][KEY]), safetensors.torch.load(blob)


def pack(doc: Any, tensors: dict, raw_program: str | None = None) -> bytes:
    """A file of ``tensors`` holding the program ``doc`` (or the text ``raw_program``)."""
    import safetensors.torch

    program = raw_program if raw_program is not None else json.dumps(doc)
    return safetensors.torch.save(tensors, metadata={KEY: program})


def edited(blob: bytes, edit: Callable[[dict], Any], tensors: dict | None = None) -> bytes:
    """``blob`` with its program document changed by ``edit`` (in place), and its tensors
    replaced by ``tensors`` where given."""
    doc, stored = parts(blob)
    edit(doc)
    return pack(doc, stored if tensors is None else tensors)


def load(doc: Any, tensors: dict | None = None, **kwargs: Any) -> Any:
    """``st.load`` of a file's bytes, or of the file ``pack(doc, tensors)``."""
    import safetrace as st

    blob = doc if tensors is None else pack(doc, tensors)
    return st.load(io.BytesIO(blob), **kwargs)


# --- the safetensors layer ------------------------------------------------------------------
def split(blob: bytes) -> tuple[dict, bytes]:
    """A file's raw header (``__metadata__`` with the program's text) and its data bytes."""
    (n,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8:8 + n]), blob[8 + n:]


def header_of(blob: bytes) -> tuple[dict, dict, bytes]:
    """A file's raw header, its program document (decoded) and its data bytes."""
    head, data = split(blob)
    return head, json.loads(head["__metadata__"][KEY]), data


def join(head: dict | str | bytes, data: bytes = b"", length: int | None = None,
         pad: bytes = b" ", doc: Any = None) -> bytes:
    """A file of the header ``head`` (a dict, or its text as is) padded with ``pad`` to a
    multiple of 8, then ``data``; ``length``: the header length it claims instead of the
    true one; ``doc``: a program document written into the header's metadata first."""
    if doc is not None:
        head["__metadata__"][KEY] = doc if isinstance(doc, str) else json.dumps(doc)
    text = head if isinstance(head, bytes) else (
        head if isinstance(head, str) else json.dumps(head)).encode("utf-8", "surrogatepass")
    text += pad * (-len(text) % 8)
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def tensor_names(head: dict) -> list[str]:
    """The stored tensors a raw header declares, sorted."""
    return sorted(k for k in head if k != "__metadata__")


# --- the program document -----------------------------------------------------------------------
def graphs(doc: dict) -> list[list]:
    """The node lists of the main graph and of every subgraph."""
    return [doc["nodes"], *(s["nodes"] for s in doc.get("subgraphs", ()))]


def node(doc: dict, name: str) -> dict:
    """The node called ``name``, in the main graph or a subgraph."""
    return next(n for nodes in graphs(doc) for n in nodes if n["name"] == name)


def subgraph(doc: dict, part: str) -> list:
    """The nodes of the first subgraph whose path holds ``part``."""
    return next(g for g in doc["subgraphs"] if part in g["path"])["nodes"]


def call(name: str, target: str, *args: Any, kwargs: list | None = None,
         val: Any = None) -> dict:
    """A call_function node (``target`` spelled in full: ``torch.ops.aten.relu.default``)."""
    out: dict = {"name": name, "op": "call_function", "target": target, "args": list(args)}
    if kwargs:
        out["kwargs"] = kwargs
    if val is not None:
        out["meta"] = {"val": val}
    return out


def tensor_val(shape: list, dtype: str = "float32", device: str = "cpu") -> dict:
    """A node's recorded tensor value."""
    return {"tensor": {"shape": shape, "dtype": dtype, "device": device}}


def calls_replaced(blob: bytes, *nodes: dict) -> bytes:
    """``blob``'s program with every call replaced by ``nodes``, the last one its output."""
    doc, tensors = parts(blob)
    kept = [n for n in doc["nodes"] if n["op"] != "call_function"]
    out = kept.pop()
    out["args"] = [{"tuple": [{"node": nodes[-1]["name"]}]}]
    doc["nodes"] = kept + list(nodes) + [out]
    return pack(doc, tensors)


def before_output(doc: dict, *nodes: dict) -> dict:
    """``doc`` with ``nodes`` inserted just before its main graph's output."""
    doc["nodes"][len(doc["nodes"]) - 1:len(doc["nodes"]) - 1] = list(nodes)
    return doc


def deep(doc: dict) -> dict:
    return copy.deepcopy(doc)
