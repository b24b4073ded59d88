"""The zoo's fast subset: each model exports with its dynamic dims, matches eager on
inputs of two other sizes, and rejects an input outside the declared space before
computing anything.  (The whole zoo runs in benchmarks/bench_zoo.py.)"""

from __future__ import annotations

import copy

import pytest
import torch

import safetrace as st
from tests.helpers import assert_close

from benchmarks.zoo import fast_entries, registry

FAST = fast_entries()


def test_registry():
    entries = registry()
    assert len(entries) >= 20
    assert len({e.name for e in entries}) == len(entries)
    assert 4 <= len(FAST) <= 6


@pytest.mark.parametrize("entry", FAST, ids=[e.name for e in FAST])
def test_fast_zoo_model(entry):
    if entry.family == "transformers":
        pytest.importorskip("transformers")  # the `zoo` extra
    case = entry.factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
        assert any(str(n.target) != "output" for n in ep.graph.nodes)
        dynamic = [s for s in ep.range_constraints]
        assert dynamic, "the declared dims must stay dynamic"
        for args, kwargs in [(case.args, case.kwargs)] + case.others:
            expected = case.model(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            assert_close(expected, ep.module()(*args, **kwargs))
        assert case.outside is not None
        args, kwargs = case.outside
        with pytest.raises(st.InputMismatchError):
            ep.module()(*args, **kwargs)


@pytest.mark.parametrize("entry", FAST, ids=[e.name for e in FAST])
def test_fast_zoo_model_survives_save_and_load(entry, tmp_path):
    if entry.family == "transformers":
        pytest.importorskip("transformers")
    case = entry.factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
        path = tmp_path / f"{entry.name}.pt2z"
        st.save(ep, path)
        loaded = st.load(path)
        assert loaded.graph_module.print_readable(print_output=False) == \
            ep.graph_module.print_readable(print_output=False)
        assert loaded.describe_contract() == ep.describe_contract()
        for args, kwargs in [(case.args, case.kwargs)] + case.others:
            assert_close(ep.module()(*args, **kwargs), loaded.module()(*args, **kwargs))
        args, kwargs = case.outside
        with pytest.raises(st.InputMismatchError) as a:
            ep.module()(*args, **kwargs)
        with pytest.raises(st.InputMismatchError) as b:
            loaded.module()(*args, **kwargs)
        assert str(a.value) == str(b.value)


def test_decoder_with_cache_output_names_transformers_registration():
    """use_cache=True returns a DynamicCache: the error names transformers' own pytree
    registration, after which the export works (cache included)."""
    tf = pytest.importorskip("transformers")
    import safetrace as st
    from safetrace import Dim

    cfg = tf.LlamaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, intermediate_size=64,
                         max_position_embeddings=64)
    m = tf.LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 100, (2, 8))
    from torch.utils import _pytree

    if tf.cache_utils.DynamicCache not in _pytree.SUPPORTED_NODES:
        with pytest.raises(st.ExportError, match="register_dynamic_cache_export_support"):
            st.export(m, (ids,))
    from transformers.integrations.executorch import register_dynamic_cache_export_support

    register_dynamic_cache_export_support()
    ep = st.export(m, (ids,), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},))
    ids2 = torch.randint(0, 100, (3, 5))
    got, want = ep.module()(ids2), m(ids2)
    torch.testing.assert_close(got.logits, want.logits)
    for a, b in zip(got.past_key_values.layers, want.past_key_values.layers):
        torch.testing.assert_close(a.keys, b.keys)
