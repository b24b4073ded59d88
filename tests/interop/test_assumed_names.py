"""What torch's shape propagation assumed during ep.to_torch() is said in the user's terms:
the input dim and the Dim's name, not only the internal symbol (issue 24)."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st
from benchmarks.zoo import by_name


def test_torch_assumption_names_the_input_dim_and_the_users_dim():
    case = by_name("resnet").factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tep = ep.to_torch()
    guards = tep.graph_module.meta["safetrace_torch_guards"]
    if not guards:
        pytest.skip("torch assumed nothing for this model on this torch version")
    text = " ".join(str(w.message) for w in seen if issubclass(w.category, st.ConversionWarning))
    assert "shape propagation assumed" in text, text
    assert "Dim 'batch'" in text and ".shape[0]" in text, text
    # the converted program is not narrowed by what torch assumed: a batch of 20 runs
    (x,) = case.args
    big = torch.randn(20, *x.shape[1:])
    with torch.no_grad():
        torch.testing.assert_close(tep.module()(big), case.model(big), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(ep.module()(big), case.model(big), rtol=1e-4, atol=1e-4)
    with pytest.raises(Exception):
        tep.module()(torch.randn(20, x.shape[1] + 1, *x.shape[2:]))
