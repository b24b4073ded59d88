"""The builders of ``SpecStructureError``: a ``dynamic_shapes`` whose structure does not fit
the inputs (keys, lengths, nesting, the forms of ``*args`` / ``**kwargs``), a
``ShapesCollection`` or ``AdditionalInputs`` that does not match them; and of
``SpecExampleError``: example inputs that disagree with the spec (a size, a range, a Dim
shared by inputs).

``where`` is the spec's path (``dynamic_shapes['x'][0]``), ``path`` the input's (``x[0]``);
``picture`` is the input tree above the spec tree (two lines, from the exporter)."""

from __future__ import annotations

import math
import re

from typing import Any

from safetrace.errors.base import SpecError, Where

__all__ = [
    "SpecStructureError", "AdditionalInputRefused", "additional_refused", "torch_collection_refused", "spec_structure", "spec_keys", "spec_count", "spec_form",
    "spec_given_twice", "spec_var_positional", "spec_var_keyword", "spec_on_constant",
    "spec_shape", "spec_dim_out_of_range", "spec_rank", "spec_tensor_form",
    "spec_signature", "collection_entry", "additional_structure",
    "SpecExampleError", "spec_example", "example_size", "example_not_derived",
    "example_out_of_range", "examples_out_of_range", "dim_name_clash", "dim_sizes_disagree", "additional_value",
    "additional_rank",
]


class SpecStructureError(SpecError):
    """dynamic_shapes does not have the structure of the inputs (keys, lengths, nesting)."""

    kind = "spec-structure"


def spec_structure(where: str, cause: str, fix: str = "") -> SpecStructureError:
    return SpecStructureError(f"{where}: {cause}" if where else cause, fix=fix,
                              where=Where(input=where or None))


def spec_keys(unknown: list[str], inputs: list[str], var_hint: str) -> SpecStructureError:
    """Keys of a dict spec that name no input; ``var_hint``: how ``*args``/``**kw`` are keyed
    (`` (or {'xs': (spec0, spec1, ...)} for *xs)``, or empty)."""
    return SpecStructureError(
        f"dynamic_shapes has key(s) {unknown} that are not inputs of the program; the inputs "
        f"are {inputs}.", fix=f"key dynamic_shapes by the argument names {inputs}{var_hint}",
        where=Where(input="dynamic_shapes"))


def spec_count(given: int, inputs: list[str], picture: str) -> SpecStructureError:
    """A tuple spec with ``given`` entries for the ``inputs``."""
    return SpecStructureError(
        f"dynamic_shapes has {given} entries but the program takes {len(inputs)} inputs "
        f"({inputs}).\n{picture}",
        fix="give one entry per input (None for inputs without dynamic dims)",
        where=Where(input="dynamic_shapes"))


def spec_form(got: str) -> SpecStructureError:
    """``got``: the type name of the dynamic_shapes given."""
    return SpecStructureError(
        f"dynamic_shapes must be a dict keyed by argument name, a tuple with one entry per "
        f"input, or a ShapesCollection; got {got}",
        fix="dynamic_shapes={'x': {0: Dim('batch')}} (or a tuple: ({0: Dim('batch')},))",
        where=Where(input="dynamic_shapes"))


def spec_given_twice(key: str, holder: str) -> SpecStructureError:
    """Input ``key`` has an entry of its own and one in the ``*args``/``**kw`` entry
    ``holder``."""
    return SpecStructureError(
        f"dynamic_shapes gives input {key} both under {holder!r} and as {key!r}.",
        fix="keep one of the two entries", where=Where(input=key))


def spec_var_positional(name: str, given: int, got: Any) -> SpecStructureError:
    """The entry of ``*name``, which received ``given`` inputs, is not a tuple of as many
    specs (``got``: its length or type name)."""
    nones = ", ".join(["None"] * given) + ("," if given == 1 else "")
    return SpecStructureError(
        f"dynamic_shapes[{name!r}] is the spec of *{name}, which received {given} positional "
        f"input(s), so it must be a tuple of {given} specs (one per input); got {got}.",
        fix=f"dynamic_shapes={{{name!r}: ({nones})}} with a spec in place of each None",
        where=Where(input=f"dynamic_shapes[{name!r}]"))


def spec_var_keyword(name: str, received: list[str], got: Any) -> SpecStructureError:
    """The entry of ``**name`` is not a dict keyed by the keyword inputs it ``received``."""
    entries = ", ".join(f"{k!r}: None" for k in received)
    return SpecStructureError(
        f"dynamic_shapes[{name!r}] is the spec of **{name}, which received the keyword "
        f"input(s) {received}, so it must be a dict keyed by those names; got {got!r}.",
        fix=f"dynamic_shapes={{{name!r}: {{{entries}}}}} with a spec in place of each None",
        where=Where(input=f"dynamic_shapes[{name!r}]"))


def spec_on_constant(where: str, path: str, value: Any, spec: Any) -> SpecStructureError:
    """A dim spec for a non-tensor input ``value``."""
    return SpecStructureError(
        f"{where}: input {path} is a {type(value).__name__} ({value!r}), which has no dims; "
        f"its spec must be None, got {spec!r}", fix=f"{where} = None (or leave it out)",
        where=Where(input=path))


def spec_shape(where: str, path: str, expected: str, picture: str) -> SpecStructureError:
    """The spec's container for input ``path`` does not match it (``expected``: what it
    must be, ``a dict keyed like the input``)."""
    return SpecStructureError(
        f"{where}: the spec does not match input {path}: expected {expected}.\n{picture}",
        fix=f"give {where} the containers of {path} (None for parts without dynamic dims)",
        where=Where(input=path))


def spec_dim_out_of_range(where: str, dim: Any, shape: list) -> SpecStructureError:
    """A dict spec ``{dim: ...}`` with a dim the tensor of ``shape`` does not have."""
    n = len(shape)
    return SpecStructureError(
        f"{where}: dim {dim!r} is out of range for a tensor of shape {shape} ({n} dims)",
        fix=f"key the dict by dims 0 to {n - 1} (or -{n} to -1)" if n else
            f"{where} = None (a 0-dim tensor has no dims)", where=Where(input=where))


def spec_rank(where: str, given: int, shape: list, example: str) -> SpecStructureError:
    """A tuple spec with ``given`` entries for a tensor of ``shape``; ``example``: a spec
    of the right length."""
    return SpecStructureError(
        f"{where}: the spec has {given} entries but the tensor has {len(shape)} dims (shape "
        f"{shape}).", fix=f"one entry per dim, e.g. {example} or a dict {{dim: Dim(...)}}",
        where=Where(input=where))


def spec_tensor_form(where: str, spec: Any) -> SpecStructureError:
    return SpecStructureError(
        f"{where}: a tensor's spec must be a tuple (one entry per dim), a dict {{dim: ...}} or "
        f"None; got {spec!r}", fix=f"{where} = {{0: Dim('batch')}} (the dims you make dynamic)",
        where=Where(input=where))


def spec_signature(signature: str, why: str) -> SpecStructureError:
    """The example inputs do not bind to the model's ``signature`` (``why``: Python's
    TypeError)."""
    return SpecStructureError(
        f"dynamic_shapes: the example inputs do not fit the signature {signature}: {why}",
        fix="pass the same args and kwargs as to st.export", where=Where(input="dynamic_shapes"))


def collection_entry(shape: list, inputs: str, target: str, entry: Any) -> SpecStructureError:
    """A ShapesCollection entry for a tensor (of ``shape``) that is not an input;
    ``inputs``: the tensor inputs with their shapes; ``target``: the likely input."""
    return SpecStructureError(
        f"dynamic_shapes: the ShapesCollection has an entry for a tensor of shape {shape} "
        f"that is not one of the inputs (entries are matched by identity, not by shape or "
        f"value: a copy or a new tensor of the same shape does not match). The tensor inputs "
        f"are {inputs}.", fix=f"key the collection by the tensor object you pass to "
                              f"st.export:\n    sc[{target}] = {entry!r}",
        where=Where(input="dynamic_shapes"))


def additional_structure(i: int, got: Any, expected: Any) -> SpecStructureError:
    """Example ``i`` of AdditionalInputs has other containers than the export's inputs."""
    return SpecStructureError(
        f"AdditionalInputs: example {i} has another structure than the export's inputs "
        f"({got} vs {expected})",
        fix="give every example the same containers, keys and tensor positions",
        where=Where(input="dynamic_shapes"))


# -- the example inputs against the spec ----------------------------------------------------
class SpecExampleError(SpecError, ValueError):
    """The example inputs disagree with the spec (a size, a range, a shared Dim); a
    ValueError, as torch.export's errors on the examples of AdditionalInputs are."""

    kind = "spec-example"
    torch_classes = ()  # (its builders name torch's class where torch's is not a ValueError)


class AdditionalInputRefused(SpecExampleError, RuntimeError):
    """An example given in AdditionalInputs is refused by the exported program's input
    checks (a RuntimeError too, as torch.export raises it)."""


def spec_example(where: str, cause: str, fix: str) -> SpecExampleError:
    return SpecExampleError(f"{where} {cause}", fix=fix, where=Where(input=where))


# torch.export's classes where its error on the examples is not a ValueError: a size the
# spec pins or a named Dim's range (checked as it makes its symbols), and equal Dims
_VIOLATION = ("ConstraintViolationError", "UserError.CONSTRAINT_VIOLATION")


def _dim(where: str, path: str, d: int, cause: str, fix: str,
         torch_classes: tuple[str, ...] = _VIOLATION) -> SpecExampleError:
    return SpecExampleError(f"{where} {cause}", fix=fix, where=Where(input=path, dim=d),
                            torch_classes=torch_classes)


def example_size(where: str, path: str, d: int, spec: int, size: int) -> SpecExampleError:
    """The spec gives the static size ``spec``; the example's ``path.shape[d]`` is ``size``."""
    return _dim(where, path, d, f"is {spec}, but the example input has {path}.shape[{d}] = "
                                f"{size} (as torch.export says: Static shape constraint of "
                                f"{spec} does not match input size of {size}, for "
                                f"{path}.shape[{d}]).", f"use {size} or None (static), or a Dim")


def example_not_derived(where: str, path: str, d: int, derived: Any, size: int,
                        root: str) -> SpecExampleError:
    """``size`` is not ``derived`` (``2*n + 1``) for any integer value of Dim ``root``."""
    return _dim(where, path, d, f"is {derived!r}, but {path}.shape[{d}] = {size} is not of "
                                f"that form for any integer {root} (as torch.export says: "
                                f"Expected shape[{d}] = {size} of input Tensor to be of the "
                                f"form {derived!r}, where {root} is an integer)",
                "declare the dim with a Dim of its own, or give an example of that form")


def example_out_of_range(where: str, spec: str, lo: Any, hi: Any, size: int,
                         place: str = "", user: tuple | None = None,
                         works: tuple | None = None) -> SpecExampleError:
    """The example size is outside the declared range of ``spec`` (``Dim('b', max=8)``);
    ``place``: the input's dim (``x.shape[0]``), ``user``: a dim hint's (min, max) as given
    (a named Dim's range otherwise); ``works``: the (min, max) the traced program admits
    there (None: not traced)."""
    if user is None:  # torch.export's words for a named Dim
        words = f"{size} not in range [{lo}, {hi}]"
    else:
        words = _hint_conflict(size, place, user, works)
    return SpecExampleError(
        f"{where} {_outside(spec, lo, hi, size, works)} (as torch.export says: {words}).",
        fix=f"widen the range to admit {size} ({_bound(lo, size)}={size}), or change the "
            f"example",
        where=Where(input=where), torch_classes=_VIOLATION if user is None else ())


def examples_out_of_range(conflicts: list[tuple]) -> SpecExampleError:
    """Example sizes outside their dim hints' ranges, every one at once as torch.export
    lists them (each conflict: ``example_out_of_range``'s arguments, ``user`` given)."""
    if len(conflicts) == 1:
        return example_out_of_range(*conflicts[0])
    conflicts = [(*c, None)[:8] for c in conflicts]  # (no traced range: None)
    ours = "\n".join(f"  - {where} {_outside(spec, lo, hi, size, works)}"
                     for where, spec, lo, hi, size, _, _, works in conflicts)
    theirs = "\n".join(f"- {_hint_conflict(size, place, user, works)}."
                       for _, _, _, _, size, place, user, works in conflicts)
    fixes = "; ".join(f"{place}: {_bound(lo, size)}={size}"
                      for _, _, lo, _, size, place, _, _ in conflicts)
    return SpecExampleError(
        f"the example inputs are outside the ranges dynamic_shapes declares, at "
        f"{len(conflicts)} dims:\n{ours}\n(as torch.export says: Found the following "
        f"conflicts between user-specified ranges and inferred ranges from model tracing:"
        f"\n{theirs})",
        fix=f"widen each range to admit its example ({fixes}), or change the examples",
        where=Where(input=conflicts[0][0]), torch_classes=())


def _outside(spec: str, lo: Any, hi: Any, size: int, works: tuple | None = None) -> str:
    text = f"is {spec} with range [{lo}, {hi}], but the example input has size {size}"
    if works is not None and works[0] != works[1]:
        text += f" (the traced program works for [{works[0]}, {works[1]}] there)"
    return text


def _bound(lo: Any, size: int) -> str:
    return "min" if size < lo else "max"


def _hint_conflict(size: int, place: str, user: tuple, works: tuple | None = None) -> str:
    """torch.export's line for a dim hint whose range the example's size is outside of:
    `works`, the range the traced program infers there (torch's ``int_oo`` unbounded);
    none traced, the example's size."""
    m = re.match(r"(\w+)(.*)$", place, re.S)
    at = f"inputs[{m.group(1)!r}]{m.group(2)}" if m else place
    lo, hi = works if works is not None else (size, size)
    return (f"Received user-specified min/max range of [{user[0]}, {user[1]}], conflicting "
            f"with the inferred min/max range of [{lo}, {'int_oo' if hi == math.inf else hi}]"
            f"{' (the example)' if works is None else ''}, for {at}")


def dim_name_clash(where: str, name: str, first: Any, second: Any) -> SpecExampleError:
    """Two different Dims of the spec have the same ``name``."""
    return SpecExampleError(f"{where} names a Dim {name!r} that another Dim of the spec is "
                            f"also named ({first!r} and {second!r})",
                            fix="use one Dim object per name", where=Where(input=where),
                            torch_classes=("UserError.INVALID_INPUT",))


def dim_sizes_disagree(where: str, name: str, first: str, first_size: int, path: str, d: int,
                       shown: str) -> SpecExampleError:
    """Dim ``name`` is ``first_size`` at its first use (``first``: that dim's path) but
    ``path.shape[d]`` gives ``shown`` (``n = 5``, or ``2*n = 10`` for a derived dim)."""
    expr, got = shown.rsplit(" = ", 1)
    return _dim(where, path, d, f"uses {name}, but the example sizes disagree: {first} gives "
                                f"{name} = {first_size} while {path}.shape[{d}] gives {shown} "
                                f"(as torch.export says: Expected input {path}.size()[{d}] to "
                                f"be equal to {expr}, where {name} = {first_size}, but got "
                                f"{got}).",
                "the same Dim means equal sizes; use separate Dims or consistent example "
                "inputs")


def additional_value(index: int, values: list) -> SpecExampleError:
    """A non-tensor input leaf differs between the examples of AdditionalInputs."""
    return spec_example(f"AdditionalInputs: input leaf {index}",
                        f"differs between the examples ({', '.join(repr(v) for v in values)}), "
                        f"but only tensor sizes and ints can be dynamic (other values are specialized).",
                        "give every example the same non-tensor values")


def torch_collection_refused(kind: str, exc: BaseException) -> SpecExampleError:
    """torch's own ShapesCollection / AdditionalInputs raised turning itself into a spec."""
    return spec_example(f"dynamic_shapes (torch.export.{kind})",
                        f"could not be turned into a spec: {type(exc).__name__}: {exc}",
                        f"fix the examples as the message says, or use st.{kind} (the same "
                        f"API, with safetrace's messages)")


def additional_refused(index: int, exc: BaseException) -> AdditionalInputRefused:
    """Example ``index`` (1-based, after the export's own inputs) of AdditionalInputs fails
    the exported program's input checks: the program does not cover every example."""
    reason = str(getattr(exc, "cause", None) or exc).split("\n")[0]
    words = getattr(exc, "details", {}).get("torch_words")  # torch.export's phrase for it
    reason += f" ({words})" if words else ""
    return AdditionalInputRefused(
        f"AdditionalInputs: example {index} is refused by the exported program: {reason} "
        f"(a size there breaks a condition the traced code needs, so the examples do not "
        f"share one program)",
        fix="drop that example, or change the code so that it works for every example's "
            "sizes (the condition above names the line)",
        where=Where(input="dynamic_shapes"))


def additional_rank(index: int) -> SpecExampleError:
    """A tensor input leaf has another rank (or is no tensor) in some example."""
    return spec_example(f"AdditionalInputs: input leaf {index}",
                        "is a tensor whose rank (or type) differs between the examples; a dim "
                        "can be dynamic, the rank cannot.",
                        "give every example tensors of the same rank at this position")
