"""What an export that splits a Dim.AUTO / DYNAMIC dim at 0 and 1 (exporter/auto_small.py)
reports, and what it does when that second export fails.

- A refusal of the second export (a catalogue ExportError) keeps the first program, its
  check refusing those sizes, and the refusal is shown by st.explain.
- Any other exception, or an internal error of safetrace's own code, is raised: a bug is
  never hidden behind the narrower program (it was caught with every Exception).
- st.explain reports the program st.export returns: its splits, its dims, and the first
  trace's `s0 != 1` guard marked as split (it listed the guard as relied on, and no split).

The failures are injected where the second export runs (its named Dims), the only way to
reach them through the public API while the split machinery has no such bug."""

import functools

import pytest
import torch

import safetrace as st
from safetrace import errors as E
from safetrace.exporter import api
from tests.export.test_auto_small_sizes import AboveOne, BranchOnOne, SqueezedMask

AUTO = st.Dim.AUTO


def _failing_second_export(monkeypatch, error):
    """The export again with named Dims (auto_small's) raises `error()`; the first runs."""
    real = api.checked_below_two

    def checked(export, deferred):
        inner = export.func if isinstance(export, functools.partial) else None
        if inner is not None and export.keywords.get("named"):
            raise error()
        return real(export, deferred)

    monkeypatch.setattr(api, "checked_below_two", checked)


def test_a_raw_exception_of_the_second_export_is_raised(monkeypatch):
    _failing_second_export(monkeypatch, lambda: KeyError("a bug"))
    with pytest.raises(KeyError, match="a bug"):
        st.export(BranchOnOne(), (torch.randn(2, 3),), dynamic_shapes=({0: AUTO},))


def test_an_internal_error_of_the_second_export_is_raised(monkeypatch):
    _failing_second_export(monkeypatch, lambda: E.internal_error("a bug"))
    with pytest.raises(st.ExportError, match="internal error: a bug"):
        st.export(BranchOnOne(), (torch.randn(2, 3),), dynamic_shapes=({0: AUTO},))


def test_a_refused_second_export_keeps_the_check_and_says_why(monkeypatch):
    _failing_second_export(monkeypatch, lambda: E.contradictory_sizes("s0 == 1 and s0 == 2"))
    ep = st.export(BranchOnOne(), (torch.randn(2, 3),), dynamic_shapes=({0: AUTO},))
    ours = ep.module()
    for n in (0, 2, 3, 5):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ours(x), BranchOnOne()(x))
    for x in (torch.randn(1, 3), torch.randn(2, 4)):
        with pytest.raises(st.InputMismatchError):
            ours(x)
    assert ep.auto_split_refusals == [
        "x.shape[0] from 0: not split (ContradictorySizes: "
        + str(E.contradictory_sizes("s0 == 1 and s0 == 2")).splitlines()[0] + ")"]
    text = str(st.explain(BranchOnOne(), (torch.randn(2, 3),), dynamic_shapes=({0: AUTO},)))
    assert "Dim.AUTO / DYNAMIC sizes 0 and 1 of x.shape[0] from 0: not split " \
           "(ContradictorySizes" in text
    assert "  s0 != 1  at " in text  # (still relied on: the program checks it)


@pytest.mark.parametrize("hint", [st.Dim.AUTO, st.Dim.DYNAMIC])
def test_explain_reports_the_split_program(hint):
    args = (torch.randn(2, 3),)
    report = st.explain(BranchOnOne(), args, dynamic_shapes=({0: hint},))
    text = str(report)
    assert report.ok
    assert "size split on `x_shape_0 >= 2` (from `if x.shape[0] != 1:`" in text
    assert "x_shape_0 == 1: its own graph" in text
    assert report.guards == []
    assert [c for c, _ in report.split_guards] == ["s0 != 1"]
    assert "  s0 != 1 [split]  at " in text
    ep = report.program
    assert not ep.contract.conditions
    for n in (0, 1, 2, 3, 5):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ep.module()(x), BranchOnOne()(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 4))
    assert "size split on `x_shape_0 >= 2`" in str(ep)  # (print(ep): the same lines)


def test_explain_of_a_raised_range_reports_the_split():
    report = st.explain(AboveOne(), (torch.randn(2, 3),), dynamic_shapes=({0: AUTO},))
    assert "0 <= x_shape_0 <= 1: its own graph" in str(report)
    assert [c for c, _ in report.split_guards] == ["s0 >= 2"]
    assert report.dims == {"x.shape[0]": "dynamic s0 where s0 = x.shape[0]"}


def test_explain_keeps_a_guard_the_split_program_still_needs():
    class Mixed(torch.nn.Module):  # (a branch at batch 1, and a condition kept as a check)
        def forward(self, x):
            y = x.reshape(x.shape[0], 2, -1).sum(1)  # (eager raises at an odd width)
            if x.shape[0] != 1:
                return y * 2
            return y + 1

    report = st.explain(Mixed(), (torch.randn(2, 4),), dynamic_shapes=({0: AUTO, 1: AUTO},))
    assert [c for c, _ in report.split_guards] == ["s0 != 1"]
    assert [c for c, _ in report.guards] == ["s0 != 0", "s1 % 2 == 0"]  # (eager raises)
    ep = report.program
    for b, n in [(1, 4), (2, 6), (3, 2), (5, 4), (1, 2)]:
        x = torch.randn(b, n)
        torch.testing.assert_close(ep.module()(x), Mixed()(x))
    for x in (torch.randn(2, 3), torch.randn(1, 5), torch.randn(0, 4)):
        with pytest.raises(st.InputMismatchError):
            ep.module()(x)


def test_explain_of_two_tied_masks():
    args = (torch.randn(2, 3), torch.randn(2, 1, 3))
    report = st.explain(SqueezedMask(), args, dynamic_shapes=({0: AUTO}, {0: AUTO}))
    assert report.ok and [c for c, _ in report.split_guards] == ["s1 != 1"]  # (mask's)
    assert "x_shape_0 == 1: its own graph" in str(report)


class PastThree(torch.nn.Module):  # (vits: `max(t - 3, 0) >= 1`, a condition, no range)
    def forward(self, x):
        if max(x.shape[0] - 3, 0) >= 1:
            return x * 2
        return x + 1


def test_a_condition_failing_below_some_size_is_still_split():
    ep = st.export(PastThree(), (torch.randn(5, 3),), dynamic_shapes=({0: AUTO},))
    ours = ep.module()
    for n in (0, 1, 2, 3, 4, 5, 9):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ours(x), PastThree()(x), msg=f"batch {n}")
    with pytest.raises(st.InputMismatchError):
        ours(torch.randn(5, 4))
