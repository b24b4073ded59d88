"""A program refused only because sizes 0/1 of named Dims break it is exported with those
conditions as run-time checks (small_splits.checked_below_two); every other guard of the
program keeps its own treatment, a size split where one keeps the declared space, as
without the small problem (the differential fuzzer found odd sizes refused: the whole
program had been exported as ``prefer_deferred_runtime_asserts_over_guards`` makes it).

Each program runs eager's answer at sizes in the declared space away from the deferred
sizes (odd and even, 0 where eager computes), and refuses the deferred sizes before
computing, as ``ep.module()``, ``ep.to_torch().module()`` and after ``st.save``/``st.load``."""

from __future__ import annotations

import io
import itertools

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.export import Dim

import safetrace as st

from tests.helpers import matches_eager, rejects


class Fn(nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _row_then_parity(x):
    y = x.flatten()[1]  # needs x.numel() >= 2: sizes 0 and 1 of the Dim
    if x.numel() % 2 == 0:
        return x * 2 + y
    return x - y


def _squeeze_then_small(x):
    z = x.squeeze()  # another rank where a Dim is 1
    if z.numel() < 4:
        return z * 3
    return z + 1


def _lrn_then_parity(x):
    y = F.local_response_norm(x, 2)  # its view needs sizes of at least 1
    if x.shape[2] % 2 == 0:
        return y * 2
    return y - 1


# fn, example shape, spec, sizes of the named dims tried, the deferred sizes (a named
# dim's size that the program's input check refuses)
ROWS = {
    "row then parity": (_row_then_parity, (6,), {0: Dim("a")}, [(n,) for n in range(2, 9)],
                        [(0,), (1,)]),
    "squeeze then numel": (_squeeze_then_small, (3, 4), {0: Dim("a"), 1: Dim("b")},
                           [p for p in itertools.product((0, 2, 3, 5), repeat=2)],
                           [(1, 3), (4, 1), (1, 1)]),
    "lrn then parity": (_lrn_then_parity, (2, 3, 4), {1: Dim("b"), 2: Dim("c")},
                        [p for p in itertools.product((1, 2, 3), (1, 2, 3, 4, 5))],
                        [(0, 3), (2, 0)]),
}


def _shape(shape: tuple, spec: dict, sizes: tuple) -> list[int]:
    out = list(shape)
    for d, n in zip(spec, sizes):
        out[d] = n
    return out


def _reloaded(ep: st.ExportedProgram) -> st.ExportedProgram:
    buffer = io.BytesIO()
    st.save(ep, buffer)
    buffer.seek(0)
    return st.load(buffer)


@pytest.mark.parametrize("name", list(ROWS))
def test_only_the_small_sizes_are_checked_every_other_size_runs(name: str) -> None:
    fn, shape, spec, sizes, deferred = ROWS[name]
    model = Fn(fn)
    ep = st.export(model, (torch.randn(*shape),), dynamic_shapes=(spec,))
    assert ep.deferred_checks  # (what the input check refuses beyond the declaration)
    loaded = _reloaded(ep)
    for n in sizes:  # odd and even sizes: a split, not a run-time check
        x = torch.randn(*_shape(shape, spec, n))
        matches_eager(ep, model, (x,))
        torch.testing.assert_close(loaded.module()(x), model(x))
    for n in deferred:
        x = torch.randn(*_shape(shape, spec, n))
        message = rejects(ep, (x,))
        assert "test_small_sizes_deferred_alone.py" in message, message  # (the line)
        with pytest.raises(st.InputMismatchError):
            loaded.module()(x)
        with pytest.raises((AssertionError, RuntimeError)):  # (a guard or a run-time
            ep.to_torch().module()(x)  # assert of torch's program)


def test_a_guard_past_two_is_still_refused_with_its_fix() -> None:
    # (the small problem deferred, the parity branch on a Dim that max_splits=0 keeps
    # from splitting: refused as without the small problem, naming the parity)
    model = Fn(_row_then_parity)
    with pytest.raises(st.ConstraintViolationError, match="% 2"):
        st.export(model, (torch.randn(6),), dynamic_shapes=({0: Dim("a")},), max_splits=0)
