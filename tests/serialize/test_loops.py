"""A loaded while_loop runs within its iteration budget (``max_loop_iterations``, issue 23):
a file whose loop body stops making progress is refused at call instead of hanging."""

from __future__ import annotations

import functools
import io
import threading
import time

import pytest
import torch

import safetrace as st
from tests.serialize.hostile_static import Loop, loop_base, pack, parts, stuck_loop
from tests.serialize import surgery


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
    with pytest.raises(st.RuntimeAssertionError, match="max_loop_iterations") as info:
        tight(x)
    assert "'max_loop_iterations': 4" in str(info.value)  # the fix, paste-able
    torch.testing.assert_close(mod(x), x * 8)


def test_a_loop_that_never_ends_is_refused_at_call():
    ep = st.load(stuck_loop())
    t = time.process_time()
    with pytest.raises(st.RuntimeAssertionError,
                       match=r"while_loop 'while_loop'.*max_loop_iterations=10000") as info:
        ep.module()(torch.randn(2, 16))
    assert time.process_time() - t < 2
    assert info.value.details["budget"] == "max_loop_iterations"
    with pytest.raises(st.RuntimeAssertionError, match="max_loop_iterations=50"):
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


class Nested(torch.nn.Module):
    """A while_loop whose body runs another: 3 outer iterations of 3 inner ones."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def inner(j: torch.Tensor, y: torch.Tensor) -> tuple:
            return torch._higher_order_ops.while_loop(
                lambda k, z: k < 3, lambda k, z: (k + 1, z + 1), (j, y))

        def body(i: torch.Tensor, y: torch.Tensor) -> tuple:
            return i + 1, inner(torch.zeros_like(i), y)[1] * 2

        return torch._higher_order_ops.while_loop(lambda i, y: i < 3, body,
                                                  (torch.tensor(0), x))[1]


def _bounded(blob: bytes, bound: int) -> bytes:
    """`blob` with each loop's bound (``lt.Scalar`` against 3 in a subgraph) set to `bound`."""
    doc, tensors = parts(blob)
    for g in doc["subgraphs"]:
        for n in g["nodes"]:
            if n.get("target") == "torch.ops.aten.lt.Scalar" and n["args"][1] == 3:
                n["args"][1] = bound
    return pack(doc, tensors)


@functools.lru_cache(maxsize=None)
def _nested(bound: int | None = None) -> bytes:
    """The program of ``Nested``, each loop's bound (3) set to ``bound`` in the file."""
    if bound is None:
        return surgery.saved(st.export(Nested(), (torch.randn(2, 4),),
                          dynamic_shapes={"x": {0: st.Dim("n", max=64)}}))
    return _bounded(_nested(), bound)


def test_nested_loops_count_toward_the_outer_budget():
    """Two nested loops of 9,000 iterations each are within the budget one by one, but
    would run 81,000,000 iterations in all (hours): the outer loop's budget counts the
    inner loop's iterations, and the call is refused within the budget (here 90 x 90
    under a budget of 100, to keep the test fast)."""
    x = torch.randn(5, 4)
    torch.testing.assert_close(st.load(_nested()).module()(x), Nested()(x))
    mod = st.load(_nested(), budgets={"max_loop_iterations": 12}).module()
    torch.testing.assert_close(mod(x), Nested()(x))  # (3 + 3 * 3 = 12 iterations in all)
    with pytest.raises(st.RuntimeAssertionError, match="nested in its body"):
        st.load(_nested(), budgets={"max_loop_iterations": 11}).module()(x)
    # (90 x 90 iterations under a budget of 100; at the default budget, 9,000 x 9,000)
    hostile = st.load(_nested(90), budgets={"max_loop_iterations": 100}).module()
    with pytest.raises(st.RuntimeAssertionError, match=r"counting those of the loops nested"
                                                       r".*max_loop_iterations=100\)") as info:
        hostile(x)
    assert info.value.details["budget"] == "max_loop_iterations"
    torch.testing.assert_close(mod(x), Nested()(x))  # (the next call counts from 0 again)


class LoopPerRow(torch.nn.Module):
    """A map whose body runs a while_loop of 3 iterations on each row."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from torch._higher_order_ops.map import map as map_

        def row(r: torch.Tensor) -> torch.Tensor:
            return torch._higher_order_ops.while_loop(
                lambda k, z: k < 3, lambda k, z: (k + 1, z * 2), (torch.tensor(0), r))[1]

        return map_(row, x)


@functools.lru_cache(maxsize=None)
def _per_row(bound: int | None = None) -> bytes:
    if bound is None:
        return surgery.saved(st.export(LoopPerRow(), (torch.randn(4, 4),),
                          dynamic_shapes={"x": {0: st.Dim("n", min=1, max=64)}}))
    return _bounded(_per_row(), bound)


@pytest.mark.slow
def test_loops_in_a_maps_body_count_toward_one_budget_over_its_slices():
    """A map's slices each start a while_loop afresh: 64 rows of 9,000 iterations each
    (576,000) would pass every loop's own budget; the loops nested in the map's body count
    toward max_loop_iterations over all its slices (here 64 x 90 under 100)."""
    x = torch.randn(5, 4)
    torch.testing.assert_close(st.load(_per_row()).module()(x), LoopPerRow()(x))
    mod = st.load(_per_row(), budgets={"max_loop_iterations": 15}).module()
    for _ in range(2):  # (5 rows of 3 iterations, each call counted from 0)
        torch.testing.assert_close(mod(x), LoopPerRow()(x))
    with pytest.raises(st.RuntimeAssertionError, match=r"map 'map_impl'.*nested in its body"):
        st.load(_per_row(), budgets={"max_loop_iterations": 14}).module()(x)
    hostile = st.load(_per_row(90), budgets={"max_loop_iterations": 100}).module()
    with pytest.raises(st.RuntimeAssertionError, match=r"max_loop_iterations=100\)"):
        hostile(torch.randn(64, 4))  # (64 rows of 90 iterations)


class CondInLoop(torch.nn.Module):
    """A while_loop of three iterations whose body branches on data (torch.cond)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def body(i: torch.Tensor, y: torch.Tensor) -> tuple:
            return i + 1, torch.cond(y.sum() > 0, lambda t: t * 2, lambda t: t.flip(0), (y,))

        return torch._higher_order_ops.while_loop(lambda i, y: i < 3, body,
                                                  (torch.tensor(0), x))[1]


def test_a_cond_in_a_loaded_loops_body_runs_as_the_programs_own(monkeypatch):
    """A loaded loop's body ran its cond through torch's eager dispatch (about 1 ms a
    call, against 0.1 ms: a stuck loop of such a body took 12 s to reach its budget, the
    hostile probe's hang, seed 5); it runs as ep.module()'s own conds do."""
    buf = io.BytesIO()
    st.save(st.export(CondInLoop(), (torch.randn(4),),
                      dynamic_shapes={"x": {0: st.Dim("n", max=64)}}), buf)
    mod = st.load(buf.getvalue()).module()
    inputs = (torch.randn(5), -torch.ones(3), torch.randn(0))
    wants = [CondInLoop()(x) for x in inputs]
    dispatched = []
    op = type(torch.ops.higher_order.cond)
    call = op.__call__
    monkeypatch.setattr(op, "__call__", lambda self, *a, **k: dispatched.append(1) or
                        call(self, *a, **k))
    for x, want in zip(inputs, wants):
        torch.testing.assert_close(mod(x), want)
    assert not dispatched


class LoopPerStep(torch.nn.Module):
    """A scan whose combine runs a while_loop of 3 iterations on each slice."""

    def forward(self, x: torch.Tensor) -> tuple:
        from torch._higher_order_ops.scan import scan

        def combine(c: torch.Tensor, r: torch.Tensor) -> tuple:
            y = torch._higher_order_ops.while_loop(
                lambda k, z: k < 3, lambda k, z: (k + 1, z * 2), (torch.tensor(0), r))[1]
            return c + y, y

        return scan(combine, torch.zeros(4), x)


@pytest.mark.slow
def test_loops_in_a_scans_combine_count_over_its_steps():
    buf = io.BytesIO()
    st.save(st.export(LoopPerStep(), (torch.randn(5, 4),),
                      dynamic_shapes={"x": {0: st.Dim("n", min=1, max=64)}}), buf)
    x = torch.randn(5, 4)
    mod = st.load(buf.getvalue(), budgets={"max_loop_iterations": 15}).module()
    for _ in range(2):
        for got, want in zip(mod(x), LoopPerStep()(x)):
            torch.testing.assert_close(got, want)
    with pytest.raises(st.RuntimeAssertionError, match=r"scan 'scan'.*nested in its body"):
        st.load(buf.getvalue(), budgets={"max_loop_iterations": 14}).module()(x)
