"""Hostile edits of a file's stored tensors and of how graphs reach them (session 33).

Used by ``benchmarks/hostile_probe.py`` (classes ``zerodims``, ``overflow``, ``parent``):

- ``zerodims``: a stored tensor made empty with huge other dims (``[0, 2**61]``, ``[2**40,
  0, 2**20]``), its bytes dropped from the data, declared so in the header alone, in the
  header and the state entry, or in the header, the state entry and its placeholder (where
  the program then runs on a tensor of no elements whose other sizes are huge: reductions
  over its empty dim, views, broadcasts);
- ``overflow``: a stored tensor whose dtype and shape make a byte count past 2**63 (or a
  shape whose elements fit int64 but whose bytes do not), its data offsets the count
  wrapped at 2**64, or left as they were, with the state entry and placeholder to match;
- ``parent``: a control-flow subgraph's operand replaced by the name of the main graph's
  state placeholder (a parameter, a buffer, a constant), or an input of the subgraph
  renamed after one, or a subgraph node's target made a ``get_attr`` of the state.
"""

from __future__ import annotations

import copy
import json
import random

from tests.serialize.surgery import header_of, join

KINDS = ("zerodims", "overflow", "parent")
_ITEM = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
         "U8": 1, "BOOL": 1, "C64": 8}


def variants(blob: bytes, rng: random.Random, count: int, kind: str) -> list[tuple[str, bytes]]:
    head, doc, data = header_of(blob)
    make = {"zerodims": _zerodims, "overflow": _overflow, "parent": _parent}[kind]
    out = []
    for _ in range(count):
        h, d = copy.deepcopy(head), copy.deepcopy(doc)
        got = make(h, d, data, rng)
        if got is not None:
            label, new_data = got
            out.append((f"{kind}:{label}", join(h, new_data, doc=d)))
    return out


def _stored(head: dict) -> list[str]:
    return sorted(k for k in head if k != "__metadata__")


def _declare(doc: dict, name: str, dtype: str | None, shape: list, depth: int) -> None:
    """The program's state entry (``depth`` >= 1) and placeholder (``depth`` >= 2) of the
    stored tensor ``name`` declared ``shape`` (and ``dtype``)."""
    kind, _, target = name.partition(":")
    if depth >= 1 and kind == "state":
        for s in doc.get("state", ()):
            if s.get("name") == target:
                s["shape"] = list(shape)
                if dtype is not None:
                    s["dtype"] = dtype
    if depth >= 2:
        specs = {s.get("name"): s for s in doc.get("inputs", ())}
        for n in doc.get("nodes", ()):
            s = specs.get(n.get("name"))
            if n.get("op") == "placeholder" and s and s.get("target") == target:
                t = n.get("meta", {}).get("val", {}).get("tensor")
                if isinstance(t, dict):
                    t["shape"] = list(shape)
                    if dtype is not None:
                        t["dtype"] = dtype


def _respan(head: dict, data: bytes, name: str, nbytes: int) -> bytes:
    """``name``'s span made ``nbytes`` long (zeros), the tensors after it moved along."""
    begin, end = head[name]["data_offsets"]
    by = nbytes - (end - begin)
    for k in _stored(head):
        b, e = head[k]["data_offsets"]
        if b >= end and k != name:
            head[k]["data_offsets"] = [b + by, e + by]
    head[name]["data_offsets"] = [begin, begin + nbytes]
    return data[:begin] + bytes(nbytes) + data[end:]


_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
           "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
           "BOOL": "bool", "C64": "complex64"}


def _zerodims(head: dict, doc: dict, data: bytes, rng: random.Random) -> tuple | None:
    names = _stored(head)
    if not names:
        return None
    name = rng.choice(names)
    rank = len(head[name]["shape"])
    shape = rng.choice([[0, 1 << 61], [1 << 40, 0, 1 << 20], [0] * max(rank, 1),
                        [0, *head[name]["shape"][1:]], [*head[name]["shape"][:-1], 0],
                        [1 << 61, 0], [0, 1 << 30, 1 << 30], [1 << 61, 0, 3]])
    if rank and rng.random() < 0.5:  # (the rank kept: later records still fit)
        shape = (shape + [0] * rank)[:rank]
        shape[rng.randrange(rank)] = 0
        if rank > 1:
            shape[rng.randrange(rank)] = rng.choice([1 << 40, 1 << 61, 7])
            if 0 not in shape:
                shape[0] = 0
    head[name]["shape"] = shape
    data = _respan(head, data, name, 0)
    depth = rng.choice([0, 1, 2, 2])
    _declare(doc, name, None, shape, depth)
    return f"{name}:{shape}:d{depth}", data


def _overflow(head: dict, doc: dict, data: bytes, rng: random.Random) -> tuple | None:
    names = _stored(head)
    if not names:
        return None
    name = rng.choice(names)
    code = rng.choice(["F64", "C64", "I64", head[name]["dtype"], "U8"])
    shape = rng.choice([[1 << 61, 8], [1 << 32, 1 << 32], [(1 << 61) - 1], [(1 << 62) - 1],
                        [3, 1 << 61], [1 << 21, 1 << 21, 1 << 21], [1 << 60, 16, 0]])
    numel = 1
    for s in shape:
        numel *= s
    nbytes = numel * _ITEM.get(code, 1)
    begin, end = head[name]["data_offsets"]
    how = rng.choice(["wrapped", "kept", "count"])
    head[name]["dtype"], head[name]["shape"] = code, shape
    if how == "wrapped":
        head[name]["data_offsets"] = [begin, (begin + nbytes) % (1 << 64)]
    elif how == "count":
        head[name]["data_offsets"] = [begin, begin + nbytes]
    _declare(doc, name, _DTYPES.get(code), shape, rng.choice([1, 2]))
    return f"{name}:{code}{shape}:{how}", data


def _parent(head: dict, doc: dict, data: bytes, rng: random.Random) -> tuple | None:
    subs = [g for g in doc.get("subgraphs", ()) if isinstance(g, dict) and g.get("nodes")]
    kinds = {s.get("name"): s.get("kind") for s in doc.get("inputs", ())}
    state = [n["name"] for n in doc.get("nodes", ()) if n.get("op") == "placeholder"
             and kinds.get(n.get("name")) in ("parameter", "buffer", "constant")]
    if not subs or not state:
        return None
    g = rng.choice(subs)
    victim = rng.choice(state)
    nodes = g["nodes"]
    how = rng.choice(["operand", "operand", "placeholder", "get_attr"])
    if how == "operand":
        calls = [n for n in nodes if n.get("op") == "call_function" and any(
            isinstance(a, dict) and "node" in a for a in n.get("args", ()))]
        if not calls:
            return None
        n = rng.choice(calls)
        i = rng.choice([i for i, a in enumerate(n["args"]) if isinstance(a, dict) and "node" in a])
        n["args"][i] = {"node": victim}
        return f"{g.get('path')}:{n['name']}.args[{i}]->{victim}", data
    if how == "placeholder":
        ph = [n for n in nodes if n.get("op") == "placeholder"]
        if not ph:
            return None
        p = rng.choice(ph)
        old = p["name"]
        text = json.dumps(nodes).replace(f'{{"node": "{old}"}}', f'{{"node": "{victim}"}}')
        nodes[:] = json.loads(text)
        next(n for n in nodes if n.get("name") == old)["name"] = victim
        return f"{g.get('path')}:{old}->{victim}", data
    targets = [s.get("target") for s in doc.get("inputs", ()) if s.get("name") == victim]
    calls = [n for n in nodes if n.get("op") == "call_function"]
    if not calls or not targets:
        return None
    n = rng.choice(calls)
    for k in ("args", "kwargs"):  # (a get_attr node of the format: name, op, target)
        n.pop(k, None)
    n.update(op="get_attr", target=targets[0])
    if rng.random() < 0.5:
        n.pop("meta", None)
    return f"{g.get('path')}:{n['name']}=get_attr({targets[0]})", data
