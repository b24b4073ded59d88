"""Forward hooks that forward registers on its submodules on its first call, marking the
model with an attribute (transformers' output capturing: ``maybe_install_capturing_hooks``
installs an ``OutputRecorder`` hook on each recorded layer and sets
``model._output_capturing_hooks_installed``; SegformerForSemanticSegmentation reads
``outputs.hidden_states`` through them). Export put the attribute back but kept the hooks,
so the next eager call installed them a second time and every layer was recorded twice:
eager computed from the wrong layer (or failed) after ``st.export``, and a second export of
the same model traced that. The hooks are now taken back with the attribute (export never
changes the model), and traced again with both as state (the same program: accepted)."""

from __future__ import annotations

import contextvars
import copy

import pytest
import torch

import safetrace as st
from safetrace import Dim

_COLLECTOR: contextvars.ContextVar = contextvars.ContextVar("collector", default=None)


def _record(module, args, output):
    got = _COLLECTOR.get()
    if got is not None:
        got.append(output)


class _Recorded(torch.nn.Module):
    """Layers whose outputs are collected by hooks installed lazily, once."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.blocks = torch.nn.ModuleList([torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)])
        self.head = torch.nn.Linear(4, 3)

    def forward(self, x):
        if not getattr(self, "_hooked", False):
            for block in self.blocks:
                block.register_forward_hook(_record)
            self._hooked = True
        seen: list = []
        token = _COLLECTOR.set(seen)
        try:
            h = x
            for block in self.blocks:
                h = block(h)
        finally:
            _COLLECTOR.reset(token)
        return self.head(seen[1]) + h.sum(-1, keepdim=True)  # (the second layer's)


def _hook_count(model):
    return sum(len(m._forward_hooks) for m in model.modules())


@pytest.mark.parametrize("batch", [Dim("batch", min=0, max=16), Dim.AUTO])
def test_hooks_forward_installs_are_taken_back(batch):
    model = _Recorded()
    fresh = copy.deepcopy(model)
    ep = st.export(model, (torch.randn(3, 4),), dynamic_shapes=({0: batch},))
    assert _hook_count(model) == 0 and not hasattr(model, "_hooked")
    for rows in (3, 0, 1, 7):
        x = torch.randn(rows, 4)
        expected = fresh(x)
        torch.testing.assert_close(model(x), expected)   # eager after export: as before
        torch.testing.assert_close(ep.module()(x), expected)
    assert _hook_count(model) == 2                      # installed once, by eager
    again = st.export(model, (torch.randn(2, 4),), dynamic_shapes=({0: batch},))
    assert _hook_count(model) == 2 and model._hooked    # (the state eager left: kept)
    x = torch.randn(5, 4)
    torch.testing.assert_close(again.module()(x), fresh(x))


def test_out_of_space_is_refused_before_running():
    model = _Recorded()
    ep = st.export(model, (torch.randn(3, 4),),
                   dynamic_shapes=({0: Dim("batch", min=0, max=16)},))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(17, 4))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 5))
