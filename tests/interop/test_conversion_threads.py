"""A conversion changes nothing of torch's that another thread can see: two ``to_torch()``
calls inside torch's ``ExportedProgram`` constructor at the same moment, while a third
thread builds a program with that constructor, each get what they would alone (the
conversions a lazily compiled graph module, the bystander torch's eager one and its guard
code), and torch's module is left as it was."""

import threading

import pytest
import torch
from torch.export import ExportedProgram
from torch.export import exported_program as torch_module
from torch.export.graph_signature import (ExportGraphSignature, InputKind, InputSpec,
                                          OutputKind, OutputSpec, TensorArgument)
from torch.fx._lazy_graph_module import _LazyGraphModule

import safetrace as st
from safetrace.interop import construct


def _guarded_fields() -> dict:
    """The fields of a one-input program whose ShapeEnv holds a guard (x.shape[0] > 2), for
    torch's constructor: its guard code is made from that guard."""
    from torch._dynamo.source import LocalSource
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import (DimDynamic, ShapeEnv,
                                                       StatelessSymbolicContext)

    mode = FakeTensorMode(shape_env=ShapeEnv())
    x = mode.from_tensor(torch.randn(5, 3), source=LocalSource("x"),
                         symbolic_context=StatelessSymbolicContext(
                             dynamic_sizes=[DimDynamic.DYNAMIC, DimDynamic.STATIC]))
    assert bool(x.shape[0] > 2)  # (records the guard)
    graph = torch.fx.Graph()
    node = graph.placeholder("x")
    node.meta["val"] = x
    out = graph.call_function(torch.ops.aten.relu.default, (node,))
    out.meta["val"] = x
    graph.output((out,))
    signature = ExportGraphSignature(
        [InputSpec(InputKind.USER_INPUT, TensorArgument("x"), None)],
        [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(out.name), None)])
    return dict(root=torch.nn.Module(), graph=graph, graph_signature=signature,
                state_dict={}, range_constraints={}, module_call_graph=[])


def _program(width: int) -> "st.ExportedProgram":
    model = torch.nn.Sequential(torch.nn.Linear(width, 3), torch.nn.ReLU()).eval()
    return st.export(model, (torch.randn(4, width),),
                     dynamic_shapes={"input": {0: st.Dim("batch", max=64)}})


def test_two_conversions_and_a_bystander_constructor_at_once(monkeypatch) -> None:
    programs = [_program(5), _program(6)]
    expected_guards = ExportedProgram(**_guarded_fields())._guards_code
    assert expected_guards  # (the bystander's check below can fail)
    helpers = (torch_module._create_graph_module_for_export,
               torch_module._convert_guards_to_code)
    converting = set()
    barrier = threading.Barrier(2, timeout=20)
    bystander_saw: list = []
    errors: list = []
    pass_ = construct._getitems_pass

    def bystander() -> None:
        try:
            tep = ExportedProgram(**_guarded_fields())
            bystander_saw.append((type(tep.graph_module), tep._guards_code))
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)

    def inside_constructor(*args, **kwargs):
        # (run by torch's constructor between making the graph module and the guard
        # code: both conversions wait here for each other, then one lets the bystander
        # build its program while both are still inside)
        if threading.get_ident() in converting:
            if barrier.wait() == 0:
                t = threading.Thread(target=bystander)
                t.start()
                t.join(20)
            barrier.wait()
        return pass_(*args, **kwargs)

    monkeypatch.setattr(construct, "_getitems_pass", inside_constructor)
    results: list = [None, None]

    def convert(i: int) -> None:
        converting.add(threading.get_ident())
        try:
            results[i] = programs[i].to_torch()
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=convert, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    # the bystander got torch's own constructor: an eager graph module, its guard code
    assert len(bystander_saw) == 1
    kind, guards = bystander_saw[0]
    assert not issubclass(kind, _LazyGraphModule)
    assert guards == expected_guards
    # torch's module as it was
    assert (torch_module._create_graph_module_for_export,
            torch_module._convert_guards_to_code) == helpers
    # each conversion: its own program, lazily compiled, right at other sizes
    for width, program, tep in zip((5, 6), programs, results):
        assert isinstance(tep.graph_module, _LazyGraphModule)
        assert tep._guards_code == ["L['input'].dtype == torch.float32",  # (ours only)
                                    "L['input'].size()[0] <= 64"]
        for n in (0, 1, 9):
            x = torch.randn(n, width)
            torch.testing.assert_close(tep.module()(x), program.module()(x))
        with pytest.raises(Exception):
            tep.module()(torch.randn(3, width + 1))


class _Squeezable(torch.nn.Module):
    def forward(self, x):
        return x * 2


def test_size_oblivious_setting_is_the_converting_threads_only(monkeypatch) -> None:
    """``to_torch()`` propagates with torch's ``backed_size_oblivious`` on: a thread's
    ``torch.export`` meanwhile runs with its own setting (off: a size-1 ``Dim.AUTO`` dim
    is specialized, as it would be alone), and afterwards the converting thread's setting
    is unset again, not pinned to the value it read."""
    from torch.fx.experimental import _config as fx_config

    from safetrace.interop import torch_export

    program = _program(5)
    inside = threading.Event()
    resume = threading.Event()
    seen: dict = {}
    errors: list = []
    output = torch_export._Converter._output

    def paused_output(self, *args, **kwargs):  # (inside the conversion's settings)
        seen["converting"] = fx_config.backed_size_oblivious
        inside.set()
        resume.wait(60)
        return output(self, *args, **kwargs)

    monkeypatch.setattr(torch_export._Converter, "_output", paused_output)

    def convert() -> None:
        try:
            seen["tep"] = program.to_torch()
            seen["after"] = fx_config._is_default("backed_size_oblivious")
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)
            inside.set()

    t = threading.Thread(target=convert)
    t.start()
    try:
        assert inside.wait(60)
        seen["bystander"] = fx_config.backed_size_oblivious
        Dim = torch.export.Dim
        alone = torch.export.export(_Squeezable(), (torch.randn(1, 3),),
                                    dynamic_shapes={"x": {0: Dim.AUTO}})
    finally:
        resume.set()
        t.join(60)
    assert not errors, errors
    assert seen["converting"] is True and seen["bystander"] is False
    assert not alone.range_constraints  # the size-1 dim specialized: torch's default
    assert seen["after"]  # unset again on the converting thread
    x = torch.randn(7, 5)
    torch.testing.assert_close(seen["tep"].module()(x), program.module()(x))


_FIRST_CONVERSIONS = r'''
import sys, threading
import torch
import safetrace as st

sys.setswitchinterval(1e-6)  # (thread switches between any two bytecodes: races show)


class Net(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = torch.nn.Linear(width, 6)
        self.norm = torch.nn.LayerNorm(6)

    def forward(self, x):
        y = self.norm(torch.relu(self.lin(x)))
        y = torch.tanh(y) + torch.sigmoid(y) * torch.nn.functional.gelu(y)
        y = torch.softmax(y, -1) - torch.exp(-y.abs())
        return torch.cat([y, y.sum(-1, keepdim=True), y.mean(-1, keepdim=True)], -1)


widths = (5, 6, 7, 8)
programs = [st.export(Net(w).eval(), (torch.randn(4, w),),
                      dynamic_shapes={"x": {0: st.Dim("batch", max=64)}}) for w in widths]
for round in range(6):
    if round:  # torch's handlers looked up anew, as after a Python kernel's registration
        for op in torch._ops.get_cached_ops():
            op._dispatch_cache.clear()
    barrier, errors, out = threading.Barrier(len(widths)), [], {}

    def convert(i):
        try:
            barrier.wait()
            out[i] = programs[i].to_torch(verify=True)
        except BaseException as exc:
            errors.append(f"round {round}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=convert, args=(i,)) for i in range(len(widths))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
for w, program, i in zip(widths, programs, range(len(widths))):
    for n in (0, 1, 9):
        x = torch.randn(n, w)
        torch.testing.assert_close(out[i].module()(x), program.module()(x))
    try:
        out[i].module()(torch.randn(65, w))
    except Exception:
        pass
    else:
        raise AssertionError("batch 65 accepted")
print("converted")
'''


def test_first_conversions_of_a_process_in_threads() -> None:
    """Four threads converting four programs at once as a process's first conversions
    (torch's Python dispatcher finds no handler of any op yet), then again after torch's
    handlers are dropped, as registering a Python kernel drops an op's: each conversion
    gets its program, none torch's ``already in dispatch cache`` error of another
    thread's lookup (before the lock 4 of 4 processes failed, in rounds 0 and 1: 6 rounds
    are run)."""
    from tests import child

    # (forked from a process that imported torch and safetrace's package face only: no
    # conversion, no torch.export nor dynamo there yet)
    done = child.run(["-c", _FIRST_CONVERSIONS], text=True, timeout=600)
    assert done.returncode == 0 and "converted" in done.stdout, done.stderr[-3000:]
