"""torch's ``run_decompositions`` of a ``to_torch()`` program (issue 21; torch's
test_export_training_ir_to_run_decomp runs every export test so).

torch retraces the program from its placeholders and its input spec: an ``nn.Module``
passed as an input is rebuilt by torch's own pytree rule from our spec's context (torch's
test_module_input), and under ``fake_tensor_propagate_real_tensors`` a custom op without a
fake kernel gets one inferred from a run of its kernel on the placeholders' real values
(torch's test_draft_export_infers_fake_kernel).  Each against torch.export's program."""

from __future__ import annotations

import torch
import torch._functorch.config  # (tests may import it; the library never does)
from torch import nn

import safetrace as st

from tests.export.dropin_check import same


class Scaler(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x, y):
        return self.linear(x) * y


class TakesModule(nn.Module):
    def forward(self, x, y, m):
        return m(x, y) + x + y


def test_run_decompositions_with_a_module_input() -> None:
    model, example = TakesModule(), (torch.randn(3), torch.randn(3), Scaler())
    ref = torch.export.export(model, example, strict=False).run_decompositions({})
    ours = st.export(model, example).to_torch().run_decompositions({})
    for _ in range(2):  # another module of the class: its own weights are used
        inputs = (torch.randn(3), torch.randn(3), Scaler())
        want = model(*inputs)
        same(ours.module()(*inputs), want)
        same(ref.module()(*inputs), want)


def test_run_decompositions_infers_a_missing_fake_kernel_from_real_values() -> None:
    with torch.library._scoped_library("st_decomp", "FRAGMENT") as lib:
        lib.define("first_row(Tensor x) -> Tensor")
        lib.impl("first_row", lambda x: x[0].clone(), "CPU")

        @torch.library.custom_op("st_decomp::times", mutates_args=())
        def times(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return x * y

        class Both(nn.Module):
            def forward(self, x, y):
                return times(x, y), torch.ops.st_decomp.first_row(y)

        model, inputs = Both(), (torch.randn(1, 3), torch.randn(2, 1))
        with torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True):
            ref = torch.export.export(model, inputs).run_decompositions({})
            ours = st.export(model, inputs).to_torch().run_decompositions({})
        want = model(*inputs)
        same(ours.module()(*inputs), want)
        same(ref.module()(*inputs), want)
