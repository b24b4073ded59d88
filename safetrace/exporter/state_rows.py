"""The program's state, as the export lifts it: one row per parameter and buffer of the
model (each tensor once), read from the model snapshot's copies of each module's tables.

A row is ``(tensor, its state name, "parameter" | "buffer", persistent)`` with its
placeholder's target; a tensor met again under another path (a shared module or tensor)
is listed among the aliases.  (Keeping the rows with ``pytree.walk_of``'s facts and
checking them by passes in C was measured: no fewer instructions on a small model, and
the zoo's bert, whose embeddings hold non-persistent buffers, would not use it; see
docs/benchmarks.md.)
"""

from __future__ import annotations

import torch

from safetrace import errors as E
from safetrace import pytree
from safetrace.trace.mutation import traced_elsewhere

# ("p_"/"b_", module path) -> {attribute: (the state's path, its placeholder's name)}
_STATE_PATHS: dict[tuple[str, str], dict[str, tuple[str, str]]] = {}
# the model's state as export reads it; a tensor of the classes named in NO_DATA is what
# torch.export / torch.compile swap in while they trace the model
_REAL_STATE = frozenset((torch.Tensor, torch.nn.Parameter, torch.nn.Buffer))
_KINDS = (("parameter", "p_", 2), ("buffer", "b_", 3))  # (kind, prefix, place in an entry)


def state_rows(saved: list) -> tuple[list, list, list]:
    """(rows, their placeholders' targets, aliases ``(path, id(tensor))``) of the model's
    state, from `saved` (``ModuleGuard.saved``: per module, its path, the module, copies of
    its parameters and buffers)."""
    again: list[tuple[str, int]] = []
    rows = []  # each tensor lifted once: (tensor, name, kind, persistent)
    places = []  # ... and its placeholder's target
    seen: set[int] = set()
    for kind, prefix, index in _KINDS:
        parameter = index == 2
        for entry in saved:
            tensors = entry[index]
            if not tensors:  # (most modules hold no buffers, a container no parameter)
                continue
            mname = entry[0]
            paths_in = _STATE_PATHS.get((prefix, mname))  # (one table per module)
            if paths_in is None:
                if len(_STATE_PATHS) > 10_000:
                    _STATE_PATHS.clear()
                paths_in = _STATE_PATHS[prefix, mname] = {}
            for key, t in tensors.items():
                if t is None:
                    continue
                paths = paths_in.get(key)
                if paths is None:  # (the state's path and its placeholder's name)
                    full = f"{mname}.{key}" if mname else key
                    paths = paths_in[key] = (full, pytree.placeholder_name(prefix + full))
                name, ph = paths
                if type(t) not in _REAL_STATE and traced_elsewhere(t):
                    raise E.state_traced_elsewhere(f"the model's state {name!r}",
                                                   type(t).__name__)
                ident = id(t)
                if ident in seen:
                    again.append((name, ident))
                    continue
                seen.add(ident)
                places.append(ph)
                rows.append((t, name, kind, parameter or
                             key not in entry[1]._non_persistent_buffers_set))
    return rows, places, again
