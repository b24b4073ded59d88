"""A size test on a size read from data inside one side of a relation split (fuzz seed
3891, the default mix's "size-oblivious data sizes" bucket: ``v1 = torch.masked_select(v0,
v0 > 0)`` then ``if bool(len(v1)):`` on an example with ``x.numel() == 0``).

The example's trace answers ``d0*d1 == 0`` (no element: ``len(v1)`` is 0), a relation the
export splits on; the other side's trace answered ``u0 != 0`` as for every size >= 2 with a
run-time assertion, so the program refused every input with elements whose mask selects
nothing, which eager computes.  Now a relation side's size tests on data are traced both
ways and joined on the data, as the export's own first trace's are
(``size_tests.same_either_way``), within the ``max_splits`` budget."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


def _selected(x):
    v1 = torch.masked_select(x, x > 0)
    if bool(len(v1)):
        v6 = v1 * 2
    else:
        v6 = v1[:1] - 1
    return v1, v6


_SPEC = ({0: Dim("a", max=16), 1: Dim("b")},)


def test_a_data_size_test_inside_a_relation_side_is_split_on(tmp_path):
    ep = st.export(_selected, (torch.randn(3, 0),), dynamic_shapes=_SPEC)
    st.save(ep, tmp_path / "p.st")
    mods = [ep.module(), st.load(tmp_path / "p.st").module()]
    xs = [torch.randn(3, 0), torch.randn(0, 5), -torch.ones(3, 3), -torch.ones(1, 1),
          torch.ones(1, 1), torch.randn(4, 6), torch.tensor([[-1.0, 2.0]]),
          torch.randn(16, 1)]
    for x in xs:
        for m in mods:
            for got, want in zip(m(x), _selected(x), strict=True):
                torch.testing.assert_close(got, want)
    for m in mods:  # out of the declared space
        with pytest.raises(st.InputMismatchError):
            m(torch.randn(17, 2))
        with pytest.raises(st.InputMismatchError):
            m(torch.randn(2))


def test_max_splits_bounds_it():
    """With one split allowed (the relation's) the side's data test stays a run-time
    assertion, refusing as before."""
    ep = st.export(_selected, (torch.randn(3, 0),), dynamic_shapes=_SPEC, max_splits=1)
    with pytest.raises(RuntimeError, match="size-oblivious"):
        ep.module()(-torch.ones(3, 3))
    x = torch.randn(0, 4)
    for got, want in zip(ep.module()(x), _selected(x), strict=True):
        torch.testing.assert_close(got, want)
