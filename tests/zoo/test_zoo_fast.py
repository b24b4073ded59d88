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
