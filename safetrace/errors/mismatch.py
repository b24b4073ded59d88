"""The run-time kinds of the catalogue: what an exported program's input checks raise
(``InputMismatchError`` subclasses and their builders), before anything is computed."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from safetrace.errors.base import InputMismatchError, Where

# torch's ``ep.module()`` checks an input against the program's guards with
# ``torch._assert`` ("Guard failed: ...", an AssertionError); with ``check_guards=False``
# (and before torch 2.8) its pre-hook raises RuntimeError ("Expected input at ...")
_GUARD: tuple[str, ...] = ("AssertionError", "RuntimeError")


class WrongInputCount(InputMismatchError):
    """The call passed a different number of (flattened) inputs."""

    kind = "wrong-input-count"


def wrong_input_count(got: int, expected: int) -> WrongInputCount:
    return WrongInputCount(f"expected {expected} flattened inputs, got {got}")


class WrongStructure(InputMismatchError):
    """The call's containers (lists, dicts, dataclasses, keywords) differ from export's."""

    kind = "wrong-structure"


def wrong_structure(why: str, fix: str = "") -> WrongStructure:
    """``why``: where the structures first differ; ``fix``: the call to make instead."""
    return WrongStructure(f"the inputs' structure differs from the exported one: {why}",
                          fix=fix)


class WrongInputType(InputMismatchError):
    """A tensor was expected (a tensor with data: not on the meta device)."""

    kind = "wrong-input-type"
    torch_classes: ClassVar[tuple[str, ...]] = ("RuntimeError",)  # (the pre-hook's)


def wrong_input_type(path: str, got: Any) -> WrongInputType:
    where = Where(input=path)
    if getattr(got, "is_meta", False):
        return WrongInputType(f"{path}: expected a tensor with data, got one on the meta "
                              f"device.", fix="pass a tensor with data on a real device "
                              "(cpu, cuda, ...)", where=where)
    return WrongInputType(f"{path}: expected a Tensor, got {type(got).__name__}", where=where)


class WrongDtype(InputMismatchError):
    """A tensor input has another dtype than at export."""

    kind = "wrong-dtype"
    torch_classes: ClassVar[tuple[str, ...]] = _GUARD


def wrong_dtype(path: str, got: Any, expected: Any) -> WrongDtype:
    return WrongDtype(f"{path}: expected dtype {expected}, got {got}",
                      fix=f"pass {path}.to({expected})", where=Where(input=path))


class WrongRank(InputMismatchError):
    """A tensor input has another number of dims than at export."""

    kind = "wrong-rank"
    torch_classes: ClassVar[tuple[str, ...]] = ("RuntimeError",)  # (the pre-hook's)


def wrong_rank(path: str, shape: list, expected: tuple) -> WrongRank:
    return WrongRank(f"{path}: expected a tensor with {len(expected)} dims (shape "
                     f"[{', '.join(expected)}]), got {len(shape)} dims (shape {shape})",
                     where=Where(input=path))


class WrongSize(InputMismatchError):
    """A dim has a size the program was not exported for (static, required or related)."""

    kind = "wrong-size"
    torch_classes: ClassVar[tuple[str, ...]] = _GUARD


def static_size(path: str, dim: int, shape: list, size: int, spec: str) -> WrongSize:
    """``spec``: a dynamic_shapes value that would declare the dim dynamic."""
    return WrongSize(
        f"{path}.shape[{dim}]: expected {size}, got {shape[dim]} (dim {dim} was static at "
        f"export; input shape {shape}).",
        fix=f"pass a tensor with {path}.shape[{dim}] == {size}, or export with "
            f"{path}.shape[{dim}] declared dynamic, e.g. {spec}", where=Where(path, dim),
        torch_words=f"Expected input at {path}.shape[{dim}] to be equal to {size}, but got "
                    f"{shape[dim]}")


def required_size(path: str, dim: int, shape: list, size: int, why: str) -> WrongSize:
    return WrongSize(f"{path}.shape[{dim}] = {shape[dim]}, but the program requires {size}"
                     f"{why} (input shape {shape})", where=Where(path, dim),
                     torch_words=f"Expected input at {path}.shape[{dim}] to be equal to {size}"
                                 f", but got {shape[dim]}")


def related_size(path: str, dim: int, shape: list, text: str, value: int,
                 why: str) -> WrongSize:
    return WrongSize(f"{path}.shape[{dim}] = {shape[dim]}, but it must equal {text} = {value}"
                     f"{why} (input shape {shape})", where=Where(path, dim),
                     torch_words=f"Expected input at {path}.shape[{dim}] to be equal to "
                                 f"{value}, but got {shape[dim]}")


class OutOfRange(InputMismatchError):
    """A dynamic size lies outside its symbol's range."""

    kind = "out-of-range"
    torch_classes: ClassVar[tuple[str, ...]] = _GUARD


def out_of_range(where: str, got: int, op: str, bound: int, why: str) -> OutOfRange:
    fix = f"pass an input whose {where} is {op} {bound}"
    if why.startswith(" (as declared:"):  # the user's range, not the program's need
        fix += (f", or export again with a declared range that admits {got} "
                f"({'max' if op == '<=' else 'min'}={got} in that Dim)")
        if op == ">=" and bound <= 2:  # (torch's input check leaves out such a min; `got`
            # may be a value known only at run time: an AOTInductor package's message)
            why += (f"; torch.export's program runs sizes 0 and 1 unchecked for a Dim whose "
                    f"min is {bound}, traced for {bound} and more (a branch on the size "
                    f"gives the other side's answer), safetrace's refuses them")
    else:
        fix += f": the traced program does not work for {got} (the line above says why)"
    return OutOfRange(f"{where} = {got}, but it must be {op} {bound}{why}", fix=fix,
                      where=Where(input=where),
                      torch_words=f"Expected input at {where} to be {op} {bound}, but got {got}")


class WrongLayout(InputMismatchError):
    """The program asked for a memory layout and was traced for contiguous inputs."""

    kind = "wrong-layout"


def wrong_layout(path: str, strides: tuple, offset: int, origin: str,
                 row_major: tuple | None = None) -> WrongLayout:
    """``row_major``: the strides the program read at export (it asked for ``stride()``),
    which dims of size 0 / 1 must have too (``.contiguous()`` keeps theirs)."""
    if row_major is not None:
        return WrongLayout(
            f"{path}: expected row-major strides {row_major} (storage offset 0), got strides "
            f"{strides} and offset {offset}; the program read strides{origin} and was traced "
            f"for row-major inputs.",
            fix=f"pass {path}.clone(memory_format=torch.contiguous_format)",
            where=Where(input=path))
    return WrongLayout(
        f"{path}: expected a contiguous tensor, got strides {strides} and "
        f"offset {offset}; the program asked for a memory layout{origin} and was traced for "
        f"contiguous inputs.", fix=f"pass {path}.contiguous()", where=Where(input=path))


# the note of a branch's condition whose other side returns another dtype or rank
# (exporter/relation_splits.py): no torch.cond holds both sides, so the fix is not one
UNJOINABLE = "one graph returns one dtype and rank per output, a torch.cond's branches too"


class FailedCondition(InputMismatchError):
    """The sizes break a residual condition of the contract."""

    kind = "failed-condition"
    torch_classes: ClassVar[tuple[str, ...]] = _GUARD


def failed_condition(text: str, origin: str, kind: str = "", fix: str = "") -> FailedCondition:
    """``kind``: where the condition came from (``Contract.Condition.kind``): an op's or the
    code's own requirement, broadcasting's, or the answer the trace took of a branch;
    ``fix``: pasteable declarations that keep a branch's condition ('' if none)."""
    if text == "False":  # (a kernel's check the static example sizes broke: torch's
        # program raises the kernel's error at every call, and so does ours)
        return FailedCondition(f"every input breaks a requirement of the program, which "
                               f"the example inputs broke too{origin}")
    head = f"the inputs violate `{text}`, required{origin}"
    if kind == "requirement" and "the code catches the division by zero" in origin:
        return FailedCondition(f"{head}. Eager does not raise here: the program holds "
                               f"the code's try side only.",
                               fix=f"pass inputs where `{text}` holds, or compute the "
                                   f"division only where its divisor is not 0")
    if kind == "requirement":
        return FailedCondition(f"{head}. Eager raises for these inputs too: it is the code's "
                               f"or an op's own requirement.",
                               fix=f"pass inputs where `{text}` holds")
    if kind == "broadcast":
        return FailedCondition(f"{head}. Eager raises too where these sizes differ and none "
                               f"is 1 (broadcasting); where one is 1 it broadcasts, which the "
                               f"program was not traced for.",
                               fix=f"pass inputs where `{text}` holds")
    if kind != "branch":
        return FailedCondition(head)
    at = re.search(r" at ([^,)]+)[,)]", origin)
    line = f"at {at.group(1)}" if at else "at the line named"
    names = list(dict.fromkeys(re.findall(r"(\w+)\.shape\[", text))) or ["x"]
    ops = f"({', '.join(names)},)" if len(names) == 1 else f"({', '.join(names)})"
    if UNJOINABLE in origin:  # (relation_splits._unjoinable: a torch.cond cannot either)
        return FailedCondition(
            f"{head}. Eager does not raise here: the program was exported for one answer of "
            f"this condition {line} (the one the example inputs gave), and for these inputs "
            f"eager computes the other side, which returns another dtype or rank.",
            fix=f"pass inputs where `{text}` holds; or make both sides of the branch {line} "
                f"return the same dtype and number of dims (a `.to(dtype)`, a `reshape`): "
                f"the export then holds both")
    cond_fix = (f"or make both sides traceable: in place of the branch {line}, "
                f"out = torch.cond({text}, true_fn, false_fn, {ops})  "
                f"(true_fn / false_fn: the two sides, functions of {', '.join(names)})")
    return FailedCondition(
        f"{head}. Eager does not raise here: the program was exported for one answer of "
        f"this condition {line} (the one the example inputs gave), and for these inputs "
        f"eager computes the other side, which the program does not contain.",
        fix=f"pass inputs where `{text}` holds; "
            + (f"or export again with a range that keeps the condition: {fix}; " if fix else "")
            + cond_fix)


class WrongConstant(InputMismatchError):
    """A non-tensor input differs from the value it was specialized to."""

    kind = "wrong-constant"
    torch_classes: ClassVar[tuple[str, ...]] = _GUARD


def wrong_constant(path: str, got: Any, expected: Any) -> WrongConstant:
    if type(expected).__name__ == "ScriptObject":  # (a torchbind object: that very one)
        kind = expected._type().qualified_name().rpartition(".")[2]
        return WrongConstant(
            f"{path}: got another object than the {kind} object the program was exported "
            f"with; a TorchScript custom class object input is taken as it is, and the "
            f"program's shapes come from that object's state.",
            fix=f"pass the object the program was exported with as {path}, or export again "
                f"with this one", where=Where(input=path))
    return WrongConstant(
        f"{path}: expected {expected!r}, got {got!r}. Non-tensor inputs are specialized at "
        f"export: the graph was built for {path} = {expected!r}.",
        fix=f"call with {path}={expected!r}, or export again with the new value",
        where=Where(input=path))
