"""Hostile edits of what a file records about sizes read from data (session 31).

Used by ``benchmarks/hostile_probe.py`` (class ``reads``).  Bases whose graphs clamp or
combine a size read from data (``w[:n]`` of a fixed ``w``: ``min(u0, 5)`` rows, ``narrow``,
a slice of an input, ``torch.cond`` branches slicing by it, a size read twice), and edits
of their records:

- ``bare``: a recorded size that is an expression of sizes read from data written as one of
  its symbols (``min(u0, 5)`` as ``u0``: the loader kept it as written, unchecked, before
  session 31);
- ``swap``: written as another size read from data of the file;
- ``shift``: a number inside such an expression changed (``min(u0, 5)`` as ``min(u0, 6)``),
  everywhere it occurs;
- ``unassert``: one of the graph's own assertions removed (its comparison kept), so that
  the file's declared range is all that is left of it;
- ``narrow``: a size read from data declared over a narrower range (``[lo, lo + 1]``).

Every program that runs is called by the probe at drawn inputs and its outputs held to
the root graph's records (``ran_meta_differs``) and node by node
(``hostile_extra.node_records``).
"""

from __future__ import annotations

import copy
import io
import json
import random

from tests.serialize.surgery import header_of, join

KINDS = ("reads",)


def programs() -> dict:
    import torch

    import safetrace as st

    class Head(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(5, 4))

        def forward(self, x):
            n = x.sum().item()
            torch._check(n >= 0)
            return self.w[:n] * 2, torch.zeros(n) + 1

    class Narrowed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("w", torch.arange(24.0).reshape(6, 4))

        def forward(self, x, y):
            n = x.sum().item()
            torch._check(n >= 1)
            torch._check(n <= 6)
            return self.w.narrow(0, 0, n) + 1, y[:n] * 2, torch.ones(n, 2)

    class Branches(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(5, 4))

        def forward(self, x):
            n = x.sum().item()
            torch._check(n >= 0)
            return torch.cond(x.shape[0] > 1, lambda w: w[:n] * 2, lambda w: w[:n] * 3,
                              (self.w,))

    class Twice(torch.nn.Module):
        def forward(self, x, y):
            a = x.nonzero()
            b = y.nonzero()
            m = min(a.shape[0], 3)
            return a[:m] + 1, b[: b.shape[0]] * 2, torch.zeros(a.shape[0] + b.shape[0])

    ix = {"x": {0: st.Dim("b", max=64)}}
    return {
        "r_head": st.export(Head(), (torch.tensor([1, 1]),), dynamic_shapes=ix),
        "r_narrow": st.export(Narrowed(), (torch.tensor([1, 1]), torch.randn(8, 3)),
                              dynamic_shapes={"x": {0: st.Dim("b", max=64)},
                                              "y": {0: st.Dim("m", min=6, max=32)}}),
        "r_branches": st.export(Branches(), (torch.tensor([1, 1]),), dynamic_shapes=ix),
        "r_twice": st.export(Twice(), (torch.tensor([1.0, 0, 2]), torch.tensor([0.0, 3])),
                             dynamic_shapes={"x": {0: st.Dim("p", max=16)},
                                             "y": {0: st.Dim("q", max=16)}}),
    }


def variants(blob: bytes, rng: random.Random, count: int, kind: str = "reads"
             ) -> list[tuple[str, bytes]]:
    head, doc, data = header_of(blob)
    out = []
    for _ in range(count):
        d, h = copy.deepcopy(doc), copy.deepcopy(head)
        how = rng.choice(["bare", "bare", "swap", "shift", "unassert", "narrow"])
        label = {"bare": _bare, "swap": _swap, "shift": _shift, "unassert": _unassert,
                 "narrow": _narrow}[how](d, rng)
        if label is not None:
            out.append((f"{kind}:{how}:{label}", join(h, data, doc=d)))
    return out


def _reads(doc: dict) -> list[str]:
    return [s["name"] for s in doc.get("symbols", ()) if isinstance(s, dict)
            and s.get("backed") is False and not s.get("float")]


def _sizes(o: object, out: list) -> list:
    """Every (list, index) holding a recorded tensor size or symint inside ``o``."""
    if isinstance(o, dict):
        t = o.get("tensor")
        if isinstance(t, dict) and isinstance(t.get("shape"), list):
            out.extend((t["shape"], i) for i in range(len(t["shape"])))
        for v in o.values():
            _sizes(v, out)
    elif isinstance(o, list):
        for v in o:
            _sizes(v, out)
    return out


def _free(e: object, reads: set) -> set:
    if isinstance(e, str):
        return {e} & reads
    if isinstance(e, list):
        return set().union(*(_free(a, reads) for a in e[1:])) if e else set()
    return set()


def _graphs(doc: dict) -> list:
    return [doc["nodes"]] + [sg.get("nodes", []) for sg in doc.get("subgraphs", ())
                             if isinstance(sg, dict)]


def _candidates(doc: dict) -> list:
    reads = set(_reads(doc))
    return [(shape, i) for nodes in _graphs(doc) for n in nodes
            for shape, i in _sizes(n.get("meta", {}), [])
            if isinstance(shape[i], list) and _free(shape[i], reads)]


def _bare(doc: dict, rng: random.Random) -> str | None:
    found = _candidates(doc)
    if not found:
        return None
    shape, i = rng.choice(found)
    old = json.dumps(shape[i])
    new = rng.choice(sorted(_free(shape[i], set(_reads(doc)))))
    everywhere = rng.random() < 0.5  # (every record of that form, or one)
    if everywhere:
        for s, j in _candidates(doc):
            if json.dumps(s[j]) == old:
                s[j] = new
    else:
        shape[i] = new
    return f"{old}->{new}{'*' if everywhere else ''}"


def _swap(doc: dict, rng: random.Random) -> str | None:
    reads = _reads(doc)
    found = [(s, i) for nodes in _graphs(doc) for n in nodes
             for s, i in _sizes(n.get("meta", {}), []) if s[i] in reads]
    if len(reads) < 2 or not found:
        return None
    shape, i = rng.choice(found)
    new = rng.choice([r for r in reads if r != shape[i]])
    old, shape[i] = shape[i], new
    return f"{old}->{new}"


def _shift(doc: dict, rng: random.Random) -> str | None:
    found = _candidates(doc)
    nums = sorted({a for s, i in found for a in json.loads(json.dumps(s[i]))[1:]
                   if type(a) is int})
    if not nums:
        return None
    c = rng.choice(nums)
    d = c + rng.choice([-1, 1])

    def swap(e: object) -> object:
        if isinstance(e, list):
            return [e[0]] + [d if a == c and type(a) is int else swap(a) for a in e[1:]]
        return e

    for s, i in found:
        s[i] = swap(s[i])
    return f"{c}->{d}"


def _unassert(doc: dict, rng: random.Random) -> str | None:
    for nodes in rng.sample(_graphs(doc), len(_graphs(doc))):
        asserts = [n for n in nodes if n.get("target") == "safetrace.assert_sym"]
        if asserts:
            gone = rng.choice(asserts)
            nodes.remove(gone)
            return gone.get("name")
    return None


def _narrow(doc: dict, rng: random.Random) -> str | None:
    syms = [s for s in doc.get("symbols", ()) if isinstance(s, dict) and s.get("backed") is False
            and not s.get("float")]
    if not syms:
        return None
    s = rng.choice(syms)
    lo = s.get("lo") if isinstance(s.get("lo"), int) else 0
    s["hi"] = lo + rng.choice([0, 1, 2])
    for rc in doc.get("range_constraints", ()):
        if isinstance(rc, list) and rc and rc[0] == s["name"]:
            rc[2] = s["hi"]
    for c in doc.get("contract", {}).get("symbols", ()):
        if isinstance(c, dict) and c.get("name") == s["name"]:
            c["hi"] = s["hi"]
    return f"{s['name']}<={s['hi']}"


def saved() -> dict[str, bytes]:
    import safetrace as st

    out = {}
    for name, ep in programs().items():
        buf = io.BytesIO()
        st.save(ep, buf)
        out[name] = buf.getvalue()
    return out


__all__ = ["KINDS", "programs", "saved", "variants"]
