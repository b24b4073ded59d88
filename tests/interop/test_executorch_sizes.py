"""``st.to_executorch`` over a Dim's whole declared range: the ``.pte`` runs every size
``ep.module()`` accepts with eager's values, or the helper refuses at lowering.

ExecuTorch's passes run the program again on fake tensors, calling its scalar operators on
the symbolic sizes; their comparisons, ``sym_max`` / ``sym_min`` / ``sym_not`` /
``sym_ite`` decided at the stand-in size and narrowed the dim's range, and ExecuTorch
planned memory from it: ``z[:min(n, 5)]`` exported with ``Dim("n", max=16)`` (a
``sym_min`` in the slice bound) gave a ``.pte`` that stopped at n == 0 and 1, and a size
split of ``z.unsafe_chunk(2, 0)`` got an input capacity of 2 (size 5 refused), silently.
Now the operators stay symbolic while lowering (``interop/executorch_prims.py``), and a
lowering that still kept a decision false somewhere in the accepted space is refused
(``interop/retrace_guards.py``).
"""

from __future__ import annotations

import importlib.util
import warnings

import pytest
import torch

import safetrace as st

INSTALL = "pip install --no-deps executorch==1.5.1 flatbuffers ruamel.yaml pyyaml tabulate"
pytestmark = pytest.mark.skipif(importlib.util.find_spec("executorch") is None,
                                reason=f"ExecuTorch is not installed: {INSTALL}")


class MinHead(torch.nn.Module):
    def forward(self, z):
        return z[: min(z.shape[0], 5)] * 2


class MaxTail(torch.nn.Module):
    def forward(self, z):
        return z[max(z.shape[0] - 4, 0):] + 1


class Chunked(torch.nn.Module):
    """A size split (``n > 2``) beside ``unsafe_chunk(2, 0)``'s last piece."""

    def forward(self, z):
        v0 = z.sum(dim=[], keepdim=False) if z.shape[0] > 2 else z.sum(dim=0, keepdim=False)
        return v0, z.unsafe_chunk(2, 0)[-1] * 2


def _pte(ep):
    from executorch.runtime import Runtime

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        buffer = st.to_executorch(ep).buffer
    program = Runtime.get().load_program(buffer)
    method = program.load_method("forward")
    return lambda *args, keep=(buffer, program): list(method.execute(list(args)))


def _refused(fn, *args) -> bool:
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - any refusal
        return True
    return False


@pytest.mark.parametrize("model", [MinHead(), pytest.param(MaxTail(), marks=pytest.mark.slow)],
                         ids=["min", "max"])
def test_pte_runs_every_size_of_the_declared_range(model):
    # before: the .pte of MinHead stopped in a kernel at n == 0 and 1 (ExecuTorch's
    # sym_min kernel, `min(a, b)`, decided `n > 1` at the stand-in size)
    ep = st.export(model, (torch.randn(6, 3),), dynamic_shapes={"z": {0: st.Dim("n", max=16)}})
    run = _pte(ep)
    for n in (0, 1, 2, 5, 9, 16):
        z = torch.randn(n, 3)
        want = model(z)
        got = run(z)[0]
        assert got.shape == want.shape, n
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(got, ep.module()(z))
    assert _refused(ep.module(), torch.randn(17, 3))
    assert _refused(run, torch.randn(17, 3))


@pytest.mark.slow
def test_size_split_lowering_is_refused_where_the_pte_would_be_specialized():
    # before: a .pte with an input capacity of 2 (size 5 refused by set_inputs), a kernel
    # failure at 0, no warning; ep.module() runs 0..16
    ep = st.export(Chunked(), (torch.randn(2),), dynamic_shapes=({0: st.Dim("d0", max=16)},))
    for n in (0, 1, 5, 16):
        got, want = ep.module()(torch.ones(n)), Chunked()(torch.ones(n))
        torch.testing.assert_close(got, want)
    with pytest.raises(st.ConversionError, match=r"false at z.shape\[0\] == \d+, a size "
                                                 r"the program accepts") as info:
        st.to_executorch(ep)
    assert "size split" in str(info.value) and "st.Dim('d0'" in str(info.value)


@pytest.mark.slow
def test_one_side_of_the_split_lowers_and_runs():
    # the fix the refusal names: the Dim declared to one side, one graph, every size
    model = Chunked()
    ep = st.export(model, (torch.randn(6),), dynamic_shapes=({0: st.Dim("d0", min=3,
                                                                        max=16)},))
    run = _pte(ep)
    for n in (3, 4, 5, 16):
        z = torch.randn(n)
        for g, w in zip(run(z), model(z)):
            torch.testing.assert_close(g, w)
    for n in (2, 17):
        assert _refused(ep.module(), torch.randn(n))
        assert _refused(run, torch.randn(n))


@pytest.mark.slow
def test_prims_are_put_back_after_lowering():
    from executorch.exir.dialects.edge._ops import EdgeOpOverload

    before = EdgeOpOverload.__dict__["__call__"]
    ep = st.export(MinHead(), (torch.randn(6, 3),),
                   dynamic_shapes={"z": {0: st.Dim("n", max=16)}})
    _pte(ep)
    assert EdgeOpOverload.__dict__["__call__"] is before



def test_another_threads_executorch_lowering_keeps_executorchs_operators():
    """While st.to_executorch lowers on one thread, ExecuTorch's scalar operators called on
    another thread behave as ExecuTorch's (a comparison of a symbolic size: a plain bool,
    its guard recorded), and symbolically on the lowering's own thread."""
    import operator
    import threading

    from executorch.exir.passes.executorch_prim_ops_registry import (
        _PYTHON_SYM_OPS_TO_EXECUTORCH_SYM_OPS as table)
    from torch._dynamo.source import ConstantSource
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from safetrace.interop.executorch_prims import symbolic_prims

    le = table[operator.le]
    env = ShapeEnv()
    n = env.create_symintnode(env.create_symbol(5, source=ConstantSource("n")), hint=5)
    seen: dict = {}

    def other() -> None:
        seen["other"] = le(n, 7)

    with symbolic_prims():
        seen["here"] = le(n, 7)
        t = threading.Thread(target=other)
        t.start()
        t.join(timeout=60)
    assert isinstance(seen["here"], torch.SymBool)
    assert type(seen["other"]) is bool and seen["other"] is True

class Roll(torch.nn.Module):
    def forward(self, z):
        return torch.roll(z, 1, 0)


@pytest.mark.slow
def test_roll_of_a_dim_admitting_zero_runs_at_zero_and_from_one():
    # before: the .pte stopped the process at n == 0 (SIGFPE in the portable roll kernel);
    # then refused at lowering; now a gather (interop/empty_rolls.py) computes eager's
    ep = st.export(Roll(), (torch.randn(6, 3),), dynamic_shapes={"z": {0: st.Dim("n", max=16)}})
    run = _pte(ep)
    for n in (0, 1, 2, 16):
        z = torch.randn(n, 3)
        torch.testing.assert_close(run(z)[0], Roll()(z))
    ep = st.export(Roll(), (torch.randn(6, 3),),
                   dynamic_shapes={"z": {0: st.Dim("n", min=1, max=16)}})
    run = _pte(ep)
    for n in (1, 2, 16):
        z = torch.randn(n, 3)
        torch.testing.assert_close(run(z)[0], Roll()(z))
    assert _refused(run, torch.randn(17, 3))


class Upsample(torch.nn.Module):
    def forward(self, z):
        return torch.nn.functional.interpolate(z.t().unsqueeze(0), scale_factor=2.0)


@pytest.mark.slow
def test_interpolate_with_a_float_scale_lowers_and_runs():
    # before: AssertionError in ExecuTorch's edge verifier (the decomposition writes
    # `sym_float(n) * 2.0`, a Python function on sizes, which st.to_executorch mapped only
    # when the converted program already held one)
    model = Upsample()
    ep = st.export(model, (torch.randn(6, 3),), dynamic_shapes={"z": {0: st.Dim("n", max=16)}})
    run = _pte(ep)
    for n in (1, 2, 9, 16):
        z = torch.randn(n, 3)
        torch.testing.assert_close(run(z)[0], model(z))
    for n in (0, 17):
        assert _refused(ep.module(), torch.randn(n, 3))
        assert _refused(run, torch.randn(n, 3))
