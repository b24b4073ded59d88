"""torch.einsum with three operands or more: with the opt_einsum package installed, torch's
Python wrapper computes a contraction order from int(size) of every dim, which pinned
each declared size (torch.export specializes there too).  The traced call is aten.einsum
without a path, valid at every size, with opt_einsum installed or not."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from tests.helpers import assert_close, rejects

opt_einsum = pytest.importorskip(
    "opt_einsum", reason="the contraction-path case needs opt_einsum: pip install opt_einsum")


class Bilinear(torch.nn.Module):
    def forward(self, a, w, c):
        return torch.einsum("bi,ij,bj->b", a, w, c)


class Sublists(torch.nn.Module):
    def forward(self, a, w, c):
        return torch.einsum(a, [0, 1], w, [1, 2], c, [0, 2], [0])


class OneList(torch.nn.Module):
    def forward(self, a, w, c):
        return torch.einsum("bi,ij,bj->b", [a, w, c])


class Chain(torch.nn.Module):
    def forward(self, a, b, c, d):
        return torch.einsum("ij,jk,kl,lm->im", a, b, c, d)


@pytest.fixture(params=[True, False], ids=["opt_einsum", "no_opt_einsum"])
def opt_einsum_enabled(request, monkeypatch):
    assert torch.backends.opt_einsum.is_available()
    monkeypatch.setattr(torch.backends.opt_einsum, "enabled", request.param)
    return request.param


@pytest.mark.parametrize("model", [Bilinear, Sublists, OneList], ids=lambda m: m.__name__)
def test_einsum_of_three_operands_keeps_the_batch_symbolic(model, opt_einsum_enabled):
    n = st.Dim("n", max=64)
    w = torch.randn(3, 5)
    ep = st.export(model(), (torch.randn(4, 3), w, torch.randn(4, 5)),
                   dynamic_shapes={"a": {0: n}, "w": None, "c": {0: n}})
    (node,) = [x for x in ep.graph.nodes if x.op == "call_function"]
    assert node.target is torch.ops.aten.einsum.default
    for size in (0, 1, 7, 64):
        args = (torch.randn(size, 3), w, torch.randn(size, 5))
        assert_close(model()(*args), ep.module()(*args))
    rejects(ep, (torch.randn(5, 3), w, torch.randn(6, 5)))
    rejects(ep, (torch.randn(65, 3), w, torch.randn(65, 5)))
    rejects(ep, (torch.randn(5, 3), torch.randn(3, 4), torch.randn(5, 5)))


def test_a_chain_of_four_matrices_keeps_every_inner_size_symbolic(opt_einsum_enabled):
    i, j, k = st.Dim("i"), st.Dim("j"), st.Dim("k")
    ep = st.export(Chain(), (torch.randn(2, 3), torch.randn(3, 4), torch.randn(4, 5),
                             torch.randn(5, 6)),
                   dynamic_shapes={"a": (i, j), "b": (j, k), "c": (k, None), "d": None})
    for a, b, c in ((1, 1, 1), (0, 2, 3), (6, 7, 1)):
        args = (torch.randn(a, b), torch.randn(b, c), torch.randn(c, 5), torch.randn(5, 6))
        assert_close(Chain()(*args), ep.module()(*args))
    rejects(ep, (torch.randn(2, 3), torch.randn(4, 4), torch.randn(4, 5), torch.randn(5, 6)))
