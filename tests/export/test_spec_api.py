"""The dynamic_shapes builders torch.export has, side by side with torch.export: st.dims,
Dim.AUTO/DYNAMIC/STATIC(min=, max=), ShapesCollection, AdditionalInputs and
refine_dynamic_shapes_from_suggested_fixes."""

from __future__ import annotations

import pytest
import torch
from torch.export import Dim as TDim

import safetrace as st
import safetrace.dims  # noqa: F401  (the submodule must not shadow st.dims)
from safetrace import Dim
from tests.helpers import matches_eager


class Net(torch.nn.Module):
    def forward(self, x, ys, *, k):
        return x * 2 + ys[0].sum() * k + ys[1][: x.shape[1]].sum()


def _args(b=3, n=4):
    return (torch.randn(b, n), [torch.randn(5), torch.randn(n + 1)]), {"k": 2}


def test_dims_helper_is_callable_after_importing_the_submodule():
    a, b = st.dims("a", "b", min=2, max=9)
    ta, tb = torch.export.dims("a", "b", min=2, max=9)
    assert (a.name, a.min, a.max) == (ta.__name__, ta.min, ta.max) == ("a", 2, 9)
    assert b.name == tb.__name__


def test_hints_take_ranges_like_torch_export():
    assert Dim.DYNAMIC(min=2, max=8) == Dim.DYNAMIC(min=2, max=8)
    assert repr(Dim.STATIC(max=8)) == "Dim.STATIC(max=8)"
    for ours, theirs in ((Dim.DYNAMIC(min=2), TDim.DYNAMIC(min=2)),
                         (Dim.AUTO(max=3), TDim.AUTO(max=3))):
        with pytest.raises(TypeError):
            ours(max=5)
        with pytest.raises(TypeError):
            theirs(max=5)
    with pytest.raises(ValueError, match="min"):
        Dim.DYNAMIC(min=-1)
    with pytest.raises(ValueError, match="greater"):
        Dim.AUTO(min=5, max=2)


def test_static_with_a_range_checks_the_example_like_torch_export():
    f = lambda x: x * 2  # noqa: E731
    ep = st.export(f, (torch.randn(3, 4),), dynamic_shapes={"x": {0: Dim.STATIC(min=2, max=8)}})
    assert ep.range_constraints == {}
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(4, 4))  # static: only 3
    with pytest.raises(st.SpecError, match="range"):
        st.export(f, (torch.randn(3, 4),), dynamic_shapes={"x": {0: Dim.STATIC(min=5)}})
    with pytest.raises(Exception):  # torch.export: a ValueError about the range
        torch.export.export(torch.nn.Identity(), (torch.randn(3, 4),),
                            dynamic_shapes={"input": {0: TDim.STATIC(min=5)}})


def _kinds(tree):
    """A spec tree with its entries named by kind, to compare ours with torch's."""
    if isinstance(tree, dict):
        return {k: _kinds(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_kinds(v) for v in tree)
    if tree is None:
        return None
    return str(getattr(tree, "kind", getattr(getattr(tree, "type", None), "name", tree))).lower()


def test_shapes_collection_becomes_the_spec_tree_like_torch_export():
    args, kwargs = _args()
    ours, theirs = st.ShapesCollection(), torch.export.ShapesCollection()
    ours[args[0]] = (Dim.DYNAMIC, Dim.DYNAMIC)
    theirs[args[0]] = (TDim.DYNAMIC, TDim.DYNAMIC)
    ours[args[1][1]][0] = Dim.DYNAMIC  # torch's item-by-item form
    theirs[args[1][1]][0] = TDim.DYNAMIC
    tree = ours.dynamic_shapes(Net(), args, kwargs)
    assert _kinds(tree) == _kinds(theirs.dynamic_shapes(Net(), args, kwargs))
    assert tree == {"x": (Dim.DYNAMIC, Dim.DYNAMIC), "ys": [None, {0: Dim.DYNAMIC}], "k": None}
    for spec in (ours, tree):
        ep = st.export(Net(), args, kwargs, dynamic_shapes=spec)
        for b, n in ((0, 1), (1, 0), (5, 6)):
            matches_eager(ep, Net(), *_args(b, n))
    with pytest.raises(ValueError):
        ours[args[0]] = (None, None)  # a different spec for the same tensor
    stranger = st.ShapesCollection()
    stranger[torch.randn(3, 4)] = (Dim.DYNAMIC, None)
    with pytest.raises(st.SpecError, match="identity"):
        stranger.dynamic_shapes(Net(), args, kwargs)


def test_additional_inputs_mark_differing_sizes_dynamic_like_torch_export():
    args, kwargs = _args(3, 4)
    ours, theirs = st.AdditionalInputs(), torch.export.AdditionalInputs()
    for extra in (_args(5, 4), _args(1, 4)):
        ours.add(*extra)
        theirs.add(*extra)
    tree = ours.dynamic_shapes(Net(), args, kwargs)
    assert _kinds(tree) == _kinds(theirs.dynamic_shapes(Net(), args, kwargs))
    assert tree["x"] == (Dim.DYNAMIC, None)
    ep = st.export(Net(), args, kwargs, dynamic_shapes=ours)
    ours.verify(ep)
    for b in (0, 1, 7):
        matches_eager(ep, Net(), *_args(b, 4))
    with pytest.raises(st.InputMismatchError):
        ep.module()(*_args(3, 5)[0], **kwargs)  # n was the same in every example: static
    odd = st.AdditionalInputs()  # an int that differs: a dynamic int, as torch makes it
    odd.add(*_args(3, 4)[:1], {"k": 3})
    assert odd.dynamic_shapes(Net(), args, kwargs)["k"] == Dim.DYNAMIC
    odd.add(*_args(3, 4)[:1], {"k": 2.5})  # a float does not
    with pytest.raises(st.SpecError, match="only tensor sizes and ints"):
        odd.dynamic_shapes(Net(), args, kwargs)
    with pytest.raises(TypeError):
        odd.add([torch.randn(3)])


class Guarded(torch.nn.Module):
    def forward(self, x, y):
        if y.shape[0] > 2 and x.shape[0] == 3:
            return x * 2, y * 2
        return x, y


def test_refine_applies_the_fixes_of_a_violation():
    args = (torch.randn(3, 4), torch.randn(5))
    spec = {"x": {0: Dim.DYNAMIC, 1: Dim("n")}, "y": {0: Dim("m", max=100)}}
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(Guarded(), args, dynamic_shapes=spec)
    for source in (info.value, str(info.value)):
        refined = st.refine_dynamic_shapes_from_suggested_fixes(source, spec)
        assert refined["x"][0] == 3 and refined["y"][0].min == 3
        assert refined["y"][0].max == 100
        ep = st.export(Guarded(), args, dynamic_shapes=refined)
        for n in (0, 1, 6):
            matches_eager(ep, Guarded(), (torch.randn(3, n), torch.randn(n + 3)))
    assert spec["x"][0] == Dim.DYNAMIC  # the user's spec is not changed


def test_refine_parses_named_fixes_like_torch_export():
    b = Dim("b")
    spec = {"x": {0: b, 1: 2 * b + 1}, "y": (None, b)}
    text = ("Suggested fixes:\n  b = Dim('b', min=3, max=64)\n")
    out = st.refine_dynamic_shapes_from_suggested_fixes(text, spec)
    assert out["x"][0] == out["y"][1] and (out["x"][0].min, out["x"][0].max) == (3, 64)
    assert repr(out["x"][1]) == "2*b + 1" and out["x"][1].root.min == 3
    assert st.refine_dynamic_shapes_from_suggested_fixes("  b = 4", spec)["x"] == {0: 4, 1: 9}
    derived = st.refine_dynamic_shapes_from_suggested_fixes(
        "  c = Dim('c')\n  b = 2*c + 1", {"x": (b, None)})
    assert repr(derived["x"][0]) == "2*c + 1"
