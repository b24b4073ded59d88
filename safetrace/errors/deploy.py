"""Catalogue kinds of the deploy paths (``st.to_aoti``): a compiled artifact that would not
be the exported program."""

from __future__ import annotations

from safetrace.errors.base import ConversionError, InputMismatchError, Where

__all__ = ["CompiledSpecialized", "compiled_specialized", "compiled_without_zero",
           "WrongDevice", "wrong_device",
           "PackageUnchecked", "package_unchecked"]


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
        f"and such calls pass the package's input checks (they are inside the declared "
        f"space), so it would answer them silently wrong.",
        fix="export the dims the mismatch names as static (leave them out of dynamic_shapes) "
            "and compile one package per size, or run the program itself (ep.module())")


def compiled_without_zero(where: str, size: str, tool: str) -> CompiledSpecialized:
    """The check a compiled package makes of a size of 0 the program accepts but the
    compiler sized a value of at a size of at least 1 (``x[:1]``'s rows ``min(n, 1)`` as 1:
    the package would read a row of an empty tensor)."""
    return CompiledSpecialized(
        f"{where} is 0: the program takes it, but {tool} compiled a value of {size} rows or "
        f"elements as if {where} were at least 1 (its sizes are never 0), so this package "
        f"refuses {where} == 0 rather than read outside its input.",
        fix=f"call the program itself (ep.module()) for inputs with {where} == 0, or export "
            f"the dim with min=1 where 0 never occurs")


class WrongDevice(InputMismatchError):
    """A compiled package (AOTInductor) was given a tensor on another device type than it
    was compiled for: its kernels would read that memory as their own."""

    kind = "wrong-device"


def wrong_device(path: str, got: object, expected: str) -> WrongDevice:
    return WrongDevice(f"{path}: the package was compiled for {expected} tensors, got a "
                       f"tensor on {got}", fix=f"pass {path}.to({expected!r})",
                       where=Where(input=path))


class PackageUnchecked(ConversionError):
    """``st.to_aoti`` could not write the program's input checks into the package (the
    graph inductor compiled does not take the program's inputs as the contract lists
    them); a package without them would run inputs the program refuses."""

    kind = "package-unchecked"


def package_unchecked(tool: str, why: str) -> PackageUnchecked:
    return PackageUnchecked(
        f"{tool} could not place the program's input checks in the package: {why}; "
        f"without them the package would run (and read out of bounds on) inputs the "
        f"program refuses.",
        fix="compile ep.to_torch() with torch._inductor.aoti_compile_and_package and check "
            "every input with ep.check_inputs(args) before calling the package")
