"""st.export's errors are instances of the classes torch.export raises in the same situation
(issue 21): code and tests written against torch.export catch them as they are written
(``except torch._dynamo.exc.UserError as e: e.error_type``,
``assertRaisesRegex(ConstraintViolationError, "not in range")``, torch's
``test_export_constraints_error_not_in_range``), while ``except st.ExportError`` and the
catalogue's kinds keep working.  Each case runs torch.export on the same model in the same
test.  Our own cases."""

from __future__ import annotations

import copy
import pickle
import re
import subprocess
import sys

import pytest
import torch
from torch import nn
from torch._dynamo.exc import UserError, UserErrorType
from torch.export import Dim
from torch.fx.experimental.symbolic_shapes import (
    ConstraintViolationError, GuardOnDataDependentSymNode,
)

import safetrace as st
from safetrace import errors as E


class Adds(nn.Module):
    def forward(self, x, y):
        return x + y


class AddsOne(nn.Module):
    def forward(self, x):
        return x + 1


class SizeFromData(nn.Module):
    def forward(self, x):
        n = x.item()
        return torch.zeros(n) if n > 2 else torch.ones(2)


class BranchOnData(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


class Opaque:
    pass


class AtMost32(nn.Module):
    def forward(self, x):
        assert x.shape[0] <= 32
        return x + 2


class ReturnsOpaque(nn.Module):
    def forward(self, x):
        return Opaque()


VIOLATION = (UserError, ConstraintViolationError)
# (case, call, torch's classes, torch's error_type or None, our kind)
CASES = [
    ("relation", lambda f: f(Adds(), (torch.randn(4), torch.randn(4)),
                             dynamic_shapes={"x": {0: Dim("a")}, "y": {0: Dim("b")}}),
     (UserError,), UserErrorType.CONSTRAINT_VIOLATION, E.DeclaredSpaceViolation),
    ("not-in-range", lambda f: f(AddsOne(), (torch.zeros(3),),
                                 dynamic_shapes={"x": {0: Dim("dim_x", min=6)}}),
     (ConstraintViolationError,), None, E.SpecExampleError),
    ("static-size", lambda f: f(AddsOne(), (torch.zeros(3),), dynamic_shapes={"x": {0: 5}}),
     (ConstraintViolationError,), None, E.SpecExampleError),
    ("same-dim-sizes", lambda f: f(Adds(), (torch.randn(4), torch.randn(1)),
                                   dynamic_shapes={"x": {0: Dim("a")}, "y": {0: Dim("a")}}),
     (UserError,), UserErrorType.CONSTRAINT_VIOLATION, E.SpecExampleError),
    ("args-not-tuple", lambda f: f(AddsOne(), torch.randn(3)),
     (UserError,), UserErrorType.INVALID_INPUT, E.ArgsNotTuple),
    ("spec-key", lambda f: f(AddsOne(), (torch.randn(3),), dynamic_shapes={"y": {0: Dim("b")}}),
     (UserError,), UserErrorType.INVALID_INPUT, E.SpecStructureError),
    ("call-arity", lambda f: f(AddsOne(), (torch.randn(3), torch.randn(3))),
     (TypeError,), None, E.CallMismatch),
    ("input-type", lambda f: f(AddsOne(), (Opaque(),)), (ValueError,), None,
     E.UnflattenableInput),
    ("output-type", lambda f: f(ReturnsOpaque(), (torch.randn(3),)), (RuntimeError,), None,
     E.UnflattenableOutput),
    ("data-size", lambda f: f(SizeFromData(), (torch.tensor(3),)),
     (GuardOnDataDependentSymNode,), None, E.DataDependentDecision),
    ("data-branch", lambda f: f(BranchOnData(), (torch.randn(4),)),
     (GuardOnDataDependentSymNode,), None, E.DataRead),
    # torch's test_dim_dynamic_specialization (its static part): a dim hint specialized
    ("hint-made-static", lambda f: f(AtMost32(), (torch.randn(32),),
                                     dynamic_shapes={"x": {0: Dim.DYNAMIC(min=32)}}),
     (ValueError,), None, E.DeclaredSpaceViolation),
    ("named-made-static", lambda f: f(AtMost32(), (torch.randn(32),),
                                      dynamic_shapes={"x": {0: Dim("n", min=32)}}),
     (UserError,), UserErrorType.CONSTRAINT_VIOLATION, E.DeclaredSpaceViolation),
]


@pytest.mark.parametrize("call, theirs, error_type, kind",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_an_export_error_is_also_torch_exports_class(call, theirs, error_type, kind):
    with pytest.raises(theirs) as torch_info:
        call(torch.export.export)
    with pytest.raises(theirs) as info:
        call(st.export)
    err = info.value
    assert isinstance(err, kind) and isinstance(err, st.ExportError)
    assert type(err).__name__ == kind.__name__ and err.kind == kind.kind
    if error_type is not None:
        assert torch_info.value.error_type is error_type
        assert err.error_type is error_type and err.msg == str(err)
    if kind is E.DeclaredSpaceViolation:  # (a ValueError only where torch's is one)
        assert isinstance(err, ValueError) == (theirs == (ValueError,))
    assert err.cause and f"See docs/errors.md#{kind.kind}" in str(err)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err) and str(back) == str(err) and back.where == err.where
    assert copy.copy(err).args == err.args


def test_torch_words_are_matched_as_torch_tests_match_them():
    """torch's test_export_constraints_error_not_in_range (non-strict: the symbolic-shapes
    class, strict: UserError) and its data-dependent phrase."""
    for cls in (ConstraintViolationError, UserError):
        with pytest.raises(cls, match="not in range"):
            st.export(AddsOne(), (torch.zeros([3]),),
                      dynamic_shapes={"x": {0: Dim("dim_x", min=6)}})
    with pytest.raises(RuntimeError, match="Could not guard on data-dependent expression"):
        st.export(SizeFromData(), (torch.tensor(3),))
    with pytest.raises(GuardOnDataDependentSymNode) as info:
        st.export(SizeFromData(), (torch.tensor(3),))
    assert info.value.cond == "u0 >= 3"  # (our text of it: torch's is a sympy expression)


def test_the_catalogue_classes_still_catch_and_others_are_unchanged():
    """``except st.ConstraintViolationError`` catches the relation; a refused op keeps
    eager's class alone (torch's is a plain RuntimeError too); the classes are made once."""
    seen = []
    for _ in range(2):
        try:
            st.export(Adds(), (torch.randn(4), torch.randn(4)),
                      dynamic_shapes={"x": {0: Dim("a")}, "y": {0: Dim("b")}})
        except st.ConstraintViolationError as e:
            seen.append(type(e))
    assert len(seen) == 2 and seen[0] is seen[1] and issubclass(seen[0], VIOLATION)
    with pytest.raises(RuntimeError) as info:
        st.export(nn.Linear(3, 4), (torch.randn(2, 5),))
    assert not isinstance(info.value, UserError)
    with pytest.raises(RuntimeError):
        torch.export.export(nn.Linear(3, 4), (torch.randn(2, 5),))


class Bounded(nn.Module):
    def forward(self, x, y):
        assert x.shape[0] <= 32
        assert y.shape[0] >= 128
        return x + 2, y + 2


def test_every_dim_hint_range_conflict_is_listed_in_one_value_error_as_torchs():
    """torch's test_dim_hint_range_violations: every conflicting range at once (a
    ValueError, not a constraint violation); a conflict-free spec still exports."""
    spec = {"x": (Dim.DYNAMIC(min=33),), "y": (Dim.DYNAMIC(max=127),)}
    for export in (torch.export.export, st.export):
        with pytest.raises(ValueError, match="Found the following conflicts") as info:
            export(Bounded(), (torch.randn(16), torch.randn(256)), dynamic_shapes=spec)
        assert not isinstance(info.value, (UserError, ConstraintViolationError))
        text = str(info.value)
        assert "range of [33, None]" in text and "inputs['x'].shape[0]" in text
        assert "range of [None, 127]" in text and "inputs['y'].shape[0]" in text
    assert "x.shape[0]: min=16; y.shape[0]: max=256" in info.value.fix
    fixed = {"x": (Dim.DYNAMIC(min=16, max=32),), "y": (Dim.DYNAMIC(min=128),)}
    ep = st.export(Bounded(), (torch.randn(16), torch.randn(256)), dynamic_shapes=fixed)
    x, y = torch.randn(20), torch.randn(300)
    torch.testing.assert_close(ep.module()(x, y), Bounded()(x, y))


def _inferred(text: str) -> dict:
    """torch's lines ``... inferred min/max range of [lo, hi], for inputs['x'].shape[0]``."""
    return {m[2]: (m[0], m[1]) for m in re.findall(
        r"inferred min/max range of \[(\w+), (\w+)\](?: \(the example\))?, for "
        r"(inputs\['\w+'\]\.shape\[\d+\])", text)}


def test_a_dim_hint_conflict_names_the_range_the_traced_program_infers():
    """As torch's, the range each conflicting dim has after the trace (not the example's
    size): the same upper bounds; the lower bound where torch's program specializes sizes
    0 and 1 away (torch: 2) is ours 0, where the program runs them."""
    spec = {"x": (Dim.DYNAMIC(min=33),), "y": (Dim.AUTO(max=127),)}
    got = {}
    for export in (torch.export.export, st.export):
        with pytest.raises(ValueError) as info:
            export(Bounded(), (torch.randn(16), torch.randn(256)), dynamic_shapes=spec)
        got[export] = _inferred(str(info.value))
    theirs, ours = got[torch.export.export], got[st.export]
    assert theirs == {"inputs['x'].shape[0]": ("2", "32"),
                      "inputs['y'].shape[0]": ("128", "int_oo")}
    assert ours == dict(theirs, **{"inputs['x'].shape[0]": ("0", "32")})
    assert "(the traced program works for [0, 32] there)" in str(info.value)
    ep = st.export(Bounded(), (torch.randn(16), torch.randn(256)),
                   dynamic_shapes={"x": (Dim.DYNAMIC(max=32),), "y": (Dim.AUTO(min=128),)})
    for n in (0, 1, 32):
        x, y = torch.randn(n), torch.randn(128)
        torch.testing.assert_close(ep.module()(x, y), Bounded()(x, y))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(33), torch.randn(128))


class ViewsInTwo(nn.Module):
    def forward(self, x):
        return x.view(2, 2) + 1


def test_a_dim_hint_conflict_on_a_dim_the_trace_makes_static_or_a_trace_that_fails():
    """The trace pins the dim: its inferred range is the example's size, as torch's; a
    trace that stops (here: a branch on data) still reports the conflict, the example's size."""
    spec = ((Dim.AUTO(max=3),),)
    for export in (torch.export.export, st.export):
        with pytest.raises(ValueError) as info:
            export(ViewsInTwo(), (torch.randn(4),), dynamic_shapes=spec)
        assert _inferred(str(info.value)) == {"inputs['x'].shape[0]": ("4", "4")}
    with pytest.raises(E.SpecExampleError, match=r"\[4, 4\] \(the example\)"):
        st.export(lambda x: x + 1 if x.sum() > 0 else x, (torch.randn(4),), dynamic_shapes=spec)


def test_the_program_own_except_never_sees_torch_classes():
    """Inside the trace our refusal is our class alone: a program catching torch's class
    around a data read does not take its except side (the export is refused, naming it)."""
    class Catches(nn.Module):
        def forward(self, x):
            try:
                if x.sum() > 0:
                    return x + 1
            except GuardOnDataDependentSymNode:
                return x * 0
            return x - 1

    with pytest.raises(st.DataDependentError):
        st.export(Catches(), (torch.randn(3),))


@pytest.mark.slow
def test_except_clause_catches_it_in_a_process_that_never_imported_dynamo():
    """The ``except`` names torch._dynamo after the error was raised: the class is there
    whether or not the process had imported torch._dynamo before."""
    code = ("import sys, torch, safetrace as st\n"
            "assert 'torch._dynamo' not in sys.modules\n"
            "try:\n"
            "    st.export(lambda x: x + 1, torch.randn(3))\n"
            "except torch._dynamo.exc.UserError as e:\n"
            "    print('caught', e.error_type.name)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "caught INVALID_INPUT", out.stderr


class IntTimesTwo(nn.Module):
    def forward(self, x, ys):
        return x * 2 + ys["a"].sum()


def test_a_wrong_dtype_after_to_torch_names_the_input_and_its_dtype():
    """A program exported with an int32 example refuses int64: ``ep.module()`` with
    WrongDtype, ``ep.to_torch().module()`` with torch's own guard message naming the input
    (not the graph's bare "Tensor dtype mismatch").  torch.export's program checks no
    dtype: it runs int64 through the int32 program."""
    args = (torch.arange(6, dtype=torch.int32).reshape(2, 3), {"a": torch.randn(4)})
    ep = st.export(IntTimesTwo(), args)
    converted = ep.to_torch().module()
    torch.testing.assert_close(converted(*args), IntTimesTwo()(*args))
    wrong = [((args[0].long(), args[1]), "x.dtype == torch.int32"),
             ((args[0], {"a": torch.randn(4).double()}), "ys['a'].dtype == torch.float32")]
    for bad, guard in wrong:
        with pytest.raises(E.WrongDtype, match="expected dtype"):
            ep.module()(*bad)
        with pytest.raises(AssertionError, match=re.escape(f"Guard failed: {guard}")):
            converted(*bad)
    torch.export.export(IntTimesTwo(), args).module()(*wrong[0][0])  # (accepted by torch's)
