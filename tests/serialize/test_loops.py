"""A loaded while_loop runs within its iteration budget (``max_loop_iterations``, issue 23):
a file whose loop body stops making progress is refused at call instead of hanging."""

from __future__ import annotations

import threading
import time

import pytest
import torch

import safetrace as st
from tests.serialize.hostile_static import Loop, loop_base, stuck_loop


@pytest.mark.parametrize("n", [0, 1, 7, 64])
def test_loaded_loop_matches_eager(n):
    mod = st.load(loop_base()).module()
    x = torch.randn(n, 16)
    torch.testing.assert_close(mod(x), Loop()(x))


@pytest.mark.parametrize("shape", [(65, 16), (4, 15), (16,)])
def test_loaded_loop_refuses_inputs_outside_the_space(shape):
    with pytest.raises(st.InputMismatchError):
        st.load(loop_base()).module()(torch.randn(*shape))


def test_budget_counts_iterations_of_each_call():
    x = torch.randn(3, 16)
    mod = st.load(loop_base(), budgets={"max_loop_iterations": 3}).module()
    for _ in range(3):  # the count starts again at every call
        torch.testing.assert_close(mod(x), x * 8)
    tight = st.load(loop_base(), budgets={"max_loop_iterations": 2}).module()
    with pytest.raises(st.LoadError, match="max_loop_iterations") as info:
        tight(x)
    assert "'max_loop_iterations': 4" in str(info.value)  # the fix, paste-able
    torch.testing.assert_close(mod(x), x * 8)


def test_a_loop_that_never_ends_is_refused_at_call():
    ep = st.load(stuck_loop())
    t = time.process_time()
    with pytest.raises(st.LoadError, match=r"while_loop 'while_loop'.*max_loop_iterations=10000"):
        ep.module()(torch.randn(2, 16))
    assert time.process_time() - t < 2
    with pytest.raises(st.LoadError, match="max_loop_iterations=50"):
        st.load(stuck_loop(), budgets={"max_loop_iterations": 50}).module()(torch.randn(2, 16))


def test_threads_count_their_own_iterations():
    mod = st.load(loop_base(), budgets={"max_loop_iterations": 3}).module()
    errors: list = []

    def run() -> None:
        try:
            for _ in range(50):
                x = torch.randn(5, 16)
                torch.testing.assert_close(mod(x), x * 8)
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]
