"""Tensor subclasses met while exporting: traceable wrapper subclasses (``__tensor_flatten__``
with ``__torch_dispatch__``, e.g. a two-tensor wrapper) are traced through their dispatch
(``trace/subclasses.py``); what that cannot hold is refused here, naming the class and the
fix."""

from __future__ import annotations

from safetrace.errors.base import (ConversionError, UnsupportedInputError, UnsupportedOpError,
                                   Where)

__all__ = [
    "SubclassValue", "subclass_value", "subclass_dynamic", "subclass_write",
    "subclass_constant", "subclass_torch_function", "subclass_dispatch_failed",
    "subclass_save", "subclass_input_mixed", "subclass_output_conversion",
    "subclass_call_decomposed",
]


class SubclassValue(UnsupportedOpError):
    """A traceable tensor subclass reached a place that takes plain tensors only (a program
    output, a control-flow operand); the tracer also raises it inside an op's arguments,
    where it runs the subclass's ``__torch_dispatch__`` instead."""


def subclass_value(cls: str, attrs: list[str], source: str) -> SubclassValue:
    """A tensor subclass value (`attrs`: what its ``__tensor_flatten__`` names) where a
    plain tensor is needed."""
    inner = ", ".join(f"`.{a}`" for a in attrs) or "its inner tensors"
    return SubclassValue(
        f"a {cls} (a tensor subclass) is used at {source} where the exported program needs a "
        f"plain tensor: a program output, or an operand of torch.cond / a loop (safetrace "
        f"traces a subclass through its __torch_dispatch__ into its inner tensors, so the "
        f"subclass itself has no value in the graph).",
        fix=f"return or pass plain tensors: the subclass's inner tensors ({inner}), or a "
            f"plain tensor computed from them",
        where=Where(source=source or None), op=cls)


def subclass_dynamic(cls: str, op: str, source: str) -> UnsupportedOpError:
    """An op on a tensor subclass with a dynamic size among its tensors."""
    return UnsupportedOpError(
        f"{op} on a {cls} (a tensor subclass) at {source} meets a dynamic size: safetrace "
        f"runs the subclass's __torch_dispatch__ on its inner tensors, and that Python code "
        f"(and torch's C++ beneath it) reads sizes as plain ints, which would fix a dynamic "
        f"dim to the example's size without a check.",
        fix="export the inputs that reach the subclass with static shapes (leave those dims "
            "out of dynamic_shapes), or compute on the subclass's inner tensors directly",
        where=Where(source=source or None), op=cls)


def subclass_write(cls: str, op: str, source: str) -> UnsupportedOpError:
    """An in-place op writing into a tensor subclass parameter or buffer (or its inner
    tensors)."""
    return UnsupportedOpError(
        f"{op} at {source} writes in place into a {cls} parameter or buffer (a tensor "
        f"subclass, traced as its inner tensors): the program cannot carry the write back "
        f"into the subclass's inner tensors.",
        fix="compute a new tensor instead of writing in place (y = x + 1, not x.add_(1)), "
            "or keep the written state as a plain buffer",
        where=Where(source=source or None), op=op)


def subclass_constant(cls: str, source: str) -> UnsupportedOpError:
    """A real tensor subclass met in the code that is neither a parameter nor a buffer."""
    return UnsupportedOpError(
        f"a {cls} (a tensor subclass) used at {source} is neither a parameter nor a buffer "
        f"of the model (a plain attribute, a global or a closure's value): safetrace traces "
        f"subclass state through its inner tensors only when the program owns it.",
        fix=f"register it on its module: self.register_buffer(name, value) for the {cls} (or "
            f"torch.nn.Parameter(value) for a weight)",
        where=Where(source=source or None), op=cls)


def subclass_torch_function(cls: str, path: str) -> UnsupportedInputError:
    """A parameter, buffer or input whose class overrides ``__torch_function__``."""
    return UnsupportedInputError(
        f"{path} is a {cls}, a tensor subclass that overrides __torch_function__: its Python "
        f"override runs above torch's dispatcher, where safetrace's tracer records calls, so "
        f"the exported graph would skip what the override does.",
        fix=f"make {cls} a traceable wrapper subclass (__tensor_flatten__ / "
            f"__tensor_unflatten__ with __torch_dispatch__, and __torch_function__ = "
            f"torch._C._disabled_torch_function_impl), or pass a plain tensor "
            f"(value.as_subclass(torch.Tensor))",
        where=Where(input=path), op=cls)


def subclass_dispatch_failed(cls: str, op: str, source: str, exc: BaseException) -> \
        UnsupportedOpError:
    """The subclass's own ``__torch_dispatch__`` raised while it ran on traced tensors."""
    return UnsupportedOpError(
        f"{cls}.__torch_dispatch__ raised {type(exc).__name__}: {exc} while safetrace ran it "
        f"for {op} at {source} on traced inner tensors (metadata-only tensors: its Python "
        f"code may not read their data or storage).",
        fix=f"keep {op} on a {cls} out of the exported forward (compute on its inner tensors), "
            f"or make its __torch_dispatch__ use only torch ops on the inner tensors",
        where=Where(source=source or None), op=cls)


def subclass_save(names: list[str], cls: str) -> UnsupportedInputError:
    """st.save of a program whose state holds tensor subclasses (`names`)."""
    shown = ", ".join(names[:4]) + (" ..." if len(names) > 4 else "")
    return UnsupportedInputError(
        f"st.save cannot write {shown} ({cls}, a tensor subclass): safetrace's file format "
        f"holds plain tensors only.",
        fix="save torch's program instead, which keeps tensor subclass state: "
            "torch.export.save(ep.to_torch(), path)",
        where=Where(), op=cls)


def subclass_input_mixed(path: str, cls: str, other: str, op: str, source: str) -> \
        UnsupportedInputError:
    """A subclass op traced through its dispatch in a program with a subclass input (traced
    as a plain tensor, a subclass again when the program runs)."""
    return UnsupportedInputError(
        f"{op} on a {other} at {source} runs its __torch_dispatch__ while tracing, but input "
        f"{path} is a {cls}: a tensor subclass input is traced as a plain tensor and "
        f"dispatches when the program runs, so values computed from it would meet the "
        f"traced dispatch as subclasses the trace did not see.",
        fix=f"pass {path}'s inner tensors as inputs instead of the {cls} (or keep the "
            f"subclass values apart from it)",
        where=Where(input=path, source=source or None), op=cls)


def subclass_output_conversion(cls: str) -> ConversionError:
    """``ep.to_torch()`` of a program that rebuilds a tensor subclass whose class this
    process never exported (torch's graph calls the class's ``__tensor_unflatten__``)."""
    return ConversionError(
        f"the program rebuilds a {cls} (a tensor subclass) from its inner tensors, but this "
        f"process has not exported that class, so torch's graph cannot call its "
        f"__tensor_unflatten__.",
        fix=f"export the model again in this process (the module defining {cls} imported), "
            f"or run the program with ep.module(), which returns the {cls}")


def subclass_call_decomposed(call: str, name: str, side: str) -> ConversionError:
    """``run_decompositions`` of a converted program whose preserved module call `call`
    takes (`side` "input") or returns a tensor subclass value `name`: torch's
    decomposition replaces the subclass by its inner tensors, so the call's boundary would
    name a value the new graph no longer has.  torch refuses a subclass parameter crossing
    a preserved call with a ValueError in these first words; a subclass it returns, torch
    lets through naming one inner tensor, which is not the call's interface."""
    desugared = ("run_decompositions replaces a subclass by its inner tensors, so the "
                 "call's signature would no longer name one value")
    if side == "input":
        cause = (f"It looks like {name} is a tensor subclass. Preserving submodule that takes "
                 f"subclass parameter is not supported in inference IR because we desugar "
                 f"them, resulting in more tensors: the preserved call {call!r} takes it, "
                 f"and {desugared}.")
    else:
        cause = (f"The preserved call {call!r} returns a tensor subclass ({name}): "
                 f"{desugared} (torch.export's run_decompositions lets it through, the "
                 f"call's output then naming one inner tensor, which is not the call's "
                 f"interface).")
    return ConversionError(
        cause,
        fix=f"leave {call!r} out of preserve_module_call_signature, or use the program "
            f"undecomposed (ep.to_torch() as it is, or ep.module())",
        where=Where(), torch_classes=("ValueError",))
