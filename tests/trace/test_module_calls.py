"""How an export follows the model's module calls (issue 20, per-op cost): without global
module hooks where it can (each submodule's call reaches the module stack through its own
``_compiled_call_impl`` for the export's duration, so torch's call keeps its fast path), with
the same ``nn_module_stack`` as the global hooks give; other threads see no hook, call the
same submodules as in eager, and nothing is left on the modules afterwards."""

from __future__ import annotations

import threading

import torch
from torch import nn
from torch.nn.modules import module as nn_module

import safetrace as st
from tests.helpers import same_in_threads, while_exporting


class _Waits(nn.Module):
    """Lets a bystander thread run in the middle of the export, after a submodule call."""

    def __init__(self, started: threading.Event, done: threading.Event) -> None:
        super().__init__()
        self.started, self.done = started, done
        self.lin = nn.Linear(3, 3)
        self.out = nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        self.started.set()
        assert self.done.wait(timeout=120)
        return self.out(y.relu())


def _stacks(ep: st.ExportedProgram) -> list:
    return [(n.name, n.meta.get("nn_module_stack"), n.meta.get("stack_trace"))
            for n in ep.graph.nodes]


def test_no_global_hook_while_exporting_and_a_bystander_calls_the_same_submodule() -> None:
    started, done = threading.Event(), threading.Event()
    torch.manual_seed(0)
    model = _Waits(started, done).eval()
    x = torch.randn(4, 3)
    want = model.lin(x)

    def bystander(seen: dict) -> None:
        seen["hooks"] = (dict(nn_module._global_forward_pre_hooks),
                         dict(nn_module._global_forward_hooks))
        seen["lin"] = model.lin(x)  # (the module being exported, called here)
        calls: list = []
        h = model.out.register_forward_hook(lambda m, a, o: calls.append(o.shape))
        seen["out"] = model.out(x)
        h.remove()
        seen["hooked"] = calls

    with while_exporting(bystander, started, done) as seen:
        n = st.Dim("n", min=1, max=32)
        ep = st.export(model, (x,), dynamic_shapes={"x": {0: n}})
    assert seen["hooks"] == ({}, {})  # (the export's module calls: no global hook)
    torch.testing.assert_close(seen["lin"], want)
    assert seen["hooked"] == [torch.Size([4, 2])]
    # the bystander's calls are not the export's: each submodule once in the stacks
    stacks = [list(s) for _, s, _ in _stacks(ep) if s]
    assert stacks == [["L__self___lin"], ["L__self___out"]]
    for m in model.modules():  # nothing left on the modules
        assert "_compiled_call_impl" not in vars(m)
    for size in (1, 5):
        x2 = torch.randn(size, 3)
        torch.testing.assert_close(ep.module()(x2), model.out(model.lin(x2).relu()))


class _Shared(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.seq = nn.Sequential(self.a, nn.ReLU(), self.a)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.seq(x) + self.a(x)


def test_two_threads_export_one_model_at_once_with_the_serial_stacks() -> None:
    """Two exports of the same module objects at once (the second follows its calls with
    global hooks, the first's calls being on the modules): the serial program each time."""
    torch.manual_seed(0)
    model = _Shared().eval()
    x = torch.randn(3, 4)

    def made() -> tuple:
        ep = st.export(model, (x,))
        return str(ep), _stacks(ep)

    same_in_threads(made, 10)
    for m in model.modules():
        assert "_compiled_call_impl" not in vars(m)
    assert not nn_module._global_forward_hooks and not nn_module._global_forward_pre_hooks


class _OwnCall(nn.Linear):
    """A class with its own ``__call__`` (never reaches ``_compiled_call_impl``)."""

    def __call__(self, *args, **kwargs):
        return super().__call__(*args, **kwargs) * 2


class _HoldsOwnCall(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = _OwnCall(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x))


def test_a_class_with_its_own_call_keeps_its_stacks() -> None:
    torch.manual_seed(0)
    m = _HoldsOwnCall().eval()
    ep = st.export(m, (torch.randn(2, 4),))
    got = [(n.name, [f for f, _ in (n.meta.get("nn_module_stack") or {}).values()])
           for n in ep.graph.nodes if n.op == "call_function"]
    # (the class's own `* 2` runs after torch's call returned: outside `a`'s entry)
    assert got == [("linear", ["a"]), ("mul", []), ("linear_1", ["b"])]
    x = torch.randn(2, 4)
    torch.testing.assert_close(ep.module()(x), m(x))
    for mod in m.modules():
        assert "_compiled_call_impl" not in vars(mod)


_PACE: dict = {}


class _Paced(nn.Module):
    """Exported on two threads at once, paced so that the second export starts while the
    first follows the modules' calls and ends after the first ended."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.out = nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        name = threading.current_thread().name
        if name == "first":
            _PACE["first_in"].set()
            assert _PACE["second_in"].wait(timeout=120)
        elif name == "second":
            _PACE["second_in"].set()
            assert _PACE["first_done"].wait(timeout=120)
        return self.out(y.relu())


def test_an_export_overlapping_another_of_the_same_model_leaves_nothing_behind() -> None:
    """The second export's snapshot of the modules holds the first's calls set on them;
    the first removes them when it ends, and the second does not put them back."""
    torch.manual_seed(0)
    model = _Paced().eval()
    x = torch.randn(4, 3)
    serial = _stacks(st.export(model, (x,)))
    _PACE.update(first_in=threading.Event(), second_in=threading.Event(),
                 first_done=threading.Event())
    got: dict = {}

    def run(name: str) -> None:
        try:
            got[name] = _stacks(st.export(model, (x,)))
        except Exception as exc:  # noqa: BLE001 - reported below
            got[name] = exc

    first = threading.Thread(target=run, args=("first",), name="first")
    second = threading.Thread(target=run, args=("second",), name="second")
    first.start()
    assert _PACE["first_in"].wait(timeout=120)
    second.start()
    first.join(timeout=300)
    _PACE["first_done"].set()
    second.join(timeout=300)
    assert got == {"first": serial, "second": serial}
    for m in model.modules():
        assert "_compiled_call_impl" not in vars(m)
    torch.testing.assert_close(model(x), model.out(model.lin(x).relu()))
