"""A buffer the program writes in place, run through ``ep.module()`` under grad mode (a KV
cache filled outside ``no_grad``), carries autograd history afterwards; converting the
program must not hand that history to torch's tools (AOTInductor deep-copies the program,
ExecuTorch's passes write into the buffer's fake value: both failed)."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

import safetrace as st

warnings.filterwarnings("ignore", category=st.ConversionWarning)


class Cache(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.register_buffer("cache", torch.zeros(8, 4))

    def forward(self, x, pos):
        self.cache.index_copy_(0, pos, self.proj(x))
        return self.cache.sum(0)


def test_a_buffer_written_under_grad_mode_converts_without_its_history():
    n = st.Dim("n", min=1, max=8)
    ep = st.export(Cache(), (torch.randn(3, 4), torch.arange(3)),
                   dynamic_shapes={"x": {0: n}, "pos": {0: n}})
    mod = ep.module()
    mod(torch.randn(2, 4), torch.arange(2))  # grad mode on: the write records history
    assert mod.cache.requires_grad  # as in eager
    tep = ep.to_torch()
    assert not any(t.requires_grad for t in tep.buffers())
    ph = {n.name: n for n in tep.graph.nodes if n.op == "placeholder"}
    buf = next(s.arg.name for s in tep.graph_signature.input_specs if s.target == "cache")
    val = ph[buf].meta["val"]
    assert not (val.is_leaf and val.requires_grad)  # ExecuTorch writes into it
    copy.deepcopy(tep)  # what AOTInductor does first
    x, pos = torch.randn(3, 4), torch.tensor([4, 5, 6])
    want = ep.module()(x, pos)  # both continue from the same shared state
    with torch.no_grad():
        got = tep.module()(x, pos)
    torch.testing.assert_close(got, want.detach())
    tep.run_decompositions()


def test_the_program_lowers_to_executorch_after_running_under_grad_mode(tmp_path):
    pytest.importorskip("executorch", reason="pip install 'safetrace[executorch]'")
    n = st.Dim("n", min=1, max=8)
    ep = st.export(Cache(), (torch.randn(3, 4), torch.arange(3)),
                   dynamic_shapes={"x": {0: n}, "pos": {0: n}})
    ep.module()(torch.randn(2, 4), torch.arange(2))
    st.to_executorch(ep, tmp_path / "m.pte")
    assert (tmp_path / "m.pte").stat().st_size > 0


def test_a_module_with_such_a_buffer_deep_copies_with_its_values():
    ep = st.export(Cache(), (torch.randn(3, 4), torch.arange(3)),
                   dynamic_shapes={"x": {0: st.Dim("n", min=1, max=8)},
                                   "pos": {0: st.Dim("n", min=1, max=8)}})
    mod = ep.module()
    mod(torch.randn(2, 4), torch.arange(2))
    own = copy.deepcopy(mod)  # the docs' way to a module with state of its own
    torch.testing.assert_close(own.cache, mod.cache.detach())
    assert own.cache.data_ptr() != mod.cache.data_ptr()
    own(torch.randn(1, 4), torch.tensor([7]))
    assert not torch.equal(own.cache, mod.cache.detach())  # the original is untouched
