"""``x.tensor_split(t)`` with a tensor `t` reads it as eager does: a 0-d int64 `t` is
``int(t)`` sections, a 1-d one the indices (was MissingShapeRule: the op's composite reads
the tensor's data on the CPU); a count read from data is a DataRead naming the line, and
eager's own errors (dtype, rank) are eager's messages."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from tests.helpers import matches_eager, rejects


class _Split(torch.nn.Module):
    def __init__(self, make, dim=0):
        super().__init__()
        self.make, self.dim = make, dim

    def forward(self, x):
        return x.tensor_split(self.make(), self.dim)


def _export(model, n=7, dim=0):
    shape = [3, 3]
    shape[dim] = n
    return st.export(model, (torch.randn(*shape),),
                     dynamic_shapes={"x": {dim: st.Dim("n", min=0, max=64)}})


@pytest.mark.parametrize("make", [lambda: torch.tensor(3), lambda: torch.tensor(1),
                                  lambda: torch.tensor(12), lambda: torch.tensor([1, 4]),
                                  lambda: torch.tensor([], dtype=torch.long)])
@pytest.mark.parametrize("dim", [0, 1])
def test_tensor_count_matches_eager_at_every_size(make, dim) -> None:
    model = _Split(make, dim)
    ep = _export(model, dim=dim)
    for n in (0, 1, 2, 3, 5, 13, 64):
        shape = [3, 3]
        shape[dim] = n
        matches_eager(ep, model, (torch.randn(*shape),))
    shape = [3, 3]
    shape[dim] = 65
    rejects(ep, (torch.randn(*shape),))


def test_keyword_spelling() -> None:
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.tensor_split(x, tensor_indices_or_sections=torch.tensor(2), dim=0)
    ep = _export(M())
    for n in (0, 1, 4):
        matches_eager(ep, M(), (torch.randn(n, 3),))


def test_eager_errors_are_eager_messages() -> None:
    for make, words in ((lambda: torch.tensor(3, dtype=torch.int32), "dtype of long, but got Int$"),
                        (lambda: torch.ones(1, 1, dtype=torch.long), "with 2 dims")):
        with pytest.raises(RuntimeError, match=words):
            make_eager = torch.randn(4).tensor_split
            make_eager(make())
        with pytest.raises(RuntimeError, match=words):
            _export(_Split(make))


def test_a_count_read_from_data_is_a_data_read() -> None:
    class M(torch.nn.Module):
        def forward(self, x, k):
            return x.tensor_split(k)
    with pytest.raises(st.DataDependentError, match="tensor_split"):
        st.export(M(), (torch.randn(6, 3), torch.tensor(2)))
