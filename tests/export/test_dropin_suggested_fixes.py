"""Suggested fixes name only the Dims they change or add, as torch.export's (issue 21): a
root Dim kept as declared is not restated (torch's test_derived_dim_out_of_order_simplified
asserts ``"_dimz = Dim(" not in`` the message), neither in torch's ``Suggested fixes:``
lines nor in our paste-ready ``dynamic_shapes`` (which writes a kept Dim where it is used,
``Dim('_dimz', min=6, max=8) - 2``, so that it runs as pasted).  Each case runs torch.export on the same
model in the same test.  Our own cases."""

from __future__ import annotations

import re
import textwrap

import pytest
import torch
from torch import nn
from torch._dynamo.exc import UserError
from torch.export import Dim, dims
from torch.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes

import safetrace as st

from tests.export.dropin_check import check_program


class AddsShifted(nn.Module):
    def forward(self, x, y, z):
        return x + y[1:] + z[2:]


def test_an_unchanged_root_dim_is_not_restated():
    """torch's test_derived_dim_out_of_order_simplified, through both exporters."""
    _dimz = Dim("_dimz", min=6, max=8)
    dimy = _dimz - 1
    dimx = dimy - 1
    dimz = Dim("dimz", min=6, max=8)  # should be _dimz
    args = (torch.randn(5), torch.randn(6), torch.randn(7))
    for export in (torch.export.export, st.export):
        with pytest.raises(UserError) as info:
            export(AddsShifted(), args, dynamic_shapes=({0: dimx}, {0: dimy}, {0: dimz}))
        text = info.value.args[0]
        assert re.search(r"Constraints violated \(dimz\)!(.*\n)*.*The values of dimz.*must "
                         r"always be related to the values of _dimz - 2.*by.*(.*\n)*.*"
                         r"Suggested fixes:(.*\n)*.*dimz = _dimz", text)
        for restated in ("_dimz - 2 = Dim(", "_dimz - 1 = _dimz - 1", "_dimz = Dim("):
            assert restated not in text
    pasted: dict = {}
    exec(textwrap.dedent(info.value.fix), pasted)  # (it runs whatever the variables are called)
    assert "Dim('_dimz', min=6, max=8) - 2" in info.value.fix
    spec = ({0: dimx}, {0: dimy}, {0: dimz})
    ref = torch.export.export(AddsShifted(), args, dynamic_shapes=(
        refine_dynamic_shapes_from_suggested_fixes(info.value.msg, spec)))
    st.export(AddsShifted(), args, dynamic_shapes=pasted["dynamic_shapes"])
    # (our function, given torch's Dims: the same fix)
    fixed = st.refine_dynamic_shapes_from_suggested_fixes(info.value, spec)
    assert fixed[2][0].name == "_dimz" and fixed[:2] == spec[:2]
    ep = st.export(AddsShifted(), args, dynamic_shapes=fixed)
    inside = [(torch.randn(n), torch.randn(n + 1), torch.randn(n + 2)) for n in (4, 5, 6)]
    outside = [(torch.randn(6), torch.randn(7), torch.randn(5)),
               (torch.randn(3), torch.randn(4), torch.randn(5))]
    check_program(ep, AddsShifted(), inside, outside, ref=ref)


class MatmulOrAdd(nn.Module):
    def forward(self, x, y):
        if x.shape[0] < 16 and y.shape[1] % 3 == 0:
            return torch.matmul(x, y)
        return x + y


def test_only_changed_and_new_dims_are_defined():
    """A narrowed Dim and a new root are defined; the Dims kept (M, N) are only used."""
    batch, M, K, N = dims("batch", "M", "K", "N")
    spec = {"x": (batch, M, K), "y": (batch, K, N)}
    args = (torch.randn(10, 2, 3), torch.randn(10, 3, 4))
    for export in (torch.export.export, st.export):
        with pytest.raises(UserError) as info:
            export(MatmulOrAdd(), args, dynamic_shapes=spec)
        torch_form = info.value.msg.split("Suggested fixes:")[1]
        assert "batch = Dim('batch', max=15)" in torch_form and "K = 3*" in torch_form
        assert "M = Dim(" not in info.value.msg and "N = Dim(" not in info.value.msg
    assert "batch = Dim('batch', max=15)" in info.value.fix and "_K = Dim(" in info.value.fix
    ep = st.export(MatmulOrAdd(), args,
                   dynamic_shapes=st.refine_dynamic_shapes_from_suggested_fixes(info.value, spec))
    check_program(ep, MatmulOrAdd(), [(torch.randn(b, m, 3 * k), torch.randn(b, 3 * k, n))
                                      for b, m, k, n in ((1, 2, 1, 4), (15, 1, 2, 3))],
                  [(torch.randn(16, 2, 3), torch.randn(16, 3, 4))])


class EvenOrSlice(nn.Module):
    def forward(self, x, y):
        return x.view(2, -1), y + x[: y.shape[0]].sum()


def test_a_run_time_check_fix_is_not_shown_as_the_declared_dim_in_torch_form():
    """The fix is Dim.DYNAMIC of the declared range (a run-time check), which torch's
    syntax cannot say: no ``a = Dim('a', min=2, max=64)`` line restating the Dim."""
    spec = {"x": (Dim("a", min=2, max=64),), "y": (Dim("b", max=64),)}
    args = (torch.randn(8), torch.randn(3))
    with pytest.raises(UserError):
        torch.export.export(EvenOrSlice(), args, dynamic_shapes=spec)
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(EvenOrSlice(), args, dynamic_shapes=spec)
    assert "a = Dim('a'" not in str(info.value) and "b = Dim(" not in str(info.value)
    fixed = st.refine_dynamic_shapes_from_suggested_fixes(info.value, spec)
    ep = st.export(EvenOrSlice(), args, dynamic_shapes=fixed)
    check_program(ep, EvenOrSlice(), [(torch.randn(n), torch.randn(m))
                                      for n, m in ((2, 0), (4, 4), (64, 9))],
                  [(torch.randn(5), torch.randn(2)), (torch.randn(66), torch.randn(5))])


class BoundsAndMultiples(nn.Module):
    def forward(self, y, x):
        if y.shape[0] < 10 and x.shape[0] < 8 and x.shape[1] % 2 == 0 and y.shape[1] % 3 == 0:
            return x.sum() + y.sum()
        return x.sum()


def _torch_lines(exc: Exception) -> list[str]:
    return [x.strip() for x in exc.msg.split("Suggested fixes:")[1].strip().splitlines()]


def _both_refuse(model_cls, args: tuple, spec: tuple) -> tuple[Exception, Exception]:
    """(torch.export's UserError, ours) for one model, args and spec."""
    with pytest.raises(UserError) as theirs:
        torch.export.export(model_cls(), args, dynamic_shapes=spec)
    with pytest.raises(UserError) as ours:
        st.export(model_cls(), args, dynamic_shapes=spec)
    return theirs.value, ours.value


def test_new_roots_are_named_and_ordered_as_torchs():
    """A new root is torch's ``_q`` (``q = 3*_q``), and the lines come in torch's order:
    the ``Dim(...)`` lines first, then ``name = expr``, each by the Dim's first input
    (``x`` before ``y``: torch sorts its sources by name), a new root after the other Dims.
    One difference, by design: torch writes ``min=1, max=oo`` for ``_q`` (torch assumes a
    size of at least 2 where no guard bounds it); our declared space keeps 0, so ``_q`` is
    bounded by nothing and written ``Dim('_q')``."""
    spec = ((Dim("p"), Dim("q")), (Dim("r"), Dim("s")))
    args = (torch.randn(6, 6), torch.randn(5, 4))
    theirs, ours = _both_refuse(BoundsAndMultiples, args, spec)
    expected = [re.sub(r", min=1, max=oo\)$", ")", x) for x in _torch_lines(theirs)]
    assert _torch_lines(ours) == expected == [
        "r = Dim('r', max=7)", "p = Dim('p', max=9)", "_s = Dim('_s')", "_q = Dim('_q')",
        "s = 2*_s", "q = 3*_q"]
    ep = st.export(BoundsAndMultiples(), args,
                   dynamic_shapes=refine_dynamic_shapes_from_suggested_fixes(ours.msg, spec))
    check_program(ep, BoundsAndMultiples(), [(torch.randn(9, 3), torch.randn(7, 2)),
                                             (torch.randn(0, 0), torch.randn(1, 0))],
                  [(torch.randn(10, 3), torch.randn(7, 2)), (torch.randn(9, 3), torch.randn(7, 3))])


class ReshapeByThreeBounded(nn.Module):
    def forward(self, x):
        if x.shape[0] >= 9:
            return x.reshape([-1, 3])
        return x * 2


def test_a_bounded_new_root_is_torchs_line_for_line():
    spec = ((Dim("dx", min=4, max=100),),)
    args = (torch.randn(15),)
    theirs, ours = _both_refuse(ReshapeByThreeBounded, args, spec)
    assert _torch_lines(ours) == _torch_lines(theirs) == [
        "_dx = Dim('_dx', min=3, max=33)", "dx = 3*_dx"]


def test_a_new_root_avoids_the_users_names():
    """The user already has a Dim ``_dx``: the new root of ``dx`` is ``__dx``."""
    spec = ((Dim("dx", min=4, max=100),), (Dim("_dx"),))

    class Two(nn.Module):
        def forward(self, x, y):
            return ReshapeByThreeBounded()(x), y * 2

    with pytest.raises(UserError) as ours:
        st.export(Two(), (torch.randn(15), torch.randn(3)), dynamic_shapes=spec)
    assert _torch_lines(ours.value) == ["__dx = Dim('__dx', min=3, max=33)", "dx = 3*__dx"]


class ShiftedMultiples(nn.Module):
    def forward(self, x, y, z):
        if 5 <= x.shape[0] <= 36 and y.shape[0] % 3 == 0:
            return x + y[1:] + z[3:]
        return x * 0


def test_related_dims_with_a_residue_class_share_one_new_root():
    """torch's test_suggested_fixes_new_roots: two relations (``dy = dx + 1``,
    ``dz = dx + 3``), a range and ``dy % 3 == 0`` make one family derived from a new root
    ``_dx`` (it suggested ``y.shape[0] -> 12``, a static size, before).  One difference:
    ours bounds ``_dx`` below too (``min=2``: dx = 3*_dx - 1 >= 5), which torch's own
    test then writes by hand."""
    args = (torch.randn(11), torch.randn(12), torch.randn(14))
    spec = {"x": (Dim("dx"),), "y": (Dim("dy"),), "z": (Dim("dz"),)}
    found = {}
    for export in (torch.export.export, st.export):
        with pytest.raises(UserError) as info:
            export(ShiftedMultiples(), args, dynamic_shapes=spec)
        found[export] = info.value
    theirs, ours = found[torch.export.export], found[st.export]
    assert _torch_lines(theirs) == ["_dx = Dim('_dx', max=12)", "dx = 3*_dx - 1",
                                    "dy = 3*_dx", "dz = 3*_dx + 2"]
    assert _torch_lines(ours) == ["_dx = Dim('_dx', min=2, max=12)"] + _torch_lines(theirs)[1:]
    assert "(12,)" not in ours.fix and "_dx = Dim('_dx', min=2, max=12)" in ours.fix
    pasted: dict = {}
    exec(textwrap.dedent(ours.fix), pasted)
    inside = [(torch.randn(3 * q - 1), torch.randn(3 * q), torch.randn(3 * q + 2))
              for q in (2, 7, 12)]
    outside = [(torch.randn(2), torch.randn(3), torch.randn(5)),
               (torch.randn(38), torch.randn(39), torch.randn(41)),
               (torch.randn(5), torch.randn(6), torch.randn(9))]
    # (torch's own lines do not export as they are: "Expected derived min value of
    # 3*_dx - 1 to be >= 0"; ours, read by torch's function, do)
    with pytest.raises(AssertionError, match="derived min value"):
        torch.export.export(ShiftedMultiples(), args, dynamic_shapes=(
            refine_dynamic_shapes_from_suggested_fixes(theirs.msg, spec)))
    ref = torch.export.export(ShiftedMultiples(), args, dynamic_shapes=(
        refine_dynamic_shapes_from_suggested_fixes(ours.msg, spec)))
    for fixed in (pasted["dynamic_shapes"],
                  refine_dynamic_shapes_from_suggested_fixes(ours.msg, spec),
                  st.refine_dynamic_shapes_from_suggested_fixes(ours, spec)):
        ep = st.export(ShiftedMultiples(), args, dynamic_shapes=fixed)
        check_program(ep, ShiftedMultiples(), inside, outside, ref=ref)


class MultipleOfFourFromSix(nn.Module):
    def forward(self, x):
        if x.shape[0] >= 6 and x.shape[0] % 4 == 0:
            return x.reshape(4, -1)
        return x.reshape(1, -1)


def test_a_residue_class_with_a_lower_bound_is_a_derived_dim():
    """``6 <= s and s % 4 == 0``: ``s = 4*_s`` with ``_s >= 2``, as torch suggests (not a
    static size: the condition holds for more than the example)."""
    spec = ((Dim("s", max=100),),)
    args = (torch.randn(8),)
    theirs, ours = _both_refuse(MultipleOfFourFromSix, args, spec)
    assert "s = 4*_s" in _torch_lines(theirs)
    assert _torch_lines(ours)[-1] == "s = 4*_s"
    ep = st.export(MultipleOfFourFromSix(), args, dynamic_shapes=(
        st.refine_dynamic_shapes_from_suggested_fixes(ours, spec)))
    check_program(ep, MultipleOfFourFromSix(), [(torch.randn(n),) for n in (8, 12, 100)],
                  [(torch.randn(4),), (torch.randn(10),), (torch.randn(104),)])


class PairsAfterTwo(nn.Module):
    def forward(self, x, y):
        return x.reshape(-1, 2) + y[2:].reshape(-1, 2)


def test_a_residue_class_read_on_the_example_side_of_a_clamp():
    """``(dy + min(dy, 2)) % 2 == 0`` (``y[2:]`` reshaped by 2): ``dy = 2*_dy``, as
    torch's (it suggested ``dy = 8``, claiming no other size works, before: a relation to
    dx at dx's example size had pinned it).  torch writes its default bounds
    (``min=1, max=oo``), ours none."""
    spec = ((Dim("dx"),), (Dim("dy"),))
    args = (torch.randn(6), torch.randn(8))
    theirs, ours = _both_refuse(PairsAfterTwo, args, spec)
    expected = [re.sub(r", (min=1|max=oo)", "", x) for x in _torch_lines(theirs)]
    assert _torch_lines(ours) == expected == [
        "_dx = Dim('_dx')", "_dy = Dim('_dy')", "dx = 2*_dx", "dy = 2*_dy"]
    assert "-> 8" not in str(ours) and "alone" not in str(ours)
