"""Hostile files loaded with ``st.load(path, mmap=True)`` (session 37, load37).

Used by ``benchmarks/hostile_probe.py`` (class ``mapped``): the variants of the ``json``,
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
"""

from __future__ import annotations

import copy
import random
from typing import Any, Callable

KINDS = ("mapped",)
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
