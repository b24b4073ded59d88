"""Reproducers of what grammar_reach.py's statement kinds found (benchmarks/fuzz.py), through
the public API: numerics against eager on other sizes (0 and 1 included), out-of-space
inputs refused."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.fuzz.test_fuzz_regressions import _same_as_eager


def test_a_negative_slice_step_raises_valueerror_as_eager_does():
    def f(x):
        try:
            v = x[::-1]
        except ValueError:
            v = x.flip(0)
        try:
            w = x[:, ::-2]
        except ValueError:
            w = x.flip(1)[:, ::2]
        return v, w

    spec = ({0: Dim("a"), 1: Dim("b", max=9)},)
    ep = _same_as_eager(f, (torch.randn(4, 5),), spec,
                        [(torch.randn(*s),) for s in [(0, 0), (1, 1), (0, 3), (3, 7)]])
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 10))
    with pytest.raises(ValueError, match="step must be greater than zero"):
        st.export(lambda x: x[::-1], (torch.randn(3),))


def test_a_slice_step_from_a_size_splits_where_eager_raises():
    def f(x):
        try:
            return x[:, ::x.shape[1] - 2]
        except ValueError:   # a step of 0 or below: eager's ValueError
            return x * 2

    _same_as_eager(f, (torch.randn(4, 5),), ({0: Dim("a"), 1: Dim("b")},),
                   [(torch.randn(*s),) for s in [(0, 0), (1, 1), (2, 2), (2, 3), (3, 7)]])


def test_fill_diagonal_on_dynamic_sizes_matches_eager():
    def f(x):
        v = x.clone()
        w = v[1:]                      # an alias the write shows through
        v.fill_diagonal_(2.0, wrap=True)
        return v, w * 1

    _same_as_eager(f, (torch.randn(5, 3),), ({0: Dim("a"), 1: Dim("b")},),
                   [(torch.randn(*s),) for s in [(0, 0), (1, 1), (1, 4), (7, 2), (3, 3)]])

    def g(x):
        v = x.clone()
        v.fill_diagonal_(-1.0)
        return v

    a = Dim("a")
    ep = _same_as_eager(g, (torch.randn(3, 3, 3),), ({0: a, 1: a, 2: a},),
                        [(torch.randn(n, n, n),) for n in (0, 1, 2, 4)])
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 3, 2))


def test_a_split_size_from_a_size_needs_no_count():
    def f(x, y):
        k = y.shape[0] + 1
        return x.unsafe_split(k, 0)[0], x.split(k, 1)[-1], len(x.split(k)) * x.sum()

    spec = ({0: Dim("a"), 1: Dim("b", max=9)}, {0: Dim("c")})
    ep = _same_as_eager(f, (torch.randn(6, 5), torch.randn(6)), spec,
                        [(torch.randn(*a), torch.randn(c)) for a, c in
                         [((0, 0), 0), ((1, 1), 1), ((6, 5), 0), ((7, 3), 2), ((9, 9), 8)]])
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 10), torch.randn(2))

    def g(x, y):      # iterating the pieces still pins their count (a plain tuple's length)
        return torch.stack([p.sum() for p in x.split(y.shape[0] + 1)])

    with pytest.raises(st.ConstraintViolationError):
        st.export(g, (torch.randn(6, 5), torch.randn(2)),
                  dynamic_shapes=({0: Dim("a")}, {0: Dim("c")}))


def test_every_overlap_checked_op_raises_in_eager_on_an_expanded_tensor():
    from safetrace.trace.overlap import CHECKED

    for name in CHECKED:
        x = torch.rand(3).add(0.5).expand(2, 3)
        args = {"copy_": (torch.ones(2, 3),), "pow_": (2,), "addcmul_": (x, x),
                "addcdiv_": (x, x), "lerp_": (x, 0.5), "clamp_": (0, 1), "clamp_min_": (0,),
                "clamp_max_": (1,), "remainder_": (2,), "fmod_": (2,)}.get(name)
        if args is None:
            args = (2,) if name in ("add_", "sub_", "mul_", "div_") else ()
        with pytest.raises(RuntimeError, match="single memory location"):
            getattr(x, name)(*args)


def test_a_write_into_an_expand_raises_where_eager_does_so_except_catches_it():
    def f(x):
        v = x.clone()
        try:
            v.expand(2, *v.shape).add_(1)     # eager raises unless v is empty
        except RuntimeError:
            v = v * 2
        try:
            v[None].expand(3, *v.shape)[:] = 5.0
        except RuntimeError:
            v = v - 1
        w = x.clone()
        w.expand(2, *w.shape).fill_(3.0)      # fill_ checks nothing: it writes
        return v, w

    spec = ({0: Dim("a"), 1: Dim("b", max=8)},)
    ep = _same_as_eager(f, (torch.randn(3, 2),), spec,
                        [(torch.randn(*s),) for s in [(0, 2), (1, 1), (2, 0), (3, 2), (5, 8)]])
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 9))

    def g(x):
        return x.clone().expand(2, *x.shape).mul_(2)

    with pytest.raises(RuntimeError, match="single memory location"):
        st.export(g, (torch.randn(3),))


def test_a_write_into_an_expand_of_a_tensor_of_unknown_strides():
    # fuzz seed 5: the clone of a transposed tensor keeps strides not traced; the expand's
    # new dim has stride 0 whatever they are (its overlap decided at trace all the same)
    def f(z):
        v0 = z.clone()
        v0.transpose_(0, 1)
        v2 = v0.clone()
        try:
            v2.expand(2, *v2.shape).add_(1)
        except RuntimeError:
            v2 = v2 * 2
        return v0, v2

    d0 = Dim("d0", max=3)
    spec = ({0: d0, 1: d0, 2: Dim("d1", max=3)},)
    for example in ((0, 0, 3), (2, 2, 3)):
        ep = _same_as_eager(f, (torch.randn(*example),), spec,
                            [(torch.randn(*s),) for s in
                             [(0, 0, 3), (1, 1, 1), (3, 3, 3), (2, 2, 0), (2, 2, 1)]])
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 3, 1))
