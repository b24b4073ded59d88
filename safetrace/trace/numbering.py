"""Bool masks numbered by value: a mask computed as an earlier one was (the same
deterministic op on the same data: ``z[x > 1] = x[x > 1] * 10``) has the same number of
True elements, so ``z[m]`` and ``x[m2]`` get one size.

"The same data": the same graph values (or real tensors), each with the same data stamp
(versions.py) as when the first mask was made, and the first mask not written since.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta.symtypes import SYM_CLASSES
from safetrace.trace.proxy import Proxy
from safetrace.trace.recorder import Recorder
from safetrace.trace.versions import stamp

_PLAIN = (bool, int, float, str, torch.dtype, torch.device, torch.layout,
          torch.memory_format)


def number_mask(tr: Recorder, op: Any, args: tuple, kwargs: dict, result: Proxy,
                node: torch.fx.Node) -> None:
    """Share `result`'s True count with the first mask computed the same way, if any."""
    if torch.Tag.nondeterministic_seeded in getattr(op, "tags", ()):
        return
    tensors: list = []
    key = (op, value_key(tr, args, tensors), value_key(tr, kwargs, tensors),
           id(tr.scope.graph))
    if key[1] is None or key[2] is None:
        return
    key += tuple(stamp(t, tr) for t in tensors)  # (their data as it is now)
    tr.value_numbers[node] = key
    first = tr.masks_by_value.get(key)
    if first is not None and stamp(first[0], tr) == first[1]:
        result.st_meta.share_mask_count(first[0].st_meta)
    else:  # the first, or the one before it was written in place since
        tr.masks_by_value[key] = (result, stamp(result, tr))


def value_key(tr: Recorder, v: Any, tensors: list) -> Any:
    """A hashable stand-in for an argument's value (None: unknown, no numbering); the
    tensors met are appended to `tensors`."""
    if type(v) is Proxy:
        tensors.append(v)
        return tr.value_numbers.get(v.st_node, ("node", v.st_node))
    if type(v) not in SYM_CLASSES:  # (a size: none of these; its type tests may run Python)
        if isinstance(v, torch.Tensor):
            tensors.append(v)
            return ("tensor", id(v))  # state or a constant: the same object
        if isinstance(v, (list, tuple)):
            out = tuple(value_key(tr, x, tensors) for x in v)
            return None if any(x is None for x in out) else (type(v).__name__, out)
        if isinstance(v, dict):
            items = tuple((k, value_key(tr, x, tensors)) for k, x in sorted(v.items()))
            return None if any(x is None for _, x in items) else ("dict", items)
        if v is None or isinstance(v, _PLAIN):
            return (type(v).__name__, v)
    expr = getattr(v, "expr", None)  # a symbolic size: its expression
    return None if expr is None else ("sym", expr)


def remember_counts(tr: Recorder, indices: list) -> None:
    """After ``x[mask]``: each bool mask's True count, kept with the mask's data stamp.
    TensorMeta holds a count until the next in-place write anywhere (``data_epoch``);
    ``y[m] += 1`` writes the gathered copy between the read and the write of ``y[m]``,
    which leaves ``m`` as it was: ``recall_counts`` gives the count back then."""
    for t in indices:
        if isinstance(t, Proxy) and (count := t.st_meta.mask_count) is not None:
            tr.masks_by_value[("count", t.st_node)] = (count, stamp(t, tr))


def recall_counts(tr: Recorder, indices: list) -> None:
    """Before ``x[mask] = v``: a mask's count ``remember_counts`` kept, where its data
    stamp is the same (no write reached its memory since) and the meta lost it."""
    for t in indices:
        if isinstance(t, Proxy) and t.st_meta.mask_count is None:
            kept = tr.masks_by_value.get(("count", t.st_node))
            if kept is not None and kept[1] == stamp(t, tr):
                t.st_meta.mask_count = kept[0]
