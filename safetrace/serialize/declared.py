"""The file's tensors against what the program declares of them, from the header alone:
checked after the header is parsed and before any tensor's data is read or mapped.

A file whose header declares large tensors that the program's state does not match (a
dtype, a shape, a name the program never declares) is refused here, at no cost: otherwise
the loader read (or mapped) every byte the header declares, up to ``max_file_bytes``, only
to refuse the state afterwards (a 1 GiB file of holes cost 1 GiB of memory and a full
read).  The checks are the builder's (``state.StateReader``, ``rebuild._same_meta``) on the
fields that are well formed; a malformed field is left to the builder, which refuses it.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.errors.load import bad_source
from safetrace.serialize.codec import DTYPES, fail


def program_tensors(doc: Any, header: dict) -> None:
    """Refuse a program file whose stored tensors (``header``: {name: (dtype, shape)})
    differ from the program's state entries and placeholders, or that stores a tensor the
    program never names."""
    if not isinstance(doc, dict):
        return
    aliases = _aliases(doc.get("aliases"))
    declared: set = set()
    known = True
    for i, s in enumerate(doc.get("state") if isinstance(doc.get("state"), list) else ()):
        name = s.get("name") if isinstance(s, dict) else None
        if not isinstance(name, str):
            known = False
            continue
        real = aliases.get(f"state:{name}", f"state:{name}")
        declared.add(real)
        meta = _meta(s.get("dtype"), s.get("shape"))
        if meta is not None and real in header:
            _compare(real, header[real], meta, f"state[{i}]")
    constants = doc.get("constants")
    for name in constants if isinstance(constants, list) else ():
        if isinstance(name, str):
            declared.add(aliases.get(f"constant:{name}", f"constant:{name}"))
        else:
            known = False
    specs = {s.get("name"): s for s in doc.get("inputs") if isinstance(s, dict)
             and isinstance(s.get("name"), str)} if isinstance(doc.get("inputs"), list) else {}
    for i, node in enumerate(doc.get("nodes") if isinstance(doc.get("nodes"), list) else ()):
        if not isinstance(node, dict) or node.get("op") != "placeholder":
            continue
        spec = specs.get(node.get("name")) if isinstance(node.get("name"), str) else None
        meta = node.get("meta")
        if not isinstance(spec, dict) or not isinstance(spec.get("target"), str) or \
                not isinstance(meta, dict):
            continue
        prefix = {"parameter": "state", "buffer": "state", "constant": "constant"}.get(
            spec.get("kind"))
        val = meta.get("val")
        t = val.get("tensor") if isinstance(val, dict) else None
        if prefix is None or not isinstance(t, dict):
            continue
        key = f"{prefix}:{spec['target']}"
        real = aliases.get(key, key)
        wanted = _meta(t.get("dtype"), t.get("shape"))
        if wanted is not None and real in header:
            _compare(real, header[real], wanted, f"nodes[{i}] ({str(node.get('name'))[:40]})")
    if known and isinstance(doc.get("state"), list) and isinstance(constants, list):
        extra_names = sorted(set(header) - declared)
        if extra_names:
            raise fail("file", f"tensors not declared by the program: {extra_names[:5]}")


def weights_tensors(doc: Any, header: dict) -> None:
    """Refuse a ``weights=`` file whose tensors differ in dtype or shape from the program's
    state entries of the same names (the builder says what else is missing or extra)."""
    state = doc.get("state") if isinstance(doc, dict) else None
    problems = []
    for s in state if isinstance(state, list) else ():
        name = s.get("name") if isinstance(s, dict) else None
        meta = _meta(s.get("dtype"), s.get("shape")) if isinstance(name, str) else None
        if meta is None or name not in header:
            continue
        (dtype, shape), (got_dtype, got_shape) = meta, header[name]
        if got_dtype is not dtype or tuple(got_shape) != shape:
            problems.append(f"{name}: expected {_dt(dtype)} {list(shape)}, got "
                            f"{_dt(got_dtype)} {list(got_shape)}")
    if problems:
        raise bad_source("weights= does not match the program:\n  " + "\n  ".join(problems[:20]),
                         "give the parameters and persistent buffers the program was saved "
                         "with (names, shapes and dtypes as listed)")


def _aliases(value: Any) -> dict:
    out = {}
    for pair in value if isinstance(value, list) else ():
        if isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair):
            out.setdefault(pair[0], pair[1])
    return out


def _meta(dtype: Any, shape: Any) -> tuple | None:
    """(dtype, shape) of well-formed fields (static sizes), else None."""
    dt = DTYPES.get(dtype) if isinstance(dtype, str) else None
    if dt is None or not isinstance(shape, list) or len(shape) > 64 or not all(
            type(x) is int and 0 <= x < 1 << 62 for x in shape):
        return None
    return dt, tuple(shape)


def _compare(name: str, stored: tuple, wanted: tuple, where: str) -> None:
    (dtype, shape), (want_dtype, want_shape) = stored, wanted
    shape = tuple(shape)
    if dtype is want_dtype and shape == want_shape:
        return
    if (want_dtype is torch.complex128 and dtype is torch.float64
            and shape == (*want_shape, 2)):  # (a file from before safetrace.dtypes)
        return
    raise fail(where, f"stored tensor {name[:80]!r} is {dtype} {list(shape)}, the program declares "
                      f"{want_dtype} {list(want_shape)} (refused before reading the data)")


def _dt(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


__all__ = ["program_tensors", "weights_tensors"]
