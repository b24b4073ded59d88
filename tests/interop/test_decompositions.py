"""``ep.run_decompositions()``: retraced by safetrace's own tracer into core ATen, with the
same numerics and contract; the result saves, loads and converts like any other."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

import safetrace as st
from tests.interop.harness import check_parity, edge_inputs, same_behaviour
from tests.serialize.programs import CASES

SIZE_OPS = ("sym_size", "_assert", "assert_sym")


def _non_core(ep) -> set[str]:
    return {str(n.target) for n in ep.graph.nodes if n.op == "call_function"
            and isinstance(n.target, torch._ops.OpOverload)
            and torch.Tag.core not in n.target.tags and not n.target._schema.is_mutable
            and not any(k in str(n.target) for k in SIZE_OPS)}


@pytest.mark.parametrize("name", ["dyn_mlp", "derived", "scenario_9", "attention", "counter",
                                  "convnet", "convnet_train", "dataclass_dict_out", "scenario_6"])
def test_decomposed_program_has_the_same_numerics_and_contract(name, tmp_path):
    case = CASES[name]()
    ep = case.export()
    dep = ep.run_decompositions()
    assert isinstance(dep, st.ExportedProgram)
    left = _non_core(dep)
    if name == "convnet_train":  # batch norm updating its running statistics stays
        left.discard("aten.batch_norm.default")
    assert not left, left
    # the decomposed program shares the program's state (torch's run_decompositions too):
    # each side runs on its own copy of it
    ours, theirs = copy.deepcopy(ep.module()), copy.deepcopy(dep.module())
    for args, kwargs in [(case.args, case.kwargs)] + case.good + case.bad + edge_inputs(ep):
        same_behaviour(ours, theirs, args, kwargs)
    path = tmp_path / "d.pt2z"
    st.save(dep, path)
    loaded = st.load(path)
    ours, loaded_m = copy.deepcopy(ep.module()), loaded.module()
    for args, kwargs in [(case.args, case.kwargs)] + case.good + case.bad:
        same_behaviour(ours, loaded_m, args, kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", st.ConversionWarning)
        check_parity(dep, dep.to_torch(), [(case.args, case.kwargs)] + case.good)


def test_a_custom_table_is_used():
    case = CASES["dyn_mlp"]()
    ep = case.export()

    def relu_as_clamp(x):
        return torch.ops.aten.clamp_min.default(x, 0)

    dep = ep.run_decompositions({torch.ops.aten.relu.default: relu_as_clamp})
    targets = {n.target for n in dep.graph.nodes}
    assert torch.ops.aten.relu.default not in targets
    assert torch.ops.aten.clamp_min.default in targets
    same_behaviour(ep, dep.module(), (torch.randn(7, 16),), {})


# zoo models: in-place writes (relu_, add_, masked_fill_, copy_ into a slice), aten.to,
# chunk, unflatten, min/where with scalars reach core ATen; the contract is unchanged
_ZOO_CORE = ["mlp", "resnet", "transformer_encoder", "tiny_gpt", "bert"] + [
    pytest.param(n, marks=pytest.mark.slow) for n in ("llama", "t5_encoder", "bart", "gpt2")]


@pytest.mark.parametrize("name", _ZOO_CORE)
def test_zoo_model_decomposes_to_core_aten_with_the_same_contract(name):
    from benchmarks.zoo import by_name

    entry = by_name(name)
    if entry.family == "transformers":
        pytest.importorskip("transformers")
    case = entry.factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
        dep = ep.run_decompositions()
    mutable = {str(n.target) for n in dep.graph.nodes if isinstance(n.target, torch._ops.OpOverload)
               and n.target._schema.is_mutable}
    assert not _non_core(dep) and not mutable, (_non_core(dep), mutable)
    assert str(dep.range_constraints) == str(ep.range_constraints)  # nothing narrowed
    with torch.no_grad():
        ours, theirs = copy.deepcopy(ep.module()), copy.deepcopy(dep.module())
        for args, kwargs in [(case.args, case.kwargs)] + case.others + [case.outside]:
            same_behaviour(ours, theirs, args, kwargs)
