"""A size split's side that writes a user input in place (``y.neg_()``): the converted
program writes the caller's tensor as eager does (interop/branch_writes.py). Before, torch's
cond took the side made functional and the caller's tensor kept its old values (fuzz seed
3991, ``inputs after`` differed at every size)."""

from __future__ import annotations

import functools
import io

import pytest
import torch

import safetrace as st
from tests.helpers import assert_close


class WritesInSplit(torch.nn.Module):
    def forward(self, x, *, y, z):
        if y.shape[-1] == z.shape[-1]:  # (a three-way split on z's last size: 5 apart)
            v1 = y * z.flatten(0, -2)[:1]
        else:
            v1 = y * 2
        y.neg_()
        return v1, y


@functools.cache  # (one export and its conversions for every test here: ~2 s each)
def _export():
    D = st.Dim
    return st.export(WritesInSplit(), (torch.randn(1, 3),),
                     {"y": torch.randn(2, 3, 5, 5), "z": torch.randn(5, 2)},
                     dynamic_shapes={"x": {1: D("d0")}, "y": {1: D("d0")},
                                     "z": {0: D.DYNAMIC, 1: D("d1")}})


@functools.cache
def _ways(ep):
    saved = io.BytesIO()
    st.save(ep, saved)
    converted = ep.to_torch()
    return {"module": ep.module(), "to_torch": converted.module(),
            "decomposed": converted.run_decompositions().module(),
            "load+to_torch": st.load(saved.getvalue()).to_torch().module()}


@pytest.mark.parametrize("shapes", [
    ((1, 3), (2, 3, 5, 5), (5, 2)), ((1, 4), (2, 4, 5, 5), (5, 4)),
    ((1, 4), (2, 4, 5, 5), (5, 5)), ((1, 0), (2, 0, 5, 5), (0, 2)),
    ((1, 1), (2, 1, 5, 5), (1, 1)), ((1, 2), (2, 2, 5, 5), (3, 9))])
def test_the_callers_input_is_written_as_eager_writes_it(shapes):
    ep = _export()
    inputs = [torch.randn(*s) for s in shapes]
    want_in = [t.clone() for t in inputs]
    want = WritesInSplit()(want_in[0], y=want_in[1], z=want_in[2])
    for name, run in _ways(ep).items():
        got_in = [t.clone() for t in inputs]
        got = run(got_in[0], y=got_in[1], z=got_in[2])
        for a, b in zip(got, want):
            assert_close(a, b)
        assert_close(got_in[1], want_in[1]), name  # (y after the call: negated)
        assert_close(got_in[2], want_in[2])


def test_inputs_outside_the_space_are_refused_before_any_write():
    ep = _export()
    for name, run in _ways(ep).items():
        x, y, z = torch.randn(1, 3), torch.randn(2, 4, 5, 5), torch.randn(5, 2)  # d0 differs
        before = y.clone()
        with pytest.raises(Exception):
            run(x, y=y, z=z)
        assert torch.equal(y, before), name
