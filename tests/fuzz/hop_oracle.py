"""The fuzzer's eager oracle for torch's loop operators.

torch's ``while_loop`` and ``scan`` compile each eager call with dynamo (about 1 s each, most
of a run's time), so the long run replaces them by references in Python
(``grammar_long.reference_while_loop``, ``grammar_gaps.reference_scan``). Those references
loop on data (``bool(cond_fn(...))``), which export refuses: while this thread is inside
``st.export`` the replacement hands the call to safetrace's own entry point, so the export
traces the operator the user wrote and only eager runs the reference. (Before session 33
the replacement was the bare reference: every exported while_loop program of the long run
was refused at export, untested.)
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from safetrace.trace import hops
from safetrace.trace.current import exporting
from tests.fuzz.grammar_gaps import reference_scan
from tests.fuzz.grammar_long import reference_while_loop


def routed(reference: Callable, ours: Callable) -> Callable:
    """`reference` for eager calls, `ours` (safetrace's entry point) inside an export."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return (ours if exporting() else reference)(*args, **kwargs)

    call.__name__ = getattr(reference, "__name__", "reference")
    return call


def references() -> dict:
    """``torch._higher_order_ops`` attribute -> its replacement for the oracle."""
    return {"while_loop": routed(reference_while_loop, hops.while_loop),
            "scan": routed(reference_scan, hops.scan)}


def install() -> Callable[[], None]:
    """Replace torch's while_loop and scan by the oracle's; returns the undo."""
    mod = torch._higher_order_ops
    saved = {name: getattr(mod, name) for name in references()}
    for name, fn in references().items():
        setattr(mod, name, fn)

    def undo() -> None:
        for name, fn in saved.items():
            setattr(mod, name, fn)
    return undo
