"""TorchScript called from the exported code (issue 21; torch's test_inline_script_function,
test_inline_script_class_method(_recursive), test_inline_script_method).

torch.export runs the Python original of a ``@torch.jit.script`` function or of a
``@torch.jit.script_method`` of a ``torch.jit.ScriptModule`` subclass, where eager runs
TorchScript: ``torch.jit.is_scripting()`` is False in the program.  safetrace does the same,
with the module as ``self`` (so a method reading its module's state works, where torch
fails) and its parameters and buffers as the program's state.  A script method of a
module outside the exported model, and a ``torch.jit.script``-ed ``nn.Module`` (torch fails
on it too), are refused with ScriptModuleInput."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.export import Dim

import safetrace as st

from tests.export.dropin_check import same


@torch.jit.script
def _branchy(x: torch.Tensor) -> torch.Tensor:
    if torch.jit.is_scripting():
        return x.cos()
    return x.sin()


class CallsScriptFunction(nn.Module):
    def forward(self, x):
        return _branchy(x) * 2


class StaticScriptMethod(nn.Module):
    @staticmethod
    @torch.jit.script
    def _twice(x: torch.Tensor, y: torch.Tensor, k: int) -> torch.Tensor:
        if torch.jit.is_scripting():
            return _branchy(x.cos()) * k
        return _branchy(x.sin()) * y * k

    def forward(self, x):
        return StaticScriptMethod._twice(x, y=x, k=3)


class ScriptedPart(torch.jit.ScriptModule):
    """A ScriptModule subclass: a Python forward calling a script method."""

    @torch.jit.script_method
    def _part(self, x: torch.Tensor) -> torch.Tensor:
        if torch.jit.is_scripting():
            return x.cos()
        return x.sin()

    def forward(self, x):
        return self._part(x) + 1


class Holds(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x) - x


# what the program computes: the Python originals (eager runs TorchScript's cos)
PYTHON_SIDE = [
    (CallsScriptFunction, lambda x: x.sin() * 2),
    (StaticScriptMethod, lambda x: x.sin().sin() * x * 3),
    (lambda: Holds(ScriptedPart()), lambda x: x.sin() + 1 - x),
]


@pytest.mark.parametrize("make, python", PYTHON_SIDE,
                         ids=["script function", "static script function", "script method"])
def test_torchscript_runs_its_python_original_as_torch_export(make, python) -> None:
    x = torch.randn(3, 4)
    spec = ({0: Dim("n")},)
    ours = st.export(make(), (x,), dynamic_shapes=spec)
    conv = ours.to_torch()
    ref = torch.export.export(make(), (x,), dynamic_shapes=spec)
    for n in (0, 1, 5):
        y = torch.randn(n, 4)
        same(ours.module()(y), python(y))
        same(conv.module()(y), python(y))
        same(ref.module()(y), python(y))
    with pytest.raises(st.InputMismatchError):
        ours.module()(torch.randn(3, 5))


class Stateful(torch.jit.ScriptModule):
    """Script methods reading a parameter and writing a buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.full((4,), 2.0))
        self.calls = nn.Buffer(torch.zeros(1))

    @torch.jit.script_method
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return x * self.w + self.calls


def test_script_methods_on_the_modules_state() -> None:
    """The module's parameters and buffers are the program's state (torch.export fails here:
    it calls the method's Python with the method object as ``self``)."""
    x = torch.randn(3, 4)
    model = Holds(Stateful())
    ep = st.export(model, (x,), dynamic_shapes=({0: Dim("n")},))
    assert set(ep.state_dict) == {"inner.w", "inner.calls"}
    assert float(model.inner.calls) == 0.0  # exporting changed nothing
    eager, program = Holds(Stateful()), ep.module()
    for n in (0, 1, 5):
        y = torch.randn(n, 4)
        same(program(y), eager(y))  # the buffer counts the calls in both
    assert float(ep.to_torch().module().get_buffer("inner.calls")) == 3.0
    with pytest.raises(AttributeError, match="ScriptMethod"):
        torch.export.export(Holds(Stateful()), (x,))


class CountsInAttribute(torch.jit.ScriptModule):
    """A script method writing plain (non-tensor) attributes, held in TorchScript's C++."""

    def __init__(self) -> None:
        super().__init__()
        self.steps = 0
        self.scale = 1.5

    @torch.jit.script_method
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.steps = self.steps + 1
        self.scale = self.scale * 2.0
        return x * self.scale


def test_exporting_leaves_a_script_modules_attributes_as_they_were() -> None:
    """Export never mutates the model: the script method's attribute writes ran during
    tracing (in C++, not in ``__dict__``) and are undone, as a plain module's are."""
    model = Holds(CountsInAttribute())
    x = torch.randn(2, 4)
    ep = st.export(model, (x,))
    assert model.inner.steps == 0 and model.inner.scale == 1.5
    same(ep.module()(x), Holds(CountsInAttribute())(x))  # what the first eager call gives


class ReachesOutside(nn.Module):
    """A script method of a module the model does not hold as a submodule."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = [ScriptedPart()]  # (a plain list: not a submodule)

    def forward(self, x):
        return self.hidden[0]._part(x)


def test_a_script_method_outside_the_model_is_refused() -> None:
    with pytest.raises(st.UnsupportedInputError, match="TorchScript method `_part`") as info:
        st.export(ReachesOutside(), (torch.randn(2, 3),))
    assert "self.hidden[0]._part(x)" in str(info.value)
    assert torch.jit.is_scripting() is False  # nothing left installed
    assert ReachesOutside()(torch.zeros(1)).tolist() == [1.0]  # TorchScript's cos, as before


class _Branchy(nn.Module):
    def forward(self, x):
        return x.sin() if x.sum() > 0 else x.cos()


def test_a_scripted_submodule_branching_on_data_is_a_data_read_and_a_traced_one_runs_its_trace(
        ) -> None:
    """A torch.jit.script / trace submodule's method is followed node by node through its
    TorchScript graph (trace/script_graph.py): the scripted one decides on tensor data
    (refused as a data read, naming the line), the traced one runs the branch its trace
    froze, for every input, as eager's traced module does."""
    x = torch.ones(2, 3)
    with pytest.raises(st.ExportError, match="reads tensor data") as info:
        st.export(Holds(torch.jit.script(_Branchy())), (x,))
    assert "self.inner(x) - x" in str(info.value)
    traced = Holds(torch.jit.trace(_Branchy(), (x,)))  # (frozen at sin)
    ep = st.export(traced, (x,), dynamic_shapes=({0: Dim("n")},))
    for y in (-torch.ones(3, 3), torch.randn(0, 3), x):
        same(ep.module()(y), traced(y))
        same(ep.module()(y), y.sin() - y)


class AddsItem(nn.Module):
    def forward(self, rv: torch.Tensor, t: torch.Tensor):
        return rv + t.item()


def test_a_scripted_model_is_refused_as_torch_refuses_it() -> None:
    """torch's test_export_script_module: the same exception type and words as torch's."""
    scripted = torch.jit.script(AddsItem())
    inp = (torch.zeros(3, 4), torch.tensor(7))
    for export in (torch.export.export, st.export):
        with pytest.raises(ValueError, match="Exporting a ScriptModule is not supported"):
            export(scripted, inp)
    with pytest.raises(st.UnsupportedInputError, match="the original nn.Module"):
        st.export(scripted, inp)


class _Affine(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(2))

    def forward(self, x, y):
        return x + y * self.w


class HoldsCompiledObject(nn.Module):
    """A scripted module's C++ object held as a plain attribute, its method called."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = torch.jit.script(inner)._c

    def forward(self, x, y):
        return self.inner.forward(x, y) * 2


def test_a_scripted_modules_cpp_object_held_as_an_attribute_follows_its_graph() -> None:
    """torch's TestExportCustomClass.test_export_script_module: ``torch.jit.script(m)._c``
    held by the model and its ``forward`` called: its graph is followed (its parameter a
    constant of the program, as torch.export lifts it), on other sizes too."""
    model = HoldsCompiledObject(_Affine())
    args = (torch.randn(3, 2), torch.randn(3, 2))
    spec = ({0: Dim("n")}, {0: Dim("n")})
    ref = torch.export.export(model, args)
    ours = st.export(model, args, dynamic_shapes=spec)
    for n in (0, 1, 5):
        x, y = torch.randn(n, 2), torch.randn(n, 2)
        same(ours.module()(x, y), model(x, y))
        same(ours.to_torch().module()(x, y), model(x, y))
    same(ours.module()(*args), ref.module()(*args))
    assert [s.kind.name for s in ours.to_torch().graph_signature.input_specs].count(
        "CONSTANT_TENSOR") == 1


class _Counts(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("c", torch.zeros(2))

    def forward(self, x, y):
        self.c.add_(1)
        return x + y * self.c


def test_a_held_cpp_object_whose_graph_writes_in_place_is_refused() -> None:
    """Its tensors are constants of the program, and eager keeps the write from call to
    call: refused, naming the node, and the object is left as it was."""
    model = HoldsCompiledObject(_Counts())
    with pytest.raises(st.UnsupportedInputError, match="aten::add_") as info:
        st.export(model, (torch.randn(3, 2), torch.randn(3, 2)))
    assert "model.inner = " in info.value.fix
    same(model.inner.getattr("c"), torch.zeros(2))


class CallsTorchbind(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        weight = torch.quantize_per_tensor(torch.randn(3, 2), 0.1, 0, torch.qint8)
        self.packed = torch.ops.quantized.linear_prepack(weight, None)

    def forward(self, x):
        return x + self.packed.unpack()[0].dequantize()


def test_a_torchbind_objects_method_without_a_fake_class_is_refused_naming_it() -> None:
    """A TorchScript custom class object's method (C++ code, no graph) whose class has no
    registered fake class (torch records call_torchbind from one: test_dropin_torchbind.py):
    refused, naming the class, the call's line and the registration to paste."""
    model = CallsTorchbind()
    model(torch.zeros(3, 2))  # eager runs it
    with pytest.raises(st.UnsupportedInputError, match="LinearPackedParamsBase") as info:
        st.export(model, (torch.zeros(3, 2),))
    assert "self.packed.unpack()" in str(info.value)
    assert 'register_fake_class("quantized::LinearPackedParamsBase")' in info.value.fix
