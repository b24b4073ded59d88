"""torch.export's own sentence for a refusal of the same situation, which safetrace's
messages quote beside their own (torch's tests, and users' ``except`` clauses, match these
phrases).  Plain text from names and places: no engine, no torch."""

from __future__ import annotations


def quoted(words: str) -> str:
    return f" (torch.export's words: {words})"


def specialized(place: str, size: int, dim: str | None = None, derived: str | None = None,
                root: str | None = None) -> str:
    """A declared dim the trace made one size: `dim` names a named Dim, `derived` and
    `root` a derived dim (``dy - 6`` of ``dy``)."""
    if derived is not None:
        return (f"Specializations unexpectedly required ({root})! solving the guards "
                f"generated for {derived} = {place} resulted in a specialized value of {size}")
    return f"You marked {dim or place} as dynamic but your code specialized it to be a " \
           f"constant ({size})"


def not_all_values(name: str, place: str, guard: str, declared: str = "") -> str:
    """Values of Dim `name` (at `place`) in its declared range fail `guard`."""
    where = f" {declared}" if declared else ""
    return f"Not all values of {name} = {place} in the specified range{where} satisfy the " \
           f"generated guard {guard}"


def related(name: str, place: str, others: str, expr: str, equal: bool) -> str:
    """Dim `name` (at `place`) must be `expr` of `others` (``dx = x.shape[0]``)."""
    if equal:
        return f"The values of {name} = {place} and {others} must always be equal"
    return f"The values of {name} = {place} must always be related to the values of " \
           f"{others} by {name} = {expr}"
