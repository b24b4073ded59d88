"""Length 1 of a chunked scan (transformers' mamba2 layers: bamba, zamba2, falcon_h1,
granitemoehybrid): a decode branch at ``L == 1`` and a padding to the chunk size
(``pad = (8 - L % 8) % 8; if pad > 0:``).  The length Dim split at 1 has the side
``L >= 2`` refused for ``L % 8 != 0``, a condition that holds on many ranges of it; the
ranges explored failed (past the example, 16, 24, ... need sides of their own), so the
side, and with it the split at 1, was given up and length 1 left to a run-time check.
Now such a side is split on the relation (both answers traced, as the top of an export
does: ``splits._relation_side``), and lengths 1 and 2.. are one program."""

import pytest
import torch
import torch.nn.functional as F

import safetrace as st

AUTO = st.Dim.AUTO


class ChunkedScan(torch.nn.Module):
    def forward(self, x):
        b, n, d = x.shape
        last = x[:, -1]  # (eager raises at length 0)
        if n == 1:  # (a decode step)
            return x * 2, last
        pad = (8 - n % 8) % 8
        if pad > 0:
            x = F.pad(x, (0, 0, 0, pad))
        chunks = x.reshape(b, -1, 8, d)
        states = chunks.sum(2)
        prev = torch.cat([torch.zeros_like(states[:, :1]), states[:, :-1]], 1).cumsum(1)
        y = chunks.cumsum(2) + prev[:, :, None]
        return y.reshape(b, -1, d)[:, :n], last


MODEL = ChunkedScan()
SIZES = [(2, 1), (1, 1), (1, 2), (2, 7), (2, 8), (3, 9), (2, 16), (3, 17), (1, 40), (0, 1),
         (2, 12)]


@pytest.fixture(scope="module", params=["auto", "named"])
def program(request):
    length = AUTO if request.param == "auto" else st.Dim("L", min=1)
    return st.export(MODEL, (torch.randn(2, 12, 4),), dynamic_shapes=({0: AUTO, 1: length},))


@pytest.mark.parametrize("b,n", SIZES)
def test_lengths_match_eager(program, b, n):
    x = torch.randn(b, n, 4)
    torch.testing.assert_close(program.module()(x), MODEL(x))


def test_length_one_is_in_the_range(program):
    length = next(x for x in program.contract.symbols if x.where == "x.shape[1]")
    assert length.lo == 1 and length.hi is None
    assert not any(c.cond.free_symbols == {length.name} and not c.cond.evaluate({length.name: 1})
                   for c in program.contract.conditions)


def test_length_zero_is_refused_where_eager_raises(program):
    x = torch.randn(2, 0, 4)
    with pytest.raises(IndexError):
        MODEL(x)
    with pytest.raises(st.InputMismatchError):
        program.module()(x)


@pytest.mark.parametrize("shape", [(2, 12, 5), (2, 12), (1, 1, 3)])
def test_outside_the_space_is_refused_before_running(program, shape):
    with pytest.raises(st.InputMismatchError):
        program.module()(torch.randn(*shape))
