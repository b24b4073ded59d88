"""A ``torch.jit.script`` submodule followed through its TorchScript graph
(trace/script_graph.py, issue 21): dict operators as Python's dict, and a method call on a
``@torch.jit.interface`` submodule (a ``prim::CallMethod`` the inlining leaves) followed
through the method of the submodule held; ``prim::SetAttr`` stays refused, naming it.
torch.export 2.13 cannot export a module holding a scripted submodule at all (it calls the
ScriptModule with the wrong arguments: a TypeError).  Our own cases.  (No ``from
__future__ import annotations``: TorchScript reads the interface annotation as a type.)"""


from typing import Dict

import pytest
import torch
from torch import nn
from torch.export import Dim

import safetrace as st

from tests.export.dropin_check import same
from tests.export.test_dropin_torchscript import Holds  # (a model holding a scripted one)


class DictOps(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d: Dict[str, torch.Tensor] = {"a": x, "b": x * 2}
        d["c"] = x + 1
        out = x
        for k, v in d.items():
            out = out + v
        if "a" in d:
            out = out * d["a"]
        d.pop("b")
        return out + d.get("z", x) + len(d) + len(list(d.keys()))


@torch.jit.interface
class Scales(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pass


class Triples(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 3


class CallsInterface(nn.Module):
    sub: Scales

    def __init__(self) -> None:
        super().__init__()
        self.sub = Triples()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.sub.forward(x) + 1


class Counts(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.n = self.n + 1
        return x * self.n


@pytest.mark.parametrize("make", [DictOps, CallsInterface], ids=["dict", "interface"])
def test_a_scripted_submodule_with_dicts_or_an_interface_call_exports(make):
    model = Holds(torch.jit.script(make()))
    spec = ({0: Dim("n")},)
    ep = st.export(model, (torch.randn(3),), dynamic_shapes=spec)
    for n in (0, 1, 5):
        x = torch.randn(n)
        same(ep.module()(x), model(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 2))
    if make is CallsInterface:  # (torch.export 2.13 fails on any scripted submodule)
        with pytest.raises(TypeError):
            torch.export.export(model, (torch.randn(3),), dynamic_shapes=spec)


def test_a_scripted_submodule_setting_an_attribute_is_refused_naming_the_node():
    model = Holds(torch.jit.script(Counts()))
    with pytest.raises(st.UnsupportedInputError, match="prim::SetAttr"):
        st.export(model, (torch.randn(3),))
    assert model.inner.n == 0
