"""A size test on a size read from data whose two answers trace different graphs (``if
y[y > 0].shape[0] == 1:``) is asked where the program runs: a ``torch.cond`` on it, each
answer's graph a branch (exporter/data_splits.py).  It was answered as for every size >= 2
and asserted, so data taking the other branch was refused where eager computes it.  Each
program is compared with eager on data taking each branch, at input sizes 0 and 1 too; a
write through a view before the test keeps the assert (the test could not be computed
again before the cond), a write to a tensor the program made is computed again with it."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import safetrace as st
from tests.export.caught_cases import caught_assert_on_a_value

N = st.Dim("n", max=64)


class One(nn.Module):
    def forward(self, y):
        v = y[y > 0]
        if v.shape[0] == 1:
            return v * 3
        return v + 1


class Empty(nn.Module):
    def forward(self, y):
        v = y[y > 0]
        if v.numel() == 0:
            return y.sum(0, keepdim=True)
        return v[:1] * 2


class Counts(nn.Module):
    """A buffer written in one branch only."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("singles", torch.zeros(()))

    def forward(self, y):
        v = y[y > 0]
        if v.shape[0] == 1:
            self.singles.add_(1)
            return v * 3
        return v - self.singles


def _data(n: int, positives: int) -> torch.Tensor:
    return torch.cat([torch.rand(positives) + 0.5, -torch.rand(n - positives) - 0.5])


def _cases(sizes=(0, 1, 2, 5)) -> list[torch.Tensor]:
    return [_data(n, k) for n in sizes for k in range(min(n, 3) + 1)]


@pytest.mark.parametrize("model, spec, example", [
    (One(), None, _data(4, 2)),
    (Empty(), ({0: N},), _data(6, 3)),
], ids=["one selected (static size)", "none selected (named Dim from 0)"])
def test_both_answers_of_a_size_test_on_data_run(model, spec, example) -> None:
    ep = st.export(model, (example,), dynamic_shapes=spec)
    assert "the torch.cond's true branch" in str(ep)
    sizes = (4,) if spec is None else (0, 1, 2, 5)
    for y in _cases(sizes):
        torch.testing.assert_close(ep.module()(y), model(y))


def test_a_buffer_written_by_one_branch_is_written_as_eager_writes_it() -> None:
    model = Counts()
    ep = st.export(copy.deepcopy(model), (_data(4, 2),))
    ours = ep.module()
    for k in (1, 2, 1, 0, 1, 3):
        y = _data(4, k)
        torch.testing.assert_close(ours(y), model(y))
        torch.testing.assert_close(ours.singles, model.singles)
    assert model.singles.item() == 3


def test_the_joined_program_saves_and_loads(tmp_path) -> None:
    ep = st.export(One(), (_data(4, 2),))
    st.save(ep, tmp_path / "p.st")
    loaded = st.load(tmp_path / "p.st").module()
    for y in _cases((4,)):
        torch.testing.assert_close(loaded(y), One()(y))


class Returned(nn.Module):
    """The read itself returned beside the branch's value (fuzz seed 1)."""

    def forward(self, y):
        v = y[y[:, 0] > 0]
        w = v * 2 if v.shape[0] >= 2 else v.sum(0, keepdim=True)
        return v, w, v.reshape(-1)


@pytest.mark.parametrize("low", [0, 1], ids=["inside a size split on n == 0", "alone"])
def test_a_program_returning_the_read_saves_and_loads(low) -> None:
    """Each branch computes the read again; the cond's outputs are sizes of their own, not
    the top graph's ``u0``, which st.load's evaluation of a branch cannot prove (it refused
    our own file)."""
    import io

    ep = st.export(Returned(), (torch.randn(6, 3),),
                   dynamic_shapes=({0: st.Dim("n", min=low, max=64)},))
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(buf.getvalue()).module()
    for n in (0, 1, 2, 5):
        for k in range(min(n, 3) + 1):
            y = torch.randn(n, 3).abs()
            y[k:, 0] *= -1
            if n < low:
                with pytest.raises(st.InputMismatchError):
                    loaded(y)
                continue
            for a, b in zip(loaded(y), Returned()(y)):
                torch.testing.assert_close(a, b)
    with pytest.raises(st.InputMismatchError):
        loaded(torch.randn(65, 3))


class CaughtSelect(nn.Module):
    """The test's general answer needs a row that its other answer, caught, does not."""

    def forward(self, x):
        v = x.flatten()[x.flatten() > 0][:2]
        try:
            w = v.select(0, 1)
        except IndexError:
            w = v.sum(0) * 0
        return v, w


class CaughtCheck(nn.Module):
    """The test's other answer (one row read) needs a row of the input."""

    def forward(self, x):
        v = x.nonzero()[:, 0].float()
        try:
            torch._check(v.shape[0] != 1)
            w = v + 1
        except RuntimeError:
            w = v * 3
        return v, w


@pytest.mark.parametrize("model", [CaughtSelect(), CaughtCheck()], ids=["select", "check"])
def test_sides_traced_for_other_input_ranges_join(model) -> None:
    """Each side's trace narrowed the input size its answer needs (a row where `v` has
    one); the program takes the wider range and asserts each side's where it runs (fuzz
    seeds 4 and 6: the test's assert refused the data the other side computes).  A read
    of fewer than two rows, which no example size has, makes eager's IndexError too."""
    import io

    ep = st.export(model, (torch.ones(3),), dynamic_shapes=({0: st.Dim.AUTO},))
    assert "the torch.cond's true branch" in str(ep)
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(buf.getvalue()).module()
    for n in (0, 1, 2, 3, 6):
        for k in range(min(n, 3) + 1):
            x = torch.cat([torch.ones(k), -torch.ones(n - k)])
            for m in (ep.module(), loaded):
                for got, want in zip(m(x), model(x)):
                    torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.ones(2, 2))


@pytest.mark.slow  # (the conversion: a few seconds)
def test_the_joined_program_converts_to_torch() -> None:
    ep = st.export(Empty(), (_data(6, 3),), dynamic_shapes=({0: N},))
    theirs = ep.to_torch().module()
    for y in _cases():
        torch.testing.assert_close(theirs(y), Empty()(y))


def test_a_write_to_a_new_tensor_before_the_test_is_computed_again_with_it() -> None:
    """The top graph computes the test again with the write (the written tensor is one the
    program made, no view of another): both answers run, as in eager."""

    def f(y):
        y = y.clone()
        y.add_(0.5)
        v = y[y > 1]
        return v * 3 if v.shape[0] == 1 else v + 1

    ep = st.export(f, (_data(4, 2),), dynamic_shapes=({0: N},))
    assert "the torch.cond's true branch" in str(ep)
    for y in _cases():
        torch.testing.assert_close(ep.module()(y), f(y))


def test_a_write_through_a_view_before_the_test_keeps_the_assert() -> None:
    """A write through a view may change what the test reads in ways the top graph's copy
    does not follow: the general answer stays asserted, the other side refused."""

    def f(y):
        y = y.clone()
        y[:2].add_(0.0)
        v = y[y > 0]
        return v * 3 if v.shape[0] == 1 else v + 1

    ep = st.export(f, (_data(4, 2),))
    assert "the torch.cond's true branch" not in str(ep)
    y = _data(4, 3)
    torch.testing.assert_close(ep.module()(y), f(y))
    with pytest.raises(st.RuntimeAssertionError, match="size-oblivious"):
        ep.module()(_data(4, 1))


def test_an_answer_that_narrows_an_input_size_runs_where_it_holds() -> None:
    """`u0 == 1` of a read from `n` rows needs n >= 1: the other answer's trace narrowed
    the named Dim (it was refused, the general answer asserted); traced for n >= 1, its
    graph runs where the test fails, n >= 1 asserted there (it always holds)."""
    ep = st.export(One(), (_data(6, 2),), dynamic_shapes=({0: N},))
    assert "the torch.cond's true branch" in str(ep)
    for y in _cases():
        torch.testing.assert_close(ep.module()(y), One()(y))


def test_a_narrowing_the_answer_does_not_imply_is_refused_at_run_time() -> None:
    """The other answer's graph branches on the input size too (traced for n >= 4): where
    the test fails at a smaller n the input is refused, never run in a graph traced for
    other sizes."""

    def f(y):
        v = y[y > 0]
        if v.shape[0] == 1:
            return v * 3 if y.shape[0] > 3 else v * 5
        return v + 1

    ep = st.export(f, (_data(6, 2),), dynamic_shapes=({0: N},))
    for n, k in ((6, 1), (5, 1), (2, 2), (0, 0), (1, 0), (3, 0)):
        y = _data(n, k)
        torch.testing.assert_close(ep.module()(y), f(y))
    with pytest.raises(st.RuntimeAssertionError, match="holds where"):
        ep.module()(_data(2, 1))


def test_an_assert_the_program_catches_is_a_size_test_with_both_sides_traced() -> None:
    """`assert` on a count read from data inside `try: ... except AssertionError:` was
    answered to pass and asserted, refusing data that takes the except clause (fuzz seed
    1, picking+raising); as a size test both sides are traced and run."""

    def f(x):
        v0 = torch.ones((x > 0).sum().item() + 1)
        try:
            assert v0.shape[0] > 1
            v1 = v0 * 2
        except AssertionError:
            v1 = v0 - 1
        return v0, v1

    ep = st.export(f, (torch.tensor([2.0, 3.0]),))
    for x in (torch.tensor([2.0, 3.0]), torch.tensor([-1.0, -2.0]), torch.tensor([1.0, -1.0])):
        for got, want in zip(ep.module()(x), f(x)):
            torch.testing.assert_close(got, want)


def test_an_assert_the_program_catches_on_any_value_read_traces_its_except_clause() -> None:
    """The same on a value with no known lower bound (``int(x.abs().max().item())``, a
    float read): not a size test, but the except clause is eager's other branch all the
    same (fuzz seed 1, picking+raising); it was asserted to pass, refusing ``x < 1``."""

    f = caught_assert_on_a_value
    ep = st.export(f, (torch.tensor([1.5, 2.0]),), dynamic_shapes=({0: N},))
    assert "the torch.cond's true branch" in str(ep)
    for x in (torch.tensor([1.5, 2.0]), torch.tensor([0.1, 0.2]), torch.tensor([0.5]),
              torch.tensor([9.0, 0.0, 3.0]), torch.tensor([0.0])):
        for got, want in zip(ep.module()(x), f(x)):
            torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.ones(65))


def test_a_torch_check_the_program_catches_on_a_read_size_is_a_size_test() -> None:
    """``torch._check(n != 1)`` on a count read from data inside ``try: ... except
    RuntimeError:`` was a fact of the trace, asserted, refusing the data eager sends to
    the except clause (fuzz seed 1, data_dependent+raising); both sides now run."""

    def f(y):
        v = y[y > 0][:2]
        try:
            torch._check(v.shape[0] != 1)
            out = v + 1
        except RuntimeError:
            out = v * 3
        return v, out

    ep = st.export(f, (_data(5, 2),), dynamic_shapes=({0: N},))
    assert "the torch.cond's true branch" in str(ep)
    for y in _cases():
        for got, want in zip(ep.module()(y), f(y)):
            torch.testing.assert_close(got, want)
