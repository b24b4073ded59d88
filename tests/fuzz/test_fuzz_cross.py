"""Reproducers of what grammar_cross.py's statement kinds and input layouts found
(benchmarks/fuzz.py, session 29), through the public API: numerics against eager on other
sizes (0 and 1 included), out-of-space inputs refused."""

from __future__ import annotations

import math

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.fuzz.test_fuzz_regressions import _same_as_eager


def test_data_assignment_to_an_input_is_refused():
    # `y.data = v` gives the caller's tensor new memory: the program returned the right
    # value but left the caller's `y` as it was (eager's holds y * 2 after the call)
    def f(x, y):
        y.data = y * 2
        return y + x.sum()

    spec = ({0: Dim("a")}, {0: Dim("c")})
    with pytest.raises(st.UnsupportedOpError, match=r"gives the input `y` new memory"):
        st.export(f, (torch.randn(4), torch.randn(3)), dynamic_shapes=spec)

    def g(y):         # after an in-place op the tensor is still the caller's
        y.add_(1)
        y.data = y * 2
        return y

    with pytest.raises(st.UnsupportedOpError, match=r"y.copy_\(value\)"):
        st.export(g, (torch.randn(3),))


def test_data_assignment_to_a_tensor_made_in_forward_still_exports():
    def f(x, y):
        v = y.clone()
        w = y[:1]                 # a view of the input: a new tensor, rebound alone
        w.data = w * 3
        v.data = y * 2 + x.sum()
        v.add_(1)
        return v, w

    spec = ({0: Dim("a")}, {0: Dim("c", min=1, max=8)})
    ep = _same_as_eager(f, (torch.randn(4), torch.randn(3)), spec,
                        [(torch.randn(a), torch.randn(c)) for a, c in
                         [(0, 1), (1, 1), (0, 8), (5, 2)]])
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2), torch.randn(9))


def test_an_input_reshaped_in_place_is_refused():
    # `x.t_()` on an input: the input checks were built from its shape after the trace
    # (transposed), so x = (5, 2) passed as (2, 5) within Dim('a', max=3) x Dim('b', 4..8)
    # and ran the branch decided for a <= 3 (x * 1 where eager computes x * 2); a split
    # side read x narrowed (x[:0]) and transposed that view, not the caller's tensor; a
    # loaded program's checks read x's sizes after the call had transposed it. torch.export
    # refuses a metadata mutation of an input too.
    def f(x):
        big = x.shape[0] > 3
        x.t_()
        return x * (2 if big else 1), torch.ones(x.shape[0])

    spec = ({0: Dim("a", max=3), 1: Dim("b", min=4, max=8)},)
    with pytest.raises(st.UnsupportedOpError, match=r"changes the shape of the input `x`"):
        st.export(f, (torch.randn(3, 5),), dynamic_shapes=spec)

    def g(x, y):
        y.add_(1)
        y.unsqueeze_(0)               # (the caller's tensor, after an in-place op)
        return x.sum(0) + y.sum()

    with pytest.raises(st.UnsupportedOpError, match=r"y = y.unsqueeze\(...\)"):
        st.export(g, (torch.randn(2, 3), torch.randn(4)))

    def h(x):           # a split on d0 == 0 (its side read x[:0]) never got to be made
        v = x.amax(0) if x.shape[0] else x.sum(0)
        x.swapdims_(0, 1)
        return v, x + 1

    with pytest.raises(st.UnsupportedOpError, match=r"`swapdims_`"):
        st.export(h, (torch.randn(2, 3),), dynamic_shapes=({0: Dim("d0"), 1: Dim("d1")},))


def test_a_tensor_made_in_forward_reshaped_in_place_still_exports():
    def f(x, z):
        v = x.clone()
        big = v.shape[0] > 3
        v.t_()
        w = x[0]                      # a view of the input: its own metadata
        w.unsqueeze_(0)
        n = z.flatten()[:min(len(z), 2 * x.shape[-1] + 1)]
        return v * (2 if big else 1), torch.ones(v.shape[0]), w * 1, n

    spec = ({0: Dim("a", min=1, max=3), 1: Dim("b", min=4, max=8)}, {0: Dim("c", max=5)})
    ep = _same_as_eager(f, (torch.randn(3, 5), torch.randn(2)), spec,
                        [(torch.randn(*s), torch.randn(c)) for s, c in
                         [((1, 4), 0), ((3, 8), 5), ((2, 6), 1)]])
    with pytest.raises(st.InputMismatchError, match=r"x.shape\[0\] = 5"):
        ep.module()(torch.ones(5, 2), torch.randn(2))
    import io
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(buf.getvalue()).module()
    for s, c in [((1, 4), 0), ((3, 8), 5)]:
        x, z = torch.randn(*s), torch.randn(c)
        for a, b in zip(loaded(x, z), f(x.clone(), z.clone())):
            torch.testing.assert_close(a, b)


def test_a_view_whose_fit_depends_on_sizes_in_a_try_is_refused():
    # eager raises "view size is not compatible ..." at (2, 2) and runs the except side;
    # the program traced at (4, 1) (where the view fits) recorded the view and raised at
    # run time there (crash_after_checks), as it did for a tensor transposed in place
    # (its strides not traced) at any example
    def f(x):
        v = x.t()
        try:
            return v.view(-1)
        except RuntimeError:
            return v.reshape(-1) * 2

    def g(x):
        v = x.clone()
        v.t_()
        try:
            return v.view(-1)
        except RuntimeError:
            return v.reshape(-1) * 2

    spec = ({0: Dim("a"), 1: Dim("b")},)
    for fn, example in ((f, (4, 1)), (g, (4, 1)), (g, (4, 3))):
        with pytest.raises(st.OpShapeError, match="inside a `try` block"):
            st.export(fn, (torch.randn(*example),), dynamic_shapes=spec)

    def h(x):         # outside a try the program raises where eager does: exported
        v = x.clone()
        v.t_()
        return v.view(-1)

    ep = st.export(h, (torch.randn(4, 1),), dynamic_shapes=spec)
    for s in [(0, 3), (1, 1), (5, 1), (1, 6)]:
        x = torch.randn(*s)
        torch.testing.assert_close(ep.module()(x), h(x))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        ep.module()(torch.randn(2, 2))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        h(torch.randn(2, 2))
    # h's view recorded first in this process: g's (the same key) is still checked
    with pytest.raises(st.OpShapeError, match="inside a `try` block"):
        st.export(g, (torch.randn(4, 1),), dynamic_shapes=spec)


def test_a_split_on_size_zero_with_a_square_root_of_the_size_loads():
    # (fuzz seed 2906 --kinds cross: st.load evaluated the d0 >= 1 side's size query as 0,
    # a hint the d0 == 0 side had cached, and refused our own file; session 30)
    import io

    def f(x):
        n = int(math.sqrt(x.shape[0]))
        return torch.ones(n), (torch.ones(3) if n == 0 else torch.ones(2))

    ep = st.export(f, (torch.randn(6),), dynamic_shapes=({0: Dim("d0", max=6)},))
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(buf.getvalue()).module()
    for n in (0, 1, 4, 6):
        x = torch.randn(n)
        for a, b in zip(loaded(x), f(x)):
            torch.testing.assert_close(a, b)
