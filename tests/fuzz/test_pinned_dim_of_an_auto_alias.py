"""A named Dim pinned to one value by the program's run-time conditions, whose symbol the
trace replaced by an equal Dim.AUTO size's (fuzz35, typed seed 7): the refusal evaluated the
Dim's expression with the AUTO symbol bound and crashed with ``KeyError: 's4'`` instead of
naming the pin (exporter/dynamic.py)."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


class RowsByLoop(torch.nn.Module):
    def forward(self, inp):
        y, z = inp["rest"]
        v1 = torch.zeros(z.shape[3], dtype=z.dtype)
        for i in range(min(z.shape[3], 4)):   # as long as z.shape[3] up to 4: pinned at 2
            v1[i] = z.select(3, i).sum()
        return v1, torch.where((z > 0).any(), z, y)


def test_the_pin_is_refused_with_its_fix():
    y, z = torch.randn(2), torch.randn(1, 0, 2, 2)
    spec = ({"x": {0: st.Dim.DYNAMIC}, "rest": [
        {0: st.Dim.AUTO}, {0: st.Dim("d0", max=1), 1: st.Dim.AUTO,
                           3: st.Dim("d1", min=2, max=16)}]},)
    with pytest.raises(st.ExportError, match=r"(?s)can only be 2 .*d1 = 2"):
        st.export(RowsByLoop(), ({"x": torch.randn(1), "rest": [y, z]},), dynamic_shapes=spec)
