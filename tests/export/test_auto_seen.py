"""A Dim.AUTO export whose re-export with named Dims (exporter/auto_small.py) returned the
first program is remembered per model (exporter/auto_seen.py): a warm export of the same
model, call and state returns that program again without the re-export, which cost
every warm export several traces (swin 0.04 -> 0.3 s).  What decides it is compared each
time: a changed attribute, submodule or module-level function the size-1 side reads
gives the program an export of a fresh model gives (here: wider, batch 1 admitted)."""

import pytest
import torch

import safetrace as st

AUTO = st.Dim.AUTO
SPEC = ({0: AUTO, 1: AUTO},)


class Gate(torch.nn.Module):
    def __init__(self, strict=True):
        super().__init__()
        self.strict = strict

    def forward(self, x):
        if x.shape[0] == 1:
            if self.strict:
                raise ValueError("batch 1 is not supported")
            return x * 3
        return x * 2


class Refuse(torch.nn.Module):
    def forward(self, x):
        raise ValueError("batch 1 is not supported")


class Triple(torch.nn.Module):
    def forward(self, x):
        return x * 3


class Routed(torch.nn.Module):
    def __init__(self, small):
        super().__init__()
        self.small = small

    def forward(self, x):
        if x.shape[0] == 1:
            return self.small(x)
        return x - 1


class Indexed(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 1:
            return x * 2
        return x * 3 + x[0]  # (batch 0: eager raises; the re-export from 0 leaves it out)


def _one(x):
    raise ValueError("batch 1 is not supported")


def _triple(x):
    return x * 3


class ViaGlobal(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] == 1:
            return _one(x)
        return x + 1


def _export(model, calls=None):
    n = len(calls) if calls is not None else 0
    ep = st.export(model, (torch.randn(2, 3),), dynamic_shapes=SPEC)
    return ep, (len(calls) - n if calls is not None else None)


def _same_program(a, b):
    assert a.graph_module.code == b.graph_module.code
    assert repr(a.contract) == repr(b.contract)
    assert getattr(a, "auto_split_refusals", None) == getattr(b, "auto_split_refusals", None)


def _eager_raises(model, x):
    try:
        model(x)
    except (ValueError, IndexError):
        return True
    return False


def _check_sizes(ep, model):
    run = ep.module()
    for b in (0, 1, 2, 3, 7):
        for t in (0, 1, 3, 5):
            x = torch.randn(b, t)
            if _eager_raises(model, x):
                with pytest.raises(st.errors.InputMismatchError):
                    run(x)
            else:
                torch.testing.assert_close(run(x), model(x))


def test_warm_export_returns_the_uncached_program_without_the_re_export():
    calls = []
    model = Gate()
    model.register_forward_pre_hook(lambda mod, args: calls.append(1))
    first, cold = _export(model, calls)
    again, warm = _export(model, calls)
    assert warm < cold  # (the re-export was not traced again)
    assert [str(c.cond) for c in again.contract.conditions] == ["s0 != 1"]
    _same_program(again, first)
    _same_program(again, _export(Gate())[0])  # (a fresh model: nothing remembered)
    _check_sizes(again, model)


def test_warm_export_of_a_wider_program_makes_that_export_alone():
    calls = []
    model = Indexed()
    model.register_forward_pre_hook(lambda mod, args: calls.append(1))
    first, cold = _export(model, calls)
    again, warm = _export(model, calls)
    assert warm < cold  # (the first trace and that export: not the try from 0 again)
    _same_program(again, first)
    _same_program(again, _export(Indexed())[0])
    _check_sizes(again, model)
    model = Gate(strict=False)
    _export(model)
    _export(model)
    model.strict = True  # (batch 1 raises now: the narrow program, as uncached)
    narrow, _ = _export(model)
    _same_program(narrow, _export(Gate())[0])
    _check_sizes(narrow, model)


def test_attribute_changed_gives_the_uncached_program():
    model = Gate()
    _export(model)
    narrow, _ = _export(model)
    model.strict = False
    wide, _ = _export(model)
    _same_program(wide, _export(Gate(strict=False))[0])
    assert not wide.contract.conditions  # (batch 1 admitted: a side of its own)
    _check_sizes(wide, model)
    model.strict = True  # (and back: the narrow program again)
    _same_program(_export(model)[0], narrow)
    _check_sizes(narrow, model)


def test_submodule_replaced_gives_the_uncached_program():
    model = Routed(Refuse())
    _export(model)
    _export(model)
    model.small = Triple()
    wide, _ = _export(model)
    _same_program(wide, _export(Routed(Triple()))[0])
    assert not wide.contract.conditions
    _check_sizes(wide, model)


def test_module_level_function_replaced_gives_the_uncached_program(monkeypatch):
    model = ViaGlobal()
    narrow, _ = _export(model)
    _export(model)
    monkeypatch.setitem(globals(), "_one", _triple)
    wide, _ = _export(model)
    _same_program(wide, _export(ViaGlobal())[0])
    assert not wide.contract.conditions
    _check_sizes(wide, model)
    monkeypatch.undo()
    _same_program(_export(model)[0], narrow)
    _check_sizes(narrow, model)
