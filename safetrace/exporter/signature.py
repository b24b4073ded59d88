"""The graph signature: what each placeholder and output of the graph stands for."""

from __future__ import annotations

import copy
import dataclasses
import sys
import weakref
from typing import Any

from safetrace.errors import torch_api_given_ours

# code that needs torch.export's own program (a frame of these modules handed ours)
_TORCH_APIS = ("torch.export", "torch._export", "torch.onnx", "torch._inductor", "executorch")
# the functions whose isinstance(x, torch.export.ExportedProgram) check refuses ours with
# "must be an instance of 'ExportedProgram', got 'ExportedProgram'" (other isinstance
# checks, a re-export walking a module's attributes, must see our class)
_TYPE_CHECKS = frozenset({
    "torch.export.save", "torch._inductor.aoti_compile_and_package",
    "torch.onnx._internal.exporter._compat.export_compat",
    "executorch.exir.program._program.to_edge",
    "executorch.exir.program._program.to_edge_transform_and_lower"})


def _api(frame: Any) -> str | None:
    module = frame.f_globals.get("__name__", "")
    if not isinstance(module, str) or not module.startswith(_TORCH_APIS):
        return None
    return f"{module}.{getattr(frame.f_code, 'co_qualname', frame.f_code.co_name)}"


def type_check_caller() -> str | None:
    """The API (as torch_caller) when the frame reading ``__class__`` is one of the type
    checks that need torch's program, else None."""
    return torch_caller(3) if _api(sys._getframe(2)) in _TYPE_CHECKS else None


def torch_caller(depth: int = 2) -> str | None:
    """When the frame `depth` up is a torch.export-family API: the outermost such frame
    of that call (the function the user called, ``torch.export.unflatten``), else None."""
    frame = sys._getframe(depth)
    best = api = _api(frame)
    while api is not None and frame.f_back is not None:
        frame = frame.f_back
        api = _api(frame)
        if api is not None and "<locals>" not in api:  # not a decorator's wrapper
            best = api
    return best


def torch_only(owner: str, name: str, names: frozenset) -> Any:
    """``__getattr__`` of a class mirroring torch's: a name only torch's class has is the
    error that points to ``ep.to_torch()``; any other is a plain AttributeError."""
    if name in names:
        raise torch_api_given_ours(torch_caller(3), f"{owner}.{name}")
    raise AttributeError(f"'{owner}' object has no attribute {name!r}")


@dataclasses.dataclass
class InputSpec:
    """kind: "parameter" | "buffer" | "constant" | "user_input"."""

    kind: str
    name: str              # placeholder name
    target: str | None     # state name (parameters, buffers, constants)
    leaf: int | None       # index among flattened user inputs
    persistent: bool = True


@dataclasses.dataclass
class OutputSpec:
    """kind: "user_output" | "buffer_mutation" (target: the buffer's name)."""

    kind: str
    target: str | None
    name: str = ""


class ExportGraphSignature:
    """Placeholder and output names grouped by role, as torch.export's signature."""

    # what torch's signature has beyond ours: code reading it wants torch's program
    _TORCH_ONLY = frozenset({
        "assertion_dep_token", "backward_signature", "get_replace_hook", "input_tokens",
        "output_tokens", "replace_all_uses"})

    def __getattr__(self, name: str) -> Any:
        return torch_only("ExportGraphSignature", name, self._TORCH_ONLY)

    def __init__(self, input_specs: list[InputSpec], output_specs: list[OutputSpec]) -> None:
        self.input_specs = input_specs
        self.output_specs = output_specs
        # the program's ``constant_key`` (a weak reference: the program holds this), which
        # names a lifted constant as torch.export does; None: by placeholder target
        self.program: Any = None

    def __deepcopy__(self, memo: dict) -> "ExportGraphSignature":
        # (a copy of the program, made before its attributes are: the copy's signature
        # names the copy's constants)
        new = ExportGraphSignature(copy.deepcopy(self.input_specs, memo),
                                   copy.deepcopy(self.output_specs, memo))
        memo[id(self)] = new
        ep = self.program() if self.program is not None else None
        twin = memo.get(id(ep)) if ep is not None else None
        new.program = weakref.ref(twin) if twin is not None else self.program
        return new

    def _lifted(self, tensors: bool) -> dict[str, str]:
        """{placeholder: torch.export's name} of the lifted tensor constants (`tensors`)
        or of the torchbind objects."""
        ep = self.program() if self.program is not None else None
        out = {}
        for s in self.input_specs:
            if s.kind == "constant":
                key, is_tensor = ep.constant_key(s) if ep is not None else (s.target, True)
                if is_tensor == tensors:
                    out[s.name] = key
        return out

    def _inputs(self, kind: str) -> list[str]:
        return [s.name for s in self.input_specs if s.kind == kind]

    @property
    def user_inputs(self) -> list[str]:
        return self._inputs("user_input")

    @property
    def parameters(self) -> list[str]:
        return [s.target for s in self.input_specs if s.kind == "parameter"]

    @property
    def buffers(self) -> list[str]:
        return [s.target for s in self.input_specs if s.kind == "buffer"]

    @property
    def non_persistent_buffers(self) -> list[str]:
        return [s.target for s in self.input_specs if s.kind == "buffer" and not s.persistent]

    @property
    def lifted_tensor_constants(self) -> list[str]:
        """The lifted tensor constants by torch.export's names (their keys in
        ``ep.constants``: ``sub.table``, ``lifted_tensor_0``)."""
        return list(self._lifted(True).values())

    @property
    def inputs_to_lifted_tensor_constants(self) -> dict[str, str]:
        return self._lifted(True)

    @property
    def lifted_custom_objs(self) -> list[str]:
        """The torchbind objects the program holds, by attribute path."""
        return list(self._lifted(False).values())

    @property
    def inputs_to_lifted_custom_objs(self) -> dict[str, str]:
        return self._lifted(False)

    @property
    def inputs_to_parameters(self) -> dict[str, str]:
        return {s.name: s.target for s in self.input_specs if s.kind == "parameter"}

    @property
    def inputs_to_buffers(self) -> dict[str, str]:
        return {s.name: s.target for s in self.input_specs if s.kind == "buffer"}

    @property
    def user_outputs(self) -> list[str]:
        return [s.name for s in self.output_specs if s.kind == "user_output"]

    @property
    def buffers_to_mutate(self) -> dict[str, str]:
        return {s.name: s.target for s in self.output_specs if s.kind == "buffer_mutation"}

    @property
    def parameters_to_mutate(self) -> dict[str, str]:
        """Empty: a parameter the program writes is written in place in its graph, as in
        torch.export's program (whose ``run_decompositions()`` lists it)."""
        return {}

    @property
    def user_inputs_to_mutate(self) -> dict[str, str]:
        """Empty: an input the program writes is written in place in its graph, as in
        torch.export's program (whose ``run_decompositions()`` lists it)."""
        return {}

    def __repr__(self) -> str:
        lines = ["ExportGraphSignature("]
        for s in self.input_specs:
            lines.append(f"  input  {s.name}: {s.kind}" + (f" {s.target}" if s.target else ""))
        for s in self.output_specs:
            lines.append(f"  output {s.name}: {s.kind}" + (f" -> {s.target}" if s.target else ""))
        return "\n".join(lines) + "\n)"
