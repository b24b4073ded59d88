"""SPEC scenarios 7-10: dynamic dims, unification, specialization errors, state."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.helpers import matches_eager, rejects


def shape_of(ep, name):
    node = next(n for n in ep.graph.nodes if n.name == name)
    return [str(s) for s in node.meta["val"].shape]


# -- scenario 7 ---------------------------------------------------------------------------
class AddMM(torch.nn.Module):
    def forward(self, x, y, z):
        return x + y @ z


def test_scenario_7_unification():
    x, y, z = torch.randn(3, 5), torch.randn(3, 4), torch.randn(4, 5)
    sc = st.ShapesCollection()
    for t in (x, y, z):
        sc[t] = (Dim.DYNAMIC, Dim.DYNAMIC)
    ep = st.export(AddMM(), (x, y, z), dynamic_shapes=sc)
    assert shape_of(ep, "x") == ["s0", "s1"]
    assert shape_of(ep, "y") == ["s0", "s3"]
    assert shape_of(ep, "z") == ["s3", "s1"]
    text = ep.graph_module.print_readable(print_output=False)
    assert 'x: "f32[s0, s1]"' in text and 'add: "f32[s0, s1]"' in text
    a = torch.randn(6, 6)
    out = ep.module()(a, torch.eye(6), -a)
    torch.testing.assert_close(out, torch.zeros(6, 6))
    msg = rejects(ep, (a, torch.eye(7), -a))
    assert "y.shape[0] = 7, but it must equal x.shape[0] = 6" in msg
    assert "y @ z" in msg and "test_scenarios_dynamic.py" in msg
    for shapes in [((2, 7), (2, 3), (3, 7)), ((1, 1), (1, 1), (1, 1)), ((0, 2), (0, 5), (5, 2))]:
        matches_eager(ep, AddMM(), tuple(torch.randn(*s) for s in shapes))
    assert set(map(str, ep.range_constraints)) == {"s0", "s1", "s3"}
    assert ep.range_constraints["s0"].lower == 0


# -- scenario 8 ---------------------------------------------------------------------------
class CatMM(torch.nn.Module):
    def forward(self, x, y, zs):
        return x + y @ torch.cat(zs)


def test_scenario_8_cat_propagates_sums():
    x, y = torch.randn(3, 5), torch.randn(3, 6)
    zs = [torch.randn(2, 5), torch.randn(4, 5)]
    dyn = (Dim.DYNAMIC, Dim.DYNAMIC)
    ep = st.export(CatMM(), (x, y, zs), dynamic_shapes=(dyn, dyn, [dyn, dyn]))
    cat = next(n for n in ep.graph.nodes if str(n.target) == "aten.cat.default")
    assert [str(s) for s in cat.meta["val"].shape] == ["s4 + s6", "s1"]
    assert shape_of(ep, "y") == ["s0", "s4 + s6"]
    matches_eager(ep, CatMM(), (torch.randn(2, 3), torch.randn(2, 7),
                                [torch.randn(3, 3), torch.randn(4, 3)]))
    matches_eager(ep, CatMM(), (torch.randn(1, 1), torch.randn(1, 0),
                                [torch.randn(0, 1), torch.randn(0, 1)]))
    msg = rejects(ep, (torch.randn(2, 3), torch.randn(2, 8),
                       [torch.randn(3, 3), torch.randn(4, 3)]))
    assert "y.shape[1] = 8" in msg


# -- scenario 9 ---------------------------------------------------------------------------
class SliceCatMM(torch.nn.Module):
    def forward(self, x, y, zs):
        return x[:3] + y @ torch.cat(zs)


def _s9_inputs():
    return torch.randn(7, 5), torch.randn(3, 6), [torch.randn(2, 5), torch.randn(4, 5)]


def test_scenario_9_specialization_is_an_error_with_a_fix():
    x, y, zs = _s9_inputs()
    dyn = (Dim.DYNAMIC, Dim.DYNAMIC)
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(SliceCatMM(), (x, y, zs), dynamic_shapes=(dyn, dyn, [dyn, dyn]))
    msg = str(info.value)
    assert "y.shape[0]" in msg and "specialized to 3" in msg
    assert "Dim.STATIC" in msg and "Dim.AUTO" in msg
    assert "x[:3] + y @ torch.cat(zs)" in msg


def test_scenario_9_fixed_with_static_3():
    x, y, zs = _s9_inputs()
    dyn = (Dim.DYNAMIC, Dim.DYNAMIC)
    ep = st.export(SliceCatMM(), (x, y, zs), dynamic_shapes=(dyn, (3, Dim.DYNAMIC), [dyn, dyn]))
    assert shape_of(ep, "y")[0] == "3"
    s_x0 = next(n for n in ep.graph.nodes if n.name == "x").meta["val"].shape[0]
    assert ep.range_constraints[s_x0].lower == 3
    assert "aten.slice.Tensor" in [str(n.target) for n in ep.graph.nodes]
    matches_eager(ep, SliceCatMM(), (torch.randn(3, 2), torch.randn(3, 4),
                                     [torch.randn(1, 2), torch.randn(3, 2)]))
    matches_eager(ep, SliceCatMM(), (torch.randn(9, 1), torch.randn(3, 0),
                                     [torch.randn(0, 1), torch.randn(0, 1)]))
    rejects(ep, (torch.randn(7, 5), torch.randn(6, 6), zs), match=r"y.shape\[0\]: expected 3")
    msg = rejects(ep, (torch.randn(2, 5), y, zs))
    assert "x.shape[0] = 2, but it must be >= 3" in msg


# -- scenario 10 --------------------------------------------------------------------------
class WithState(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.randn(4, 4))

    def forward(self, x, y):
        return x @ self.w + y


def test_scenario_10_state_forces_static():
    x, y = torch.randn(6, 4), torch.randn(6, 4)
    auto = (Dim.AUTO, Dim.AUTO)
    ep = st.export(WithState(), (x, y), dynamic_shapes={"x": auto, "y": auto})
    assert shape_of(ep, "x") == ["s0", "4"]
    assert shape_of(ep, "y") == ["s0", "4"]
    assert ep.dims_report["x.shape[1]"] == "static 4"
    assert ep.dims_report["x.shape[0]"].startswith("dynamic s0")
    m = WithState()
    m.w = ep.state_dict["w"]
    matches_eager(ep, m, (torch.randn(7, 4), torch.randn(7, 4)))
    matches_eager(ep, m, (torch.randn(1, 4), torch.randn(1, 4)))
    msg = rejects(ep, (torch.randn(7, 5), torch.randn(7, 4)))
    assert "x.shape[1] = 5, but the program requires 4" in msg and "self.w" in msg


def test_scenario_10_dynamic_dim_forced_static_is_an_error():
    x, y = torch.randn(6, 4), torch.randn(6, 4)
    dyn = (Dim.DYNAMIC, Dim.DYNAMIC)
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(WithState(), (x, y), dynamic_shapes={"x": dyn, "y": dyn})
    msg = str(info.value)
    assert "x.shape[1]" in msg and "y.shape[1]" in msg and "specialized to 4" in msg


def test_named_dim_pinned_by_a_runtime_condition_is_a_violation():
    """DiT's `h = w = int(x.shape[1] ** 0.5)` stays symbolic (int of an exact float
    expression: issue 14); a condition that leaves several values of a named Dim but no
    range of them is a violation whose fix is Dim.DYNAMIC."""
    s = Dim("s", min=1, max=64)

    def f(x):
        return x.new_zeros(int((x.shape[1] * x.shape[2]) ** 0.5))

    ep = st.export(f, (torch.randn(2, 4, 4),), dynamic_shapes=({1: s, 2: s},))
    for n in (1, 3, 4, 17, 64):
        x = torch.randn(2, n, n)
        assert ep.module()(x).shape == f(x).shape == (n,)
    # a condition that leaves several values but no range of them: Dim.DYNAMIC makes it a
    # run-time check (a named Dim promises that every value in its range works)
    spec = ({1: Dim("t", min=2, max=64)},)
    with pytest.raises(st.ConstraintViolationError, match="no range of t expresses it") as e:
        st.export(lambda x: x.view(-1, 2, x.shape[1] // 2), (torch.randn(3, 8),),
                  dynamic_shapes=spec)
    ep = st.export(lambda x: x.view(-1, 2, x.shape[1] // 2), (torch.randn(3, 8),),
                   dynamic_shapes=st.refine_dynamic_shapes_from_suggested_fixes(e.value, spec))
    x = torch.randn(3, 10)
    torch.testing.assert_close(ep.module()(x), x.view(-1, 2, 5))
