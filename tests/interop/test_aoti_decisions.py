"""``st.to_aoti``: a decision inductor's retrace took on a computed size at the example
(``unfold``'s step ``max(w//2, 1)`` taken as 1 at w = 1) is refused up front, naming the
Dim, not only when the package's random verify run happens to meet a size where it
differs (``retrace_guards.refuse_decisions``).  Before: with that run left out (its sizes
are random) the package gave other values at w = 4..9.  One AOTInductor compile: slow."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st

warnings.filterwarnings("ignore")


class UnfoldHalf(torch.nn.Module):
    def forward(self, x):
        return x.unfold(1, 1, max(x.shape[1] // 2, 1)) * 2


@pytest.mark.slow
def test_a_step_decided_at_the_example_is_refused_by_to_aoti(tmp_path, monkeypatch):
    from safetrace.interop import aoti

    # (the package's verify run samples sizes at random: left out, the refusal must not
    # depend on it)
    monkeypatch.setattr(aoti, "verify_package", lambda *a, **k: None)
    ep = st.export(UnfoldHalf(), (torch.randn(3, 1),),
                   dynamic_shapes=({1: st.Dim("w", max=9)},))
    for w in (1, 2, 4, 9):   # (the program itself: eager's at every size)
        x = torch.randn(3, w)
        torch.testing.assert_close(ep.module()(x), UnfoldHalf()(x))
    for w in (0, 10):   # (out of its space: eager's unfold fails at 0)
        with pytest.raises(Exception):
            ep.module()(torch.randn(3, w))
    with pytest.raises(st.errors.ConversionError, match=r"st.Dim\('w', min="):
        st.to_aoti(ep, tmp_path / "m.pt2")
