"""Papercuts of issue 24, item 7: each message names what the user wrote and gives a fix."""

from __future__ import annotations

import copy

import pytest
import torch

import safetrace as st


class Add(torch.nn.Module):
    def forward(self, x, y):
        return x + y


def test_an_input_left_out_of_dynamic_shapes_is_named_with_the_shared_dim_fix():
    b = st.Dim("b", min=0, max=64)
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(Add(), (torch.randn(2, 3), torch.randn(2, 3)), dynamic_shapes={"x": {0: b}})
    text = str(info.value)
    assert "dynamic_shapes has no entry for 'y'" in text, text
    assert "y.shape[0] (also 2)" in text, text
    assert "dynamic_shapes['y'] = {0: b}" in text, text
    # the named fix works: the program is dynamic in b for both inputs
    ep = st.export(Add(), (torch.randn(2, 3), torch.randn(2, 3)),
                   dynamic_shapes={"x": {0: b}, "y": {0: b}})
    for n in (0, 1, 5):
        x, y = torch.randn(n, 3), torch.randn(n, 3)
        torch.testing.assert_close(ep.module()(x, y), x + y)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 3), torch.randn(4, 3))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(65, 3), torch.randn(65, 3))


def test_an_omitted_input_without_a_dim_of_that_size_is_not_blamed():
    class M(torch.nn.Module):
        def forward(self, x, y):
            return (x[:3] + torch.ones(3, 3)) * y.sum()  # needs x.shape[0] >= 3 (or 1)

    b = st.Dim("b", min=1, max=64)
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(M(), (torch.randn(3, 3), torch.randn(5, 4)), dynamic_shapes={"x": {0: b}},
                  max_splits=0)  # (by default: a size split, exporter/splits.py)
    assert "no entry" not in str(info.value)


class DataIf(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x - 1


class DataCond(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x * 2, lambda x: x - 1, (x,))


def test_export_error_of_a_data_dependent_if_gives_the_torch_cond_rewrite():
    with pytest.raises(st.DataDependentError) as info:
        st.export(DataIf(), (torch.randn(3, 4),))
    fix = info.value.fix
    assert "return torch.cond(x.sum() > 0, lambda x: x * 2, lambda x: x - 1, (x,))" in fix, fix
    report = st.explain(DataIf(), (torch.randn(3, 4),))
    assert report.problems[0].fix == fix  # explain and export give the same fix
    # the rewrite exports and takes either branch at run time, at other sizes too
    n = st.Dim("n", min=1, max=16)
    ep = st.export(DataCond(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: n}})
    for rows in (1, 2, 7):
        for sign in (1.0, -1.0):
            x = sign * (torch.rand(rows, 4) + 0.1)
            torch.testing.assert_close(ep.module()(x), DataIf()(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 5))


class IntReads(torch.nn.Module):
    def forward(self, x, n):
        k = int(n)
        y = x[:k]
        m = int(n.sum() * 2)
        z = torch.zeros(m)
        if n > 3:
            y = y * 2
        return y, z, float(x.mean())


def test_explain_reports_every_data_read_not_only_the_first():
    report = st.explain(IntReads(), (torch.randn(8, 4), torch.tensor(3)))
    lines = [p.where for p in report.problems]
    assert len(report.problems) == 4, str(report)
    for code in ("k = int(n)", "m = int(n.sum() * 2)", "if n > 3:", "float(x.mean())"):
        assert any(code in w for w in lines), (code, lines)
    assert not report.ok and report.program is None
    with pytest.raises(st.DataDependentError, match="int\\(\\) of a tensor"):
        st.export(IntReads(), (torch.randn(8, 4), torch.tensor(3)))


def test_a_condition_from_a_torch_layer_names_the_layer():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                                torch.nn.ReLU()).train()
    b = st.Dim("b", min=1, max=64)
    # batch 1 in training raises in eager (torch's `if size == 1: raise ValueError`): the
    # program exports, as torch's does, and its input check refuses b = 1 naming the layer
    ep = st.export(model, (torch.randn(2, 3),), dynamic_shapes=({0: b},))
    with pytest.raises(st.InputMismatchError) as info:
        ep.module()(torch.randn(1, 3))
    assert "in layer `1`, BatchNorm1d" in str(info.value), str(info.value)
    report = st.explain(model, (torch.randn(2, 3),), dynamic_shapes=({0: b},))
    assert any("(in layer `1`, BatchNorm1d)" in where for _, where in report.guards), \
        report.guards
    # the user's own line carries no layer note
    ep = st.export(Add(), (torch.randn(2, 3), torch.randn(2, 3)))
    assert all("in layer" not in n.meta.get("stack_trace", "") for n in ep.graph.nodes)
    # the fix it gives works
    ep = st.export(model, (torch.randn(2, 3),), dynamic_shapes=({0: st.Dim("b", min=2,
                                                                             max=64)},))
    for n in (2, 5, 64):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ep.module()(x), copy.deepcopy(model)(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1, 3))


class Rows(torch.nn.Module):
    def forward(self, x):
        return x.reshape(-1, 4) * 2


def test_printed_program_names_the_dims_and_out_of_range_has_a_fix():
    batch = st.Dim("batch", max=64)
    ep = st.export(Rows(), (torch.randn(4, 4),), dynamic_shapes=({0: batch},))
    text = str(ep)
    assert "Range constraints: {s0 (batch): VR[0, 64]}" in text, text
    assert "Expr(" not in text and "Expr(" not in repr(ep.range_constraints)
    assert repr(ep.range_constraints) == "{s0: VR[0, 64]}"
    for n in (0, 1, 64):
        x = torch.randn(n, 4)
        torch.testing.assert_close(ep.module()(x), x * 2)
    with pytest.raises(st.InputMismatchError) as info:
        ep.module()(torch.randn(65, 4))
    assert info.value.fix == ("pass an input whose x.shape[0] is <= 64, or export again with "
                              "a declared range that admits 65 (max=65 in that Dim)")


def test_coprime_modulus_condition_gets_the_derived_dim_fix():
    class ThreeRows(torch.nn.Module):
        def forward(self, x):
            return x.reshape(-1, 4)

    b = st.Dim("b", min=1, max=64)
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(ThreeRows(), (torch.randn(4, 3),), dynamic_shapes=({0: b},))
    text = str(info.value)
    assert "x.shape[0] % 4 == 0" in text and "b = 4*_b" in text, text
    fixed = st.refine_dynamic_shapes_from_suggested_fixes(info.value, ({0: b},))
    ep = st.export(ThreeRows(), (torch.randn(4, 3),), dynamic_shapes=fixed)
    for n in (4, 8, 64):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ep.module()(x), x.reshape(-1, 4))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(6, 3))


def test_the_derived_dim_of_tf_same_padding_pasted_exports_and_matches_eager():
    """The fix of the golden refusal in test_messages.py, pasted as printed: every height
    it admits (multiples of 8 in [8, 64]) runs as eager does; the others are refused."""
    from tests.errors.tf_padding_model import TfSamePadding
    from safetrace import Dim
    _h = Dim('_h', min=1, max=8)
    dynamic_shapes = {'x': (None, None, 8*_h, None)}
    model = TfSamePadding()
    ep = st.export(model, (torch.randn(1, 2, 16, 5),), dynamic_shapes=dynamic_shapes)
    for h in (8, 24, 64):
        x = torch.randn(1, 2, h, 5)
        torch.testing.assert_close(ep.module()(x), model(x))
    for h in (0, 1, 12, 18, 72):  # not a multiple of 8, or outside [8, 64]
        with pytest.raises(st.InputMismatchError):
            ep.module()(torch.randn(1, 2, h, 5))


def test_tf_same_padding_with_one_size_left_gets_the_static_fix_not_a_pinned_derived_dim():
    """Two strides need h % 4 == 0; in [6, 11] only 8 is: the fix is the static size."""
    from tests.errors.tf_padding_model import TfSamePadding
    spec = {"x": {2: st.Dim("h", min=6, max=11)}}
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(TfSamePadding(2), (torch.randn(1, 2, 8, 5),), dynamic_shapes=spec)
    assert "x.shape[2] -> 8" in str(info.value) and "_h" not in str(info.value)
    fixed = st.refine_dynamic_shapes_from_suggested_fixes(info.value, spec)
    ep = st.export(TfSamePadding(2), (torch.randn(1, 2, 8, 5),), dynamic_shapes=fixed)
    x = torch.randn(1, 2, 8, 5)
    torch.testing.assert_close(ep.module()(x), TfSamePadding(2)(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1, 2, 10, 5))


def test_a_static_fix_reaches_a_tuple_spec_and_every_use_of_the_dim():
    """refine_dynamic_shapes_from_suggested_fixes with the error and a positional tuple spec:
    the fix `x.shape[2] -> 8` names the input by its name; the tuple's entry is found by
    position, and the Dim's other use (y) is pinned with it."""
    from tests.errors.tf_padding_model import TfSamePadding

    class Two(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pad = TfSamePadding(2)

        def forward(self, x, y):
            return self.pad(x), y * 2

    h = st.Dim("h", min=6, max=11)
    spec = ({2: h}, {0: h})
    args = (torch.randn(1, 2, 8, 5), torch.randn(8))
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(Two(), args, dynamic_shapes=spec)
    fixed = st.refine_dynamic_shapes_from_suggested_fixes(info.value, spec)
    assert fixed == ({2: 8}, {0: 8})
    ep = st.export(Two(), args, dynamic_shapes=fixed)
    torch.testing.assert_close(ep.module()(*args), Two()(*args))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1, 2, 10, 5), torch.randn(10))


def test_a_fix_by_input_position_reaches_a_tuple_spec():
    """A Dim.DYNAMIC specialized by `view(2, 4)`: its fix names the input (`x.shape[0] ->
    8`); given the error, the tuple spec's first entry is the one fixed."""
    class M(torch.nn.Module):
        def forward(self, x, y):
            return x.view(2, 4), y + 1

    spec = ({0: st.Dim.DYNAMIC}, {0: st.Dim.DYNAMIC})
    args = (torch.randn(8), torch.randn(3))
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(M(), args, dynamic_shapes=spec)
    fixed = st.refine_dynamic_shapes_from_suggested_fixes(info.value, spec)
    assert fixed == ({0: 8}, {0: st.Dim.DYNAMIC})
    ep = st.export(M(), args, dynamic_shapes=fixed)
    for n in (0, 1, 5):
        y = torch.randn(n)
        torch.testing.assert_close(ep.module()(args[0], y), M()(args[0], y))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(9), torch.randn(3))
