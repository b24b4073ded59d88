"""A ``torch.cond`` branch's assertion given a tensor instead of its size comparison is
refused at load, as the main graph's is (session 31: hostile_probe seed 3133, class sg,
``sg_outer``: the branch's ``assert_sym(le, ...)`` written ``assert_sym(x, ...)`` loaded,
and each call taking that branch raised torch's "Boolean value of Tensor with more than
one value is ambiguous")."""

from __future__ import annotations


import pytest
import torch

import safetrace as st
from tests.serialize import hostile
from tests.serialize import surgery


class _Checked(torch.nn.Module):
    def forward(self, x, pos):
        def taken(x, pos):
            p = pos.item()
            torch._check(p >= 0)
            torch._check(p <= 3)
            return x[p:p + 1] * 2

        return torch.cond(x.shape[0] >= 4, taken, lambda x, pos: x[:1] - 1, (x, pos))


def _saved() -> bytes:
    ep = st.export(_Checked(), (torch.randn(5, 3), torch.tensor(1)),
                   dynamic_shapes={"x": {0: st.Dim("n", min=1, max=16)}, "pos": None})
    return surgery.saved(ep)


def test_saved_branch_assertions_load_and_check():
    mod = st.load(_saved()).module()
    m = _Checked()
    for n, p in [(5, 1), (4, 3), (1, 0), (16, 0)]:
        x, pos = torch.randn(n, 3), torch.tensor(p)
        torch.testing.assert_close(mod(x, pos), m(x, pos))
    with pytest.raises(st.RuntimeAssertionError):
        mod(torch.randn(5, 3), torch.tensor(4))


def test_branch_assertion_given_a_tensor_is_refused():
    doc, tensors = hostile.parts(_saved())
    branch = next(g for g in doc["subgraphs"] if g["path"] == "true_graph_0")
    check = [n for n in branch["nodes"] if n.get("target") == "safetrace.assert_sym"][-1]
    check["args"][0] = {"node": "x"}
    with pytest.raises(st.LoadError, match=rf"node '{check['name']}': safetrace.assert_sym "
                                           r"computes with numbers .* given a tensor"):
        surgery.load(doc, tensors)
