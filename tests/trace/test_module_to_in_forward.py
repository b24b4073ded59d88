"""``self.sub = self.sub.to(dtype)`` inside forward (SwitchTransformers' router:
``self.classifier = self.classifier.to(self.dtype)``): ``Module._apply`` asks
``torch._has_compatible_shallow_copy_type(param, param.to(dtype))`` on the lifted
parameters, which escaped ``st.export`` as an internal ``RuntimeError`` ("called on a
safetrace proxy outside of tracing"). A conversion to the dtype the module already has is
eager's no-op and exports; one that changes the parameters' dtype is refused (an exported
program cannot change module state's dtype)."""

from __future__ import annotations

import copy

import pytest
import torch

import safetrace as st
from safetrace import Dim


class _Router(torch.nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.dtype_ = dtype
        self.classifier = torch.nn.Linear(4, 3)
        self.register_buffer("scale", torch.full((3,), 0.5))

    def forward(self, x):
        self.classifier = self.classifier.to(self.dtype_)
        logits = self.classifier(x.to(self.dtype_)) * self.scale
        return torch.softmax(logits, dim=-1)


def test_same_dtype_module_to_in_forward_exports_and_generalizes():
    model = _Router(torch.float32).eval()
    eager = copy.deepcopy(model)
    ep = st.export(model, (torch.randn(2, 4),), dynamic_shapes=({0: Dim("b", min=0, max=16)},))
    for rows in (0, 1, 7):
        x = torch.randn(rows, 4)
        torch.testing.assert_close(ep.module()(x), eager(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(17, 4))        # outside the declared batch
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 5))


def test_dtype_changing_module_to_in_forward_is_refused():
    model = _Router(torch.float64).eval()
    with pytest.raises(st.ExportError) as info:
        st.export(model, (torch.randn(2, 4),), dynamic_shapes=({0: Dim("b", min=0, max=16)},))
    assert "dtype" in str(info.value)
