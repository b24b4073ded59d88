"""torch's Python-level functions (``F.relu``, ``F.layer_norm``, ``F.batch_norm``,
``F.softmax``, ``Tensor.split``) reach the tracer in one step while exporting
(``trace/fast_overrides.py``): the programs are eager's at other sizes, and everything the
one-step call does not apply to (another thread's own mode, a mode of the user's around
the export) runs torch's own dispatch."""

from __future__ import annotations

import threading

import pytest
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

import safetrace as st
from tests.helpers import same_in_threads, while_exporting


class PythonLevel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(6)
        self.bn = torch.nn.BatchNorm1d(6)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = F.relu(self.norm(x)).split(3, dim=-1)
        return F.softmax(a * b, dim=-1), F.max_pool1d(self.bn(x)[:, None], 2)


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    model = PythonLevel().eval()
    model.bn.running_mean.uniform_(-1, 1)
    model.bn.running_var.uniform_(0.5, 2)
    return model


def _export(model: torch.nn.Module) -> st.ExportedProgram:
    n = st.Dim("n", max=32)
    return st.export(model, (torch.randn(5, 6),), dynamic_shapes={"x": {0: n}})


def _check_program(ep: st.ExportedProgram, model: torch.nn.Module) -> None:
    m = ep.module()
    for rows in (0, 1, 2, 9, 32):
        x = torch.randn(rows, 6)
        for got, want in zip(m(x), model(x)):
            torch.testing.assert_close(got, want)
    for bad in (torch.randn(33, 6), torch.randn(4, 5)):
        with pytest.raises(st.InputMismatchError):
            m(bad)


def test_python_level_functions_export_and_run_at_other_sizes() -> None:
    model = _model()
    ep = _export(model)
    _check_program(ep, model)
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert {"aten.relu.default", "aten.layer_norm.default", "aten.batch_norm.default",
            "aten.max_pool1d.default"} <= targets, targets
    # the session's replacement is gone: torch's own dispatch again
    assert F.handle_torch_function is torch.overrides.handle_torch_function


class _Recording(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls.append((func, types))
        return func(*args, **(kwargs or {}))


def test_an_export_inside_a_users_mode_gives_the_same_program() -> None:
    model = _model()
    alone = str(_export(model))
    outer = _Recording()
    with outer:
        ep = _export(model)
    assert str(ep) == alone
    _check_program(ep, model)


class _Waits(torch.nn.Module):
    """A forward that lets a bystander thread run in the middle of the export."""

    def __init__(self, started: threading.Event, done: threading.Event) -> None:
        super().__init__()
        self.started, self.done = started, done
        self.norm = torch.nn.LayerNorm(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.norm(x))
        self.started.set()
        assert self.done.wait(timeout=120)
        return F.relu(y - 0.5)


def test_a_bystanders_own_mode_sees_its_python_level_calls_during_an_export() -> None:
    started, done = threading.Event(), threading.Event()

    def bystander(seen: dict) -> None:
        mode = _Recording()
        x = torch.tensor([-1.0, 2.0, -3.0, 4.0])
        with mode:
            seen["relu"] = F.relu(x)
            seen["split"] = x.split(2)
        seen["calls"] = mode.calls
        seen["plain"] = F.relu(x)  # (no mode: torch's kernel)

    with while_exporting(bystander, started, done) as seen:
        n = st.Dim("n", max=16)
        ep = st.export(_Waits(started, done), (torch.randn(3, 4),), dynamic_shapes={"x": {0: n}})
    torch.testing.assert_close(seen["relu"], torch.tensor([0.0, 2.0, 0.0, 4.0]))
    torch.testing.assert_close(seen["plain"], torch.tensor([0.0, 2.0, 0.0, 4.0]))
    assert [len(p) for p in seen["split"]] == [2, 2]
    funcs = [f for f, _ in seen["calls"]]
    assert funcs[0] is F.relu and funcs[1] is torch.Tensor.split, funcs
    assert all(types == (torch.Tensor,) for _, types in seen["calls"][:2])
    model = _Waits(threading.Event(), threading.Event())
    model.done.set()
    model.load_state_dict({k: v for k, v in ep.state_dict.items()})
    m = ep.module()
    for rows in (0, 1, 7):
        x = torch.randn(rows, 4)
        torch.testing.assert_close(m(x), model(x))


def test_two_threads_export_python_level_functions_at_once() -> None:
    model = _model()
    same_in_threads(lambda: str(_export(model)), 10)
    assert F.handle_torch_function is torch.overrides.handle_torch_function
    assert torch._tensor.handle_torch_function is torch.overrides.handle_torch_function
