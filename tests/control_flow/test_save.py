"""Programs with control-flow subgraphs save and load (format 2's "subgraphs"), and the
loader refuses files whose subgraphs do not fit together."""

from __future__ import annotations

import copy
import io

import pytest
import torch

import safetrace as st
from tests.control_flow.programs import CASES, Nested, PyPredLike, python_semantics
from tests.helpers import assert_close, rejects
from tests.serialize.hostile import pack, parts


def _blob(ep) -> bytes:
    buf = io.BytesIO()
    st.save(ep, buf)
    return buf.getvalue()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_round_trip_runs_like_eager_on_other_sizes(case):
    torch.manual_seed(0)
    model = case.make()
    ep = st.export(model, case.fresh(4, 1), dynamic_shapes=case.dynamic())
    loaded = st.load(_blob(ep))
    for n in (0, 1, 3):
        for sign in (1, -1):
            args = case.fresh(n, sign)
            if n < case.min_size:
                rejects(loaded, args)
                continue
            with python_semantics():
                expected = (case.reference or model)(*args)
            assert_close(expected, loaded.module()(*args))


def test_a_loaded_program_prints_its_subgraphs_and_saves_the_same_bytes():
    ep = st.export(Nested(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("n")}})
    blob = _blob(ep)
    loaded = st.load(blob)
    text = loaded.graph_module.print_readable(print_output=False)
    assert text.count("class true_graph_0") == 2 and "torch.ops.higher_order.cond" in text
    assert _blob(loaded) == blob


def test_programs_without_subgraphs_write_no_subgraphs_field():
    doc, _ = parts(_blob(st.export(PyPredLike(), (torch.randn(3),))))
    assert "subgraphs" not in doc


def _nested_parts():
    ep = st.export(Nested(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("n")}})
    return parts(_blob(ep))


def _refused(doc, tensors, match):
    with pytest.raises(st.LoadError, match=match):
        st.load(pack(doc, tensors))


def test_get_attr_of_a_missing_subgraph_is_refused():
    doc, tensors = _nested_parts()
    doc["subgraphs"] = [s for s in doc["subgraphs"] if s["path"] != "false_graph_0"]
    _refused(doc, tensors, "not a subgraph of this graph")


def test_a_subgraph_nobody_calls_is_refused():
    doc, tensors = _nested_parts()
    extra = copy.deepcopy(next(s for s in doc["subgraphs"] if s["path"] == "false_graph_0"))
    extra["path"] = "stray_0"
    doc["subgraphs"].append(extra)
    _refused(doc, tensors, "not called")


def test_a_subgraph_taking_the_wrong_number_of_inputs_is_refused():
    doc, tensors = _nested_parts()
    sub = next(s for s in doc["subgraphs"] if s["path"] == "false_graph_0")
    ph = next(n for n in sub["nodes"] if n["op"] == "placeholder")
    extra = copy.deepcopy(ph)
    extra["name"] = "extra_input"
    sub["nodes"].insert(0, extra)
    _refused(doc, tensors, "taking 2 inputs with 1")


def test_operators_inside_subgraphs_are_held_to_the_allowlist():
    doc, tensors = _nested_parts()
    sub = next(s for s in doc["subgraphs"] if s["path"] == "false_graph_0")
    call = next(n for n in sub["nodes"] if n["op"] == "call_function")
    call["target"] = "torch.ops.aten.from_file.default"
    _refused(doc, tensors, "from_file")


def test_unknown_higher_order_operators_are_refused():
    doc, tensors = _nested_parts()
    call = next(n for n in doc["nodes"] if n.get("target", "").endswith("higher_order.cond"))
    call["target"] = "torch.ops.higher_order.strict_mode"
    _refused(doc, tensors, "not allowed")
    call["target"] = "torch.ops.higher_order.no_such_op"
    _refused(doc, tensors, "unknown higher-order operator")


def test_bad_or_deep_subgraph_paths_are_refused():
    doc, tensors = _nested_parts()
    bad = copy.deepcopy(doc)
    bad["subgraphs"][0]["path"] = "a." * 20 + "b"
    _refused(bad, tensors, "subgraph path")
    bad = copy.deepcopy(doc)
    bad["subgraphs"][0]["path"] = "__import__('os')"
    _refused(bad, tensors, "subgraph path")
