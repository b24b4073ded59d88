"""Builders of the errors a user meets when moving to safetrace off torch.export (issue
21): constructs torch.export accepts that safetrace records differently or refuses, each
naming the construct and the fix."""

from __future__ import annotations

from safetrace.errors.base import OpShapeError, UnsupportedInputError, UnsupportedOpError, Where
from safetrace.errors.mismatch import WrongInputType, WrongSize


def cond_output_kinds(where: str, index: int, branches: list[tuple[str, str, str]]) -> \
        OpShapeError:
    """torch.cond's branches return, at one output, values that are not all tensors or
    all ints (`branches`: (name, location, what it returned))."""
    shown = "\n".join(f"  {name} ({loc}): {what}" for name, loc, what in branches)
    return OpShapeError(
        f"torch.cond at {where}: output {index} must be a tensor in every branch or an int "
        f"in every branch (torch.cond takes tensors and ints, as torch.export does); the "
        f"branches return:\n{shown}",
        fix="return the same kind from both branches: a tensor (torch.tensor(v), "
            "x.new_full((), v)) for a float or a bool, an int for a size",
        where=Where(source=where), op="torch.cond")


def cond_size_output(where: str, index: int, sizes: list[tuple[str, str, str]]) -> \
        UnsupportedOpError:
    """torch.cond's branches return a symbolic size at one output (`sizes`: (name,
    location, size) of each branch that does)."""
    shown = "\n".join(f"  {name} ({loc}): {size}" for name, loc, size in sizes)
    return UnsupportedOpError(
        f"torch.cond at {where}: output {index} is a dynamic size; torch.cond returns "
        f"tensors and constant ints only (eager torch.cond and torch.export refuse a size "
        f"once shapes are dynamic: 'unsupported branch return type'):\n{shown}",
        fix="return the size as a tensor (x.new_tensor(x.shape[0])) and read it after the "
            "cond with .item(), or compute it outside the cond: sizes are known there",
        where=Where(source=where), op="torch.cond")


def torch_api_given_ours(api: str | None, what: str = "") -> UnsupportedInputError:
    """A torch API (`api`, e.g. ``torch.export.save``; None: the user's own code) needs
    torch.export's program, and got safetrace's (`what`: the attribute read, if any)."""
    if api is None:
        cause = (f"`{what}` is an attribute of torch.export.ExportedProgram; safetrace's "
                 f"ExportedProgram does not have it.")
    else:
        looked = f" (it read `{what}`, which only torch's has)" if what else ""
        cause = (f"{api} was handed a safetrace ExportedProgram, not a "
                 f"torch.export.ExportedProgram{looked}.")
    return UnsupportedInputError(
        cause, fix="convert it first: pass ep.to_torch() (torch's class, with the same input "
                   "contract), e.g. torch.export.save(ep.to_torch(), path); st.save(ep, path) "
                   "writes safetrace's own format", where=Where())


def is_torch_program(value: object) -> bool:
    """Whether `value` is torch.export's ExportedProgram (read by its class's name: no
    import of torch.export here)."""
    cls = type(value)
    return cls.__name__ == "ExportedProgram" and cls.__module__.startswith("torch.export")


_MEANT = {"st.export": "export its module again: st.export(ep.module(), args, "
                        "dynamic_shapes=...)",
          "st.save": "torch.export.save(ep, path) writes torch's program; st.save takes "
                     "st.export's"}


def ours_given_torch_program(api: str) -> UnsupportedInputError:
    """safetrace's `api` (``st.export``, ``st.save``) was handed torch.export's program:
    the fix is the call that does what was meant."""
    return UnsupportedInputError(
        f"{api} was handed a torch.export.ExportedProgram, not "
        f"{'a model' if api == 'st.export' else 'a program of safetrace (st.export)'}.",
        fix=_MEANT[api], where=Where(),
        torch_classes=("ValueError",) if api == "st.export" else ())


def unknown_higher_order_op(name: str, source: str, fn_class: str = "") -> UnsupportedOpError:
    """A higher-order operator safetrace has no handler for (`fn_class`: the
    autograd.Function of ``custom_function_call``, what torch.vmap makes of one)."""
    if fn_class:
        return UnsupportedOpError(
            f"{fn_class}.apply under torch.vmap (the higher-order operator {name}) at "
            f"{source}: a function transform over an autograd.Function cannot be traced "
            f"into an exported graph.",
            fix=f"call {fn_class}.apply on the batched tensor (its forward written for a "
                f"batch dim) instead of under torch.vmap, or export without the transform",
            where=Where(source=source), op=name)
    return UnsupportedOpError(
        f"the higher-order operator {name} at {source}: safetrace traces torch.cond, "
        f"while_loop, map, scan and hints_wrapper, not operators defined elsewhere.",
        fix="call the operator's body function directly while exporting (e.g. `if "
            "torch.compiler.is_exporting(): return body(x)`), or make it a custom op with "
            "a fake implementation (st.custom_op + st.register_fake)",
        where=Where(source=source), op=name)


def collective_async(api: str, source: str) -> UnsupportedOpError:
    """A torch.distributed collective called with ``async_op=True`` while exporting."""
    return UnsupportedOpError(
        f"{api}(..., async_op=True) at {source}: it returns a Work handle to wait on, which "
        f"an exported graph cannot hold.",
        fix="call it with async_op=False (the graph waits right after it), or use "
            "torch.distributed._functional_collectives, whose results are waited on when "
            "first used",
        where=Where(source=source), op=api)


def dynamic_int_type(path: str, got: object) -> WrongInputType:
    """An int input declared dynamic got something else (a bool, a float, a tensor)."""
    return WrongInputType(f"{path}: expected an int (it was declared dynamic), got "
                          f"{type(got).__name__}", where=Where(input=path))


def dynamic_int_relation(path: str, got: int, text: str, value: int,
                         why: str) -> WrongSize:
    """An int input declared dynamic breaks its relation to other inputs' sizes."""
    return WrongSize(f"{path} = {got}, but it must equal {text} = {value}{why}",
                     where=Where(input=path))


def tensor_attribute(name: str, source: str) -> UnsupportedOpError:
    """The traced code read an attribute no plain tensor has: a tensor subclass's own
    (a subclass input is traced as a plain tensor of the graph, its ops dispatched to
    the subclass when the program runs)."""
    return UnsupportedOpError(
        f"the exported code reads `.{name}` of a tensor at {source}, an attribute no plain "
        f"tensor has: a tensor subclass's own attribute or method (a subclass input is "
        f"traced as a plain tensor of the graph, its ops dispatched to the subclass when "
        f"the program runs, so its attributes are not known while tracing).",
        fix=f"keep `.{name}` out of the exported forward: pass the subclass's inner tensors "
            f"as inputs, or make it a parameter or buffer of the model (traceable wrapper "
            f"subclass state is traced through its __torch_dispatch__)",
        where=Where(source=source), op=name)


def traced_subclass(cls: str, source: str) -> UnsupportedOpError:
    """A tensor subclass instance built inside the traced code from traced tensors."""
    return UnsupportedOpError(
        f"a {cls} built from traced tensors at {source}: a tensor subclass made inside the "
        f"exported code cannot be recorded (its inner tensors are values of the graph, "
        f"not data).",
        fix=f"pass the {cls} in as an input (a subclass input is traced through its "
            f"operations), or compute on its plain tensors inside the exported code",
        where=Where(source=source), op=cls)


class FakeKernelMismatch(UnsupportedOpError, RuntimeError):
    """A custom op's fake kernel, or its schema, disagrees with what its kernel does (a
    RuntimeError too, as torch's own refusal of it; where it leaves st.export, torch's
    MetadataMismatchError too, the class torch's real-tensor propagation raises)."""

    kind = "fake-mismatch"
    torch_classes = ("MetadataMismatchError",)


_FAKE_FIXES = {
    "output": "make the fake kernel return what the kernel returns (its sizes as "
              "expressions of the inputs' sizes, its dtype, a new tensor unless the kernel "
              "returns a view of an input)",
    "mutation": "declare what the kernel writes: @torch.library.custom_op({op!r}, "
                "mutates_args={{{arg!r}}}), or write into a copy: {arg} = {arg}.clone()",
    "alias": "return a new tensor from the kernel ({arg}.clone()): a custom op's output "
             "may not alias its inputs",
    "kernel": "make the kernel run on the example inputs (the message above is its own)",
}


def fake_mismatch(op: str, problem: str, detail: str, source: str, arg: str = "") -> \
        FakeKernelMismatch:
    """Running custom op `op`'s kernel on the example inputs (torch's
    ``fake_tensor_propagate_real_tensors``) disagreed with its fake kernel or schema:
    `problem` is "output" (`detail` says how), "mutation" or "alias" (of argument `arg`),
    or "kernel" (the kernel itself raised)."""
    return FakeKernelMismatch(
        f"custom op {op}: {detail}, found by running its kernel on the example inputs "
        f"(torch._functorch.config.fake_tensor_propagate_real_tensors is set).\n  at {source}",
        fix=_FAKE_FIXES[problem].format(op=op, arg=arg or "x"),
        where=Where(source=source), op=op)


def draft_result(op: str, index: int, problem: str, source: str) -> FakeKernelMismatch:
    """A custom op without a fake kernel, run on the example's values to infer one (torch's
    ``fake_tensor_propagate_real_tensors``): its output `index` `problem` ("has a non-zero
    storage offset", "is not dense in memory"), which an inferred fake cannot describe."""
    return FakeKernelMismatch(
        f"custom op {op} has no fake kernel, and its output {index} {problem} when its kernel "
        f"runs on the example inputs (torch._functorch.config."
        f"fake_tensor_propagate_real_tensors is set), so no fake kernel can be inferred from "
        f"it.\n  at {source}",
        fix=f"register a fake kernel: @torch.library.register_fake({op!r}), or return a new "
            f"contiguous tensor from the kernel (.clone())",
        where=Where(source=source), op=op)


def state_name_taken(path: str, part: str, kind: str) -> UnsupportedInputError:
    """The model holds state (`kind`: a parameter, buffer or submodule's state) at `path`
    whose component `part` is an attribute of the module ``ep.module()`` builds (a
    GraphModule's ``graph``, ``code``, ``meta``): registering it there raises, as it does
    in torch.export's ``module()``."""
    new = f"{part}_"
    return UnsupportedInputError(
        f"the model's {kind} `{path}` is held under the name `{part}`, an attribute of "
        f"the GraphModule that ep.module() and ep.to_torch().module() build (torch.fx's "
        f"`{part}`): the program's state cannot be registered there (torch.export's "
        f"module() fails on it too).",
        fix=f"rename the attribute before exporting, e.g. self.{new} = self.{part} (and "
            f"`del self.{part}`) in __init__, reading self.{new} in forward, and rename the "
            f"matching keys of saved state dicts",
        where=Where(input=path))

