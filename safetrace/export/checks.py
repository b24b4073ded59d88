"""Run-time input checks of an exported program, generated once as straight-line Python.

Every call is checked before computing: the structure of the inputs, then per tensor its
type, dtype, rank and every static size, per non-tensor input its specialized value.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from safetrace.errors import InputMismatchError


def _dims_spec(path: str, shape: tuple, dim: int) -> str:
    return f"dynamic_shapes={{{path.split('[')[0].split('.')[0]!r}: {{{dim}: Dim.DYNAMIC}}}}"


class CheckBuilder:
    """Accumulates check code lines and the constants they refer to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.env: dict[str, Any] = {"Tensor": torch.Tensor, "_fail": _fail}

    def const(self, value: Any) -> str:
        name = f"_k{len(self.env)}"
        self.env[name] = value
        return name

    def tensor(self, i: int, path: str, dtype: torch.dtype, shape: tuple) -> None:
        v = f"v{i}"
        p = self.const(path)
        self.lines.append(f"{v} = leaves[{i}]")
        self.lines.append(f"if not isinstance({v}, Tensor): _fail({p}, 'type', {v}, None)")
        self.lines.append(f"if {v}.dtype is not {self.const(dtype)}: "
                          f"_fail({p}, 'dtype', {v}.dtype, {self.const(dtype)})")
        self.lines.append(f"sh{i} = {v}.shape")
        self.lines.append(f"if len(sh{i}) != {len(shape)}: _fail({p}, 'rank', sh{i}, "
                          f"{self.const(tuple(shape))})")
        for d, size in enumerate(shape):
            if isinstance(size, int):
                self.lines.append(f"if sh{i}[{d}] != {size}: _fail({p}, 'static', sh{i}, "
                                  f"({d}, {size}))")

    def constant(self, i: int, path: str, value: Any) -> None:
        k = self.const(value)
        p = self.const(path)
        self.lines.append(f"if type(leaves[{i}]) is not type({k}) or leaves[{i}] != {k}: "
                          f"_fail({p}, 'value', leaves[{i}], {k})")

    def build(self, n: int) -> Callable[[list], None]:
        body = [f"if len(leaves) != {n}: _fail('inputs', 'count', len(leaves), {n})"]
        body += self.lines or []
        src = "def check_inputs(leaves):\n" + "".join(f"    {line}\n" for line in body)
        src += "    return None\n"
        code = compile(src, "<safetrace input checks>", "exec")
        scope = dict(self.env)
        exec(code, scope)  # noqa: S102  (our own generated code, never from a file)
        fn = scope["check_inputs"]
        fn.__source__ = src
        return fn


def _fail(path: str, kind: str, got: Any, expected: Any) -> None:
    if kind == "count":
        msg = f"expected {expected} flattened inputs, got {got}"
    elif kind == "type":
        msg = f"{path}: expected a Tensor, got {type(got).__name__}"
    elif kind == "dtype":
        msg = f"{path}: expected dtype {expected}, got {got}"
    elif kind == "rank":
        msg = (f"{path}: expected a tensor with {len(expected)} dims "
               f"(shape {list(expected)}), got {len(got)} dims (shape {list(got)})")
    elif kind == "static":
        d, size = expected
        msg = (f"{path}.shape[{d}]: expected {size}, got {got[d]} "
               f"(dim {d} was static at export; input shape {list(got)}).\n"
               f"Fix: pass a tensor with {path}.shape[{d}] == {size}, or export with "
               f"{path}.shape[{d}] declared dynamic, e.g. "
               f"{_dims_spec(path, tuple(got), d)}")
    elif kind == "value":
        msg = (f"{path}: expected {expected!r}, got {got!r}. Non-tensor inputs are specialized "
               f"at export: the graph was built for {path} = {expected!r}.\n"
               f"Fix: call with {path}={expected!r}, or export again with the new value")
    else:
        msg = f"{path}: {kind}"
    raise InputMismatchError(msg)
