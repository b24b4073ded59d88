"""A plain branch on a product relation between named Dims (``if a*b == c:``, ``if a*b ==
c*d:``): eager computes either answer.  torch.export exports the example's answer, the
relation a guard of its program (refusing the other answer's sizes, which eager computes);
safetrace splits it (both answers traced, ``torch.cond`` on the relation), and where it
cannot (``max_splits=0``; answers of another rank) exports the example's answer with the
relation an input check naming the branch's line, as torch's program."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.export import Dim

import safetrace as st

from tests.export.dropin_check import Fn, same


def _pick(x, z):  # z's Dim c against the product a*b
    if x.shape[0] * x.shape[1] == z.shape[0]:
        return z * 2
    return z + 1


def _products(x, y):  # a*b against c*d
    if x.shape[0] * x.shape[1] == y.shape[0] * y.shape[1]:
        return y * 2
    return y + 1


def _ranks(x, z):  # the answers' ranks differ: no torch.cond joins them
    if x.shape[0] * x.shape[1] == z.shape[0]:
        return x.reshape(-1) + z
    return x.sum() + z.sum()


def _t(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


_SPEC = ((Dim("a"), Dim("b", max=40)), (Dim("c"),))  # (b = 41: outside the declared space)
_HOLDS = [((3, 4), 12), ((0, 5), 0), ((1, 1), 1), ((2, 6), 12), ((1, 0), 0)]
_FAILS = [((3, 4), 11), ((0, 5), 3), ((1, 1), 0), ((2, 6), 13), ((5, 1), 1)]


def _modules(ours: Any, tmp_path: Any) -> list:
    path = tmp_path / "p.st"
    st.save(ours, path)
    return [ours.module(), ours.to_torch().module(), st.load(path).module()]


@pytest.mark.parametrize("example", [((2, 6), 12), ((2, 6), 11)], ids=["holds", "fails"])
def test_a_branch_on_a_dim_against_a_product_runs_both_answers(example: tuple,
                                                               tmp_path: Any) -> None:
    model, args = Fn(_pick), (_t(*example[0]), _t(example[1]))
    ref = torch.export.export(model, args, dynamic_shapes=_SPEC)  # torch exports it
    ours = st.export(model, args, dynamic_shapes=_SPEC)
    assert "relation split" in str(ours), str(ours)
    mods = _modules(ours, tmp_path)
    taken = (example[1] == example[0][0] * example[0][1])
    for xs, n in _HOLDS + _FAILS:
        x, z = _t(*xs), _t(n)
        for m in mods:
            same(m(x, z), _pick(x, z))
        if (n == xs[0] * xs[1]) == taken and min(*xs, n) >= 2:
            same(ref.module()(x, z), _pick(x, z))  # (torch's: its answer, sizes from 2)
        elif (n == xs[0] * xs[1]) != taken:
            with pytest.raises(AssertionError, match="Guard failed"):
                ref.module()(x, z)  # (torch's refuses the other answer eager computes)
    for m in mods:  # out of the declared space
        with pytest.raises(Exception):
            m(_t(41), _t(41))  # (x of the wrong rank)
        with pytest.raises(st.InputMismatchError if m is not mods[1] else Exception):
            m(_t(1, 41), _t(41))  # (b above its max)


def test_a_branch_between_two_products_runs_both_answers(tmp_path: Any) -> None:
    model, args = Fn(_products), (_t(2, 6), _t(3, 4))
    spec = ((Dim("a"), Dim("b")), (Dim("c"), Dim("d", max=30)))
    ref = torch.export.export(model, args, dynamic_shapes=spec)
    ours = st.export(model, args, dynamic_shapes=spec)
    mods = _modules(ours, tmp_path)
    for xs, ys in [((2, 6), (3, 4)), ((2, 6), (3, 5)), ((0, 3), (4, 0)), ((0, 3), (1, 1)),
                   ((1, 1), (1, 1)), ((1, 2), (2, 1)), ((5, 5), (25, 1))]:
        x, y = _t(*xs), _t(*ys)
        for m in mods:
            same(m(x, y), _products(x, y))
        if xs[0] * xs[1] == ys[0] * ys[1] and min(xs + ys) >= 2:
            same(ref.module()(x, y), _products(x, y))
    for m in mods:
        with pytest.raises(st.InputMismatchError if m is not mods[1] else Exception):
            m(_t(2, 6), _t(1, 31))  # (d above its max)


def test_unsplit_the_example_answer_is_checked_as_torch(tmp_path: Any) -> None:
    """max_splits=0, or answers no torch.cond joins: the example's answer, the relation an
    input check naming the branch, refused before computing (torch's guard, converted)."""
    cases = [(Fn(_pick), 0, ((2, 6), 12)), (Fn(_pick), 0, ((2, 6), 11)),
             (Fn(_ranks), 4, ((2, 6), 12))]
    for model, max_splits, example in cases:
        args = (_t(*example[0]), _t(example[1]))
        ref = torch.export.export(model, args, dynamic_shapes=_SPEC)
        ours = st.export(model, args, dynamic_shapes=_SPEC, max_splits=max_splits)
        assert "relation split" not in str(ours), str(ours)
        taken = (example[1] == example[0][0] * example[0][1])
        mods = _modules(ours, tmp_path)
        for xs, n in _HOLDS + _FAILS:
            x, z = _t(*xs), _t(n)
            if (n == xs[0] * xs[1]) == taken:
                for m in mods:
                    same(m(x, z), model(x, z))
                continue
            model(x, z)  # eager computes the other answer: every program refuses it
            with pytest.raises(AssertionError, match="Guard failed"):
                ref.module()(x, z)
            for m in mods:
                if m is mods[1]:  # (converted: torch's guard)
                    with pytest.raises(AssertionError, match="Guard failed"):
                        m(x, z)
                    continue
                with pytest.raises(st.InputMismatchError,
                                   match="test_dropin_branch_products.py"):
                    m(x, z)


def _same_size(x, y):
    if x.shape[0] == y.shape[0]:
        return x * 2 + y
    return x.sum() + y.sum(0, keepdim=True)


def test_a_branch_on_two_named_dims_apart_at_the_example_runs_both_answers() -> None:
    """``if a == c:`` with a != c in the example: torch keeps `a != c` as a guard of its
    program; safetrace splits it (the side where a == c traced with c as a)."""
    model, args = Fn(_same_size), (_t(5), _t(3))
    spec = ((Dim("a"),), (Dim("c"),))
    ref = torch.export.export(model, args, dynamic_shapes=spec)
    ours = st.export(model, args, dynamic_shapes=spec)
    assert "relation split" in str(ours), str(ours)
    for m, n in [(5, 3), (4, 4), (0, 0), (1, 1), (0, 1), (1, 0), (2, 7)]:
        x, y = _t(m), _t(n)
        same(ours.module()(x, y), _same_size(x, y))
        if m != n and min(m, n) >= 2:
            same(ref.module()(x, y), _same_size(x, y))
    with pytest.raises(AssertionError, match="Guard failed"):
        ref.module()(_t(4), _t(4))  # (torch's refuses the other answer)
    with pytest.raises(st.InputMismatchError):
        ours.module()(_t(4, 1), _t(4))
