"""``ep.to_torch()``: validate()-clean torch ExportedPrograms with the same contract.

Over the test programs and the fast zoo: the conversion validates, its module accepts and
rejects exactly what ``ep.module()`` does (listed inputs and the contract's edges), with the
same numerics; it survives ``torch.export.save``/``load``; stack traces are kept.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st
from tests.interop.harness import check_parity, same_behaviour
from tests.serialize.programs import CASES

from benchmarks.zoo import by_name, fast_entries

FAST = fast_entries()


def _convert(ep: st.ExportedProgram):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", st.ConversionWarning)
        return ep.to_torch()


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_converts_with_the_same_contract(name):
    case = CASES[name]()
    ep = case.export()
    tep = _convert(ep)
    assert isinstance(tep, torch.export.ExportedProgram)
    tep.validate()
    counts = check_parity(ep, tep, [(case.args, case.kwargs)] + case.good + case.bad)
    assert counts["ok"] >= 1
    if case.bad:
        assert counts["rejected"] >= len(case.bad)


@pytest.mark.parametrize("name", ["dyn_mlp", "scenario_9", "derived", "scenario_2",
                                  "constants", "counter"])
def test_converted_program_survives_torch_export_save_and_load(name, tmp_path):
    case = CASES[name]()
    ep = case.export()
    tep = _convert(ep)
    path = tmp_path / f"{name}.pt2"
    torch.export.save(tep, path)
    loaded = torch.export.load(path)
    loaded.validate()
    converted, ours = loaded.module(), ep.module()
    for args, kwargs in [(case.args, case.kwargs)] + case.good + case.bad:
        same_behaviour(ours, converted, args, kwargs)


def test_running_the_conversion_never_writes_the_exported_model():
    case = CASES["counter"]()
    before = {k: v.clone() for k, v in case.model.state_dict().items()}
    tep = _convert(case.export())
    for _ in range(3):
        tep.module()(*case.args)
    for k, v in case.model.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_stack_traces_are_kept():
    case = CASES["attention"]()
    tep = _convert(case.export())
    traces = [n.meta.get("stack_trace") or "" for n in tep.graph.nodes
              if n.op == "call_function" and "aten.linear" in str(n.target)]
    assert traces and all("models.py" in t for t in traces)


@pytest.mark.parametrize("entry", FAST, ids=[e.name for e in FAST])
def test_fast_zoo_model_converts_with_the_same_contract(entry):
    if entry.family == "transformers":
        pytest.importorskip("transformers")
    case = entry.factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
        tep = _convert(ep)
        tep.validate()
        assert tep.range_constraints
        counts = check_parity(ep, tep, [(case.args, case.kwargs)] + case.others +
                              [case.outside], cap=16)  # large accepted sizes only cost time
    assert counts["ok"] >= 3 and counts["rejected"] >= 1


@pytest.mark.parametrize("name", ["data_dependent", "recommender"])
def test_data_dependent_zoo_models_convert(name):
    case = by_name(name).factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
        tep = _convert(ep)
        check_parity(ep, tep, [(case.args, case.kwargs)] + case.others)
    if name == "data_dependent":
        assert any(n.meta.get("unbacked_bindings") for n in tep.graph.nodes)
        assert any(n.target is torch.ops.aten._assert_scalar.default for n in tep.graph.nodes)


def test_contract_checks_missing_from_torch_guards_are_in_the_graph():
    """A lower bound of 2 and a derived-only dim: torch's generated guards check neither."""

    class Halves(torch.nn.Module):
        def forward(self, x):
            return x[: x.shape[0] // 2] * 2

    d = st.Dim("d", min=2, max=50)
    ep = st.export(Halves(), (torch.randn(8, 3),), dynamic_shapes={"x": {0: 2 * d}})
    tep = _convert(ep)
    m = tep.module()
    for n in (2, 3, 4, 7, 100, 101, 102):
        same_behaviour(ep, m, (torch.randn(n, 3),), {})


def test_unbacked_output_and_nested_outputs():
    class M(torch.nn.Module):
        def forward(self, x):
            n = (x > 0).sum().item()
            return {"n": n, "pair": (x * 2, [x.shape[0], x + 1])}

    ep = st.export(M(), (torch.randn(5),), dynamic_shapes={"x": {0: st.Dim("n", max=64)}})
    tep = _convert(ep)
    for x in (torch.randn(5), torch.randn(1), torch.randn(9)):
        same_behaviour(ep, tep.module(), (x,), {})


def test_torch_library_custom_op_converts_and_a_safetrace_only_fake_is_named():
    @torch.library.custom_op("deploytest::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @twice.register_fake
    def _(x):
        return torch.empty_like(x)

    class M(torch.nn.Module):
        def forward(self, x):
            return twice(x) + 1

    ep = st.export(M(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("b")}})
    tep = _convert(ep)
    same_behaviour(ep, tep.module(), (torch.randn(6, 4),), {})

    torch.library.define("deploytest::thrice", "(Tensor x) -> Tensor")
    torch.library.impl("deploytest::thrice", "CPU")(lambda x: x * 3)
    st.register_fake("deploytest::thrice")(lambda x: torch.empty_like(x))

    class N(torch.nn.Module):
        def forward(self, x):
            return torch.ops.deploytest.thrice(x)

    ep = st.export(N(), (torch.randn(3),))
    with pytest.raises(st.ConversionError, match="deploytest::thrice.*register_fake"):
        ep.to_torch()


def test_strict_refuses_what_torch_assumed_inside_kernels():
    entry = by_name("transformer_encoder")
    case = entry.factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tep = ep.to_torch()
    guards = tep.graph_module.meta["safetrace_torch_guards"]
    if not guards:
        pytest.skip("torch assumed nothing for this model on this torch version")
    assert any("torch's shape propagation assumed" in str(w.message) for w in seen)
    with pytest.raises(st.ConversionError, match="strict"):
        ep.to_torch(strict=True)


def test_example_inputs_are_on_the_programs_device():
    """AOTInductor compares each example input with its placeholder's fake value: a
    program traced on another device (CUDA; here meta stands in) must keep its examples
    there, else ``aoti_compile_and_package`` refuses it (found on an H200, 2026-12-04)."""
    class M(torch.nn.Module):
        def forward(self, x, y):
            return x.sin() + y.sum()

    ep = st.export(M(), (torch.randn(3, 4, device="meta"), torch.randn(2)),
                   dynamic_shapes=({0: st.Dim("b")}, None))
    tep = ep.to_torch()
    args, _ = tep.example_inputs
    assert [a.device.type for a in args] == ["meta", "cpu"]
    vals = [n.meta["val"] for n in tep.graph.nodes if n.op == "placeholder"]
    assert [v.device.type for v in vals[-2:]] == ["meta", "cpu"]
