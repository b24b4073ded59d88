"""Catalogue kinds of the deploy paths (``st.to_aoti``): a compiled artifact that would not
be the exported program."""

from __future__ import annotations

from safetrace.errors.base import ConversionError

__all__ = ["CompiledSpecialized", "compiled_specialized"]


class CompiledSpecialized(ConversionError):
    """A compiled artifact (AOTInductor) computes something else than the program at a size
    the program accepts: the compiler specialized a dim the program keeps dynamic."""

    kind = "compiled-specialized"


def compiled_specialized(tool: str, shapes: str, got: str, want: str) -> CompiledSpecialized:
    return CompiledSpecialized(
        f"{tool} compiled a different program: called with input shapes {shapes} (inside the "
        f"declared space) the compiled package returns {got} where the exported program "
        f"returns {want}. The compiler specialized a dynamic dim to the example's size (it "
        f"decomposed an op into a loop over that dim, or assumed what the program does not), "
        f"and its package checks no input size, so it would answer such calls silently "
        f"wrong.",
        fix="export the dims the mismatch names as static (leave them out of dynamic_shapes) "
            "and compile one package per size, or run the program itself (ep.module())")
