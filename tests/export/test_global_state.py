"""Module-level Python state that forward changes (``global CALLS; CALLS += 1``,
``_STATE["scale"] += 1``): checked as the model's own attributes are (test_python_state.py).
Exported where the graph and forward's decisions do not depend on it; refused, naming the
global, where they do — torch.export keeps the value it saw and answers wrongly later."""

from __future__ import annotations

import threading

import pytest
import torch

import safetrace as st

CALLS = 0
LOGGED = 0
_STATE = {"scale": 1.0}
_SIZE = None


class DecidesOnAGlobal(torch.nn.Module):
    def forward(self, x):
        global CALLS
        CALLS += 1
        if CALLS > 2:  # eager switches at its third call
            return x * 2
        return x + 1


class ReadsAGlobalDict(torch.nn.Module):
    def forward(self, x):
        _STATE["scale"] += 1
        return x * _STATE["scale"]


class CountsForLogging(torch.nn.Module):
    def forward(self, x):
        global LOGGED
        LOGGED += 1  # nothing computed reads it
        return x.relu() * 3


class KeepsASize(torch.nn.Module):
    def forward(self, x):
        global _SIZE
        _SIZE = x.shape[0]  # a value from the input's sizes, kept for the caller
        return x + 1


def _reset() -> None:
    global CALLS, LOGGED, _SIZE
    CALLS = LOGGED = 0
    _SIZE = None
    _STATE["scale"] = 1.0


def test_a_branch_on_a_global_counter_is_refused_where_torch_answers_wrongly():
    _reset()
    x = torch.randn(3)
    with pytest.raises(st.UnsupportedOpError,
                       match=r"the global `CALLS` of module .*test_global_state(.|\n)*"
                             r"a comparison of the global `CALLS`.*test_global_state\.py:\d+"
                             r"(.|\n)*register_buffer\(\"CALLS\""):
        st.export(DecidesOnAGlobal(), (x,))
    _reset()
    theirs = torch.export.export(DecidesOnAGlobal(), (x,)).module()
    _reset()
    eager = DecidesOnAGlobal()
    outs = [(eager(x), theirs(x)) for _ in range(3)]
    assert not torch.equal(outs[2][0], outs[2][1])  # torch's third call is wrong


def test_a_global_dict_the_graph_reads_is_refused():
    _reset()
    with pytest.raises(st.UnsupportedOpError, match=r"the global `_STATE` of module"):
        st.export(ReadsAGlobalDict(), (torch.randn(3),))


def test_a_global_counter_nothing_reads_exports_and_matches_eager():
    _reset()
    ep = st.export(CountsForLogging(), (torch.randn(4),), dynamic_shapes=({0: st.Dim("n")},))
    m, eager = ep.module(), CountsForLogging()
    for n in (0, 1, 7):
        x = torch.randn(n)
        torch.testing.assert_close(m(x), eager(x))
    with pytest.raises(st.InputMismatchError):
        m(torch.randn(2, 2))


def test_a_size_kept_in_a_global_leaves_no_traced_value_behind():
    _reset()
    ep = st.export(KeepsASize(), (torch.randn(4),), dynamic_shapes=({0: st.Dim("n")},))
    assert _SIZE is None  # (torch.export leaves a SymInt there)
    m = ep.module()
    for n in (0, 1, 6):
        x = torch.randn(n)
        torch.testing.assert_close(m(x), x + 1)
    with pytest.raises(st.InputMismatchError):
        m(torch.randn(3, 3))


def test_a_bystander_thread_changing_the_global_forward_counts_does_not_disturb_it():
    _reset()
    stop = threading.Event()

    def bystander() -> None:
        global LOGGED
        while not stop.is_set():
            LOGGED += 1

    t = threading.Thread(target=bystander)
    t.start()
    try:
        eps = [st.export(CountsForLogging(), (torch.randn(3),))
               for _ in range(5)]
    finally:
        stop.set()
        t.join()
    x = torch.randn(3)
    for ep in eps:
        torch.testing.assert_close(ep.module()(x), x.relu() * 3)
