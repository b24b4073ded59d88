"""SPEC scenarios 1-6: constants, containers, dataclasses, shapes, cat, branches on shapes."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import safetrace as st
from tests.helpers import constants_in_graph, matches_eager, placeholders, rejects, targets


# -- scenario 1: a constant input is specialized and folded -------------------------------
class AddConst(torch.nn.Module):
    def forward(self, x, a):
        b = a + 7
        return x + b


def test_scenario_1_constant_folded():
    x = torch.randn(3, 4)
    ep = st.export(AddConst(), (x, 3))
    assert placeholders(ep) == ["x", "a"]
    assert targets(ep) == ["aten.add.Tensor"]
    assert constants_in_graph(ep) == [10]
    matches_eager(ep, AddConst(), (torch.randn(3, 4), 3))
    msg = rejects(ep, (torch.randn(3, 4), 4), match="a: expected 3, got 4")
    assert "specialized" in msg
    rejects(ep, (torch.randn(3, 4), 3.0))  # a float is not the int 3 it was exported with


# -- scenario 2: containers are flattened, their structure is specialized ---------------
class Lists(torch.nn.Module):
    def forward(self, xs, cs):
        return xs[0] + xs[1] + sum(cs)


def test_scenario_2_lists_flattened():
    xs = [torch.randn(2, 2), torch.randn(2, 2)]
    ep = st.export(Lists(), (xs, [3, 4, 5]))
    assert placeholders(ep) == ["xs_0", "xs_1", "cs_0", "cs_1", "cs_2"]
    assert 12 in constants_in_graph(ep)
    matches_eager(ep, Lists(), ([torch.randn(2, 2), torch.randn(2, 2)], [3, 4, 5]))
    rejects(ep, ([torch.randn(2, 2)] * 3, [3, 4, 5]), match="structure")
    rejects(ep, ([torch.randn(2, 2), torch.randn(2, 2)], [3, 4, 6]), match=r"cs\[2\]")


# -- scenario 3: a dataclass input needs one registration --------------------------------
@dataclasses.dataclass
class Data:
    xs: list
    cs: list


class UsesData(torch.nn.Module):
    def forward(self, d):
        return d.xs[0] + d.xs[1] + sum(d.cs)


def test_scenario_3_dataclass_needs_registration():
    @dataclasses.dataclass
    class Unregistered:
        xs: list
        cs: list

    d = Unregistered([torch.randn(2, 2), torch.randn(2, 2)], [3, 4, 5])
    with pytest.raises(st.UnsupportedInputError) as info:
        st.export(UsesData(), (d,))
    msg = str(info.value)
    assert "Unregistered" in msg and "input d " in msg
    assert "st.register_dataclass(Unregistered)" in msg

    st.register_dataclass(Data)
    d = Data([torch.randn(2, 2), torch.randn(2, 2)], [3, 4, 5])
    ep = st.export(UsesData(), (d,))
    assert placeholders(ep) == ["d_xs_0", "d_xs_1", "d_cs_0", "d_cs_1", "d_cs_2"]
    assert 12 in constants_in_graph(ep)
    matches_eager(ep, UsesData(), (Data([torch.randn(2, 2), torch.randn(2, 2)], [3, 4, 5]),))
    rejects(ep, (Data([torch.randn(2, 3), torch.randn(2, 2)], [3, 4, 5]),),
            match=r"d.xs\[0\].shape\[1\]: expected 2, got 3")


# -- scenario 4: shapes are specialized; print_readable shows shapes and source lines -----
class SumOfShapes(torch.nn.Module):
    def forward(self, xs, ys):
        n = sum(y.shape[0] for y in ys)
        return xs[0] + xs[1] + n


def test_scenario_4_shapes_specialized_and_printed():
    ys = [torch.randn(3), torch.randn(4), torch.randn(5)]
    xs = [torch.randn(2, 2), torch.randn(2, 2)]
    ep = st.export(SumOfShapes(), (xs, ys))
    assert 12 in constants_in_graph(ep)
    text = ep.graph_module.print_readable(print_output=False)
    assert 'ys_0: "f32[3]"' in text and 'ys_1: "f32[4]"' in text and 'ys_2: "f32[5]"' in text
    assert "test_scenarios_static.py" in text and "return xs[0] + xs[1] + n" in text
    for node in ep.graph.nodes:
        assert "val" in node.meta or node.op == "output"
        if node.op == "call_function":
            assert "test_scenarios_static.py" in node.meta["stack_trace"]
    matches_eager(ep, SumOfShapes(), ([torch.randn(2, 2), torch.randn(2, 2)],
                                      [torch.randn(3), torch.randn(4), torch.randn(5)]))
    rejects(ep, (xs, [torch.randn(3), torch.randn(4), torch.randn(6)]),
            match=r"ys\[2\].shape\[0\]: expected 5, got 6")


# -- scenario 5: shapes propagate through cat ------------------------------------------------
class CatShape(torch.nn.Module):
    def forward(self, xs, ys):
        z = torch.cat(ys)
        return xs[0] + xs[1] + z.shape[0]


def test_scenario_5_shape_through_cat():
    ys = [torch.randn(3), torch.randn(4), torch.randn(5)]
    xs = [torch.randn(2, 2), torch.randn(2, 2)]
    ep = st.export(CatShape(), (xs, ys))
    assert "aten.cat.default" in targets(ep)
    cat = next(n for n in ep.graph.nodes if str(n.target) == "aten.cat.default")
    assert tuple(cat.meta["val"].shape) == (12,)
    assert 12 in constants_in_graph(ep)
    matches_eager(ep, CatShape(), ([torch.randn(2, 2), torch.randn(2, 2)],
                                   [torch.randn(3), torch.randn(4), torch.randn(5)]))


# -- scenario 6: a branch on a shape is decided by the example ------------------------------
class Branch(torch.nn.Module):
    def forward(self, xs, ys):
        z = torch.cat(ys)
        if z.shape[0] > 20:
            return xs[0] * z.sum()
        else:
            return xs[1] - z.mean()


@pytest.mark.parametrize("sizes,taken,absent", [
    ((3, 4, 5), "aten.sub.Tensor", "aten.mul.Tensor"),
    ((6, 7, 8), "aten.mul.Tensor", "aten.sub.Tensor"),
])
def test_scenario_6_branch_on_shape(sizes, taken, absent):
    ys = [torch.randn(s) for s in sizes]
    xs = [torch.randn(2, 2), torch.randn(2, 2)]
    ep = st.export(Branch(), (xs, ys))
    assert taken in targets(ep) and absent not in targets(ep)
    text = ep.graph_module.print_readable(print_output=False)
    line = "return xs[0] * z.sum()" if sizes[0] == 6 else "return xs[1] - z.mean()"
    assert line in text
    matches_eager(ep, Branch(), ([torch.randn(2, 2), torch.randn(2, 2)],
                                 [torch.randn(s) for s in sizes]))
    other = (1, 1, 1) if sizes[0] == 6 else (9, 9, 9)
    rejects(ep, (xs, [torch.randn(s) for s in other]))
