"""A division by a size that can be 0 inside the program's own ``try``/``except`` (session
38, fuzz ``--kinds promote`` negdiv, ``outside`` pyflow): where the divisor is 0 eager
computes the ``except`` side, so the condition ``d != 0`` is a branch, not a requirement.

Before: with the divisor one Dim's (``n - 2``), Python's ``//`` of sizes failed the export
(the split tracing the ``except`` side at n == 2 crashed comparing the sides: ``2 // 0``
while substituting), and an integer tensor's ``%`` refused n == 2 saying "Eager raises for
these inputs too", which it does not.  Now the export splits at n == 2 and computes eager's
``except`` side there; with the divisor a relation of two Dims the refusal says eager
computes the other side."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


def _python_size(x):
    try:
        v = x - x.shape[0] // (x.shape[0] - 2)
    except ZeroDivisionError:
        v = x * 0
    return v


def _int_tensor(x):
    y = x.long()
    try:
        v = y % (x.shape[0] - 2)
    except RuntimeError:
        v = y * 0 - 1
    return v


@pytest.mark.parametrize("f", [_python_size, _int_tensor])
def test_a_caught_division_by_one_dims_size_splits(f, tmp_path):
    ep = st.export(f, (torch.randn(4) * 5,), dynamic_shapes=({0: Dim("n", max=64)},))
    st.save(ep, tmp_path / "p.pt2")
    progs = [ep.module(), st.load(tmp_path / "p.pt2").module()]
    for n in (0, 1, 2, 3, 5, 64):
        x = torch.randn(n) * 5
        for prog in progs:
            torch.testing.assert_close(prog(x), f(x))
    for prog in progs:   # out of the declared space
        with pytest.raises(st.InputMismatchError):
            prog(torch.randn(65))
        with pytest.raises(st.InputMismatchError):
            prog(torch.randn(2, 2))


def _relation(x, z):
    y = x.long()
    try:
        v = y % (x.shape[0] - z.shape[0])
    except RuntimeError:
        v = y * 0
    return v


def _python_relation(x, z):
    try:
        v = x - x.shape[0] // (x.shape[0] - z.shape[0])
    except ZeroDivisionError:
        v = x * 0
    return v


def _other_rank(x, z):
    try:
        v = x - x.shape[0] // (x.shape[0] - z.shape[0])
    except ZeroDivisionError:
        v = x.sum() * 0   # (another rank: no one program holds both sides)
    return v


@pytest.mark.parametrize("f", [_relation, _python_relation])
def test_a_caught_division_by_a_relation_splits(f):
    """Divided by ``a - b``: split on the relation, eager's result at a == b too (refused
    before, saying "Eager raises for these inputs too")."""
    ep = st.export(f, (torch.randn(4) * 5, torch.ones(2)),
                   dynamic_shapes=({0: Dim("a")}, {0: Dim("b")}))
    for a, b in [(0, 3), (1, 0), (5, 2), (3, 3), (0, 0), (1, 1), (2, 7)]:
        x, z = torch.randn(a) * 5, torch.ones(b)
        torch.testing.assert_close(ep.module()(x, z), f(x, z))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 2), torch.ones(2))


def test_a_caught_division_whose_except_side_has_another_rank_is_refused_truthfully():
    ep = st.export(_other_rank, (torch.randn(4), torch.ones(2)),
                   dynamic_shapes=({0: Dim("a")}, {0: Dim("b")}))
    for a, b in [(0, 3), (1, 0), (5, 2), (3, 3), (1, 1)]:
        x, z = torch.randn(a), torch.ones(b)
        if a == b:
            with pytest.raises(st.InputMismatchError, match="Eager does not raise here"):
                ep.module()(x, z)
            continue
        torch.testing.assert_close(ep.module()(x, z), _other_rank(x, z))


# fuzz ``--kinds outside`` seed 12 (pyflow's try with sortk's topk of a repeat_interleave):
# a divisor read from data inside the program's ``try`` (``10 // v.shape[-1]`` of a
# ``repeat_interleave`` by data) was left to the graph, which raised ZeroDivisionError from
# its size arithmetic (a crash after the checks) where eager, catching it, computes.  Now
# ``d != 0`` is a decision on data: here split on (a torch.cond on ``u0 != 0``, the except
# side traced too); where no split is made, answered as for every size >= 2 with a run-time
# assertion naming the line (a refusal, no crash).
def _data_caught(y):
    v = y.flatten().repeat_interleave(torch.arange(y.numel()) % 2)
    try:
        w = torch.ones(2) * (10 // v.shape[-1])
    except ZeroDivisionError:
        w = torch.zeros(2)
    return v, w


def _data_uncaught(y):
    v = y.flatten().repeat_interleave(torch.arange(y.numel()) % 2)
    return v, torch.ones(2) * (10 // v.shape[-1])


def test_a_caught_division_by_a_size_read_from_data_computes_the_except_side():
    spec = ({0: Dim("a"), 1: Dim("b")},)
    caught = st.export(_data_caught, (torch.randn(6, 5),), dynamic_shapes=spec)
    plain = st.export(_data_uncaught, (torch.randn(6, 5),), dynamic_shapes=spec)
    for n, m in [(1, 2), (2, 3), (5, 4), (0, 2), (1, 1), (3, 0)]:
        y = torch.randn(n, m)
        for g, w in zip(caught.module()(y), _data_caught(y), strict=True):
            torch.testing.assert_close(g, w)
        if n * m < 2:   # no element repeated: the divisor is 0, eager raises uncaught
            with pytest.raises(ZeroDivisionError):
                plain.module()(y)
            continue
        for g, w in zip(plain.module()(y), _data_uncaught(y), strict=True):
            torch.testing.assert_close(g, w)
    with pytest.raises(st.InputMismatchError):
        caught.module()(torch.randn(2))


# Where the split on a caught division cannot make one program (the except side returns
# another rank), the export is made again with the division's condition as a run-time
# check (symbolic/zerodiv.with_caught_fallback), as before session 38, and the refusal now
# says that eager computes there: it said "Eager raises for these inputs too".
def _kernel_other_rank(x):
    try:
        v = torch.fmod(torch.arange(-x.shape[0], 3), x.shape[0] - x.shape[-1])
    except RuntimeError:
        v = x.sum() * 0
    return v


def _python_other_rank(x):
    try:
        v = x - x.shape[0] // (x.shape[0] - 2)
    except ZeroDivisionError:
        v = x.sum() * 0
    return v


@pytest.mark.parametrize("f, spec, at", [
    (_kernel_other_rank, ({0: Dim("n", min=1, max=16)},), (3, 3)),
    (_python_other_rank, ({0: Dim.DYNAMIC},), (2,)),
    (_python_other_rank, ({0: Dim.AUTO},), (2,))])
def test_a_caught_division_no_split_joins_is_a_truthful_check(f, spec, at):
    example = torch.randn(5, 3) if f is _kernel_other_rank else torch.randn(5)
    ep = st.export(f, (example,), dynamic_shapes=spec)
    with pytest.raises(st.InputMismatchError, match="Eager does not raise here"):
        ep.module()(torch.randn(*at))
    for n in (1, 4, 7) if f is _kernel_other_rank else (0, 1, 4, 7):
        x = torch.randn(n, 3) if f is _kernel_other_rank else torch.randn(n)
        torch.testing.assert_close(ep.module()(x), f(x))
