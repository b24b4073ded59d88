"""What a conversion reads of the program alone is made once per program
(``torch_export._plan``): later conversions give programs of their own (fresh ShapeEnv and
fake values, the same graph), and a conversion after a change to the program's graph
converts the changed graph (nothing of a conversion is handed out twice)."""

from __future__ import annotations

import torch

import safetrace as st


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 8), torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def test_conversions_of_one_program_share_no_torch_object():
    ep = st.export(Mlp(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("b", max=64)}})
    one, two = ep.to_torch(), ep.to_torch()
    assert one.graph_module.code == two.graph_module.code
    vals = [[n.meta.get("val") for n in p.graph.nodes] for p in (one, two)]
    assert not {id(v) for v in vals[0] if v is not None} & {id(v) for v in vals[1]}
    envs = [next(v for v in vs if isinstance(v, torch.Tensor)).fake_mode.shape_env
            for vs in vals]
    assert envs[0] is not envs[1]
    stacks = [[n.meta.get("nn_module_stack") for n in p.graph.nodes] for p in (one, two)]
    assert stacks[0] == stacks[1] and any(stacks[0])
    x = torch.randn(5, 4)
    for p in (one, two):
        torch.testing.assert_close(p.module()(x), ep.module()(x))
    for p in (one, two):  # (out of the declared space: refused by each)
        try:
            p.module()(torch.randn(65, 4))
        except Exception:  # noqa: BLE001
            continue
        raise AssertionError("a batch of 65 was accepted")


def test_a_change_to_the_programs_graph_is_seen_by_the_next_conversion():
    ep = st.export(Mlp(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("b", max=64)}})
    before = ep.to_torch()
    out = ep.graph.output_node()
    (last,) = out.args[0]
    with ep.graph.inserting_before(out):
        neg = ep.graph.call_function(torch.ops.aten.neg.default, (last,))
    neg.meta = dict(last.meta)
    out.args = ((neg,),)
    after = ep.to_torch()
    targets = [n.target for n in after.graph.nodes]
    assert torch.ops.aten.neg.default in targets
    assert torch.ops.aten.neg.default not in [n.target for n in before.graph.nodes]
    x = torch.randn(2, 4)
    torch.testing.assert_close(after.module()(x), -before.module()(x))
