"""Builders of the errors a user switching from torch.export meets (issue 21): constructs
torch.export accepts that safetrace records differently or refuses, each naming the
construct and the fix."""

from __future__ import annotations

from safetrace.errors.base import OpShapeError, UnsupportedOpError, Where


def cond_output_kinds(where: str, index: int, branches: list[tuple[str, str, str]]) -> \
        OpShapeError:
    """torch.cond's branches return, at one output, values that are not all tensors or
    all ints (`branches`: (name, location, what it returned))."""
    shown = "\n".join(f"  {name} ({loc}): {what}" for name, loc, what in branches)
    return OpShapeError(
        f"torch.cond at {where}: output {index} must be a tensor in every branch or an int "
        f"in every branch (torch.cond takes tensors and ints, as torch.export does); the "
        f"branches return:\n{shown}",
        fix="return the same kind from both branches: a tensor (torch.tensor(v), "
            "x.new_full((), v)) for a float or a bool, an int for a size",
        where=Where(source=where), op="torch.cond")


def cond_size_output(where: str, index: int, sizes: list[tuple[str, str, str]]) -> \
        UnsupportedOpError:
    """torch.cond's branches return a symbolic size at one output (`sizes`: (name,
    location, size) of each branch that does)."""
    shown = "\n".join(f"  {name} ({loc}): {size}" for name, loc, size in sizes)
    return UnsupportedOpError(
        f"torch.cond at {where}: output {index} is a dynamic size; torch.cond returns "
        f"tensors and constant ints only (eager torch.cond and torch.export refuse a size "
        f"once shapes are dynamic: 'unsupported branch return type'):\n{shown}",
        fix="return the size as a tensor (x.new_tensor(x.shape[0])) and read it after the "
            "cond with .item(), or compute it outside the cond: sizes are known there",
        where=Where(source=where), op="torch.cond")
