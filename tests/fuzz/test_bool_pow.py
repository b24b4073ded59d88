"""``x ** True`` / ``x ** False`` of a bool tensor (fuzz35, a probe of Python numbers with typed
tensors): eager's pow copies (exponent 1) or fills ones (exponent 0) before the kernel that
refuses bool; the rule refused the export. A tensor exponent or another power stays refused,
as eager refuses it."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


@pytest.mark.parametrize("f", [lambda x: (x > 0) ** True, lambda x: (x > 0) ** False,
                               lambda x: (x > 0).clone().pow_(True)])
def test_a_bool_tensor_to_a_bool_power(f):
    ep = st.export(f, (torch.randn(4),), dynamic_shapes=({0: st.Dim("n")},))
    for n in (0, 1, 5):
        x = torch.randn(n)
        want, got = f(x), ep.module()(x)
        assert got.dtype == want.dtype == torch.bool
        assert torch.equal(got, want)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 2))


def test_a_bool_tensor_to_a_bool_tensor_power_stays_refused():
    with pytest.raises(RuntimeError):
        (torch.ones(2) > 0) ** torch.tensor(True)
    with pytest.raises(st.ExportError):
        st.export(lambda x: (x > 0) ** torch.tensor(True), (torch.randn(4),))
