"""An operand the loader cannot work out (a custom op's result) whose kind the schema of
the operator making it gives (a tensor), passed where the operator takes another kind, is
refused at load (where the node runs at every call) or checked before it (in a branch).

Before (session 29, docs/development.md "Left"): ``sum(x, [0], getitem_1)``, a custom op's
list element given for ``keepdim``, loaded, and every call raised torch's own "Expected a
value of type 'bool' for argument 'keepdim' but instead found type 'Tensor'".
"""

from __future__ import annotations


import pytest
import torch

import safetrace as st
from tests.serialize import hostile
from tests.serialize import surgery


@torch.library.custom_op("sttest::halves30", mutates_args=())
def halves(x: torch.Tensor) -> list[torch.Tensor]:
    return [x[: x.shape[0] // 2].clone(), x[x.shape[0] // 2:].clone()]


@halves.register_fake
def _(x):
    h = x.shape[0] // 2
    return [x.new_empty(h, *x.shape[1:]), x.new_empty(x.shape[0] - h, *x.shape[1:])]


@torch.library.custom_op("sttest::twice30", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return torch.cat([x, x])


@twice.register_fake
def _(x):
    return x.new_empty(2 * x.shape[0], *x.shape[1:])


class Halves(torch.nn.Module):
    def forward(self, x):
        a, b = halves(x)
        return a * 2, b.sum(0), torch.cat(halves(x))


class Branch(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda a: twice(a) + 1,
                          lambda a: torch.cat([a, a]) - 1, (x,))


_DYN = {"x": (st.Dim("h", min=0, max=32), None)}


def _parts(m: torch.nn.Module) -> tuple[dict, dict]:
    return hostile.parts(surgery.saved(st.export(m, (torch.randn(6, 3),), dynamic_shapes=_DYN)))


def _load(doc: dict, tensors: dict) -> st.ExportedProgram:
    return surgery.load(doc, tensors, allow_ops=["sttest"])


def test_the_custom_ops_results_where_their_kinds_are_taken_load_and_run():
    ep = _load(*_parts(Halves()))
    for n in (0, 1, 5):
        x = torch.randn(n, 3)
        for got, want in zip(ep.module()(x), Halves()(x)):
            torch.testing.assert_close(got, want)


def test_a_list_element_given_for_a_bool_is_refused_at_load():
    doc, tensors = _parts(Halves())
    node = next(n for n in doc["nodes"] if n.get("target") == "torch.ops.aten.sum.dim_IntList")
    node["args"] = [{"node": "mul"}, {"list": [0]}, {"node": "getitem_1"}]
    with pytest.raises(st.LoadError, match=r"node 'sum_1': aten.sum.dim_IntList fails at "
                                           r"every call .* it takes bool for 'keepdim', "
                                           r"given a tensor"):
        _load(doc, tensors)


def test_a_custom_ops_tensor_given_for_a_scalar_in_a_branch_is_checked_before_it():
    doc, tensors = _parts(Branch())
    (add,) = [n for g in doc["subgraphs"] for n in g["nodes"]
              if n.get("target") == "torch.ops.aten.add.Tensor"]
    add["kwargs"] = [["alpha", {"node": add["args"][0]["node"]}]]
    ep = _load(doc, tensors)
    x = -torch.ones(4, 3)
    torch.testing.assert_close(ep.module()(x), torch.cat([x, x]) - 1)
    with pytest.raises(st.RuntimeAssertionError, match="it takes number for 'alpha', given "
                                                       "a tensor"):
        ep.module()(torch.ones(4, 3))
