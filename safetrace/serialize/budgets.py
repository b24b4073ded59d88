"""What loading a file may cost: every limit the loader enforces, in one overridable table.

A saved file is untrusted input.  Each budget bounds one way a small file could cost a
lot (memory, time, generated code); exceeding one is a LoadError that names it, so a
caller with a legitimately large program raises just that one::

    st.load(path, budgets={"max_nodes": 5_000_000})
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import torch

from safetrace.errors.load import over_budget


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
    max_static_ops: int = 10_000         # operators applied to the program's own state and
                                         # constants (evaluated at load to bound memory)
    max_work: int = 1 << 34              # elements the kernels of one call touch (or 4096x
                                         # the elements of the file's tensors, if more)
    max_loop_iterations: int = 10_000    # iterations of one while_loop call, those of the
                                         # loops nested in its body included (and of those
                                         # in one map/scan call's body) (checked as it
                                         # runs: a loop that never ends would hang the call)
    max_string: int = 1 << 12            # a string argument of a graph call
    max_exponent: int = 64               # |exponent| / shift of int pow and shifts in a graph
    max_repeat: int = 1 << 16            # a list argument's length in a graph call
    max_json_string: int = 1 << 20       # bytes of one string in the program document
    max_text_bytes: int = 64 << 20       # memory of the header's strings (an astral
                                         # character makes its string 4 bytes a character)


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
_QUOTE, _COMMA, _OPEN_L, _OPEN_D, _CLOSE_L, _CLOSE_D = 34, 44, 91, 123, 93, 125


def json_shape(raw: bytes, budgets: Budgets, where: str, max_depth: int | None = None,
               count_values: bool = True, max_string: int | None = None) -> int:
    """Refuse a JSON text with too many values, too deep nesting or (``max_string``) too
    long a string, before parsing it.

    The counts are upper bounds read off the bytes, a megabyte at a time (strings masked
    out): parsing costs a bounded multiple of what they allow, never a surprise, and so
    does counting.  Returns the count of values.  (The safetensors header bounds its
    values per tensor instead: ``count_values=False``.)
    """
    # escaped backslashes out first, then escaped quotes: every quote left delimits a string
    clean = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    limit = budgets.max_json_depth if max_depth is None else max_depth
    values, depth, inside, opened = 1, 0, 0, 0
    for i in range(0, len(clean), _CHUNK):
        t = torch.frombuffer(bytearray(clean[i:i + _CHUNK]), dtype=torch.uint8)
        quote = t == _QUOTE
        ins = (torch.cumsum(quote.to(torch.int32), 0) + inside) % 2 == 1
        out = ~(ins | quote)
        values += int((((t == _COMMA) | (t == _OPEN_L) | (t == _OPEN_D)) & out).sum())
        if count_values and values > budgets.max_json_values:
            raise over_budget(where, f"about {values} JSON values, {budgets.max_json_values} "
                              "allowed", "max_json_values", values)
        step = (((t == _OPEN_L) | (t == _OPEN_D)) & out).to(torch.int32) - \
            (((t == _CLOSE_L) | (t == _CLOSE_D)) & out).to(torch.int32)
        run = torch.cumsum(step, 0)
        if len(run) and depth + int(run.max()) > limit:
            raise over_budget(where, f"JSON nested deeper than {limit}", "max_json_depth")
        depth += int(run[-1]) if len(run) else 0
        if max_string is not None:
            opened = _longest(quote, i, inside, opened, max_string, where)
        inside = (inside + int(quote.sum())) % 2
    if max_string is not None and inside and len(clean) - opened - 1 > max_string:
        _long(len(clean) - opened - 1, max_string, where)
    return values


def _longest(quote: torch.Tensor, base: int, inside: int, opened: int, max_string: int,
             where: str) -> int:
    """Refuse a string longer than ``max_string`` among those this chunk closes; return
    where the string still open at its end was opened."""
    pos = torch.nonzero(quote).flatten() + base
    if not len(pos):
        if inside and base + len(quote) - opened - 1 > max_string:
            _long(base + len(quote) - opened - 1, max_string, where)
        return opened
    if inside:
        pos = torch.cat([torch.tensor([opened]), pos])
    if len(pos) >= 2:
        lengths = pos[1::2][:len(pos) // 2] - pos[0::2][:len(pos) // 2] - 1
        if int(lengths.max()) > max_string:
            _long(int(lengths.max()), max_string, where)
    if len(pos) % 2:
        opened = int(pos[-1])
        if base + len(quote) - opened - 1 > max_string:
            _long(base + len(quote) - opened - 1, max_string, where)
    return opened


def _long(n: int, max_string: int, where: str) -> None:
    raise over_budget(where, f"a string of about {n} bytes, {max_string} allowed",
                      "max_json_string", n)


_ASTRAL = re.compile(rb"[\xf0-\xf4]|\\u[dD][89abAB]")  # UTF-8 lead byte or escape
_WIDE = re.compile(rb"[\xc4-\xef]|\\u(?:0[1-9a-fA-F]|[1-9a-fA-F])")  # U+0100 and up


def text_cost(raw: bytes) -> int:
    """An upper bound of the memory the strings of a JSON text take once parsed: Python
    stores a string at 1, 2 or 4 bytes a character, by its widest character."""
    if raw.isascii() and b"\\u" not in raw:
        return len(raw)
    bare = raw.replace(b"\\\\", b"")  # (what is left of a backslash starts an escape)
    if _ASTRAL.search(bare):
        return 4 * len(raw)
    return 2 * len(raw) if _WIDE.search(bare) else len(raw)
