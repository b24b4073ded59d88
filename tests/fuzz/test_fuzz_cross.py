"""Reproducers of what grammar_cross.py's statement kinds and input layouts found
(benchmarks/fuzz.py, session 29), through the public API: numerics against eager on other
sizes (0 and 1 included), out-of-space inputs refused."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.fuzz.test_fuzz_regressions import _same_as_eager


def test_data_assignment_to_an_input_is_refused():
    # `y.data = v` gives the caller's tensor new memory: the program returned the right
    # value but left the caller's `y` as it was (eager's holds y * 2 after the call)
    def f(x, y):
        y.data = y * 2
        return y + x.sum()

    spec = ({0: Dim("a")}, {0: Dim("c")})
    with pytest.raises(st.UnsupportedOpError, match=r"gives the input `y` new memory"):
        st.export(f, (torch.randn(4), torch.randn(3)), dynamic_shapes=spec)

    def g(y):         # after an in-place op the tensor is still the caller's
        y.add_(1)
        y.data = y * 2
        return y

    with pytest.raises(st.UnsupportedOpError, match=r"y.copy_\(value\)"):
        st.export(g, (torch.randn(3),))


def test_data_assignment_to_a_tensor_made_in_forward_still_exports():
    def f(x, y):
        v = y.clone()
        w = y[:1]                 # a view of the input: a new tensor, rebound alone
        w.data = w * 3
        v.data = y * 2 + x.sum()
        v.add_(1)
        return v, w

    spec = ({0: Dim("a")}, {0: Dim("c", min=1, max=8)})
    ep = _same_as_eager(f, (torch.randn(4), torch.randn(3)), spec,
                        [(torch.randn(a), torch.randn(c)) for a, c in
                         [(0, 1), (1, 1), (0, 8), (5, 2)]])
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2), torch.randn(9))
