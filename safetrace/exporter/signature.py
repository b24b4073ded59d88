"""The graph signature: what each placeholder and output of the graph stands for."""

from __future__ import annotations

import dataclasses


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

    def __init__(self, input_specs: list[InputSpec], output_specs: list[OutputSpec]) -> None:
        self.input_specs = input_specs
        self.output_specs = output_specs

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
        return [s.target for s in self.input_specs if s.kind == "constant"]

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

    def __repr__(self) -> str:
        lines = ["ExportGraphSignature("]
        for s in self.input_specs:
            lines.append(f"  input  {s.name}: {s.kind}" + (f" {s.target}" if s.target else ""))
        for s in self.output_specs:
            lines.append(f"  output {s.name}: {s.kind}" + (f" -> {s.target}" if s.target else ""))
        return "\n".join(lines) + "\n)"
