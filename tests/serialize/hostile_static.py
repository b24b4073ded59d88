"""Hostile files that make a program's own constants and state cost memory (issue 23).

Each base is a real program, exported and saved (format 2); the hostile file changes only
its constants' values or shapes (and the placeholders' metadata to match), leaving the
graph and the other nodes' metadata as saved (their sizes now lies).  Every base loads
and runs untouched (the ``control_*`` cases).
"""

from __future__ import annotations

import functools
import json
from typing import Any, Callable

import torch

import safetrace as st
from tests.serialize import surgery
from tests.serialize.surgery import KEY, pack, parts  # noqa: F401 - (tests import them here)


def without_values(blob: bytes) -> bytes:
    """``blob`` with the recorded value of every node dropped (but the main graph's
    placeholders'), as the writer of an edited file would: the loader refuses a file whose
    recorded values differ from its own evaluation (serialize/recorded.py), so a test of a
    later check (a budget, a check at call) edits a file without them."""
    doc, tensors = parts(blob)
    for n in [n for g in doc.get("subgraphs", []) for n in g["nodes"]] + doc["nodes"]:
        if n["op"] != "placeholder" or n not in doc["nodes"]:
            n.get("meta", {}).pop("val", None)
    return pack(doc, tensors)


class Consts(torch.nn.Module):
    """Constants and a buffer read by the ops whose sizes the hostile files inflate."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.a, self.b = torch.ones(4, 1), torch.ones(1, 4)
        self.idx = torch.tensor([1, 2, 3])
        self.z = torch.zeros(0, 4, 4)
        self.register_buffer("n", torch.tensor(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.kind
        if k == "outer":
            return x + (self.a + self.b).sum()
        if k == "bincount":
            return x + torch.bincount(self.idx).sum()
        if k == "one_hot":
            return x + torch.nn.functional.one_hot(self.idx, 4).sum()
        if k == "item":
            return x + torch.zeros(self.n.item()).sum()
        if k == "repeat_interleave":
            return x + torch.repeat_interleave(self.idx).sum()
        if k == "reduce":
            return x + self.z.sum(0).sum()
        raise ValueError(k)


KINDS = ("outer", "bincount", "one_hot", "item", "repeat_interleave", "reduce")


@functools.lru_cache(maxsize=None)
def base(kind: str) -> bytes:
    ep = st.export(Consts(kind), (torch.randn(3),),
                   dynamic_shapes={"x": {0: st.Dim("n", max=64)}})
    return surgery.saved(ep)


def replaced(blob: bytes, values: dict[str, torch.Tensor],
             edit: Callable[[dict], Any] | None = None) -> bytes:
    """``blob`` with stored tensors (``constant:idx``, ``state:n``) replaced by ``values``,
    their placeholders' (and state entries') metadata made to match."""
    doc, tensors = parts(blob)
    for key, t in values.items():
        tensors[key] = t
        kind, name = key.split(":", 1)
        spec = next(s for s in doc["inputs"] if s["target"] == name)
        node = next(n for n in doc["nodes"] if n["name"] == spec["name"])
        node["meta"]["val"]["tensor"]["shape"] = list(t.shape)
        for s in doc["state"]:
            if s["name"] == name:
                s["shape"] = list(t.shape)
    if edit is not None:
        edit(doc)
    return pack(json.loads(json.dumps(doc)), tensors)


def _num_classes(doc: dict, value: int) -> None:
    node = next(n for n in doc["nodes"] if n.get("target", "").endswith("one_hot.default"))
    node["args"][1] = value


def hostile(kind: str) -> bytes:
    """The base of ``kind`` made to ask for at least 1 GiB (most for far more)."""
    b = base(kind)
    i64 = torch.int64
    if kind == "outer":  # 128 KB and 64 KB constants, an outer broadcast of 2 GiB
        return replaced(b, {"constant:c_a": torch.ones(32768, 1),
                            "constant:c_b": torch.ones(1, 16384)})
    if kind == "bincount":  # 24 bytes of data, 8 GiB of counts
        return replaced(b, {"constant:c_idx": torch.tensor([0, 1, 1 << 30], dtype=i64)})
    if kind == "one_hot":  # num_classes=-1: max + 1 classes for each of 4096 values (32 GiB)
        idx = torch.zeros(4096, dtype=i64)
        idx[0] = 1 << 20
        return replaced(b, {"constant:c_idx": idx}, lambda d: _num_classes(d, -1))
    if kind == "item":  # a buffer's value sizes zeros(): 256 GiB
        return replaced(b, {"state:n": torch.tensor(1 << 36)})
    if kind == "repeat_interleave":  # repeats summing to 2**35 (256 GiB of indices)
        return replaced(b, {"constant:c_idx": torch.tensor([1 << 35, 0, 0], dtype=i64)})
    if kind == "reduce":  # a zero-byte [0, 2**20, 2**20] constant reduced over dim 0: 4 TiB
        return replaced(b, {"constant:c_z": torch.zeros(0, 1 << 20, 1 << 20)})
    raise ValueError(kind)


class Loop(torch.nn.Module):
    """A while_loop of three iterations (a counter and a carried tensor)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def cond(i: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return i < 3

        def body(i: torch.Tensor, y: torch.Tensor) -> tuple:
            return i + 1, y * 2

        return torch._higher_order_ops.while_loop(cond, body, (torch.tensor(0), x))[1]


@functools.lru_cache(maxsize=None)
def loop_base() -> bytes:
    ep = st.export(Loop(), (torch.randn(4, 16),), dynamic_shapes={"x": {0: st.Dim("n", max=64)}})
    return surgery.saved(ep)


def stuck_loop() -> bytes:
    """The loop's body made to stop incrementing its counter: it never ends."""
    doc, tensors = parts(loop_base())
    body = next(g for g in doc["subgraphs"] if "body" in g["path"])
    add = next(n for n in body["nodes"] if n.get("target") == "torch.ops.aten.add.Tensor")
    add["args"][1] = 0
    return pack(doc, tensors)


class Counter(torch.nn.Module):
    """A buffer the program updates, whose value sizes an allocation: read as it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("n", torch.tensor(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.n.add_(1)
        return x + torch.zeros(self.n.item()).sum()


@functools.lru_cache(maxsize=None)
def counter_base() -> bytes:
    ep = st.export(Counter(), (torch.randn(3),), dynamic_shapes={"x": {0: st.Dim("n", max=64)}})
    return surgery.saved(ep)


def counter_hostile() -> bytes:
    """The updated buffer set to 2**36: zeros() would ask for 256 GiB at the first call."""
    return replaced(counter_base(), {"state:n": torch.tensor(1 << 36)})


class OneCond(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, lambda x: x + 1, lambda x: x - 1, (x,))


@functools.lru_cache(maxsize=None)
def cond_base() -> bytes:
    ep = st.export(OneCond(), (torch.randn(4),), dynamic_shapes={"x": {0: st.Dim("n", max=64)}})
    return surgery.saved(ep)


def many_conds(n: int = 2000) -> bytes:
    """The saved one-cond program's cond repeated ``n`` times in a chain (each with its own
    pair of subgraphs, as an export of ``n`` conds writes them): what ``OneCond`` applied
    ``n`` times computes."""
    doc, tensors = parts(cond_base())
    nodes = doc["nodes"]
    out = nodes[-1]
    first = next(i for i, n_ in enumerate(nodes) if n_["op"] == "call_function")
    body = nodes[first:-1]  # sum, gt, get_attr x2, cond, getitem
    prev = body[0]["args"][0]["node"]
    last = out["args"][0]["tuple"][0]["node"]
    chain, subs = [], []
    for i in range(n):
        text = json.dumps(body)
        for node in body:
            text = text.replace(f'"{node["name"]}"', f'"{node["name"]}_c{i}"')
        for g in doc["subgraphs"]:
            text = text.replace(f'"{g["path"]}"', f'"{g["path"]}_c{i}"')
        text = text.replace(json.dumps({"node": prev}), json.dumps({"node": f"{last}_c{i - 1}"})
                            ) if i else text
        chain.extend(json.loads(text))
        subs.extend({"path": f'{g["path"]}_c{i}', "nodes": g["nodes"]} for g in doc["subgraphs"])
    out["args"][0]["tuple"][0]["node"] = f"{last}_c{n - 1}"
    doc["nodes"] = nodes[:first] + chain + [out]
    doc["subgraphs"] = subs
    return pack(doc, tensors)


class FromInputs(torch.nn.Module):
    """Tensors sized by the inputs (and constants, inside control flow): the hostile files
    widen the declared ranges, the sizes the graph asks for, or the constants."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.c = torch.ones(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.kind
        if k == "outer":
            return x + (x[:, None] * x[None, :]).sum()
        if k == "expand":
            return x + x.unsqueeze(0).expand(8, x.shape[0]).contiguous().sum()
        if k == "cond_outer":
            return torch.cond(x.sum() > 0, lambda x: x + (x[:, None] * x[None, :]).sum(),
                              lambda x: x - 1, (x,))
        if k == "cond_constant":
            c = self.c
            return torch.cond(x.sum() > 0, lambda x, c: x + (c[:, None] * c[None, :]).sum(),
                              lambda x, c: x - c.sum(), (x, c))
        if k == "loop_constant":
            c = self.c

            def cond(i: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                return i < 3

            def body(i: torch.Tensor, y: torch.Tensor) -> tuple:
                return i + 1, y + (c[:, None] * c[None, :]).sum()

            return torch._higher_order_ops.while_loop(cond, body, (torch.tensor(0), x))[1]
        raise ValueError(k)


INPUT_KINDS = ("outer", "expand", "cond_outer", "cond_constant", "loop_constant")


@functools.lru_cache(maxsize=None)
def inputs_base(kind: str) -> bytes:
    ep = st.export(FromInputs(kind), (torch.randn(4),),
                   dynamic_shapes={"x": {0: st.Dim("n", max=64)}})
    return surgery.saved(ep)


def _widen(doc: dict, hi: Any, lo: int | None = None) -> None:
    """The declared range of the input's size up to ``hi`` (None: unbounded), from
    ``lo`` if given."""
    for s in [*doc["symbols"], *doc["contract"]["symbols"]]:
        s["hi"] = hi
        if lo is not None:
            s["lo"] = lo
            s["hint"] = max(s.get("hint", lo), lo) if "hint" in s else None
            if s["hint"] is None:
                del s["hint"]
    for r in doc["range_constraints"]:
        r[2] = hi
        if lo is not None:
            r[1] = lo


def _expand_to(doc: dict, rows: int) -> None:
    node = next(n for n in doc["nodes"] if n.get("target", "").endswith("expand.default"))
    node["args"][1]["list"][0] = rows


def inputs_hostile(kind: str) -> tuple[bytes, str]:
    """The base of ``kind`` made to ask for at least 1 GiB, and where it must be refused:
    ``load`` (the declared ranges bound it) or ``call`` (a range is open: refused at the
    first call's sizes)."""
    b = inputs_base(kind)
    if kind in ("outer", "cond_outer"):  # n from 2**16: [n, n] floats are 16 GiB and more
        return replaced(b, {}, lambda d: _widen(d, 1 << 20, 1 << 16)), "load"
    if kind == "expand":  # 2**26 copies of x, n from 4 up, unbounded: 1 GiB and more
        return replaced(b, {}, lambda d: (_widen(d, None, 4), _expand_to(d, 1 << 26))), \
            "load"
    # a 256 KB constant's outer product inside a subgraph: 16 GiB (the loop's export
    # lifted c[None, :] as a constant of its own)
    big = {"constant:c_c": torch.ones(1 << 16)}
    if kind == "loop_constant":
        big["constant:c_lifted_tensor_1"] = torch.ones(1, 1 << 16)
    return replaced(b, big), "load"


class Abs(torch.nn.Module):
    def forward(self, x):
        return x.abs()


@functools.lru_cache(maxsize=4)
def saved_abs(*shape: int) -> bytes:
    """The saved program of ``x.abs()`` at ``shape``: one call for a test to replace."""
    return surgery.saved(st.export(Abs(), (torch.randn(*shape),)))

