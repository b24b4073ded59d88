"""safetrace's ONNX forms in the one decomposition ``torch.onnx.export`` runs.

``st.to_onnx`` decomposes a few operators with forms of its own (masked attention, whose
ONNX function differs from torch on fully masked rows; operators no ONNX function covers).
Run as a separate ``run_decompositions`` before ``torch.onnx.export``, they cost a whole
retrace of the program through AOT autograd (torch.onnx's own ``run_decompositions``
follows): on an attention model that was as long as the rest of the export.  Here they go
into the table torch.onnx decomposes with: its table builder
(``_decomp.create_onnx_friendly_decomposition_table``) is replaced while a ``st.to_onnx``
call runs, and on a thread inside one returns torch's table with the forms added (an
operator's form replaces torch's decomposition, or its ONNX function where torch has one);
on any other thread it is torch's own.  One retrace: the forms' own calls are decomposed
with torch's table, as the second pass decomposed them.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

from safetrace.interop.shared_patch import SharedPatch

_PATCH = SharedPatch()
_HERE = threading.local()  # .forms: this thread's st.to_onnx calls' forms, innermost last


def _module() -> Any:
    from torch.onnx._internal.exporter import _decomp

    return _decomp


def can_fold() -> bool:
    """torch.onnx builds its table with the function replaced here (else the caller runs
    its forms as a decomposition of their own first)."""
    return callable(getattr(_module(), "create_onnx_friendly_decomposition_table", None))


@contextlib.contextmanager
def folded(forms: dict) -> Iterator[None]:
    """While active, this thread's ``torch.onnx.export`` decomposes with `forms` added to
    its table."""
    stack = _HERE.__dict__.setdefault("forms", [])
    stack.append(forms)
    try:
        with _PATCH.applied(_module(), "create_onnx_friendly_decomposition_table",
                            _with_forms):
            yield
    finally:
        stack.pop()


def _with_forms(*args: Any, **kwargs: Any) -> dict:
    table = _PATCH.original(*args, **kwargs)
    stack = getattr(_HERE, "forms", None)
    if stack:  # (another thread's torch.onnx.export meanwhile: torch's table)
        table = {**table, **stack[-1]}
    return table
