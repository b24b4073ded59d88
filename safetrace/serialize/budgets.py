"""What loading a file may cost: every limit the loader enforces, in one overridable table.

A saved file is untrusted input.  Each budget bounds one way a small file could cost a
lot (memory, time, generated code); exceeding one is a LoadError that names it, so a
caller with a legitimately large program raises just that one::

    st.load(path, budgets={"max_nodes": 5_000_000})
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from safetrace.errors import LoadError


@dataclasses.dataclass(frozen=True)
class Budgets:
    """Limits of one ``st.load`` (defaults fit real models many times over)."""

    max_header_bytes: int = 32 << 20     # the safetensors header (program JSON included)
    max_json_values: int = 1_000_000     # JSON values (numbers, strings, arrays, objects)
    max_json_depth: int = 160            # JSON nesting of the program document
    max_tensors: int = 200_000           # tensors in the file
    max_file_bytes: int = 1 << 40        # a source given as bytes or a file object
    max_nodes: int = 200_000             # graph nodes
    max_symbols: int = 20_000            # declared symbols
    max_expr_nodes: int = 200_000        # symbolic expression nodes in the whole file
    max_expr_nodes_each: int = 20_000    # nodes of one expression
    max_residual: int = 2_000            # residual input conditions
    max_residual_nodes: int = 500        # nodes of one residual condition
    max_residual_total: int = 20_000     # nodes of all residual conditions together
    max_check_code: int = 8 << 20        # characters of generated input-check code
    max_alloc_numel: int = 1 << 26       # elements a constant-sized allocation may ask for
                                         # (or 4x the largest tensor in the file, if more)
    max_string: int = 1 << 12            # a string argument of a graph call
    max_exponent: int = 64               # |exponent| / shift of int pow and shifts in a graph
    max_repeat: int = 1 << 16            # a list argument's length in a graph call


DEFAULT = Budgets()


def budgets_of(value: Any) -> Budgets:
    """``None``, a Budgets or a dict of overrides -> Budgets (unknown names are errors)."""
    if value is None:
        return DEFAULT
    if isinstance(value, Budgets):
        return value
    if isinstance(value, dict):
        names = {f.name for f in dataclasses.fields(Budgets)}
        bad = sorted(set(value) - names)
        if bad:
            raise TypeError(f"unknown budget(s) {bad}; known: {sorted(names)}")
        if not all(type(v) is int and v >= 0 for v in value.values()):
            raise TypeError("budgets are non-negative ints")
        return dataclasses.replace(DEFAULT, **value)
    raise TypeError(f"budgets must be a dict or safetrace.serialize.Budgets, got "
                    f"{type(value).__name__}")


_CHUNK = 1 << 20


def json_shape(raw: bytes, budgets: Budgets, where: str, max_depth: int | None = None,
               count_values: bool = True) -> int:
    """Refuse a JSON text with too many values or too deep nesting, before parsing it.

    The counts are upper bounds read off the bytes (strings blanked out): parsing costs a
    bounded multiple of what they allow, never a surprise.  Returns the count of values.
    (The safetensors header bounds its values per tensor instead: ``count_values=False``.)
    """
    # strings out (escaped backslashes first, then escaped quotes: what is left splits
    # on quotes into outside / inside pieces)
    bare = b"".join(raw.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[::2])
    values = bare.count(b",") + bare.count(b"[") + bare.count(b"{") + 1
    if count_values and values > budgets.max_json_values:
        raise LoadError(f"{where}: about {values} JSON values, over the budget "
                        f"(max_json_values={budgets.max_json_values})")
    limit = budgets.max_json_depth if max_depth is None else max_depth
    if bare.count(b"[") + bare.count(b"{") <= limit:
        return values
    depth = 0
    for i in range(0, len(bare), _CHUNK):
        t = torch.frombuffer(bytearray(bare[i:i + _CHUNK]), dtype=torch.uint8)
        step = ((t == 91) | (t == 123)).to(torch.int32) - ((t == 93) | (t == 125)).to(torch.int32)
        run = torch.cumsum(step, 0)
        if depth + int(run.max()) > limit:
            raise LoadError(f"{where}: JSON nested deeper than {limit} "
                            f"(max_json_depth={budgets.max_json_depth})")
        depth += int(run[-1])
    return values
