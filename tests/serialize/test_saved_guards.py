"""The checks a load puts before an allocation of a size read from data
(``allocations.guard_sizes``) are the load's own: a loaded program saved again holds them,
and its loader drops them before it makes its own.

Before (session 29, probe seed 2991 ``cond/sg:sg_target:...mul->full``): they were kept,
so each save and load added one more before every such allocation, and where the file
gives ``full`` a tensor for its size (a branch whose node fails wherever it runs) the
load's check took ``abs`` of that tensor, which the saved file's loader refused.
"""

from __future__ import annotations


import torch

import safetrace as st
from safetrace.serialize.allocations import is_guard
from tests.serialize import hostile
from tests.serialize import surgery


class ReadSize(torch.nn.Module):
    def forward(self, x):
        return x.sum() + torch.zeros((x > 0).sum().item()).sum()


class Branches(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda a: a * 2, lambda a: a - 1, (x,))


def _bytes(ep: st.ExportedProgram) -> bytes:
    return surgery.saved(ep)


def _guards(ep: st.ExportedProgram) -> int:
    graphs = [ep.graph] + [getattr(ep.graph.owning_module, n.target).graph
                           for n in ep.graph.nodes if n.op == "get_attr"] \
        if ep.graph.owning_module is not None else [ep.graph]
    return sum(is_guard(n) for g in graphs for n in g.nodes)


def test_a_program_saved_and_loaded_again_keeps_one_check_per_allocation():
    n = st.Dim("n", max=64)
    ep = st.load(_bytes(st.export(ReadSize(), (torch.randn(6),), dynamic_shapes=({0: n},))))
    assert _guards(ep) == 1
    for _ in range(3):
        ep = st.load(_bytes(ep))
        assert _guards(ep) == 1
    for x in (torch.randn(5), torch.zeros(0), torch.ones(64)):
        torch.testing.assert_close(ep.module()(x), ReadSize()(x))


def test_a_branch_giving_full_a_tensor_for_its_size_saves_and_loads_again():
    n = st.Dim("n", max=32)
    doc, tensors = hostile.parts(_bytes(st.export(Branches(), (torch.randn(4, 3),),
                                                  dynamic_shapes=({0: n},))))
    (mul,) = [node for g in doc["subgraphs"] for node in g["nodes"]
              if node.get("target") == "torch.ops.aten.mul.Tensor"]
    mul["target"] = "torch.ops.aten.full.default"
    ep = surgery.load(doc, tensors)
    again = st.load(_bytes(ep))
    for program in (ep, again):
        x = -torch.ones(3, 3)
        torch.testing.assert_close(program.module()(x), x - 1)
        hostile.refused_at_load_or_call(_bytes(program), [(torch.ones(2, 3),)])
