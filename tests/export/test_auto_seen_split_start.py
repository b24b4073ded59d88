"""A warm Dim.AUTO export whose re-export with named Dims was split at length 1 (gpt2's
sdpa `q_length > 1`) traces the split's sides at once (exporter/auto_seen.py remembers
the refusal the split started from, ``splits.export_with_splits(start=)``): the first
trace and the two sides, not the re-export's first trace again (refused the same way in
the same state).  Its program is the one a fresh model's export gives, and a changed
attribute the length-1 side reads gives the fresh program too."""

import pytest
import torch

import safetrace as st

AUTO = st.Dim.AUTO
SPEC = ({0: AUTO, 1: AUTO},)


class Decode(torch.nn.Module):
    def __init__(self, scale=2.0):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        last = x[:, -1]  # (eager raises at length 0)
        if x.shape[1] == 1:  # (one token: another graph)
            return x * self.scale + last[:, None]
        return x.cumsum(1) + last[:, None]


def _export(model, calls):
    n = len(calls)
    ep = st.export(model, (torch.randn(2, 6),), dynamic_shapes=SPEC)
    return ep, len(calls) - n


def _counted(model):
    calls = []
    model.register_forward_pre_hook(lambda mod, args: calls.append(1))
    return model, calls


def _same_program(a, b):
    assert a.graph_module.code == b.graph_module.code
    assert repr(a.contract) == repr(b.contract)


def _check_sizes(ep, model):
    run = ep.module()
    for b in (0, 1, 2, 3):
        for t in (0, 1, 2, 5):
            x = torch.randn(b, t)
            if t == 0:  # (eager raises: refused before running)
                with pytest.raises(IndexError):
                    model(x)
                with pytest.raises(st.InputMismatchError):
                    run(x)
            else:
                torch.testing.assert_close(run(x), model(x))


def test_warm_export_traces_the_sides_alone():
    model, calls = _counted(Decode())
    first, cold = _export(model, calls)
    again, warm = _export(model, calls)
    assert warm == 3  # (the first trace, length 1, lengths from 2)
    assert cold > warm
    _same_program(again, first)
    _same_program(again, _export(*_counted(Decode()))[0])
    _check_sizes(again, model)
    with pytest.raises(st.InputMismatchError):
        again.module()(torch.randn(2, 5, 1))  # (another rank)


def test_changed_attribute_gives_the_fresh_program():
    model, calls = _counted(Decode())
    _export(model, calls)
    _export(model, calls)
    model.scale = 5.0  # (read on the length-1 side only)
    changed, _ = _export(model, calls)
    _same_program(changed, _export(*_counted(Decode(5.0)))[0])
    _check_sizes(changed, model)
