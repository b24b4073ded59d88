"""Hostile files loaded with ``st.load(path, mmap=True)``, and kernels that loop over a
count of the file for each element (session 37, load37).

Used by ``benchmarks/hostile_probe.py`` (classes ``mapped``, ``loops``).  ``mapped``: the variants of the ``json``,
``multi`` and ``tensor`` classes (a field of the program document, 2-3 of them together,
a field of a tensor's header) and the pristine program, each loaded by the worker with
``mmap=True`` instead of read: the copy-on-write mapping's code paths (tensors viewing the
file's pages, bool tensors copied and checked, state copied on first use) under hostile
input.  Besides the worker's checks (a clean refusal, no file write, outputs that match
the recorded metadata, a resaved copy that computes the same) ``check`` calls the program
a second ``mmap=True`` load of the same file and a load of its bytes, twice each, after
the first program ran: each call must compute what the copy loaded from the bytes does (a write of the
program into its state must reach neither the file's pages other mappings see nor a later
load), and the file must still hold its bytes.

``loops``: an elementwise call of the main graph (its recorded shape its first operand's)
replaced by a kernel that loops over a count for each element (``mvlgamma``'s ``p``, the
special polynomials' ``n``: hermite, laguerre, legendre, chebyshev) at a count of 2 to
2**25, -2**25, inf or NaN, given as a number or as a tensor (``full_like`` of the operand);
a call that runs past the worker's alarm is a finding (a hang).
"""

from __future__ import annotations

import copy
import random
from typing import Any, Callable

KINDS = ("mapped", "loops")
SUFFIX = "mmap"  # the worker loads ``NNNNN.mmap.st`` with mmap=True


def variants(blob: bytes, rng: random.Random, count: int,
             makers: list[tuple[str, Callable]]) -> list[tuple[str, bytes]]:
    """``count`` variants of the other classes' makers (and the pristine program)."""
    out = [("mapped:pristine", blob)]
    for _ in range(max(0, count - 1)):
        name, make = rng.choice(makers)
        made = make(blob, rng, 1)
        if made:
            label, data = made[0]
            out.append((f"mapped:{name}:{label}", data))
    return out


def check(st: Any, ep: Any, path: str, before: bytes, args: Any, kwargs: dict,
          same: Callable, loose: set) -> str | None:
    """A finding's text, or None: after the mapped program ``ep`` ran (its writes of its
    state), a second mapping of the file and a copy of its bytes, called on the same
    inputs (twice each: state a call writes is read by the next), compute the same; the
    file is unchanged.
    ``loose``: the output leaves that may hold memory never written (dtype and shape)."""
    import torch

    try:
        ref = st.load(before, allow_ops=["sttest"]).module()
        other = st.load(path, allow_ops=["sttest"], mmap=True).module()
    except st.LoadError as e:  # (the first load passed: the same bytes must too)
        return f"a second load refused: {str(e).splitlines()[0][:120]}"
    results = []
    for mod in (ref, other):
        got = []
        for _ in range(2):
            try:
                got.append(mod(*copy.deepcopy(args), **copy.deepcopy(kwargs)))
            except Exception as e:  # noqa: BLE001 - compared by type below
                got.append(type(e).__name__)
        results.append(got)
    for who, got in (("a second mapping", results[1]),):
        for call, (a, b) in enumerate(zip(got, results[0])):
            if isinstance(a, str) or isinstance(b, str):
                if a != b:
                    return f"{who}, call {call}: {a if isinstance(a, str) else 'ran'} / " \
                           f"{b if isinstance(b, str) else 'ran'} from the bytes"
                continue
            la, lb = torch.utils._pytree.tree_leaves(a), torch.utils._pytree.tree_leaves(b)
            if len(la) != len(lb) or not all(same(x, y, i in loose)
                                                    for i, (x, y) in enumerate(zip(la, lb))):
                return f"{who}, call {call}: outputs differ from the bytes' copy"
    with open(path, "rb") as f:
        if f.read() != before:
            return "the file's bytes changed"
    return None


_LOOPS = ("mvlgamma.default", "special_hermite_polynomial_h.n_scalar",
          "special_laguerre_polynomial_l.n_scalar", "special_legendre_polynomial_p.n_scalar",
          "special_chebyshev_polynomial_t.n_scalar", "special_hermite_polynomial_he.default",
          "special_laguerre_polynomial_l.default", "special_legendre_polynomial_p.default")
_COUNTS = (2, 7, 1 << 12, 1 << 20, 1 << 25, -(1 << 25), float("inf"), float("nan"), 2.5)


def _shape(node: dict) -> Any:
    val = (node.get("meta") or {}).get("val")
    tensor = val.get("tensor") if isinstance(val, dict) else None
    return tensor.get("shape") if isinstance(tensor, dict) else None


def loop_variants(blob: bytes, rng: random.Random, count: int) -> list[tuple[str, bytes]]:
    """``loops``: one elementwise call replaced by a per-element loop over a count."""
    from tests.serialize.surgery import pack, parts

    doc, tensors = parts(blob)
    shapes = {n["name"]: _shape(n) for n in doc["nodes"]}
    sites = [i for i, n in enumerate(doc["nodes"]) if n.get("op") == "call_function" and
             n.get("args") and isinstance(n["args"][0], dict) and "node" in n["args"][0] and
             shapes.get(n["name"]) is not None and
             shapes.get(n["args"][0]["node"]) == shapes[n["name"]]]
    out = []
    for _ in range(count if sites else 0):
        d = copy.deepcopy(doc)
        i = rng.choice(sites)
        target, n = rng.choice(_LOOPS), rng.choice(_COUNTS)
        node = d["nodes"][i]
        operand = node["args"][0]
        if target == "mvlgamma.default" and not isinstance(n, int):
            n = 1 << 20
        number = {"float": repr(n)} if isinstance(n, float) else n
        label = f"loops:{target.split('.')[0]}:{n}"
        if target.endswith(".default") and target != "mvlgamma.default":
            fill = {"name": f"{node['name']}_counts", "op": "call_function",
                    "target": "torch.ops.aten.full_like.default", "args": [operand, number]}
            d["nodes"].insert(i, fill)
            number, label = {"node": fill["name"]}, label + ":tensor"
        node["target"], node["args"] = f"torch.ops.aten.{target}", [operand, number]
        node.pop("kwargs", None)
        out.append((label, pack(d, tensors)))
    return out
