"""Fuzz seed 3707 (``--kinds promote``, grammar_promote.py's ``negdiv``): Python's ``n // d``
of sizes whose divisor can be 0 (``x.shape[0] // (x.shape[0] - z.shape[0])``) was built
without a check: the program ran its graph and raised ZeroDivisionError from the size
arithmetic where eager, catching it (``try: ... except ZeroDivisionError:``), computes.
The program now checks ``d != 0`` before computing (an InputMismatchError where eager raises
or takes the other branch), and an example where ``d`` is 0 raises at the trace as in
Python, its except branch traced."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


def _caught(x, z):
    try:
        v = x - x.shape[0] // (x.shape[0] - z.shape[0])
    except ZeroDivisionError:
        v = x.sum() * 0
    return v


def _plain(x, z):
    return x - x.shape[0] % (x.shape[0] - z.shape[0]) + 7 // max(z.shape[0], 1)


def _eager(f, a, b):
    try:
        return f(torch.ones(a), torch.ones(b))
    except ZeroDivisionError:
        return None


@pytest.mark.parametrize("f", [_caught, _plain])
def test_a_size_divisor_that_can_be_0_is_checked(f, tmp_path):
    spec = ({0: Dim("a")}, {0: Dim("b")})
    ep = st.export(f, (torch.ones(4), torch.ones(2)), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    progs = [ep.module(), st.load(tmp_path / "p.pt2").module()]
    for a, b in [(4, 2), (5, 1), (1, 0), (0, 3), (7, 9), (3, 3), (0, 0), (1, 1)]:
        want = _eager(f, a, b)
        for prog in progs:
            if a == b:   # eager raises (or catches it and computes): refused before computing
                with pytest.raises(st.InputMismatchError, match="!= z.shape") as err:
                    prog(torch.ones(a), torch.ones(b))
                assert ("Eager does not raise here" in str(err.value)) == (f is _caught)
                continue
            torch.testing.assert_close(prog(torch.ones(a), torch.ones(b)), want)
    for prog in progs:   # out of the declared space: another rank
        with pytest.raises(st.InputMismatchError):
            prog(torch.ones(2, 2), torch.ones(3))


def test_an_example_dividing_by_0_traces_the_except_branch():
    ep = st.export(_caught, (torch.ones(3), torch.ones(3)),
                   dynamic_shapes=({0: Dim("a")}, {0: Dim("a")}))
    for n in (0, 1, 5):
        x = torch.randn(n)
        torch.testing.assert_close(ep.module()(x, torch.ones(n)), _caught(x, torch.ones(n)))


# fuzz seed 3707 again: an integer tensor divided by such a size (``torch.div(t, n - 2,
# rounding_mode="floor")``, ``t % d``, ``fmod``, ``//``): eager's kernel raises
# ZeroDivisionError where the result has elements, which the program's graph did too
# (RuntimeError from the kernel) where eager, catching it, computes.  Checked now.
def _tensor_caught(x, y):
    v0 = y.to(torch.int32)
    try:
        v2 = torch.div(v0.to(torch.int8) - x.shape[1], x.shape[1] - 2, rounding_mode="floor")
    except RuntimeError:
        v2 = v0.sum() * 0
    return v0, v2


def _tensor_plain(x, y):
    return (y.long() % (x.shape[1] - 2), torch.fmod(y.long(), x.shape[0] - y.shape[0]),
            y.long() // (x.shape[1] - 2), y // (x.shape[1] - 2))


@pytest.mark.parametrize("f", [_tensor_caught, _tensor_plain])
def test_an_integer_tensor_divided_by_a_size_that_can_be_0_is_checked(f, tmp_path):
    spec = ({1: Dim("a", min=2), 2: Dim("b", min=2, max=16)}, {0: Dim("c"), 1: Dim("d")})
    ep = st.export(f, (torch.randn(4, 3, 3), torch.randn(3, 2) * 9), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    progs = [ep.module(), st.load(tmp_path / "p.pt2").module()]
    for a, c, d in [(3, 4, 2), (5, 2, 3), (2, 0, 2), (2, 3, 0), (3, 0, 1), (2, 2, 1), (3, 4, 0)]:
        x, y = torch.randn(4, a, 2), torch.randn(c, d) * 9
        raises = c * d and (a == 2 or (f is _tensor_plain and c == 4))
        for prog in progs:
            if raises:   # eager raises, or catches it and computes: refused before computing
                # (caught: eager computes its except side there, and the refusal says so
                # since session 38; it said "Eager raises for these inputs too")
                match = "Eager does not raise here" if f is _tensor_caught else \
                    "ZeroDivisionError"
                with pytest.raises(st.InputMismatchError, match=match):
                    prog(x, y)
                continue
            for g, w in zip(prog(x, y), f(x, y), strict=True):
                torch.testing.assert_close(g, w)
    for prog in progs:   # out of the declared space: a below its min
        with pytest.raises(st.InputMismatchError):
            prog(torch.randn(4, 1, 2), torch.randn(2, 2))
