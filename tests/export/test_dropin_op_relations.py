"""An op's requirement relating two independent named Dims (torch's test_issue_157289).

``mask[..., :n] = fill`` needs ``fill``'s size n to fit the mask's m (``n <= m``), and
``x.view(n, -1)`` needs ``n`` to divide ``x``'s size: eager raises in the op where they
fail.  torch.export exports both with the requirement as a guard of its program, which
refuses other sizes before computing; safetrace exports them too, the requirement one of the
program's input checks naming the op's line; so are ``assert`` and ``torch._check``
relating them (torch exports those too).  An equality (``torch.cat``, ``x + y``) ties
one Dim to the other: both refuse it at export.  A plain branch (``if m >= n:``) picks a
result: torch exports the example's answer with the relation a guard of its program;
safetrace splits it (both answers), or where it may not split (``max_splits=0``) exports
the example's answer with the relation an input check naming the branch, as torch."""

from __future__ import annotations

from typing import Callable

import pytest
import torch
from torch.export import Dim

import safetrace as st

from tests.export.dropin_check import Fn, same


def _fill_mask(causal_mask, fill_value):  # torch's test_issue_157289
    causal_mask = causal_mask.clone()
    mask_length = fill_value.shape[-1]
    causal_mask[:, :, :, :mask_length] = fill_value
    return causal_mask


def _set_columns(x, y):
    x = x.clone()
    x[:, :y.shape[1]] = y
    return x


def _view_rows(x, y):
    return x.view(y.shape[0], -1) * 2


def _mask(m: int, n: int) -> tuple:
    return torch.randn(2, 2, 3, m), torch.randn(2, 2, 3, n)


def _cols(m: int, n: int) -> tuple:
    return torch.randn(3, m), torch.randn(3, n)


def _rows(m: int, n: int) -> tuple:
    return torch.randn(m), torch.randn(n)


# (name, forward, inputs of sizes (m, n), dim of m and n, example, sizes that run, refused)
ROWS = [
    ("slice assignment of a mask", _fill_mask, _mask, 3, (4, 3),
     [(7, 5), (7, 1), (6, 6), (2, 0)], [(3, 5), (5, 7)]),
    ("slice assignment of columns", _set_columns, _cols, 1, (6, 4),
     [(8, 2), (5, 5), (9, 1)], [(3, 5), (2, 9)]),
    ("view by another input's size", _view_rows, _rows, 0, (12, 3),
     [(20, 5), (6, 6), (7, 1)], [(7, 3), (9, 2)]),
]


@pytest.mark.parametrize("name, fn, make, d, example, sizes, refused", ROWS,
                         ids=[r[0] for r in ROWS])
def test_an_op_requirement_between_named_dims_is_an_input_check(
        name: str, fn: Callable, make: Callable, d: int, example: tuple, sizes: list,
        refused: list) -> None:
    model, args = Fn(fn), make(*example)
    spec = ({d: Dim("m")}, {d: Dim("n")})
    ref = torch.export.export(model, args, dynamic_shapes=spec)  # torch exports it
    ours = st.export(model, args, dynamic_shapes=spec)
    conv = ours.to_torch()
    for m, n in sizes:
        inputs = make(m, n)
        want = fn(*inputs)
        same(ours.module()(*inputs), want)
        same(conv.module()(*inputs), want)
        if m != n:  # (torch's program also guards m != n, as in the example: it
            same(ref.module()(*inputs), want)  # refuses equal sizes, which eager computes)
    for m, n in refused:
        inputs = make(m, n)
        with pytest.raises(RuntimeError):
            fn(*inputs)  # eager raises in the op
        with pytest.raises(Exception) as theirs:
            ref.module()(*inputs)  # torch's program refuses them too
        with pytest.raises(st.InputMismatchError, match="test_dropin_op_relations.py"):
            ours.module()(*inputs)  # before any op runs, naming the op's line
        with pytest.raises(type(theirs.value)):  # the converted one as torch's does
            conv.module()(*inputs)


def test_the_requirement_is_checked_before_computing() -> None:
    """The refusal comes from the input checks, not from the op failing mid-program."""
    ours = st.export(Fn(_fill_mask), _mask(4, 3), dynamic_shapes=({3: Dim("m")}, {3: Dim("n")}))
    with pytest.raises(st.InputMismatchError) as info:
        ours.module()(*_mask(3, 5))
    assert "mask_length" in str(info.value), str(info.value)


def _assert_fits(x, y):
    assert x.shape[0] >= y.shape[0], "y longer than x"
    return x[:y.shape[0]] + y


def _check_fits(x, y):
    torch._check(x.shape[0] >= y.shape[0])
    return x[:y.shape[0]] * y


@pytest.mark.parametrize("fn", [_assert_fits, _check_fits], ids=["assert", "torch._check"])
def test_an_assert_relating_named_dims_is_an_input_check(fn: Callable) -> None:
    """The code's own requirement (eager raises where it fails), as torch's program checks."""
    model, args = Fn(fn), _rows(5, 3)
    spec = ({0: Dim("m")}, {0: Dim("n")})
    ref = torch.export.export(model, args, dynamic_shapes=spec)
    ours = st.export(model, args, dynamic_shapes=spec)
    for m, n in [(9, 2), (4, 0), (1, 1)]:
        inputs = _rows(m, n)
        same(ours.module()(*inputs), fn(*inputs))
        if n >= 2:  # (torch's program: sizes 0 and 1 are outside its tracing assumption)
            same(ref.module()(*inputs), fn(*inputs))
    inputs = _rows(2, 6)
    with pytest.raises((AssertionError, RuntimeError)):
        fn(*inputs)
    with pytest.raises(AssertionError):
        ref.module()(*inputs)
    with pytest.raises(st.InputMismatchError, match="test_dropin_op_relations.py"):
        ours.module()(*inputs)
    with pytest.raises(AssertionError, match="Guard failed"):  # as torch's program
        ours.to_torch().module()(*inputs)


def _cat(x, y):
    return torch.cat([x, y])


def _add(x, y):
    return x + y


@pytest.mark.parametrize("fn", [_cat, _add], ids=["cat", "add"])
def test_an_equality_between_named_dims_is_still_refused(fn: Callable) -> None:
    model, args = Fn(fn), (torch.randn(4, 3), torch.randn(4, 3))
    spec = ({1: Dim("m")}, {1: Dim("n")})
    with pytest.raises(Exception, match="must always be equal"):
        torch.export.export(model, args, dynamic_shapes=spec)
    with pytest.raises(st.ConstraintViolationError, match="n = m|m = n"):
        st.export(model, args, dynamic_shapes=spec)


def _branch(x, y):
    if x.shape[0] >= y.shape[0]:
        return x[:y.shape[0]] + y
    return y * 2


def test_a_branch_relating_named_dims_runs_both_answers() -> None:
    model, args = Fn(_branch), _rows(5, 3)
    spec = ({0: Dim("m")}, {0: Dim("n")})
    # (torch exports it with the branch as a guard of its program, refusing the other
    # answer; safetrace splits it as a range of one named Dim)
    ep = st.export(model, args, dynamic_shapes=spec)
    for m, n in ((5, 3), (3, 5), (0, 0), (0, 2), (1, 1), (4, 4)):
        x, y = _rows(m, n)
        torch.testing.assert_close(ep.module()(x, y), model(x, y))


def test_a_branch_relating_named_dims_unsplit_is_checked_as_torch() -> None:
    """Where it may not split (max_splits=0): the example's answer, the relation an input
    check naming the branch's line, refused before computing as torch's program refuses."""
    model, args = Fn(_branch), _rows(5, 3)
    spec = ({0: Dim("m")}, {0: Dim("n")})
    ref = torch.export.export(model, args, dynamic_shapes=spec)
    ours = st.export(model, args, dynamic_shapes=spec, max_splits=0)
    conv = ours.to_torch().module()
    for m, n in ((5, 3), (9, 2), (4, 4), (0, 0), (1, 0), (1, 1)):
        x, y = _rows(m, n)
        same(ours.module()(x, y), model(x, y))
        same(conv(x, y), model(x, y))
        if n >= 2 and m != n:  # (torch's program: traced for sizes 2 and more, m != n)
            same(ref.module()(x, y), model(x, y))
    for m, n in ((3, 5), (0, 2)):
        x, y = _rows(m, n)
        model(x, y)  # eager computes the other answer
        with pytest.raises(AssertionError, match="Guard failed"):
            ref.module()(x, y)
        with pytest.raises(st.InputMismatchError, match="test_dropin_op_relations.py"):
            ours.module()(x, y)
        with pytest.raises(AssertionError, match="Guard failed"):
            conv(x, y)


def test_a_pinned_piece_count_is_no_requirement_between_dims() -> None:
    """unbind's count fixes a Python list's length: a pin of the sizes, not a size where eager
    raises (eager runs any count). Between two named Dims it stays a refusal with the fix,
    not an input check narrowing the declared space (fuzzer, long kinds, seed 31)."""
    def f(x):
        return torch.eye(x.numel()).unbind(1)[0]

    with pytest.raises(st.ConstraintViolationError, match="Dim.DYNAMIC"):
        st.export(f, (torch.randn(3, 3),),
                  dynamic_shapes=({0: st.Dim("a"), 1: st.Dim("b", min=3, max=16)},))
