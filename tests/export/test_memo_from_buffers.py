"""A memo dict forward fills from parameters and buffers (LeViT's eval-mode
``self.attention_bias_cache[str(device)] = self.attention_biases[:, self.attention_bias_idxs]``,
with ``attention_bias_idxs`` a non-persistent buffer): the program computes the entry anew
on every call, which is what eager's later reads give while nothing writes those buffers.
Was refused as Python state the graph reads (torch.export exports it). A memo computed from
a buffer the program writes (directly or through a view) stays refused: eager's entry keeps
the first call's value there, the program's would follow the writes."""

from __future__ import annotations

import copy

import pytest
import torch

import safetrace as st
from safetrace import Dim


class _BiasCache(torch.nn.Module):
    def __init__(self, write: str = ""):
        super().__init__()
        self.write = write
        self.biases = torch.nn.Parameter(torch.randn(2, 5))
        self.register_buffer("idxs", torch.tensor([[0, 1, 2], [4, 3, 2], [1, 1, 0]]),
                             persistent=False)
        self.cache: dict = {}

    def forward(self, x):
        key = str(x.device)
        if key not in self.cache:
            self.cache[key] = self.biases[:, self.idxs]
        if self.write == "direct":
            self.idxs.add_(0)
        elif self.write == "view":
            self.idxs[1:].mul_(1)
        return torch.softmax(x @ x.transpose(-1, -2) + self.cache[key], dim=-1)


def test_memo_from_parameters_and_unwritten_buffers_exports():
    model = _BiasCache().eval()
    eager = copy.deepcopy(model)
    ep = st.export(model, (torch.randn(3, 2, 3, 4),),
                   dynamic_shapes=({0: Dim("b", min=0, max=8)},))
    assert model.cache == {}                     # (export puts the model back as it was)
    for rows in (0, 1, 5, 5):                    # eager's second call reads its memo
        x = torch.randn(rows, 2, 3, 4)
        torch.testing.assert_close(ep.module()(x), eager(x))
    assert list(eager.cache) == ["cpu"]
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(9, 2, 3, 4))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 2, 4, 4))


@pytest.mark.parametrize("write", ["direct", "view"])
def test_memo_from_a_written_buffer_is_refused(write):
    model = _BiasCache(write).eval()
    with pytest.raises(st.UnsupportedOpError, match=r"`self\.cache`"):
        st.export(model, (torch.randn(3, 2, 3, 4),),
                  dynamic_shapes=({0: Dim("b", min=0, max=8)},))
