"""A contract condition holding a division whose divisor may be 0 (`(n + 1)//2` at n == 0)
beside a side that holds there: the converted program's assert evaluates every side, so the
division is made safe (`interop/divisions.py`), not a ZeroDivisionError (fuzz seed 3571)."""

import itertools

import pytest
import torch

import safetrace as st
from safetrace.errors import InputMismatchError
from safetrace import Dim
from safetrace.interop.divisions import guarded_divisions
from safetrace.symbolic import Range
from safetrace.symbolic.canon import add, floordiv, ge, le, mod, eq, not_, or_, and_
from safetrace.symbolic.expr import const, sym


class Chunked(torch.nn.Module):
    def forward(self, z):
        v0 = z.sum(dim=[], keepdim=False) if z.shape[0] > 2 else z.sum(dim=0, keepdim=False)
        piece = z.unsafe_chunk(2, 0)[-1]
        return v0, torch.empty_like(piece).fill_(2.0).view(-1)


@pytest.fixture(scope="module")
def converted():
    ep = st.export(Chunked(), (torch.randn(2),), dynamic_shapes=({0: Dim("d0")},))
    return ep, ep.to_torch().module()


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 7, 10])
def test_converted_runs_as_eager_at_every_size(converted, n):
    ep, module = converted
    z = torch.randn(n)
    want = Chunked()(z)
    for got in (module(z), ep.module()(z)):
        for a, b in zip(got, want):
            assert a.shape == b.shape and torch.allclose(a, b)


def test_other_rank_refused_before_running(converted):
    ep, module = converted
    with pytest.raises(Exception):
        module(torch.randn(2, 3))
    with pytest.raises(InputMismatchError):
        ep.module()(torch.randn(2, 3))


def _value(e, binding):
    try:
        return e.evaluate(binding)
    except ZeroDivisionError:
        return None


N, K = sym("n"), sym("k")
HALF = floordiv(add(N, const(1)), const(2))
CASES = [
    or_(le(N, const(2)), ge(floordiv(add(add(N, HALF), const(-1)), HALF), const(1))),
    or_(ge(N, const(3)), eq(mod(K, HALF), const(0))),
    and_(ge(N, const(1)), eq(mod(K, N), const(0))),
    not_(eq(mod(K, N), const(1))),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_rewrite_keeps_every_defined_value_and_never_raises(i):
    e = CASES[i]
    ranges = {"n": Range(0, 12), "k": Range(0, 12)}
    safe = guarded_divisions(e, ranges)
    for n, k in itertools.product(range(13), range(13)):
        b = {"n": n, "k": k}
        got = safe.evaluate(b)           # never a ZeroDivisionError
        want = _value(e, b)
        if want is not None:
            assert bool(got) == bool(want), (e, safe, b)


def test_divisor_proven_nonzero_left_as_it_is():
    e = eq(mod(sym("k"), sym("n")), const(0))
    assert guarded_divisions(e, {"n": Range(1, 12), "k": Range(0, 12)}) is e
