"""torch.export's tuple form of ``dynamic_shapes`` for ``forward(*args)`` /
``forward(x, *args, **kw)``: one entry per signature parameter, the ``*args`` entry a
tuple of per-input specs (the ``**kw`` entry a dict).  It used to be refused ("has 1
entries but the program takes 2 inputs").  safetrace's own flat form (one entry per
input) keeps working; torch.export is the reference for the nested one."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


class Star(torch.nn.Module):
    def forward(self, *args):
        return args[0] + args[1]


class XStarKw(torch.nn.Module):
    def forward(self, x, *args, **kw):
        return x + args[0] * kw["scale"]


class One(torch.nn.Module):
    def forward(self, *args):
        return args[0] * 2


def _both(model, args, kwargs, make):
    """Ours, and torch.export's program (None where torch 2.13 fails on the form: with a
    ``**kw`` entry it raises "Must provide a tree_name when there might be a mismatch")."""
    ep = st.export(model, args, kwargs, dynamic_shapes=make(st.Dim))
    if kwargs:
        with pytest.raises(AssertionError, match="tree_name"):
            torch.export.export(model, args, kwargs, dynamic_shapes=make(torch.export.Dim))
        return ep, None
    return ep, torch.export.export(model, args, kwargs, dynamic_shapes=make(torch.export.Dim))


CASES = {
    "star": (Star(), lambda n: (torch.randn(n, 3), torch.randn(n, 3)), {},
             lambda D: (({0: D("b")}, {0: D("b")}),)),
    "x-star-kw": (XStarKw(), lambda n: (torch.randn(n, 3), torch.randn(n, 3)),
                  {"scale": torch.randn(3)},
                  lambda D: ({0: D("b")}, ({0: D("b")},), {"scale": None})),
    "one": (One(), lambda n: (torch.randn(n, 2),), {}, lambda D: (({0: D("b")},),)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_torch_nested_tuple_spec_binds_like_torch(case):
    model, make_args, kwargs, spec = CASES[case]
    ep, ref = _both(model, make_args(4), kwargs, spec)
    for n in (0, 1, 7):
        args = make_args(n)
        torch.testing.assert_close(ep.module()(*args, **kwargs), model(*args, **kwargs))
        if ref is not None:
            torch.testing.assert_close(ep.module()(*args, **kwargs),
                                       ref.module()(*args, **kwargs))
    assert ep.dims_report and all(v.startswith("dynamic") for v in ep.dims_report.values())
    if len(make_args(1)) == 2:  # the declared relation: both inputs share b
        with pytest.raises(st.InputMismatchError):
            ep.module()(torch.randn(3, 3), torch.randn(4, 3), **kwargs)


def test_the_flat_form_still_binds_one_entry_per_input():
    b = st.Dim("b")
    ep = st.export(Star(), (torch.randn(4, 3), torch.randn(4, 3)),
                   dynamic_shapes=({0: b}, {0: b}))
    torch.testing.assert_close(ep.module()(torch.ones(2, 3), torch.ones(2, 3)),
                               torch.full((2, 3), 2.0))


def test_a_nested_entry_of_the_wrong_length_is_a_spec_error():
    with pytest.raises(st.SpecError, match=r"\*args"):
        st.export(Star(), (torch.randn(4, 3), torch.randn(4, 3)),
                  dynamic_shapes={"args": ({0: st.Dim("b")},)})
