"""A pytree spec nested past what the loader takes is a LoadError, with the JSON depth
budget as it is or raised far past it (session 30: pinned; ``codec.MAX_DEPTH`` and JSON
decoding's own recursion limit, both reported as LoadError)."""

from __future__ import annotations

import json

import pytest
import torch

import safetrace as st
from tests.serialize import hostile
from tests.serialize import surgery


@pytest.mark.parametrize("depth", [100, 3000, 200_000])
@pytest.mark.parametrize("budgets", [{}, {"max_json_depth": 10**6}], ids=["default", "raised"])
def test_a_deeply_nested_output_spec_is_refused(depth, budgets):
    doc, tensors = hostile.parts(surgery.saved(st.export(torch.nn.ReLU(), (torch.randn(2),))))
    doc["out_spec"] = "@@SPEC@@"
    spec = '{"type": "tuple", "context": null, "children": [' * depth + "null" + "]}" * depth
    blob = hostile.pack(doc, tensors, raw_program=json.dumps(doc).replace('"@@SPEC@@"', spec))
    with pytest.raises(st.LoadError, match="nested deeper|recursion depth"):
        st.load(blob, budgets=budgets)
