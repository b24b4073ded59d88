"""Python state outside the model that an export's code changes and the program may
depend on: a string attribute cycling through more than two values, and the globals of a
helper module forward calls into (defining neither the model's classes nor forward).
Also the attributes of plain objects such a module holds (``tally.n`` through a method, a
``SimpleNamespace``, callbacks kept in a module-level list or dict).
Refused, naming the attribute or global, where the graph or forward's Python depends on
it -- torch.export keeps what it saw and answers wrongly on a later call -- and exported
where nothing depends on it."""

from __future__ import annotations

import functools

import pytest
import torch

import safetrace as st
from tests.export import state_helpers as helpers
from tests.export.state_helpers import Counter, step

_NEXT = {"a": "b", "b": "c", "c": "a"}


class CyclingMode(torch.nn.Module):
    def __init__(self, branch: bool = True) -> None:
        super().__init__()
        self.mode, self.branch = "a", branch

    def forward(self, x):
        self.mode = _NEXT[self.mode]
        if self.branch and self.mode == "a":  # eager's third call takes this branch
            return x * 2
        return x + 1


class GrowingLog(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.log = ""

    def forward(self, x):
        self.log += "."
        return x + 1


class StepsAHelper(torch.nn.Module):
    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how

    def forward(self, x):
        if self.how == "module":
            return x * helpers.step()  # the helper module's global counter
        if self.how == "function":
            return x * step()  # imported by name
        return x * Counter.tick()  # behind a class in the helper module


class RotatesAHelper(torch.nn.Module):
    def forward(self, x):
        if helpers.rotate() == "a":  # a global string cycling a -> b -> c -> a
            return x * 2
        return x + 1


class LogsThroughAHelper(torch.nn.Module):
    def forward(self, x):
        helpers.log_call()  # nothing computed reads it
        helpers.rotate()
        return x.relu() * 3


def _calls(model: torch.nn.Module, x: torch.Tensor, n: int = 3) -> list[torch.Tensor]:
    return [model(x) for _ in range(n)]


def _torch_and_eager(make, x: torch.Tensor) -> tuple[list, list]:
    """Three calls of torch.export's program of ``make()`` and three of eager ``make()``,
    each from the helper module's first state."""
    helpers.reset()
    theirs = torch.export.export(make(), (x,)).module()
    helpers.reset()
    eager = _calls(make(), x)
    helpers.reset()
    return _calls(theirs, x), eager


def _matches_eager_at_other_sizes(model_cls) -> None:
    """A program whose helper state nothing reads: exported with a dynamic dim, it
    computes what eager does at sizes 0, 1 and 6 and refuses another rank."""
    helpers.reset()
    ep = st.export(model_cls(), (torch.randn(4),), dynamic_shapes=({0: st.Dim("n")},))
    ours, eager = ep.module(), model_cls()
    for n in (0, 1, 6):
        x = torch.randn(n)
        torch.testing.assert_close(ours(x), eager(x))
    with pytest.raises(st.InputMismatchError):
        ours(torch.randn(3, 3))


def test_a_string_cycling_through_three_values_is_refused_where_torch_answers_wrongly():
    x = torch.randn(3)
    m = CyclingMode()
    with pytest.raises(st.UnsupportedOpError,
                       match=r"`self\.mode` \('a' -> 'b' -> 'c'\)(.|\n)*mode_index"):
        st.export(m, (x,))
    assert m.mode == "a"  # export never changes the model
    theirs = torch.export.export(CyclingMode(), (x,)).module()
    eager, ours = _calls(CyclingMode(), x), _calls(theirs, x)
    torch.testing.assert_close(ours[:2], eager[:2])
    assert not torch.equal(ours[2], eager[2])  # torch's third call is wrong


def test_a_cycling_string_nothing_depends_on_exports_and_matches_eager():
    m = CyclingMode(branch=False)
    ep = st.export(m, (torch.randn(4),), dynamic_shapes=({0: st.Dim("n")},))
    assert m.mode == "a"
    ours, eager = ep.module(), CyclingMode(branch=False)
    for n in (0, 1, 7, 2, 5):
        x = torch.randn(n)
        torch.testing.assert_close(ours(x), eager(x))
    with pytest.raises(st.InputMismatchError):
        ours(torch.randn(2, 2))


def test_a_string_taking_a_new_value_on_every_call_is_refused_after_five_traces():
    m = GrowingLog()
    with pytest.raises(st.UnsupportedOpError,
                       match=r"`self\.log` \('' -> '\.' -> (.|\n)*5 traces"):
        st.export(m, (torch.randn(3),))
    assert m.log == ""


@pytest.mark.parametrize("how", ["module", "function", "class"])
def test_a_helper_modules_global_counter_the_graph_reads_is_refused(how):
    helpers.reset()
    x = torch.randn(3)
    with pytest.raises(st.UnsupportedOpError,
                       match=r"the global `COUNT` of module tests\.export\.state_helpers "
                             r"\(0 -> 1\)"):
        st.export(StepsAHelper(how), (x,))
    ours, eager = _torch_and_eager(lambda: StepsAHelper(how), x)
    torch.testing.assert_close(ours[0], eager[0])
    assert not torch.equal(ours[1], eager[1])  # torch keeps multiplying by 1


def test_a_branch_on_a_helper_modules_cycling_global_is_refused():
    helpers.reset()
    x = torch.randn(3)
    with pytest.raises(st.UnsupportedOpError,
                       match=r"the global `MODE` of module tests\.export\.state_helpers "
                             r"\('a' -> 'b' -> 'c'\)"):
        st.export(RotatesAHelper(), (x,))
    ours, eager = _torch_and_eager(lambda: RotatesAHelper(), x)
    torch.testing.assert_close(ours[:2], eager[:2])
    assert not torch.equal(ours[2], eager[2])  # torch's third call is wrong


def test_a_helper_modules_globals_nothing_reads_export_and_match_eager():
    _matches_eager_at_other_sizes(LogsThroughAHelper)


def test_explain_reports_a_helper_modules_global_the_graph_reads():
    helpers.reset()
    report = st.explain(StepsAHelper("module"), (torch.randn(3),))
    assert not report.ok
    assert "the global `COUNT` of module tests.export.state_helpers" in str(report)


class ReadsAnObjectsState(torch.nn.Module):
    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how

    def forward(self, x):
        if self.how == "method":
            return x * helpers.tally.bump()  # `self.n += 1` on the module's object
        if self.how == "namespace":
            return x * helpers.grow()  # a SimpleNamespace's attribute
        if self.how == "list":
            k = 0
            for hook in helpers.HOOKS:  # a bound method kept in a list
                k = hook()
            return x * k
        return x * helpers.TABLE["grow"]()  # a function kept in a dict


@pytest.mark.parametrize("how, name", [("method", "tally.n"), ("namespace", "settings.scale"),
                                       ("list", "tally.n"),  # (its plainest name)
                                       ("dict", "settings.scale")])
def test_an_objects_attribute_a_helper_module_holds_is_refused_where_the_graph_reads_it(
        how, name):
    helpers.reset()
    x = torch.randn(3)
    with pytest.raises(st.UnsupportedOpError,
                       match=rf"`{name}` of module tests\.export\.state_helpers \(\d+ -> \d+\)"
                             r"(.|\n)*register_buffer"):
        st.export(ReadsAnObjectsState(how), (x,))
    if how != "method":
        return
    ours, eager = _torch_and_eager(lambda: ReadsAnObjectsState(how), x)
    torch.testing.assert_close(ours[0], eager[0])
    assert not torch.equal(ours[1], eager[1])  # torch keeps multiplying by 1


class BumpsAnObjectNothingReads(torch.nn.Module):
    def forward(self, x):
        helpers.tally.bump()
        return x.relu() + 1


def test_an_objects_counter_nothing_reads_exports_and_matches_eager():
    _matches_eager_at_other_sizes(BumpsAnObjectNothingReads)


class _Fixed:
    n = 1

    def bump(self) -> int:  # no state change: a program multiplying by 1 is right
        return self.n


def test_an_object_rebound_after_an_export_is_the_one_watched_next():
    helpers.reset()
    old = helpers.tally
    try:
        helpers.tally = _Fixed()
        st.export(ReadsAnObjectsState("method"), (torch.randn(3),))  # (its reach is kept)
        helpers.tally = helpers.Tally()  # the same module size, another object
        with pytest.raises(st.UnsupportedOpError, match=r"`tally\.n` of module"):
            st.export(ReadsAnObjectsState("method"), (torch.randn(3),))
    finally:
        helpers.tally = old


class CallsWhatItHolds(torch.nn.Module):
    """Code set on the instance from outside (``model.cb = utils.step``): forward names
    neither the helper module nor its function."""

    def __init__(self, cb=None) -> None:
        super().__init__()
        self.inner = torch.nn.Identity()
        if cb is not None:
            self.cb = cb

    def forward(self, x):
        if hasattr(self, "cbs"):
            return self.inner(x) * self.cbs[0]()
        if hasattr(self, "cb"):
            return self.inner(x) * self.cb()
        return self.inner(x) + 1


def _holding(how: str) -> CallsWhatItHolds:
    if how == "hook":  # (a submodule's forward hook from the helper module)
        m = CallsWhatItHolds()
        m.inner.register_forward_hook(lambda mod, args, out: out * helpers.step())
        return m
    if how == "root hook":  # (on the model itself: run around forward)
        m = CallsWhatItHolds()
        m.register_forward_hook(lambda mod, args, out: out * helpers.step())
        return m
    if how == "list":
        m = CallsWhatItHolds()
        m.cbs = [step]
        return m
    return CallsWhatItHolds({"function": step, "partial": functools.partial(step),
                             "method": helpers.tally.bump}[how])


@pytest.mark.parametrize("how, name", [
    ("function", "the global `COUNT`"), ("partial", "the global `COUNT`"),
    ("list", "the global `COUNT`"), ("hook", "the global `COUNT`"),
    ("root hook", "the global `COUNT`"),
    ("method", r"`(tally|CallsWhatItHolds\.cb\.__self__)\.n`")])  # (its plainest name seen)
def test_a_helper_function_set_on_the_instance_is_watched_where_the_graph_reads_its_state(
        how, name):
    helpers.reset()
    x = torch.randn(3)
    with pytest.raises(st.UnsupportedOpError, match=name + r" of module tests\.export\."):
        st.export(_holding(how), (x,))
    if how == "function":
        ours, eager = _torch_and_eager(lambda: _holding(how), x)
        torch.testing.assert_close(ours[0], eager[0])
        assert not torch.equal(ours[1], eager[1])  # torch keeps multiplying by 1


class _LogsThroughWhatItHolds(CallsWhatItHolds):
    def __init__(self) -> None:
        super().__init__()
        self.log = helpers.log_call
        self.inner.register_forward_hook(lambda mod, args, out: helpers.rotate() and None)

    def forward(self, x):
        self.log()  # nothing computed reads it
        return self.inner(x).relu() * 3


def test_a_helper_function_set_on_the_instance_that_nothing_reads_exports():
    _matches_eager_at_other_sizes(_LogsThroughWhatItHolds)
