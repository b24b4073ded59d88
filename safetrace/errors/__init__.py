"""Every exception safetrace raises: a catalogue of error kinds with structured fields.

Each error has a ``cause`` (what happened, in the user's words), a ``where`` (input path,
dim, source line; any may be unknown) and a ``fix`` (code to paste, or what to change);
``str(err)`` is rendered from them (``cause``, then ``Fix: fix``, then ``See
docs/errors.md#<kind>``).  Each kind is a class (its ``kind`` is the id used in
``docs/errors.md``, its anchor there, and in ``st.explain``) with builder functions beside
it (here, or in the module of its part of the library: ``control_flow``, ``tracing``,
``dynamic_shapes``, ``mismatch``), which hold the only copy of that message's wording.

The public families::

    ExportError                 raised by st.export / st.explain
      UnsupportedInputError       an input or output safetrace cannot flatten, a bad call
      SpecError                   dynamic_shapes is malformed or does not fit the inputs
      ConstraintViolationError    the program needs less than the declared input space
      DataDependentError          a decision or a size depends on tensor data
      UnsupportedOpError          an operation that cannot be traced (yet)
      OpShapeError                eager PyTorch would reject the call's shapes or dtypes
    InputMismatchError          (a ValueError) ep.module() called with inputs outside the
                                exported space, raised before anything is computed (also
                                torch's module's class: AssertionError / RuntimeError)
    RuntimeAssertionError       (a RuntimeError) an st.check / torch._check on data failed
                                while the program ran
    LoadError                   a saved program is truncated, corrupted, newer or hostile

``InputMismatchError`` and ``RuntimeAssertionError`` are unrelated classes: the first is
raised by the generated input checks (sizes, dtypes, constants, structure), the second by
the assertion nodes in the graph (conditions on values computed from data).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from safetrace.errors.base import (  # noqa: F401 - the families, re-exported
    DOCS_PAGE as DOCS_PAGE,
    docs_link as docs_link,
    Where as Where,
    StructuredError as StructuredError,
    ExportError as ExportError,
    UnsupportedInputError as UnsupportedInputError,
    SpecError as SpecError,
    ConstraintViolationError as ConstraintViolationError,
    DataDependentError as DataDependentError,
    UnsupportedOpError as UnsupportedOpError,
    OpShapeError as OpShapeError,
    ConversionError as ConversionError,
    ConversionWarning as ConversionWarning,
    InputMismatchError as InputMismatchError,
    RuntimeAssertionError as RuntimeAssertionError,
    LoadError as LoadError,
    DataRead as DataRead,
    MissingShapeRule as MissingShapeRule,
    UnsupportedConstruct as UnsupportedConstruct,
)
from safetrace.errors.mismatch import (  # noqa: F401 - the run-time kinds, re-exported
    WrongInputCount as WrongInputCount,
    wrong_input_count as wrong_input_count,
    WrongStructure as WrongStructure,
    wrong_structure as wrong_structure,
    WrongInputType as WrongInputType,
    wrong_input_type as wrong_input_type,
    WrongDtype as WrongDtype,
    wrong_dtype as wrong_dtype,
    WrongRank as WrongRank,
    wrong_rank as wrong_rank,
    WrongSize as WrongSize,
    static_size as static_size,
    required_size as required_size,
    related_size as related_size,
    OutOfRange as OutOfRange,
    out_of_range as out_of_range,
    WrongLayout as WrongLayout,
    wrong_layout as wrong_layout,
    FailedCondition as FailedCondition,
    failed_condition as failed_condition,
    WrongConstant as WrongConstant,
    wrong_constant as wrong_constant,
)
# the kinds and builders of each part of the library, re-exported (each module's __all__)
from safetrace.errors.control_flow import *  # noqa: F401,F403
from safetrace.errors.deploy import *  # noqa: F401,F403
from safetrace.errors.dynamic_shapes import *  # noqa: F401,F403
from safetrace.errors.tracing import *  # noqa: F401,F403
from safetrace.errors.layout import *  # noqa: F401,F403
from safetrace.errors.subclasses import *  # noqa: F401,F403
from safetrace.errors.violations import *  # noqa: F401,F403

from safetrace.errors.dropin import (  # noqa: F401 - torch.export drop-in builders
    collective_async as collective_async,
    cond_output_kinds as cond_output_kinds,
    cond_size_output as cond_size_output,
    draft_result as draft_result,
    dynamic_int_relation as dynamic_int_relation,
    dynamic_int_type as dynamic_int_type,
    FakeKernelMismatch as FakeKernelMismatch,
    fake_mismatch as fake_mismatch,
    tensor_attribute as tensor_attribute,
    torch_api_given_ours as torch_api_given_ours,
    state_name_taken as state_name_taken,
    ours_given_torch_program as ours_given_torch_program,
    traced_subclass as traced_subclass,
    unknown_higher_order_op as unknown_higher_order_op,
)

# every kind shows (and pickles) as safetrace.errors.<Kind>, wherever it is defined
for _cls in [v for v in list(globals().values())
             if isinstance(v, type) and v.__module__.startswith(__name__ + ".")]:
    _cls.__module__ = __name__


# -- shared fix texts (each exists once) ------------------------------------------------------
def register_rule_fix(op: str) -> str:
    """How to give an op a symbolic shape rule (``op`` as in ``torch.ops.<op>``)."""
    return (f"register a rule (sizes may be symbolic ints):\n"
            f"    @st.register_shape_rule(torch.ops.{op})\n"
            f"    def rule(self, *args, **kwargs):\n"
            f"        return st.TensorMeta(out_shape, self.dtype, self.device)")


def check_fix(expr: str) -> str:
    """How to settle a data-dependent condition: the two checks, one of which must hold."""
    return (f"add the check that holds for your data before this line, either\n"
            f"    st.check({expr})\nor\n    st.check(not ({expr}))\n"
            f"(torch._check works too), or rewrite the code so it does not branch on data")


def register_class_fix(cls: type) -> str:
    """How to make a class flatten into tensors and constants."""
    if dataclasses.is_dataclass(cls):
        return f"st.register_dataclass({cls.__name__})"
    return (f"st.register_pytree_node({cls.__name__}, flatten_fn, unflatten_fn)  "
            f"# flatten_fn(obj) -> (children, context)")


# -- unsupported inputs -----------------------------------------------------------------------
class ArgsNotTuple(UnsupportedInputError):
    """``args`` of st.export is not a tuple of positional inputs."""

    kind = "args-not-tuple"


def args_not_tuple(args: Any) -> ArgsNotTuple:
    return ArgsNotTuple(f"args must be a tuple of positional inputs, got {type(args).__name__}.",
                        fix="st.export(model, (x,)) for a single input x")


class NotCallable(UnsupportedInputError):
    """The object given to st.export cannot be called."""

    kind = "not-callable"
    torch_classes = ("ValueError",)  # (torch's words: Expected `mod` to be an nn.Module)


def not_callable(model: Any) -> NotCallable:
    return NotCallable(f"cannot export {type(model).__name__}: it is not callable",
                       fix="pass an nn.Module or a function")


class ScriptModuleInput(UnsupportedInputError, ValueError):
    """A TorchScript module was given to st.export (a ValueError, as torch.export's)."""

    kind = "script-module"
    torch_classes = ()  # (a ValueError, as torch's)


_TORCHSCRIPT = ("a TorchScript module (the result of torch.jit.script or torch.jit.trace): it "
                "runs TorchScript's interpreter, which safetrace cannot follow (torch.export "
                "refuses it too).")


def script_module(model: Any) -> ScriptModuleInput:
    return ScriptModuleInput(
        f"Exporting a ScriptModule is not supported: {type(model).__name__} is "
        f"{_TORCHSCRIPT}",
        fix="export the original nn.Module, before torch.jit.script / torch.jit.trace: "
            "st.export(model, args)")


def script_node(path: str, type_name: str, method: str, kind: str,
                where: str = "") -> ScriptModuleInput:
    """The TorchScript method ``method`` of the submodule ``path`` (torch.jit.script or
    torch.jit.trace) has a graph node of ``kind`` that safetrace does not follow."""
    return ScriptModuleInput(
        f"{where + ' calls' if where else 'the program calls'} the TorchScript method "
        f"`{method}` of the submodule `{path}` ({type_name}, the result of torch.jit.script "
        f"or torch.jit.trace); safetrace follows its graph node by node, and its node "
        f"`{kind}` is not one it follows (ATen operators, operators on numbers, constants, "
        f"attributes read, lists, tuples and dicts, interface method calls, prim::If and "
        f"prim::Loop are).",
        fix=f"put the original nn.Module back before exporting: model.{path} = "
            f"<the module before torch.jit.script>", where=Where(source=where or None))


def script_method_call(name: str, where: str) -> ScriptModuleInput:
    return ScriptModuleInput(
        f"{where} calls the TorchScript method `{name}` of a module that is not one of the "
        f"exported model's torch.jit.ScriptModule subclasses (written with "
        f"@torch.jit.script_method): it runs TorchScript's interpreter, which safetrace "
        f"cannot follow",
        fix="call the method of the original nn.Module (before torch.jit.script), or make "
            "the ScriptModule subclass a submodule of the exported model",
        where=Where(source=where))


def _torchbind(name: str, class_name: str, where: str) -> str:
    what = f"the custom op `{name}` on" if "." in name else f"the method `{name}` of"
    return (f"{where} calls {what} a TorchScript custom class object "
            f"(`{class_name}`, a torchbind class: C++ code outside PyTorch's operators)")


def torchbind_call(name: str, class_name: str, where: str) -> ScriptModuleInput:
    """A torchbind object's method, the object held by no module of the model."""
    return ScriptModuleInput(
        f"{_torchbind(name, class_name, where)} that no module of the exported model holds "
        f"as an attribute and no input of the program is: safetrace records such a call as "
        f"torch.export does, a call_torchbind node on the object's placeholder, so the "
        f"object must be part of the model or an input (one made in forward, or reached "
        f"through a global, is not).",
        fix=f"hold the object as an attribute of a module of the model (self.obj = obj in "
            f"__init__, then self.obj.{name}(...) in forward), or pass it as an input",
        where=Where(source=where))


def torchbind_no_fake(name: str, class_name: str, where: str) -> ScriptModuleInput:
    """A torchbind object's method whose class has no registered fake class."""
    parts = class_name.split(".")
    qual = f"{parts[-2]}::{parts[-1]}" if len(parts) >= 2 else class_name
    return ScriptModuleInput(
        f"{_torchbind(name, class_name, where)}: no fake class is registered for it, so "
        f"the shapes of its results are unknown (torch.export needs one too).",
        fix=f"register one before exporting:\n"
            f"@torch._library.register_fake_class(\"{qual}\")\n"
            f"class Fake{parts[-1].lstrip('_')}:\n"
            f"    def __init__(self, ...): ...  # the state __obj_flatten__ gives\n"
            f"    @classmethod\n"
            f"    def __obj_unflatten__(cls, flat):\n"
            f"        return cls(**dict(flat))\n"
            + (f"    def {name}(self, ...):\n"
               f"        ...  # tensors of the result's shapes, from the arguments' and the "
               f"state's" if "." not in name else
               "    ...  # the methods the op's fake calls on it"),
        where=Where(source=where))


def torchbind_unshaped(name: str, class_name: str, where: str, why: str) -> ScriptModuleInput:
    """A torchbind object's method whose registered fake cannot give the result's shapes."""
    return ScriptModuleInput(
        f"{_torchbind(name, class_name, where)}, shaped by its registered fake class, and "
        f"{why}: safetrace needs the fake to return tensors (or None) whose sizes come from "
        f"the arguments and the object's state (a number would be fixed at its export value).",
        fix=(f"give the fake class a method `{name}` that returns tensors of the result's "
             f"shapes (and __obj_unflatten__)" if "." not in name else
             f"register a fake for `{name}` (torch.library.register_fake) that returns "
             f"tensors of the result's shapes") + ", or compute a number in forward with "
            "tensor ops",
        where=Where(source=where))


def torchbind_save(names: list[str], class_name: str) -> ScriptModuleInput:
    """st.save of a program holding torchbind objects as constants."""
    return ScriptModuleInput(
        f"st.save cannot write {', '.join(names)} (`{class_name}`, a TorchScript custom "
        f"class object): safetrace's file format holds tensors and an allowlisted graph "
        f"only, and no form of such an object is on the allowlist (loading one would run "
        f"its class's own deserialization on the file's bytes).",
        fix="keep the object out of the saved program (compute its method with tensor ops "
            "or a custom op), or save torch's program, which stores the object with its "
            "class's __getstate__, for trusted files only: torch.export.save(ep.to_torch(), "
            "path)")


class CallMismatch(UnsupportedInputError):
    """The example inputs do not fit the signature of what is exported."""

    kind = "call-mismatch"
    torch_classes = ("TypeError",)  # (torch's: the signature's own TypeError)


def call_mismatch(qual: str, signature: str, why: str, got: str, call: str) -> CallMismatch:
    return CallMismatch(
        f"st.export called {qual}{signature} with {why}.\n  got: {got}",
        fix=f"pass one input per parameter of {qual}, positionally in args or by name in "
            f"kwargs:\n    {call}")


class UnflattenableInput(UnsupportedInputError):
    """An input holds an object of a class that is not registered as a pytree node."""

    kind = "unflattenable-input"
    torch_classes = ("ValueError",)  # (torch's: Unsupported input type)


def unflattenable_input(path: str, leaf: Any) -> UnflattenableInput:
    cls = type(leaf)
    return UnflattenableInput(
        f"input {path} has type {cls.__module__}.{cls.__qualname__}, which safetrace does not "
        f"know how to flatten into tensors and constants.",
        fix=f"register the class once before exporting:\n    import safetrace as st\n"
            f"    {register_class_fix(cls)}", where=Where(input=path))


class UnflattenableOutput(ExportError):
    """The model returned an object of a class that is not registered as a pytree node."""

    kind = "unflattenable-output"
    torch_classes = ("RuntimeError",)  # (torch's: Found ... in output)


def unflattenable_output(leaf: Any) -> UnflattenableOutput:
    cls = type(leaf)
    fix = register_class_fix(cls)
    if cls.__module__.startswith("transformers.cache_utils"):
        fix = ("from transformers.integrations.executorch import "
               "register_dynamic_cache_export_support; register_dynamic_cache_export_support()")
    return UnflattenableOutput(
        f"the model returned a {cls.__module__}.{cls.__qualname__}, which safetrace cannot "
        f"flatten into tensors and constants.",
        fix=f"register the class once before exporting ({fix}; a class registered for "
            f"torch.export works too), or return tensors and Python constants "
            f"(e.g. use_cache=False)")


# -- the spec ---------------------------------------------------------------------------------
class SpecEntryError(SpecError):
    """An entry of dynamic_shapes is not a dim spec."""

    kind = "spec-entry"


def spec_entry(where: str, entry: Any, cause: str = "") -> SpecEntryError:
    return SpecEntryError(
        f"{where}: {entry!r} is not a dim spec{': ' + cause if cause else ''}",
        fix="use None or an int (static), Dim.STATIC, Dim.AUTO, Dim.DYNAMIC, "
            "Dim('name', min=, max=) or a linear derived dim such as 2*dim + 1",
        where=Where(input=where))


# -- constraint violations (Violation, DeclaredSpaceViolation: errors/violations.py) -------
class ContradictorySizes(ConstraintViolationError):
    """The program requires input sizes that no input can have at once."""

    kind = "contradictory-sizes"


def contradictory_sizes(detail: str) -> ContradictorySizes:
    return ContradictorySizes(
        f"the traced program requires contradictory input sizes: {detail}",
        fix="check the shapes the model expects against the example inputs and the spec; "
            "st.explain(model, args, dynamic_shapes=...) lists every guard with its line")


class TooManySplits(ConstraintViolationError):
    """The program branches on a declared Dim's size more often than ``max_splits`` allows."""

    kind = "too-many-splits"


def too_many_splits(limit: int, found: list[str], first: str) -> TooManySplits:
    """``found``: the size ranges traced so far (``seq == 1``); ``first``: the first
    decision that split (its problem text)."""
    return TooManySplits(
        f"the program branches on declared sizes into more than {limit + 1} specializations "
        f"(max_splits={limit}); traced so far: {'; '.join(found)}. First split: {first}",
        fix=f"allow more: st.export(..., max_splits={2 * limit + 2}), or narrow the Dim's "
            f"declared range to the sizes you use")


class CaughtWhileTracing(UnsupportedConstruct):
    """The program's code caught a refusal (or another exception) that safetrace raised
    while tracing a call, where eager may compute or raise another exception."""

    kind = "caught-while-tracing"


def caught_while_tracing(exc: BaseException, where: str) -> CaughtWhileTracing:
    """`exc`, raised while tracing (an export error, or an exception of the tracer's), was
    caught by an ``except`` of the traced code at `where` (``file:line``)."""
    if isinstance(exc, StructuredError):
        what, fix = f"safetrace refused a call: {exc.cause}", f"{exc.fix}\n     " if exc.fix \
            else ""
    else:
        what, fix = f"tracing a call raised {type(exc).__name__}: {exc}", ""
    return CaughtWhileTracing(
        f"{what}\n  This was raised while tracing inside a `try` block, and the code at "
        f"{where} caught it; eager may compute the call at these sizes (or raise an error of "
        f"another class), so the `except` side is not known to be what eager runs there",
        fix=f"{fix}(the export must not go down the `except` side: fix the cause, or make the "
            f"call outside the `try` block at {where}; if eager computes the call at these "
            f"sizes and no fix is given, the error is safetrace's: please report it)",
        where=Where(source=where))


class CheckNeverHolds(ConstraintViolationError):
    """An st.check / torch._check on sizes is false for the example inputs."""

    kind = "check-never-holds"
    torch_classes = ()  # (torch's own check raises a plain RuntimeError, as ours is)


def check_never_holds(cond: str, detail: str, origin: str) -> CheckNeverHolds:
    return CheckNeverHolds(
        f"st.check({cond}) can never hold for the inputs being traced (the example inputs, or "
        f"the sample a size split traces for another range of a named Dim): {detail}{origin}",
        fix="correct the check, or export with example inputs (and a spec) for which it holds")


def check_false(source: str, msg: str | None) -> CheckNeverHolds:
    """A check whose condition is already False while tracing (a plain bool, or sizes whose
    ranges decide it): eager would fail it on every input the trace stands for."""
    said = f" (message: {msg!r})" if msg else ""
    return CheckNeverHolds(
        f"the check at {source} is false while exporting{said}: its condition does not "
        f"depend on tensor data and already evaluates to False for the example inputs (and "
        f"every input of the same static sizes), so the program would fail it on every call",
        fix="correct the check, or export with example inputs (and a spec) for which it "
            "holds", where=Where(source=source))


# -- data-dependent ---------------------------------------------------------------------------
class DataDependentDecision(DataDependentError):
    """Python code branches on a value computed from data that export cannot decide."""

    kind = "data-dependent-decision"


def data_dependent_int(expr: str, symbols: str, source: str) -> DataDependentDecision:
    """Python asked for the int value of a data-dependent size (``range(n)``, a list index)."""
    return DataDependentDecision(
        f"needs the Python int value of `{expr}`{symbols}, asked at {source}: it depends on values "
        f"computed from tensor data, which export never reads, so a Python loop over it "
        f"(`for i in range(n)`) or a list length or index taken from it has no fixed value.",
        fix=loop_fix(source), where=Where(source=source), expr=expr)


def data_dependent_decision(expr: str, symbols: str, source: str) -> DataDependentDecision:
    return DataDependentDecision(
        f"could not decide `{expr}`{symbols}, asked at {source}: it depends on values "
        f"computed from tensor data, which export never reads (torch.export's words: Could "
        f"not guard on data-dependent expression {expr}).",
        fix=check_fix(expr), where=Where(source=source), expr=expr)


def data_read(what: str, source: str, inside: str = "", fix: str | None = None) -> DataRead:
    if fix is None:  # the general advice; the tracer names a better one where it knows it
        fix = ("look for an argument of that call that skips the check (e.g. "
               "nn.Transformer's tgt_is_causal=True), or move the call out of the exported "
               "code." if inside else
               "compute on tensors instead of Python values (e.g. torch.where(cond, a, b) "
               "instead of `if`), or move the data-dependent decision out of the exported "
               "code.")
    within = f"\n  inside {inside}" if inside else ""
    return DataRead(f"{what} reads tensor data, which export never does (the graph must work "
                    f"for any data).\n  at {source}{within}", fix=fix, where=Where(source=source))


# -- unsupported operations -------------------------------------------------------------------
def missing_shape_rule(op: str, source: str, dims: list[str] | None = None) -> MissingShapeRule:
    if dims:
        cause = (f"{op} has no symbolic shape rule, so the dynamic size(s) {', '.join(dims)} "
                 f"it was called with had to be specialized to their example values.\n"
                 f"  at {source}")
        fix = register_rule_fix(op) + "\nor declare those dims Dim.AUTO to accept the " \
                                      "specialization"
    else:
        cause = f"{op} has no shape rule in safetrace and no meta kernel in PyTorch."
        if source:
            cause += f"\n  at {source}"
        fix = register_rule_fix(op)
    return MissingShapeRule(cause, fix=fix, where=Where(source=source or None), op=op)


class MissingFake(UnsupportedOpError):
    """A custom op has no fake (metadata) implementation."""

    kind = "missing-fake"


def missing_fake(op: str, source: str) -> MissingFake:
    return MissingFake(
        f"custom op {op} has no fake implementation, so safetrace cannot know its output "
        f"shapes.\n  at {source}",
        fix=f"register one:\n    @st.register_fake(\"{op}\")\n"
            f"    def _(*args):  # receives metadata-only tensors\n"
            f"        return torch.empty_like(args[0])  # or st.new_dynamic_size(...)",
        where=Where(source=source))


def unsupported_construct(what: str, fix: str, source: str = "") -> UnsupportedConstruct:
    return UnsupportedConstruct(what, fix=fix, where=Where(source=source or None))


def unknown_tensor_type(name: str, source: str) -> UnsupportedOpError:
    return UnsupportedOpError(
        f"x.type({name!r}) at {source}: not the name of a tensor type.",
        fix="pass a torch.dtype (x.type(torch.float32)) or a type name such as "
            "'torch.FloatTensor' or 'torch.cuda.HalfTensor'",
        where=Where(source=source or None))


def below_tracer(op: str, source: str) -> UnsupportedConstruct:
    return unsupported_construct(
        f"{op} reached PyTorch's dispatcher beneath safetrace's tracer at "
        f"{source or 'an unknown line'}: a function transform (torch.vmap, torch.func.grad / jacrev / "
        f"functional_call under a transform) or a tensor subclass's __torch_dispatch__ runs "
        f"ops that an exported graph cannot record.",
        "write the batched computation with ordinary tensor ops (a batch dim and "
        "broadcasting instead of torch.vmap), or export the model without the transform",
        source)


def picked_tensor_written(op: Any, source: str, what: str) -> UnsupportedConstruct:
    """A write in place to a value eager aliases and the trace computed as a new tensor."""
    return unsupported_construct(
        f"{op} at {source or 'an unknown line'} writes in place {what}: in eager that "
        f"tensor shares memory with another value of the program, so the write shows "
        f"through it, and the exported program computes that value as a new tensor, which "
        f"the write cannot reach.",
        "write a copy instead (t = t.clone() before the in-place op), or use an op that "
        "returns a new tensor in eager too (torch.maximum / torch.minimum instead of "
        "max() / min(); `return t[:1].clone()` in a torch.cond branch)", source)


def builtin_minmax_number(name: str, why: str, source: str) -> UnsupportedConstruct:
    """Python's max()/min() of tensors and numbers where one tensor cannot stand for the
    builtin's answer (the number or a tensor, depending on the data)."""
    bound = "min" if name == "max" else "max"
    return unsupported_construct(
        f"Python's {name}() of tensors and numbers at {source or 'an unknown line'} returns "
        f"the number or a tensor depending on the data, and {why}: no one exported value "
        f"behaves as eager's answer in both cases.",
        f"compute on tensors, which gives a tensor in eager too: torch.clamp(x, {bound}=n) "
        f"for {name}(x, n), torch.{name}imum(x, y) for two tensors", source)


def vmap_not_per_slice(what: str, source: str) -> UnsupportedConstruct:
    """torch.vmap's function does what a per-slice application cannot reproduce."""
    return unsupported_construct(
        f"the function given to torch.vmap at {source or 'an unknown line'} {what}: safetrace "
        f"exports vmap by applying the function to each slice of the batch, and eager's "
        f"vmap does this once for the whole batch (or raises), so the exported program "
        f"would not compute what eager computes.",
        "keep in-place writes, random ops and tensor data reads out of the vmapped "
        "function (return the values and write them after vmap), or write the batched "
        "computation with ordinary tensor ops (a batch dim and broadcasting)", source)


def seeded_generator() -> UnsupportedConstruct:
    return unsupported_construct(
        "the model seeds torch's default random generator while being exported "
        "(torch.manual_seed / torch.seed in forward); an exported graph cannot capture "
        "generator state, so its random numbers would not repeat eager's.",
        "seed outside the model, before calling it")


def state_traced_elsewhere(what: str, kind: str, source: str = "") -> UnsupportedConstruct:
    """A parameter or buffer of the model is a tensor without data (a FakeTensor): another
    tracer (torch.export, torch.compile) swapped the model's state while tracing the same
    model object on another thread, so its values are not the model's."""
    return unsupported_construct(
        f"{what} is a {kind}, a tensor without data: another tracer "
        f"(torch.export or torch.compile on another thread) is tracing this same model "
        f"object and has swapped its parameters and buffers for fake ones, so the values "
        f"an export would capture now are not the model's (or the model was built under "
        f"a FakeTensorMode that is not active now).",
        "export when the other trace has finished, or export a copy: "
        "st.export(copy.deepcopy(model), args); a model built under a FakeTensorMode "
        "exports under that mode: `with fake_mode: st.export(model, args)`", source)


def rng_state_call(call: str, source: str) -> UnsupportedConstruct:
    """The traced code reads or sets the default generator's state (a seed read becomes a
    constant of the graph; a reseed in forward repeats eager's numbers on every call)."""
    return unsupported_construct(
        f"{call} at {source} reads or sets the state of torch's default random "
        f"generator; an exported graph cannot capture generator state, so it would keep "
        f"the value seen at export (or never reseed) where eager follows the generator.",
        "seed outside the model, before calling it; a seed the model needs can be an input "
        "(a tensor) or a constant", source)


# -- interop ------------------------------------------------------------------------------
def conversion_error(what: str, fix: str = "") -> ConversionError:
    """A program cannot be converted for torch.export's stack (``ep.to_torch()`` & co)."""
    return ConversionError(what, fix=fix)


# -- running and loading ----------------------------------------------------------------------
def runtime_check_failed(message: str) -> RuntimeAssertionError:
    """An st.check / torch._check on data failed while the program ran."""
    return RuntimeAssertionError(message or "check failed")


class IndexOutOfBounds(RuntimeAssertionError, IndexError):
    """A state write's indices lie outside its dim: the call is refused before the program
    writes any state (also eager's IndexError)."""

    kind = "index-out-of-bounds"


def index_out_of_bounds(call: str, start: str, count: str, lo: int, size: int,
                        values: tuple[int, int] | None = None) -> IndexOutOfBounds:
    """`call` (``m.py:4 `buf.index_copy_(0, idx, x)```) writes at `start` and the `count` - 1
    indices after it, which must lie in [lo, size); `values`: this call's start and count."""
    span = start if count == "1" else f"{start} to {start} + {count} - 1"
    here = ""
    if values is not None:
        first, n = values
        here = f" (at this call {start} = {first}" + (
            "" if count == "1" else f" and {count} = {n}: indices {first} to {first + n - 1}") + ")"
    return IndexOutOfBounds(
        f"{call} takes the indices {span}{here}, which must lie in [{lo}, {size}): the "
        f"program refused the call before writing any state (eager raises IndexError there, "
        f"after writing state)",
        fix=f"call with {start} >= {lo} and {start} + {count} <= {size}")


def load_error(where: str, what: str, fix: str = "") -> LoadError:
    """``where``: the part of the file (``contract.inputs[0].dtype``)."""
    return LoadError(f"{where}: {what}", fix=fix, where=Where(input=where))


# -- shapes -----------------------------------------------------------------------------------
def shape_error(op: str, message: str, fix: str = "") -> OpShapeError:
    """Build the error a shape rule raises when eager PyTorch would reject the call
    (`fix`: the change that makes the call valid, where the rule knows one)."""
    return OpShapeError(f"{op}: {message}", fix=fix, op=op)
