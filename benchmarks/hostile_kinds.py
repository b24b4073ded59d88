"""Hostile edits of what kind of tensor a name holds (session 36, load36).

Used by ``benchmarks/hostile_probe.py`` (class ``kinds``):

- ``tie``: a state entry or constant tied (``aliases``) to a parameter of the same dtype and
  shape, its stored tensor dropped (the program writes one of them, or none);
- ``qdtype``: a quantized dtype (``qint8``, ``quint8``, ``qint32``, ``quint4x2``) given to a
  node's ``dtype`` argument, or to a new ``zeros`` node before the output;
- ``device``: a node's recorded value put on another device (``xla``, ``hpu``, ``mps``,
  ``privateuseone``, ``lazy``, ``cuda``, ``cpu:1``, ``meta``);
- ``float8``: a floating state entry stored, declared and recorded as a float8 dtype.
"""

from __future__ import annotations

import copy
import random

import torch

from tests.serialize.surgery import graphs, pack, parts

KINDS = ("kinds",)
_QUANTIZED = ("qint8", "quint8", "qint32", "quint4x2")
_DEVICES = ("xla", "hpu", "mps", "privateuseone", "lazy", "cuda", "cpu:1", "meta")
_FLOAT8 = {"float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}


def variants(blob: bytes, rng: random.Random, count: int, kind: str = "kinds") -> list:
    doc, tensors = parts(blob)
    out = []
    for _ in range(count):
        how = rng.choice((_tie, _qdtype, _device, _float8))
        d, t = copy.deepcopy(doc), dict(tensors)
        label = how(d, t, rng)
        if label is not None:
            out.append((f"{kind}:{how.__name__[1:]}:{label}", pack(d, t)))
    return out


def _tie(doc: dict, tensors: dict, rng: random.Random) -> str | None:
    params = [s for s in doc["state"] if s.get("parameter")]
    if not params:
        return None
    p = rng.choice(params)
    key = f"state:{p['name']}"
    if key not in tensors:
        return None
    others = [k for k, v in tensors.items() if k != key and v.dtype == tensors[key].dtype
              and v.shape == tensors[key].shape]
    if not others:
        return None
    other = rng.choice(others)
    del tensors[other]
    doc["aliases"] = [a for a in doc.get("aliases", []) if a[0] != other] + [[other, key]]
    return f"{other}->{key}"


def _nodes(doc: dict) -> list:
    return [n for nodes in graphs(doc) for n in nodes if isinstance(n, dict)]


def _qdtype(doc: dict, tensors: dict, rng: random.Random) -> str | None:
    q = rng.choice(_QUANTIZED)
    slots = [(n, where, i) for n in _nodes(doc) for where in ("args", "kwargs")
             for i, a in enumerate(n.get(where) or ()) if isinstance(a, dict) and "dtype" in a
             or where == "kwargs" and isinstance(a, list) and len(a) == 2
             and isinstance(a[1], dict) and "dtype" in a[1]]
    if slots and rng.random() < 0.5:
        n, where, i = rng.choice(slots)
        if where == "args":
            n["args"][i] = {"dtype": q}
        else:
            n["kwargs"][i] = [n["kwargs"][i][0], {"dtype": q}]
        return f"{q}@{n['name']}"
    doc["nodes"].insert(len(doc["nodes"]) - 1, {
        "name": "hostile_zeros", "op": "call_function", "target": "torch.ops.aten.zeros.default",
        "args": [{"list": [rng.choice((0, 1, 4))]}], "kwargs": [["dtype", {"dtype": q}]]})
    return f"{q}@zeros"


def _device(doc: dict, tensors: dict, rng: random.Random) -> str | None:
    recorded = [n for n in _nodes(doc) if isinstance(n.get("meta"), dict)
                and isinstance(n["meta"].get("val"), dict) and "tensor" in n["meta"]["val"]]
    if not recorded:
        return None
    n, device = rng.choice(recorded), rng.choice(_DEVICES)
    n["meta"]["val"]["tensor"]["device"] = device
    return f"{device}@{n['name']}"


def _float8(doc: dict, tensors: dict, rng: random.Random) -> str | None:
    floats = [s for s in doc["state"] if s.get("dtype") in ("float32", "float16", "bfloat16")
              and f"state:{s['name']}" in tensors]
    if not floats:
        return None
    s, name = rng.choice(floats), rng.choice(sorted(_FLOAT8))
    s["dtype"] = name
    key = f"state:{s['name']}"
    tensors[key] = tensors[key].to(_FLOAT8[name])
    for n in doc["nodes"]:
        if n.get("op") == "placeholder" and n.get("meta", {}).get("extra", {}).get(
                "target") == s["name"]:
            n["meta"]["val"]["tensor"]["dtype"] = name
    return f"{name}@{s['name']}"
