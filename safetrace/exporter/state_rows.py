"""The program's state, as the export lifts it: one row per parameter and buffer of the
model (each tensor once), read from the model snapshot's copies of each module's tables.

A row is ``(tensor, its state name, "parameter" | "buffer", persistent)`` with its
placeholder's target; a tensor met again under another path (a shared module or tensor)
is listed among the aliases.  What the rows are besides the tensors themselves (names,
kinds, persistence, placeholder targets) is a function of the walk's module paths, each
table's keys in order, which positions hold one tensor twice, and the modules'
non-persistent buffer names: kept with ``pytree.walk_of``'s facts for a model with no
shared tensor and no non-persistent buffer, and checked at the next export in a few
passes in C (``_known``) instead of a Python loop over every tensor.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any

import torch

from safetrace import errors as E
from safetrace import pytree
from safetrace.trace.mutation import traced_elsewhere

# ("p_"/"b_", module path, attribute) -> (the state's path, its placeholder's name)
_STATE_PATHS: dict[tuple[str, str, str], tuple[str, str]] = {}
# the model's state as export reads it; a tensor of the classes named in NO_DATA is what
# torch.export / torch.compile swap in while they trace the model
_REAL_STATE = frozenset((torch.Tensor, torch.nn.Parameter, torch.nn.Buffer))
_KINDS = (("parameter", "p_", 2), ("buffer", "b_", 3))  # (kind, prefix, place in an entry)
_CHAIN = itertools.chain.from_iterable
_MODULE, _PARAMS, _BUFFERS = (operator.itemgetter(i) for i in (1, 2, 3))
_NON_PERSISTENT = operator.attrgetter("_non_persistent_buffers_set")


def state_rows(saved: list, facts: dict | None) -> tuple[list, Any, list]:
    """(rows, their placeholders' targets (a sequence), aliases ``(path, id(tensor))``) of the model's
    state, from `saved` (``ModuleGuard.saved``: per module, its path, the module, copies of
    its parameters and buffers); `facts`: the walk's, where the answer's parts that do not
    depend on the tensors themselves are kept."""
    known = facts.get("state") if facts is not None else None
    if known is not None:
        tensors = _known(saved, known)
        if tensors is not None:  # (every tensor persistent: no non-persistent buffer)
            return list(zip(tensors, known[2], known[3], _ALWAYS)), known[4], []
    rows, places, again = _rows(saved)
    if facts is not None and not again and not _non_persistent(saved):
        facts["state"] = (_sizes(saved), _keys(saved), tuple(r[1] for r in rows),
                          tuple(r[2] for r in rows), tuple(places))
    return rows, places, again


_ALWAYS = itertools.repeat(True)


def _non_persistent(saved: list) -> bool:
    """Whether a module has non-persistent buffer names (or cannot tell)."""
    try:
        return any(map(len, map(_NON_PERSISTENT, map(_MODULE, saved))))
    except (AttributeError, TypeError):
        return True


def _sizes(saved: list) -> tuple:
    return (*map(len, map(_PARAMS, saved)), *map(len, map(_BUFFERS, saved)))


def _keys(saved: list) -> tuple:
    return (*_CHAIN(map(_PARAMS, saved)), *_CHAIN(map(_BUFFERS, saved)))


def _known(saved: list, known: tuple) -> list | None:
    """The state tensors in row order when the kept rows describe `saved`: each table as
    large as then with the same keys in order, every value a tensor of a plain state
    class (no None), no tensor twice, no non-persistent buffer; else None."""
    if _sizes(saved) != known[0] or _keys(saved) != known[1]:
        return None
    tensors = [*_CHAIN(map(dict.values, map(_PARAMS, saved))),
               *_CHAIN(map(dict.values, map(_BUFFERS, saved)))]
    if not _REAL_STATE.issuperset(map(type, tensors)) or \
            len(set(map(id, tensors))) != len(tensors) or _non_persistent(saved):
        return None
    return tensors


def _rows(saved: list) -> tuple[list, list, list]:
    again: list[tuple[str, int]] = []
    rows = []  # each tensor lifted once: (tensor, name, kind, persistent)
    places = []  # ... and its placeholder's target
    seen: set[int] = set()
    for kind, prefix, index in _KINDS:
        for entry in saved:
            mname, mod, tensors = entry[0], entry[1], entry[index]
            for key, t in tensors.items():
                if t is None:
                    continue
                paths = _STATE_PATHS.get((prefix, mname, key))
                if paths is None:  # (the state's path and its placeholder's name)
                    if len(_STATE_PATHS) > 100_000:
                        _STATE_PATHS.clear()
                    full = f"{mname}.{key}" if mname else key
                    paths = _STATE_PATHS[(prefix, mname, key)] = (
                        full, pytree.placeholder_name(prefix + full))
                name, ph = paths
                if type(t) not in _REAL_STATE and traced_elsewhere(t):
                    raise E.state_traced_elsewhere(f"the model's state {name!r}",
                                                   type(t).__name__)
                if id(t) in seen:
                    again.append((name, id(t)))
                    continue
                seen.add(id(t))
                places.append(ph)
                rows.append((t, name, kind, kind == "parameter" or
                             key not in mod._non_persistent_buffers_set))
    return rows, places, again
