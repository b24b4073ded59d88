"""The CUDA devices a loaded program names, held to the ones this process has at each call.

``st.load(path, allow_cuda=True)`` lets a graph name CUDA devices (a program exported on a
GPU).  The file chooses the index (0 to 127: ``codec.decode_device`` refuses what torch
would wrap), and a device the process does not have would fail inside the graph, after
the ops before it ran, with torch's own error.  So each call first asks torch how many
devices it sees and refuses one the program names past them (a ``RuntimeAssertionError``
naming the device).  Only a program that names a CUDA device asks (the caller allowed
CUDA for it).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.errors.load import cuda_absent


def named(graphs: list) -> list:
    """The distinct CUDA devices the calls of ``graphs`` name (in their arguments)."""
    found: dict = {}

    def note(v: Any) -> Any:
        if isinstance(v, torch.device) and v.type == "cuda":
            found.setdefault(str(v), v)
        return v

    for g in graphs:
        for node in g.nodes:
            if node.op == "call_function":
                torch.fx.node.map_aggregate((node.args, node.kwargs), note)
    return list(found.values())


def check(devices: list) -> None:
    """Refuse the call where a device of ``devices`` is not one this process has (an index
    at or past ``torch.cuda.device_count()``; an unindexed ``cuda``: the current device,
    so at least one)."""
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    for d in devices:
        if (d.index or 0) >= count:
            raise cuda_absent(str(d), count)


__all__ = ["check", "named"]
