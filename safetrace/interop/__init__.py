"""The bridge out: a finished safetrace program as a ``torch.export.ExportedProgram``.

This package is the only library code that touches torch.export, ShapeEnv and FakeTensor,
and it imports them only inside the functions below, when the user asks for a conversion:
tracing, shape reasoning and input checks never go through it.

* :func:`to_torch` -- ``ep.to_torch()``: validate()-clean, same accept/reject contract.
* :func:`to_onnx` -- ``st.to_onnx(ep, path)``: through ``torch.onnx.export(ep.to_torch())``,
  with ONNX dims named after the user's Dims.
* :func:`to_executorch` -- ``st.to_executorch(ep, path)``: an ExecuTorch ``.pte`` through
  ``executorch.exir.to_edge(ep.to_torch()).to_executorch()``.
* :func:`to_aoti` -- ``st.to_aoti(ep, path)``: an AOTInductor ``.pt2`` package whose input
  checks survive inductor's own assumptions about sizes.
* :func:`run_decompositions` -- ``ep.run_decompositions()``: retraced by safetrace's own
  tracer into core ATen operators, the same contract.
"""

from __future__ import annotations

import os
from typing import Any

from safetrace.errors import ExportError
from safetrace.errors.interop import conversion_crashed
from safetrace.interop.aoti import to_aoti as _to_aoti
from safetrace.interop.environ import env_value
from safetrace.interop.decompose import run_decompositions as _decompose
from safetrace.interop.executorch import export_executorch
from safetrace.interop.onnx import export_onnx
from safetrace.interop.torch_export import convert, module_call_graph
from safetrace.progress import task


def to_torch(ep: Any, *, strict: bool = False, verify: bool | None = None) -> Any:
    """Convert a safetrace ExportedProgram into a ``torch.export.ExportedProgram``.

    ``verify``: also run torch's meta kernels on every node and compare their shapes with
    ours (slower; default: the environment variable ``SAFETRACE_VERIFY_TO_TORCH=1``)."""
    if verify is None:
        verify = _verify_default()
    try:
        return convert(ep, strict=strict, verify=verify)
    except ExportError:
        raise
    except Exception as exc:  # noqa: BLE001 - any other failure, named as a conversion's
        raise conversion_crashed(f"{type(exc).__name__}: {exc}", _innermost(exc)) from exc


def _verify_default() -> bool:
    """``SAFETRACE_VERIFY_TO_TORCH`` set to 1, true or yes."""
    return env_value("SAFETRACE_VERIFY_TO_TORCH") in ("1", "true", "yes")


def _innermost(exc: BaseException) -> str:
    """``torch/export/exported_program.py:1234``: where `exc` was raised."""
    tb = exc.__traceback__
    if tb is None:
        return "<unknown location>"
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = tb.tb_frame.f_code.co_filename
    parts = path.replace(os.sep, "/").split("/")
    for root in ("safetrace", "torch"):
        if root in parts:
            path = "/".join(parts[len(parts) - 1 - parts[::-1].index(root):])
            break
    return f"{path}:{tb.tb_lineno}"


def to_onnx(ep: Any, path: Any = None, *, verbose: bool | None = None, **kwargs: Any) -> Any:
    """Export a safetrace program to ONNX through ``torch.onnx.export(ep.to_torch())``.

    ``verbose``: progress on standard error (default: only on a terminal); True also
    turns on ``torch.onnx.export``'s own messages, False silences both."""
    with task("st.to_onnx: converting, then torch.onnx.export", verbose):
        return export_onnx(ep, path, verbose=bool(verbose), **kwargs)


def to_executorch(ep: Any, path: Any = None, *, partitioner: Any = None,
                  compile_config: Any = None) -> Any:
    """Lower a safetrace program to ExecuTorch (``to_edge(ep.to_torch()).to_executorch()``);
    the ``.pte`` is written to `path` if given.  Needs ``pip install 'safetrace[executorch]'``.

    The program's input checks (and its checks on values read from data) are written into
    the ``.pte`` as instructions that run before the program's operators: a failed one stops
    ``execute`` with ``InvalidArgument`` and the runtime's log names its number, the entry
    of the file's constant method ``safetrace_input_checks`` that says what failed."""
    return export_executorch(ep, path, partitioner=partitioner, compile_config=compile_config)


def to_aoti(ep: Any, path: Any = None, *, inductor_configs: dict | None = None,
            verbose: bool | None = None) -> str:
    """Compile a safetrace program with AOTInductor into a ``.pt2`` package (written to
    `path`, or a temporary file) and return its path; load it with
    ``torch._inductor.aoti_load_package``.  Every input the program refuses, the package
    refuses too (checks torch's compile would assume away are added as tensor arithmetic
    on the input sizes)."""
    with task("st.to_aoti: converting, then AOTInductor", verbose):
        return _to_aoti(ep, path, inductor_configs=inductor_configs)


def run_decompositions(ep: Any, decomp_table: dict | None = None, *, export: Any) -> Any:
    """The program retraced by safetrace's tracer (`export`, i.e. ``st.export``) with
    `decomp_table` (default: core ATen)."""
    return _decompose(ep, decomp_table, export)


__all__ = ["module_call_graph", "run_decompositions", "to_aoti", "to_executorch", "to_onnx",
           "to_torch"]
