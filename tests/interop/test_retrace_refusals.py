"""What the deploy helpers (st.to_onnx, st.to_executorch, st.to_aoti) refuse up front because
their retrace of ``ep.to_torch()`` would fail inside torch or compute another result
(``interop/retrace_refusals.py``), each with a catalogue error naming the node, the user's
line and the fix:

* a cond whose value the conversion made from safetrace's shapes (torch's fake cond cannot
  merge the branches: ``hops.cond_from_ours``); before, each tool stopped inside torch
  (``cond_true might be aliasing the input or the output!``, ONNX's "Failed to decompose
  the FX graph");
* an in-place write whose source aliases the written tensor; what torch's own
  ``run_decompositions`` makes of it (the functional result) is pinned here."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.interop.test_cond_merge import _SqueezeOrSum

_TOOLS = (st.to_onnx, st.to_executorch, st.to_aoti)


# (the cond torch cannot merge: a size split whose other side has 0 rows)
SqueezeOrSum = _SqueezeOrSum


def test_cond_from_ours_refused_by_every_deploy_helper_with_the_dim_fix():
    ep = st.export(SqueezeOrSum(), (torch.randn(2),), dynamic_shapes=({0: Dim("d0", max=8)},))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tep = ep.to_torch()
    for n in (0, 1, 2, 8):  # (the converted program itself computes eager's values)
        x = torch.randn(n)
        for got, want in zip(tep.module()(x), SqueezeOrSum()(x)):
            torch.testing.assert_close(got, want)
    for tool in _TOOLS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(st.errors.ConversionError) as info:
                tool(ep)
        text = str(info.value)
        assert "node cond (cond)" in text and "`if x.shape[0] == 1:" in text, text
        assert "Dim('d0', min=2, max=8)" in info.value.fix


def test_the_dim_fix_removes_the_split_and_deploys():
    ep = st.export(SqueezeOrSum(), (torch.randn(2),),
                   dynamic_shapes=({0: Dim("d0", min=2, max=8)},))
    assert st.to_onnx(ep) is not None


class AliasedIndexAdd(torch.nn.Module):
    def forward(self, y):
        v = y.clone()
        v.index_add_(0, torch.tensor([0, 0]), v[:1].expand(2, *v.shape[1:]))
        return v


def test_aliased_write_refusal_gives_the_clone_fix_and_torch_retrace_is_functional():
    ep = st.export(AliasedIndexAdd(), (torch.ones(2, 3),), dynamic_shapes=({1: Dim("n")},))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tep = ep.to_torch()
        decomposed = tep.run_decompositions()
    x = torch.ones(2, 5)
    assert torch.equal(tep.module()(x)[0], torch.full((5,), 4.0))  # eager: row 0 read while
    assert torch.equal(AliasedIndexAdd()(x)[0], torch.full((5,), 4.0))  # written, 1+1+2
    # torch's run_decompositions (called by the user directly, not refusable here) reads the
    # source before the write, as a .clone() of it in eager would: 1+1+1
    assert torch.equal(decomposed.module()(x)[0], torch.full((5,), 3.0))
    with pytest.raises(st.errors.ConversionError) as info:
        st.to_onnx(ep)
    assert "test_retrace_refusals.py" in str(info.value)  # (the user's line)
    # the fix is the user's line with the aliasing operand copied: pasted, it deploys
    pasted = "v.index_add_(0, torch.tensor([0, 0]), v[:1].expand(2, *v.shape[1:]).clone())"
    assert f"`{pasted}`" in info.value.fix

    class Pasted(torch.nn.Module):
        def forward(self, y):
            v = y.clone()
            v.index_add_(0, torch.tensor([0, 0]), v[:1].expand(2, *v.shape[1:]).clone())
            return v

    fixed = st.export(Pasted(), (torch.ones(2, 3),), dynamic_shapes=({1: Dim("n")},))
    assert st.to_onnx(fixed) is not None
    assert torch.equal(Pasted()(x), decomposed.module()(x))  # (the functional result)


class MaxOne(torch.nn.Module):
    def forward(self, x):
        return x.new_ones(max(x.shape[0], 1)) * 2


def test_size_folded_by_positive_symbols_deploys_with_eagers_value():
    # torch's symbols are positive: max(n, 1) is n to them; the .pte and the AOTI package
    # kept that value and returned 0 elements at n == 0 (eager: 1), and were refused; the
    # conversion now makes n non-positive (tests/interop/test_zero_one_sizes.py runs them)
    ep = st.export(MaxOne(), (torch.randn(4, 3),), dynamic_shapes=({0: Dim("n", max=64)},))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        st.to_executorch(ep)
    ort = pytest.importorskip("onnxruntime")
    program = st.to_onnx(ep)   # (its lean path keeps the node: eager's value at 0)
    sess = ort.InferenceSession(program.model_proto.SerializeToString())
    for n in (0, 1, 3):
        got = sess.run(None, {sess.get_inputs()[0].name: torch.randn(n, 3).numpy()})[0]
        assert got.shape == tuple(MaxOne()(torch.randn(n, 3)).shape), n


def test_a_dim_from_one_is_not_refused_nor_a_condition_that_only_narrows():
    ep = st.export(MaxOne(), (torch.randn(4, 3),),
                   dynamic_shapes=({0: Dim("n", min=1, max=64)},))
    st.to_executorch(ep)

    class Chunked(torch.nn.Module):  # (`n == 0 or ...` folds to its other side: narrows)
        def forward(self, x):
            a = x.chunk(3, 0)
            return a[0] * 2, a[1] + 1

    ep = st.export(Chunked(), (torch.randn(4, 3),), dynamic_shapes=({0: Dim("n", max=64)},))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        st.to_executorch(ep)
