"""The tracing kinds of the catalogue: calls the tracer cannot record (an argument it does not
understand, an index, a construct a graph cannot hold) and ops whose result depends on data
(``DataDependentShape``), with their builders.

``source`` is the user's line (``m.py:3 `y = x.to(t)```); values are printed as the user
wrote them (``repr``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from safetrace.errors.base import (DataDependentError, DataRead, InputMismatchError, LoadError,
                                   MissingShapeRule, OpShapeError, UnsupportedConstruct,
                                   UnsupportedInputError, UnsupportedOpError, Where,
                                   with_eager_class)

__all__ = [
    "DataDependentShape", "UnsupportedCall", "BadIndex",
    "data_dependent_shape", "one_hot_num_classes", "mask_count", "lstsq_residuals",
    "data_dependent_count", "loop_fix", "tensor_as_python_int", "size_as_python_value",
    "outside_export", "float_read", "complex_item", "untraceable_call", "out_argument",
    "to_argument",
    "to_dtype", "too_many_indices", "bool_index", "slice_step", "index_type",
    "generator_argument", "autocast_active", "data_assignment", "input_reshaped_in_place",
    "state_reshaped_in_place",
    "layout_of_view",
    "strides_of_loose", "write_reads_own_memory", "state_reassigned_changed", "python_state_read", "state_name",
    "python_state_unsettled", "view_of_strided", "view_dtype_of_strided",
    "constant_written_through_alias", "state_written_through_alias", "constant_read_then_written",
    "kernel_needs_data", "kernel_rejects", "internal_error", "internal_exception",
    "allow_ops_entry", "write_through_reshape", "view_of_vmap_output",
    "no_inputs_drawn", "preserved_in_function",
    "preserved_subclass", "preserved_unknown", "preserved_value",
]


class DataDependentShape(DataDependentError):
    """An op's output shape (or whether it is defined) depends on tensor data in a way the
    op's arguments could avoid: ``one_hot`` without num_classes, a boolean mask's count."""

    kind = "data-dependent-shape"

    def at(self, source: str) -> DataDependentShape:
        """The same error with the user's source line added (raised by a shape rule); a
        loop over a data-dependent count gets the rewrite of that line where one is known."""
        fix = loop_fix(source) if self.details.get("loop") else self.fix
        return type(self)(f"{self.cause}\n  at {source}", fix=fix,
                          where=dataclasses.replace(self.where, source=source), **self.details)


class UnsupportedCall(UnsupportedOpError):
    """A torch call with arguments the tracer does not understand (no overload accepts
    them, an argument of an unknown type)."""

    kind = "unsupported-call"


class BadIndex(OpShapeError):
    """A subscript ``x[...]`` that eager would reject, or that safetrace does not trace."""

    kind = "bad-index"


def _at(source: str) -> Where:
    return Where(source=source or None)


# -- data-dependent -------------------------------------------------------------------------
def data_dependent_shape(op: str, what: str, fix: str) -> DataDependentShape:
    """``what``: why a size of ``op``'s result depends on data; ``fix``: the argument or
    op that avoids it."""
    return DataDependentShape(f"{op}: {what}.", fix=fix, op=op)


def one_hot_num_classes() -> DataDependentShape:
    return data_dependent_shape(
        "aten.one_hot", "num_classes=-1 means max(tensor) + 1, which depends on the "
                        "tensor's data (export never reads it)",
        "pass num_classes explicitly, e.g. F.one_hot(x, num_classes=10)")


def mask_count(op: str, what: str) -> DataDependentShape:
    """``what`` (an output size of ``op``) is the number of True elements of a mask."""
    return data_dependent_shape(
        op, f"{what} depends on how many elements of a boolean mask are True, which "
            f"export never reads",
        "use torch.where(mask, ...) or masked_fill for a fixed-shape result, or call "
        "mask.nonzero() and check(...) its length.")


def data_dependent_count(op: str, size: str) -> DataDependentShape:
    """``op`` returns a Python list with one tensor per index of a dim whose ``size``
    depends on data: a Python loop over it has no fixed number of steps."""
    return DataDependentShape(
        f"{op}: it returns a list of one tensor per index of a dim of size `{size}`, which "
        f"depends on tensor data: the Python loop over it (`for m in masks:`, "
        f"`zip(masks, boxes)`, `list(t)`) would run a number of times only the data "
        f"decides, and a graph holds a fixed sequence of ops.", fix=loop_fix(None), op=op,
        loop=True)


# The rewrite of a loop over detections in torchvision's detectors, keyed by the loop's
# source line (torchvision/models/detection/roi_heads.py): the per-box step moved out of the
# export, run on the program's outputs (checked on the real models by
# tests/zoo/test_detectors.py).  Each recipe is for a batch of one image, as the detectors
# are exported (their image list specializes the batch).
_MASK_RCNN = """
    import torchvision.models.detection.transform as T
    paste = T.paste_masks_in_image
    T.paste_masks_in_image = lambda masks, boxes, size, padding=1: masks  # keep 28x28 masks
    ep = st.export(model, ...)
    T.paste_masks_in_image = paste
    out = ep.module()(images)[0]
    out["masks"] = paste(out["masks"], out["boxes"], images.shape[-2:])"""
_LOOP_RECIPES = (("roi_heads.py", "paste_mask_in_image(", "Mask R-CNN", _MASK_RCNN),)


def loop_fix(source: str | None) -> str:
    """The fix of a Python loop over a data-dependent count, as code: the rewrite of the
    line for torchvision's detectors, the two general rewrites otherwise."""
    for file, line, model, recipe in _LOOP_RECIPES:
        if source and source.startswith(file) and line in source:
            return (f"this is torchvision's {model} loop over its detections: export up to "
                    f"the detections and run the per-box step on the program's output:"
                    f"{recipe}")
    return ("compute the loop's body on the whole tensor at once, one batched op over that "
            "dim (`torch.stack([f(m) for m in masks])` -> `f(masks)`), or return the tensor "
            "from the exported program and run the loop on its output "
            "(`masks = ep.module()(x)` then `[f(m) for m in masks]`)")


def tensor_as_python_int(source: str) -> DataRead:
    """A tensor's value used where Python itself needs a real int (``range(self.count)``
    of a 0-d integer buffer, ``[0] * t``, ``seq[t]``): Python asks ``__index__`` and the
    tracer's answer is a size the graph reads at run time, which Python cannot take."""
    return DataRead(
        f"a tensor's value is used where Python needs a real int (`range(t)`, `[v] * t`, "
        f"`seq[t]`): the value is tensor data (a buffer's value can change between calls), "
        f"which export never reads, and the Python loop or list it sizes would be fixed "
        f"in the graph.\n  at {source}",
        fix="if the count never changes, keep it a Python int attribute instead of a "
            "buffer (`self.count = 3` in __init__, `range(self.count)`); otherwise "
            "compute the loop's body on a whole tensor at once (one batched op over a dim "
            "of that size, e.g. `torch.arange(n)` with `n = t.item()` and "
            "`st.check(n >= 0)`), or run the loop on the exported program's output",
        where=_at(source))


def size_as_python_value(message: str, source: str) -> UnsupportedConstruct:
    """A traced size (a symbolic int or float) reached code that takes only real Python
    numbers and said so with ``message`` (``json.dumps(list(x.shape))``, a numpy ufunc of
    a size): CPython's TypeError names the tracer's class, not what the user wrote."""
    return UnsupportedConstruct(
        f"a size of a dynamic dim reached code that takes only plain Python numbers (it "
        f"raised: {message}): while exporting, a dynamic size is a symbol that stands for "
        f"every size in the declared range, and that code cannot compute with it.\n"
        f"  at {source}",
        fix="compute with the size in Python arithmetic or torch ops (`math.sqrt(n)`, "
            "`torch.tensor(n)`, `list(x.shape)`) instead of json / numpy / C extensions; "
            "or, where that code really needs the number, make the dim static "
            "(dynamic_shapes {dim: None}), since the graph would then hold one value",
        where=_at(source))


def lstsq_residuals(op: str, driver: str) -> DataDependentShape:
    return data_dependent_shape(
        op, f"with driver {driver!r}, residuals are computed only when every matrix has "
            f"full rank (a fact of the data)",
        "use driver='gelsy' or driver='gels'")


def outside_export(what: str) -> DataDependentError:
    """A data-dependent size or float asked for outside an export (no environment)."""
    return DataDependentError(f"{what} depends on tensor data; it can only be traced inside "
                              f"st.export",
                              fix="call it inside the model (or function) that st.export "
                                  "traces")


def float_read(call: str, got: str, source: str) -> DataRead:
    """``call`` (``.item()``, ``.tolist()``) of a float tensor ``got`` (its annotation)."""
    keep = ("keep it a tensor (e.g. `x.sum()` instead of `x.sum().item()`; a 0-dim tensor "
            "broadcasts in tensor ops)" if call == ".item()" else
            "keep it a tensor and index it (`x[i]`, `x.unbind(0)`) instead of making a list")
    return DataRead(f"{call} of a tensor {got}: a float computed from data cannot be traced "
                    f"as a Python number (export never reads tensor data).\n  at {source}",
                    fix=f"{keep}, so the graph computes with it", where=_at(source))


def complex_item(dtype: Any) -> DataRead:
    """``.item()`` of a complex tensor (a Python complex is never symbolic)."""
    return DataRead(f".item() of a {dtype} tensor: a complex number computed from data cannot "
                    f"be traced as a Python number.",
                    fix="keep it a tensor (use x[0] or x.reshape(()) and tensor ops) so the "
                        "graph computes with it")


# -- calls the tracer does not understand ---------------------------------------------------
def untraceable_call(call: str, packet: str, overloaded: bool,
                     source: str) -> UnsupportedCall:
    """``call``: the call as written (``torch.frob(Tensor[3], k=2)``); ``packet``: the ATen
    name it maps to; ``overloaded``: that ATen op exists but no overload fits."""
    why = (f"no overload of aten.{packet} accepts these arguments" if overloaded else
           f"there is no ATen operator named {packet!r} and safetrace cannot trace into it")
    return UnsupportedCall(
        f"cannot trace {call}: {why}.\n  at {source}",
        fix="use an equivalent torch operation, or wrap the code in a custom op "
            "(st.custom_op) with a fake implementation (st.register_fake).",
        where=_at(source))


def out_argument(call: str, rewrite: str | None, rebind: str | None,
                 source: str) -> UnsupportedCall:
    """``call`` (as described, its ``out=`` tensor as written) writes its result into an
    existing tensor; ``rewrite``: the user's line with the op then a copy (None when the
    line does not show the call whole); ``rebind``: ``y = op(...)``, for an ``out=``
    tensor that is a plain name (out= resizes it when the shapes differ)."""
    line = (f"\n        {rewrite}\n" if rewrite else
            " `y.copy_(torch.add(x, 1))` for `torch.add(x, 1, out=y)`\n")
    resize = (f"     (if out= was meant to resize it, bind the result to the name "
              f"instead: `{rebind}`)" if rebind else "")
    return UnsupportedCall(
        f"cannot trace {call}: safetrace records ops that make their result, and out= "
        f"writes it into an existing tensor.\n  at {source}",
        fix=f"compute the result, then copy it into that tensor (what out= does when the "
            f"shapes agree):{line}{resize}".rstrip(),
        where=_at(source))


def to_argument(arg: Any, source: str) -> UnsupportedCall:
    """``x.to(arg)`` with an argument that is no dtype, device or tensor."""
    return UnsupportedCall(f"x.to(...) got an argument safetrace does not understand: "
                           f"{arg!r} at {source}.",
                           fix="pass a torch.dtype, a device or a tensor, e.g. "
                               "x.to(torch.float32), x.to('cpu') or x.to(other)",
                           where=_at(source))


def to_dtype(dtype: Any, source: str) -> UnsupportedCall:
    return UnsupportedCall(f"x.to(dtype={dtype!r}) at {source}: not a dtype.",
                           fix="pass a torch.dtype such as torch.float32", where=_at(source))


def too_many_indices(ndim: int, given: int) -> BadIndex:
    return BadIndex(f"too many indices for tensor of dimension {ndim} ({given} given)",
                    fix=f"index at most {ndim} dims (use ... for the dims you skip)")


def bool_index() -> BadIndex:
    return BadIndex("indexing with a Python bool is not supported by safetrace",
                    fix="use x.unsqueeze(0) instead of x[True] (and x[:0] instead of x[False])")


def slice_step(step: Any) -> BadIndex:
    return BadIndex(f"slice step must be an int, got {step!r}",
                    fix="use an int step, e.g. x[::2]")


def index_type(item: Any) -> BadIndex:
    return BadIndex(f"unsupported index {item!r} of type {type(item).__name__}",
                    fix="index with ints, slices, None, ..., tensors or lists of ints")


# -- constructs a graph cannot hold ---------------------------------------------------------
def _construct(what: str, fix: str, source: str) -> UnsupportedConstruct:
    return UnsupportedConstruct(what, fix=fix, where=_at(source))


def generator_argument(source: str) -> UnsupportedConstruct:
    return _construct(f"a torch.Generator is passed to a traced op at {source}; an exported "
                      f"graph cannot capture generator state.",
                      "drop generator= (the program then draws from the default generator), "
                      "or pass the random tensor in as an input", source)


def autocast_active(source: str, op: Any = None) -> UnsupportedConstruct:
    what = f" and may change the dtypes of {op}" if op is not None else ""
    return _construct(f"autocast is active at {source}{what}: safetrace records the ops as "
                      f"written and would silently drop autocast's dtype changes.",
                      "remove the torch.autocast region and cast explicitly, e.g. "
                      "x.to(torch.bfloat16), or export the model already converted (.to(dtype))",
                      source)


def data_assignment(source: str, input_name: str | None = None) -> UnsupportedConstruct:
    """``x.data = value`` with another shape or dtype; with `input_name`: on a tensor the
    caller gave (an input of the program), which would share the new memory after the call."""
    if input_name is not None:
        return _construct(f"`x.data = value` at {source} gives the input `{input_name}` new "
                          f"memory: the caller's tensor would hold the value (and share its "
                          f"memory) after the call, which an exported program cannot do to "
                          f"an input.",
                          f"write the input in place ({input_name}.copy_(value)), or compute "
                          f"with a new tensor ({input_name} = value)", source)
    return _construct(f"`x.data = value` at {source} changes the tensor's shape or dtype, "
                      f"which an exported graph cannot do to module state.",
                      "assign a value of the same shape and dtype, or compute with a new "
                      "tensor instead", source)


def input_reshaped_in_place(op: str, input_name: str, source: str) -> UnsupportedConstruct:
    """``x.t_()`` / ``x.unsqueeze_(0)`` on an input of the program: the caller's tensor
    changes shape (torch.export refuses such a metadata mutation of an input too)."""
    return _construct(f"`{op}` at {source} changes the shape of the input `{input_name}` in "
                      f"place: the caller's tensor would have another shape after the call, "
                      f"which an exported program does not do to an input (torch.export "
                      f"refuses it too).",
                      f"reshape a new tensor ({input_name} = {input_name}.{op.rstrip('_')}"
                      f"(...), out of place)", source)


def state_reshaped_in_place(op: str, name: str | None, source: str) -> UnsupportedConstruct:
    """``self.b.unsqueeze_(0)`` on module state or a constant: its shape changes at every
    call, which a program's state and constants do not (torch.export records it)."""
    what = f"module state `{name}`" if name else "a tensor the model made or holds"
    new, src = (name.rpartition(".")[2], f"self.{name}") if name else ("c", "c")
    return _construct(f"`{op}` at {source} changes the shape of {what} in place, which an "
                      f"exported program cannot follow: its state and constants keep the "
                      f"shape they were traced with.",
                      f"reshape a new tensor ({new} = {src}.{op.rstrip('_')}(...), out of "
                      f"place), or register it with the shape forward needs", source)


def constant_written_through_alias(source: str) -> UnsupportedConstruct:
    """A tensor made in forward and a view of it, both read by the graph, one written in
    place: the program's constants are separate tensors, so the write would not reach
    the other (eager's answer differs)."""
    return _construct(f"a tensor made in forward is written in place at {source} while "
                      f"another view of the same memory is also used (`c.view(()).add_(2)` "
                      f"then `x * c`); the exported constants would not share the write.",
                      "make the tensor with a factory the program records, e.g. "
                      "c = torch.full((), 6.0) (values given to torch.tensor(...) are folded "
                      "into constants), write the tensor itself (c.add_(2)), or build it "
                      "with its final value (c = torch.tensor(8.0))", source)


def state_written_through_alias(written: str, other: str, source: str) -> UnsupportedConstruct:
    """Two parameters or buffers share memory (one registered as a view of the other) and
    the code writes one: the program keeps its own copy of each, so the write would not
    reach the other (eager's answer differs)."""
    return _construct(f"module state `{written}` is written in place at {source}, and "
                      f"`{other}` shares its memory (one is a view of the other); the "
                      f"exported program keeps a copy of each, so the write would not "
                      f"reach `{other}`.",
                      f"register only `{written}` and take the view in forward (e.g. "
                      f"`{other} = self.{written}[0]`), or register a copy "
                      f"(`.clone()`) if they should not share memory", source)


def constant_read_then_written(name: str, source: str) -> UnsupportedConstruct:
    """A tensor held outside the parameters and buffers is read by Python (``.item()``,
    ``bool()``) and also written in place by the program: program state, whose value
    the export took."""
    return _construct(f"the value of `{name}` is read in Python at {source}, and the program "
                      f"writes `{name}` in place: it is program state, which changes from "
                      f"call to call, so the value read at export would be stale from the "
                      f"next call on.",
                      f"compute with the tensor instead of its Python value (torch.where, "
                      f"torch.cond on `{name}`), or keep `{name}` unchanged in forward (pass "
                      f"the changing value in as an input)", source)


def layout_of_view(what: str, source: str) -> UnsupportedConstruct:
    """``what`` (``x.is_contiguous()``, ``x.stride()``) on a view."""
    return _construct(f"{what} at {source} asks for the memory layout of a tensor that is a "
                      f"view (transpose, slice, expand, ...) or computed from one; safetrace "
                      f"does not trace strides, and the answer could differ between inputs.",
                      "call .contiguous() on the tensor before asking, or drop the layout test "
                      "(the values computed never depend on it)", source)


def write_reads_own_memory(op: str, source: str) -> UnsupportedConstruct:
    """An in-place op reading another view of the memory it writes (``v.add_(v[0])``)
    where the layout is not known: eager refuses a partial overlap only for some strides."""
    return _construct(f"{op} at {source} writes a tensor in place while reading another view "
                      f"of the same memory (`v.add_(v[0])`), and the tensor's strides are not "
                      f"known at export (a view, or computed from one): eager raises "
                      f"\"some elements of the input tensor and the written-to tensor refer to "
                      f"a single memory location\" for some strides and not for others.",
                      "read a copy, `v.add_(v[0].clone())`, or write a new tensor, "
                      "`v = v + v[0]`", source)


def write_through_reshape(op: str, source: str) -> UnsupportedConstruct:
    """An in-place write to a reshape of a tensor whose strides in eager are vmap's (its
    output, or computed from it): eager's reshape is a view for some strides and a copy
    for others, and the program's vmap returns other strides than eager's."""
    return _construct(f"{op} at {source} writes in place the result of a reshape (or "
                      f"flatten, or contiguous()) of an output of torch.vmap, or of a tensor computed from "
                      f"one: eager's reshape returns a view of it for some strides (the "
                      f"write then shows through it) and a copy for others, and eager's "
                      f"vmap returns the batch dim with strides of its own, which the "
                      f"program does not reproduce.",
                      "write a copy, `r = t.reshape(...).clone(); r.mul_(2)`, or make the "
                      "tensor row-major first, `t = t.clone(memory_format="
                      "torch.contiguous_format)`", source)


def view_of_vmap_output(source: str) -> UnsupportedConstruct:
    """``x.view(shape)`` merging dims of a tensor whose strides in eager are vmap's (its
    output, or computed from it): whether eager's view succeeds depends on those strides,
    and the program's vmap returns other strides than eager's."""
    return _construct(f"Tensor.view at {source} merges dims of an output of torch.vmap, or "
                      f"of a tensor computed from one: eager's view succeeds or raises \"view "
                      f"size is not compatible with input tensor's size and stride\" "
                      f"depending on the strides eager's vmap gives the batch dim, which the "
                      f"program does not reproduce.",
                      "use t.reshape(shape) (the values are the same), or view a row-major "
                      "copy, `t.contiguous().view(shape)`", source)


def strides_of_loose(what: str, source: str) -> UnsupportedConstruct:
    """``x.stride()`` / ``x.storage_offset()`` of a tensor contiguous to ``is_contiguous()``
    whose strides on dims of size 0 or 1 (and offset) are not known."""
    return _construct(f"{what} at {source} reads the strides of a tensor that is contiguous, "
                      f"but whose dims of size 0 or 1 may carry any stride and whose storage "
                      f"offset may be any (an input given so, `.contiguous()` of a view, "
                      f"which returns the view itself when it is contiguous, or computed from "
                      f"one); safetrace does not trace those strides.",
                      "read the strides of a row-major copy, "
                      "`t.clone(memory_format=torch.contiguous_format).stride()`, or compute "
                      "them from `t.shape`", source)


def state_reassigned_changed(name: str, got: str, was: str) -> UnsupportedConstruct:
    """forward assigns a buffer a tensor of another shape or dtype (a growing cache): the
    program's state keeps static shapes, so its next call would run a graph traced for
    the old one."""
    return _construct(f"forward assigns module state `{name}` a tensor of {got} in place of "
                      f"its {was}; module state keeps one shape and dtype (the exported "
                      f"program's next call would run a graph traced for the old ones).",
                      f"allocate `{name}` at its full size and write into it in place "
                      f"(`self.{name}[pos:pos + n] = x`, the position in another buffer), or "
                      f"pass it in as an input and return the new tensor", "")


def state_name(path: str) -> str:
    """A piece of Python state as messages name it: a model attribute's path (``sub.n``)
    as `self.sub.n`, a module-level name (``global:pkg.mod.COUNT``) as the global
    `COUNT` of module pkg.mod, an attribute of an object a module holds
    (``global:pkg.mod:counter.n``) as `counter.n` of module pkg.mod."""
    if path.startswith("global:"):
        module, _, name = path[7:].rpartition(".")
        if ":" in module:
            module, _, obj = module.partition(":")
            return f"`{obj}.{name}` of module {module}"
        return f"the global `{name}` of module {module}"
    return f"`self.{path}`"


def python_state_read(changes: list[tuple[str, str, Any]], initial: Any,
                      decided: str | None = None) -> UnsupportedConstruct:
    """forward changes plain Python attributes of the model (``self.n += 1``) and the graph
    traced with their new values differs: the exported program keeps the value export saw
    on every call, where eager reads the new one (torch.export is silent here).
    `changes`: (attribute path, its value before as text, after); `initial`: the first
    attribute's starting value (for the buffer the fix makes of it); `decided`: where
    forward's Python decided on a changing number when the graph itself was the same
    (``if self.calls > 2``: the program keeps the branch export took)."""
    said = ", ".join(f"{state_name(p)} ({old} -> {new!r})" for p, old, new in changes)
    name = changes[0][0].rsplit(".", 1)[-1]
    mode = "set the mode before export (model.train() / model.eval()), not in forward; " \
        if any(p.rsplit(".", 1)[-1] == "training" for p, _, _ in changes) else ""
    dtype = None if name == "training" else \
        {bool: "bool", int: "long", float: "float32"}.get(type(initial))
    buffer = (f"keep it in a buffer, which the program reads and writes on every call: "
              f"in its module's __init__ `self.register_buffer(\"{name}\", torch.tensor({initial!r}, "
              f"dtype=torch.{dtype}))`, and in forward update it with tensor ops "
              f"(`self.{name} += 1`, `self.{name}.fill_(...)`); or " if dtype else "")
    what = (f"forward changes {said}, and the graph traced after that change differs: "
            f"an exported program keeps Python attributes at the values export saw, so "
            f"every call would compute what the first one did while eager reads the new "
            f"value") if decided is None else (
            f"forward changes {said} and decides on it in Python ({decided}): an exported "
            f"program keeps the branch export took on every call, while eager can take "
            f"another once the value has changed")
    if hasattr(initial, "shape") and hasattr(initial, "dtype"):  # a plain tensor attribute
        buffer = (f"register it as a buffer, which the program reads and writes on every "
                  f"call (its writes are program state): in its module's __init__ "
                  f"`self.register_buffer(\"{name}\", <the tensor>)` instead of "
                  f"`self.{name} = <the tensor>`; or ")
    if isinstance(initial, str):  # (a mode: its position among the values, in a buffer)
        buffer = (f"keep its position among the values it takes in a buffer, which the "
                  f"program reads and writes on every call: `self.register_buffer(\"{name}_"
                  f"index\", torch.tensor(0))`, advanced with tensor ops "
                  f"(`self.{name}_index.copy_((self.{name}_index + 1) % n)`) and read with "
                  f"torch.where / torch.cond in place of Python's `if`; or ")
    branch = "" if decided is None else (
        "decide with tensor ops on it (`torch.where(self.{0} > 2, a, b)`, torch.cond) "
        "instead of Python's `if`; ".format(name))
    torch_does = "gives that answer silently" if not hasattr(initial, "dtype") else \
        "warns that the tensor attribute was assigned during export, then gives that answer"
    return _construct(f"{what} (torch.export {torch_does}).",
                      f"{mode}{buffer}{branch}pass the value in as an input, or set it before "
                      f"export and leave it unchanged in forward", "")


def python_state_unsettled(changes: list[tuple[str, str, Any]],
                           traces: int) -> UnsupportedConstruct:
    """forward leaves a string, bool or None attribute or global at a new value on each of
    `traces` traces (``self.log += "."``, a mode cycling through more values): the program
    could differ at a value not traced.  `changes`: (path, the values traced as text, the
    next value)."""
    said = ", ".join(f"{state_name(p)} ({old} -> {new!r})" for p, old, new in changes)
    name = changes[0][0].rsplit(".", 1)[-1]
    return _construct(
        f"forward changes {said}: a new value on each of {traces} traces. Each traced to the "
        f"same program, but an exported program keeps the value export saw while eager goes "
        f"on to values never traced, where it may take another path (torch.export answers "
        f"silently there).",
        f"keep the state in a buffer, which the program reads and writes on every call "
        f"(a position in a list of modes: `self.register_buffer(\"{name}_index\", "
        f"torch.tensor(0))`, advanced with tensor ops and read with torch.where / torch.cond); "
        f"or pass the value in as an input, or set it before export and leave it unchanged in "
        f"forward", "")


def view_of_strided(message: str, source: str, caught: bool = False) -> OpShapeError:
    """``x.view(shape)`` of a view (``x.t().view(-1)``) whose strides at the example inputs
    cannot be viewed so (``message``: eager's own text); the program would raise there.
    ``caught``: one viewable at the example but not proven so at every size, in a ``try``
    block: eager's error at other sizes would take the ``except`` side, which the program
    cannot take at run time."""
    if caught:
        return OpShapeError(f"Tensor.view at {source}: whether the view fits the tensor's "
                            f"strides depends on the sizes (the tensor is a view, or was "
                            f"transposed in place), and the line is inside a `try` block: "
                            f"at sizes where eager raises \"view size is not compatible "
                            f"with input tensor's size and stride\" it runs the `except` "
                            f"side, which the program cannot take at run time",
                            fix="use x.reshape(shape) (it copies only where needed), or "
                                "x.contiguous().view(shape)", op="aten.view",
                            where=_at(source))
    return OpShapeError(f"Tensor.view at {source}: {message} (eager raises this at the "
                        f"example inputs: the tensor is a view whose dims cannot be merged "
                        f"without a copy)",
                        fix="use x.reshape(shape) (it copies only where needed), or "
                            "x.contiguous().view(shape)", op="aten.view", where=_at(source))


def view_dtype_of_strided(message: str, source: str, caught: bool = False) -> OpShapeError:
    """``x.view(dtype)`` to a dtype of another element size, of a view whose last dim's
    stride is not known to be 1 (``message``: eager's own text at the example inputs).
    ``caught``: in a ``try`` block, where eager's error at other inputs would take the
    ``except`` side, which the program cannot take at run time."""
    fix = "view a row-major copy: x.contiguous().view(dtype)"
    if caught:
        return OpShapeError(f"Tensor.view(dtype) at {source}: the new dtype's element size "
                            f"differs, so eager requires the last dim's stride to be 1; the "
                            f"tensor is a view whose strides are not known for every input, "
                            f"and the line is inside a `try` block: for inputs where eager "
                            f"raises it runs the `except` side, which the program cannot take "
                            f"at run time", fix=fix, op="aten.view", where=_at(source))
    return OpShapeError(f"Tensor.view(dtype) at {source}: {message} (eager raises this at the "
                        f"example inputs: the tensor is a view whose last dim is not "
                        f"contiguous)", fix=fix, op="aten.view", where=_at(source))


# -- kernels without a rule -----------------------------------------------------------------
def kernel_needs_data(op: str, detail: str) -> MissingShapeRule:
    """``op`` has no rule and its meta kernel needs data or a device (``detail``: torch's
    first line)."""
    return MissingShapeRule(
        f"{op} cannot be traced: it needs tensor data or a real device ({detail}), and "
        f"safetrace has no shape rule for it.",
        fix=f"compute this part outside the exported model, or register a rule: "
            f"@st.register_shape_rule(torch.ops.{op})", op=op)


def kernel_rejects(op: str, message: str) -> OpShapeError:
    """torch's meta kernel for ``op`` rejects the call (``message``: torch's text)."""
    return OpShapeError(f"{op}: {message}",
                        fix="fix the call (eager PyTorch rejects it too), or the example "
                            "inputs", op=op)


def internal_error(what: str) -> UnsupportedOpError:
    """A state safetrace never expects (a bug): named, with how to report it."""
    return UnsupportedOpError(f"internal error: {what}",
                              fix="report it with the model that triggers it; st.explain("
                                  "model, args) shows how far the trace gets")


def internal_exception(error: str, inside: str, where: str) -> UnsupportedOpError:
    """An exception raised by safetrace's own code while tracing the user's line `where`
    (``error``: its class and text; ``inside``: the safetrace file and line): a bug, named,
    in place of the raw exception."""
    return UnsupportedOpError(
        f"internal error: safetrace failed ({error}, in {inside}) while tracing {where}",
        fix="report it with the model that triggers it; until it is fixed, compute that "
            "line outside the exported model (st.explain(model, args) shows how far the "
            "trace gets)", where=_at(where))


# -- the command line -----------------------------------------------------------------------
def allow_ops_entry(detail: str) -> LoadError:
    """A malformed ``--allow-ops`` entry (``detail``: what is wrong with it)."""
    return LoadError(f"--allow-ops: {detail}",
                     fix="name an op 'namespace::op' or a whole 'namespace', e.g. --allow-ops "
                         "mylib::frob (repeat the flag for more; aten ops need none)",
                     where=Where(input="--allow-ops"))


def no_inputs_drawn(max_numel: int) -> InputMismatchError:
    return InputMismatchError(f"could not draw inputs that satisfy the contract with at most "
                              f"{max_numel} elements per tensor (--max-numel)",
                              fix=f"allow larger inputs: --max-numel {max_numel * 16}")


# -- preserve_module_call_signature ---------------------------------------------------------
_LEAVE_OUT = "leave {0!r} out of preserve_module_call_signature"


def preserved_in_function() -> UnsupportedInputError:
    return UnsupportedInputError(
        "preserve_module_call_signature names submodules, but the exported callable is a "
        "function, not an nn.Module.", fix="export the nn.Module that owns them")


def preserved_unknown(fqn: Any, model: str, close: list[str]) -> UnsupportedInputError:
    return UnsupportedInputError(
        f"preserve_module_call_signature names {fqn!r}, which is not a submodule of {model} "
        f"(its submodules include {close}).",
        fix="name submodules by their path in model.named_modules(), e.g. "
            "\"encoder.layer.0\"")


def preserved_subclass(what: str, cls: str, attrs: list[str], fqn: str,
                       state: str | None) -> UnsupportedInputError:
    """A tensor subclass crossing a preserved call's boundary (torch.export keeps it one
    value in its training IR only; its inference IR refuses it, a ``ValueError`` naming
    the parameter, which this error is too)."""
    inner = ", ".join(f"`.{a}`" for a in attrs) or "its inner tensors"
    named = f"It looks like {state} is a tensor subclass: " if state else ""
    err = UnsupportedInputError(
        f"{named}the {what} is a {cls} (a tensor subclass), which a preserved module call "
        f"signature cannot hold: safetrace traces a subclass into its inner tensors (as "
        f"torch.export's inference IR desugars it), so the call of {fqn!r} would take more "
        f"tensors than its signature names.",
        fix=_LEAVE_OUT.format(fqn) + f", or pass {fqn!r} plain tensors (the subclass's "
            f"inner tensors {inner}, or a plain tensor computed from them)")
    return with_eager_class(err, ValueError)


def preserved_value(what: str, type_name: str, fqn: str) -> UnsupportedInputError:
    return UnsupportedInputError(
        f"the {what} is a {type_name}, which a preserved module call signature cannot hold "
        f"(tensors, sizes and Python constants only).", fix=_LEAVE_OUT.format(fqn))
