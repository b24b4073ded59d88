"""Export a function with every tensor's first dim dynamic; compare with eager on other
sizes (0 and 1 included); check that an input outside the spec is rejected before running."""

from __future__ import annotations

from typing import Any, Callable

import torch

import safetrace as st
from safetrace import Dim
from tests.helpers import matches_eager, rejects

SIZES = (0, 1, 2, 5)


def spec_for(args: tuple, dim: Dim, example: int) -> tuple:
    """`dim` for the first dim of every tensor whose first dim is the example size."""
    return tuple({0: dim} if isinstance(a, torch.Tensor) and a.dim() > 0 and
                 a.shape[0] == example else None for a in args)


def check(fn: Callable, make: Callable[[int], tuple], *, example: int = 3,
          sizes: tuple = SIZES, dynamic: bool = True) -> st.ExportedProgram:
    """``fn(*make(n))`` exported at n=`example` (one dynamic size for the first dim of the
    tensor inputs of that size, when `dynamic`), then run at every n in `sizes` against
    eager."""
    args = make(example)
    spec = spec_for(args, Dim("n", min=0), example) if dynamic else None
    ep = st.export(fn, args, dynamic_shapes=spec)
    for n in (sizes if dynamic else (example,)):
        matches_eager(ep, fn, make(n))
    bad = list(make(example))
    first = next(i for i, a in enumerate(bad) if isinstance(a, torch.Tensor))
    bad[first] = bad[first].unsqueeze(-1)  # one dim too many: outside any spec
    rejects(ep, tuple(bad))
    return ep


def targets(ep: st.ExportedProgram) -> list[str]:
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


def same_graph_as(ep: st.ExportedProgram, other: Any) -> bool:
    return targets(ep) == targets(other)
