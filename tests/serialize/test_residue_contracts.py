"""A contract condition that holds for every remainder is no condition (session 35).

``for _ in range(x.size(1) % 3): z = torch.cat([z, z])`` is split on the remainder, one
side per value; the merged contract listed ``x.shape[1] % 3 == 0 or x.shape[1] % 3 == 1 or
x.shape[1] % 3 == 2`` (and, in nested splits, the same ``or`` with another condition) as
requirements: true at every size, printed and checked at each call.  The engine's
disjunction of every remainder of one ``t % k`` is now ``True`` (and the conjunction of
``t % k != r`` for each ``False``); one that leaves a remainder out stays.
"""

from __future__ import annotations

import io
import itertools

import pytest
import torch

import safetrace as st
from safetrace.symbolic import and_, eq, le, ne, or_, parse


class CatLoop(torch.nn.Module):
    def forward(self, x):
        z = x
        for _ in range(x.size(1) % 3):
            z = torch.cat([z, z])
        return z * 2


def _export() -> st.ExportedProgram:
    n, m = st.Dim("n", max=64), st.Dim("m", max=64)
    return st.export(CatLoop(), (torch.randn(2, 5),), dynamic_shapes={"x": {0: n, 1: m}})


@pytest.fixture(scope="module")
def programs():
    ep = _export()
    buf = io.BytesIO()
    st.save(ep, buf)
    return ep, st.load(buf.getvalue())


def test_the_contract_lists_no_tautology(programs):
    for ep in programs:
        assert ep.contract.conditions == ()
        assert "% 3 == 0" not in str(ep).split("Input contract:")[1]


@pytest.mark.parametrize("n,m", [(0, 0), (1, 1), (2, 2), (3, 3), (0, 4), (2, 5), (1, 64),
                                 (64, 63)])
def test_programs_compute_as_eager_at_every_remainder(programs, n, m):
    x = torch.randn(n, m)
    want = CatLoop()(x)
    for ep in programs:
        torch.testing.assert_close(ep.module()(x), want)


@pytest.mark.parametrize("shape", [(2, 65), (65, 2), (2, 5, 1)])
def test_out_of_space_inputs_are_refused(programs, shape):
    for ep in programs:
        with pytest.raises(st.InputMismatchError):
            ep.module()(torch.randn(*shape))


def _every_value(cond, names=("s0", "s1"), values=range(-7, 8)) -> bool | None:
    """The condition's one value over a grid of both symbols (None: it takes both)."""
    from safetrace.symbolic.semantics import evaluate

    seen = {bool(evaluate(cond, dict(zip(names, v))))
            for v in itertools.product(values, repeat=len(names))}
    return seen.pop() if len(seen) == 1 else None


@pytest.mark.parametrize("k", [1, 2, 3, 5, -3])
def test_every_remainder_is_true_and_every_other_false(k):
    t = parse("2*s0 + s1")
    rs = range(0, k) if k > 0 else range(k + 1, 1)
    cover = or_(*(eq(t % k, r) for r in rs), le(parse("s1"), 3))
    assert cover.op == "const" and cover.value
    none = and_(*(ne(t % k, r) for r in rs))
    assert none.op == "const" and not none.value


@pytest.mark.parametrize("k", [2, 3, 5, -3])
def test_a_remainder_left_out_keeps_the_condition(k):
    t = parse("2*s0 + s1")
    rs = list(range(0, k) if k > 0 else range(k + 1, 1))[1:]
    cond = or_(*(eq(t % k, r) for r in rs))
    assert cond.op != "const"
    assert _every_value(cond) is None  # (it can be false: kept)
    two = or_(*(eq(t % k, r) for r in rs), eq(parse("s0") % k, 0))  # (another atom's)
    assert two.op != "const" and _every_value(two) is None


def test_one_expression_unequal_to_two_constants_is_true():
    """``x != a or x != b`` (a != b) holds for every ``x``; ``x == a and x == b`` never."""
    t, s1 = parse("s0 % 3"), parse("s1")
    assert or_(ne(t, 1), ne(t, 2), eq(s1, 0)).value is True
    assert and_(eq(parse("s0 + 2*s1"), 1), eq(parse("s0 + 2*s1"), 4)).value is False
    assert _every_value(or_(ne(t, 1), ne(t, 2))) is True
    kept = or_(ne(t, 1), ne(s1, 2))  # (two expressions: false at s0 % 3 == 1, s1 == 2)
    assert kept.op == "or" and _every_value(kept) is None
