"""dynamic_shapes forms: *args / **kwargs as torch.export writes them; ShapesCollection keys."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.helpers import matches_eager, rejects


class VarArgs(torch.nn.Module):
    def forward(self, *xs):
        return xs[0] + xs[1]


class VarKwargs(torch.nn.Module):
    def forward(self, x, **extra):
        return x + extra["a"] * extra["b"]


def _is_dynamic(ep, placeholder, dim):
    node = next(n for n in ep.graph.nodes if n.op == "placeholder" and n.name == placeholder)
    return not isinstance(node.meta["val"].shape[dim], int)


@pytest.mark.parametrize("spec", [
    {"xs": ({0: Dim("b")}, {0: Dim("b")})},           # torch.export's form
    {"xs": [(Dim("b"), 4), (Dim("b"), 4)]},
    {"xs[0]": {0: Dim("b")}, "xs[1]": {0: Dim("b")}},  # per flattened name
])
def test_var_positional_spec_forms(spec):
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    ep = st.export(VarArgs(), (x, y), dynamic_shapes=spec)
    assert _is_dynamic(ep, "xs_0", 0) and _is_dynamic(ep, "xs_1", 0)
    matches_eager(ep, VarArgs(), (torch.randn(5, 4), torch.randn(5, 4)))
    rejects(ep, (torch.randn(5, 4), torch.randn(6, 4)))


def test_var_positional_spec_wrong_length_names_the_fix():
    x = torch.randn(3, 4)
    with pytest.raises(st.SpecError) as info:
        st.export(VarArgs(), (x, x), dynamic_shapes={"xs": ({0: Dim("b")},)})
    msg = str(info.value)
    assert "*xs" in msg and "2" in msg and "1" in msg


def test_var_positional_spec_given_twice():
    x = torch.randn(3, 4)
    with pytest.raises(st.SpecError, match="both"):
        st.export(VarArgs(), (x, x), dynamic_shapes={"xs": (None, None), "xs[0]": None})


@pytest.mark.parametrize("spec", [
    {"x": {0: Dim("b")}, "extra": {"a": {0: Dim("b")}, "b": None}},  # torch.export's form
    {"x": {0: Dim("b")}, "a": {0: Dim("b")}},                        # per keyword name
])
def test_var_keyword_spec_forms(spec):
    x, a, b = torch.randn(3, 4), torch.randn(3, 4), torch.randn(4)
    ep = st.export(VarKwargs(), (x,), {"a": a, "b": b}, dynamic_shapes=spec)
    assert _is_dynamic(ep, "x", 0) and _is_dynamic(ep, "a", 0)
    matches_eager(ep, VarKwargs(), (torch.randn(6, 4),), {"a": torch.randn(6, 4),
                                                          "b": torch.randn(4)})


def test_var_keyword_spec_unknown_keyword():
    x = torch.randn(3, 4)
    with pytest.raises(st.SpecError, match="'c'"):
        st.export(VarKwargs(), (x,), {"a": x, "b": x},
                  dynamic_shapes={"x": None, "extra": {"c": None}})


# -- ShapesCollection keyed by a tensor that is not an input ---------------------------------
class One(torch.nn.Module):
    def forward(self, x):
        return x + 1


def test_shapes_collection_with_a_foreign_tensor_is_refused():
    x = torch.randn(4, 3)
    sc = st.ShapesCollection()
    sc[torch.randn(4, 3)] = (Dim.DYNAMIC, 3)  # equal shape, but not the tensor passed below
    with pytest.raises(st.SpecError) as info:
        st.export(One(), (x,), dynamic_shapes=sc)
    msg = str(info.value)
    assert "not one of the inputs" in msg and "[4, 3]" in msg
    assert "sc[x] = " in msg


def test_shapes_collection_with_the_input_tensor_works():
    x = torch.randn(4, 3)
    sc = st.ShapesCollection()
    sc[x] = (Dim.DYNAMIC, 3)
    ep = st.export(One(), (x,), dynamic_shapes=sc)
    matches_eager(ep, One(), (torch.randn(7, 3),))
