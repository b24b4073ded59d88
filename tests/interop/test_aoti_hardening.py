"""``st.to_aoti``'s two safety nets, without a compile (the compiled packages are tested in
test_aoti_checks.py, slow): the input checks added as tensor arithmetic, and the side-by-side
verification that refuses a package computing something else."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st
from safetrace.interop.aoti import harden_checks, verify_package

warnings.filterwarnings("ignore", category=st.ConversionWarning)


class Pool(torch.nn.Module):
    def forward(self, x):
        torch._check(x.shape[2] // 2 >= 1)
        return torch.nn.functional.max_pool2d(x, 2) * 2


def _tensor_checks_only(tep):
    """The converted module with its symbolic ``_assert_scalar`` checks removed, as inductor
    removes those it proves in its own model of the sizes (every size >= 2), and without
    the guard code repeating them (a package keeps no ``_guards_code``)."""
    tep._guards_code[:] = [g for g in tep._guards_code if ".dtype ==" in g]
    g = tep.graph
    for n in list(g.nodes):
        if n.target is torch.ops.aten._assert_scalar.default:
            g.erase_node(n)
    g.eliminate_dead_code()
    tep.graph_module.recompile()
    return tep.module()


def test_lower_bounds_and_conditions_become_tensor_checks():
    b = st.Dim("b", min=1, max=16)
    h = st.Dim("h", min=2, max=64)
    x = torch.randn(3, 4, 8, 8)
    ep = st.export(Pool(), (x,), dynamic_shapes={"x": {0: b, 2: h}})
    tep = ep.to_torch()
    added = harden_checks(tep, ep.contract)
    asserts = [n for n in tep.graph.nodes if n.target is torch.ops.aten._assert_async.msg]
    assert added == len(asserts) >= 2
    module = _tensor_checks_only(tep)
    for shape in [(1, 4, 2, 8), (5, 4, 9, 8), (16, 4, 64, 8)]:  # inside: same numbers
        t = torch.randn(shape)
        torch.testing.assert_close(module(t), ep.module()(t))
    for shape in [(0, 4, 8, 8), (3, 4, 1, 8), (3, 4, 0, 8)]:  # below a declared min
        t = torch.randn(shape)
        with pytest.raises(Exception):
            ep.module()(t)
        with pytest.raises(RuntimeError, match="must"):
            module(t)


def test_verification_refuses_a_package_that_specialized_a_dim():
    lstm = torch.nn.LSTM(4, 5, batch_first=True).eval()

    class Tagger(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = lstm

        def forward(self, x):
            return self.lstm(x)[0]

    x = torch.randn(2, 6, 4)
    with torch.no_grad():
        ep = st.export(Tagger(), (x,), dynamic_shapes={"x": {1: st.Dim("seq", min=1, max=32)}})

    def specialized(t):  # what a compile that unrolled the sequence at 6 steps returns
        return ep.module()(t[:, :6])

    with pytest.raises(st.ConversionError, match="compiled a different program") as info:
        verify_package(ep, specialized, "AOTInductor")
    assert "declared space" in str(info.value) and info.value.fix
    assert verify_package(ep, ep.module(), "AOTInductor") >= 2  # the program itself passes
