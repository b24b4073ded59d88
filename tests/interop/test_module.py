"""``ep.module()``: a GraphModule built eagerly (torch.compile captures a call in one graph
on the first call; ``.graph`` and ``.code`` work); switching modes is refused."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from tests.models import ConvNet
from tests.serialize.programs import CASES


def test_module_is_a_graph_module_with_an_unlifted_graph_and_code():
    """As torch's ep.module(): parameters are get_attr nodes, the placeholders are the
    user's inputs only, the input checks are the first call."""
    case = CASES["dyn_mlp"]()
    ep = case.export()
    m = ep.module()
    assert isinstance(m, torch.fx.GraphModule)
    nodes = list(m.graph.nodes)
    assert [n.op for n in nodes if n.op == "placeholder"] == ["placeholder"]
    assert nodes[1].op == "call_module" and nodes[1].target == "_input_checks"
    assert {n.target for n in nodes if n.op == "get_attr"} == {
        name for name, _ in m.named_parameters()}
    assert "aten.linear" in m.code and "def forward(self, x)" in m.code
    torch.testing.assert_close(m(*case.args), case.model(*case.args))
    with pytest.raises(st.InputMismatchError):
        m(torch.randn(65, 16))


def test_torch_compile_captures_the_first_call_in_one_graph():
    import torch._dynamo

    case = CASES["dyn_mlp"]()
    m = case.export().module()
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(m, backend=backend, fullgraph=True)
    x = torch.randn(5, 16)
    torch.testing.assert_close(compiled(x), case.model(x))
    assert len(graphs) == 1
    torch._dynamo.reset()


def test_train_is_refused_on_a_program_exported_in_eval_mode():
    model = ConvNet().eval()
    ep = st.export(model, (torch.randn(2, 3, 8, 8),))
    m = ep.module()
    m.eval()  # already so
    with pytest.raises(RuntimeError, match="(?s)exported in eval mode.*model.train\\(\\)"):
        m.train()


def test_eval_is_refused_when_a_train_mode_graph_has_batch_norm():
    ep = st.export(ConvNet().train(), (torch.randn(2, 3, 8, 8),))
    with pytest.raises(RuntimeError, match="exported in train mode"):
        ep.module().eval()
    plain = st.export(torch.nn.Linear(3, 2), (torch.randn(4, 3),))
    plain.module().eval()  # nothing in the graph depends on the mode


def test_dynamo_explain_finds_one_graph_and_no_break_on_a_zoo_model():
    import torch._dynamo

    from benchmarks.zoo import by_name

    case = by_name("mlp").factory()
    m = st.export(case.model, case.args, dynamic_shapes=case.dynamic_shapes).module()
    torch._dynamo.reset()
    try:
        explained = torch._dynamo.explain(m)(*case.args)
    finally:
        torch._dynamo.reset()
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), \
        explained.break_reasons
    with pytest.raises(RuntimeError, match="exported in eval mode"):
        m.train()
