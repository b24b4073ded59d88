"""Reproducers of grammar_model.py's ``sizegaps`` (session 30): ``chunk`` / ``tensor_split``
into a count computed from sizes.  The count was pinned by a guard at export (a tuple's
length), which no Dim range keeps (TooManySplits / DeclaredSpaceViolation); the pieces are
now counted for each count (trace/pieces.py), and a piece read by index is a slice valid
at every size."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


def _check(ep, fn, inputs):
    for args in inputs:
        try:
            want = fn(*args)
        except (RuntimeError, IndexError):
            with pytest.raises((st.InputMismatchError, st.RuntimeAssertionError)):
                ep.module()(*args)
            continue
        got = ep.module()(*args)
        assert got.shape == want.shape, (args[0].shape, got.shape, want.shape)
        torch.testing.assert_close(got, want)


def test_chunk_into_a_count_from_its_own_size(tmp_path):
    def f(x):
        a = x.chunk(x.shape[0] // 2 + 1, 0)
        return a[0] * 2 + a[0].sum(), a[-1].flip(0)

    ep = st.export(f, (torch.randn(6, 3),), dynamic_shapes=({0: Dim("n", max=20)},))
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2")
    for n in (0, 1, 2, 3, 5, 6, 7, 11, 20):
        x = torch.randn(n, 3)
        for prog in (ep, loaded):
            for w, g in zip(f(x), prog.module()(x)):
                assert w.shape == g.shape
                torch.testing.assert_close(g, w)
    with pytest.raises(st.InputMismatchError):   # outside the declared range
        ep.module()(torch.randn(21, 3))


def test_tensor_split_into_a_count_from_another_input():
    def f(x, y):
        return x.tensor_split(y.shape[0], 1)[-1] + torch.tensor_split(x, max(y.shape[0], 2),
                                                                      dim=1)[0].sum()

    spec = ({1: Dim("n", max=16)}, {0: Dim("m", max=8)})
    ep = st.export(f, (torch.randn(2, 7), torch.randn(3)), dynamic_shapes=spec)
    _check(ep, f, [(torch.randn(2, n), torch.randn(m)) for n in (0, 1, 2, 5, 7, 16)
                   for m in (0, 1, 2, 3, 8)])   # m = 0: eager raises, the program refuses


def test_chunk_count_of_zero_is_refused_before_running():
    def f(x, y):
        return x.chunk(y.shape[0])[0] * 2

    spec = ({0: Dim("n", max=10)}, {0: Dim("m", max=5)})
    ep = st.export(f, (torch.randn(7), torch.randn(3)), dynamic_shapes=spec)
    _check(ep, f, [(torch.randn(n), torch.randn(m)) for n in (0, 1, 4, 7, 10)
                   for m in (0, 1, 2, 5)])


def test_pieces_nothing_reads_leave_no_nodes(tmp_path):
    """Session 31, fuzz seed 3114 (``--kinds values``): ``chunk`` into as many pieces as
    elements, 3,528 at the example, read at piece 0 and -1: every piece was a slice of the
    graph (10,608 nodes), and ``st.load`` refused the saved file (over its JSON budget).
    The pieces nothing reads are erased after the trace; pieces read whole still count."""
    def f(x):
        p = x.reshape(-1).chunk(int(torch.tensor(max(x.numel(), 1))), 0)
        return torch.cat([p[0] * 2, p[-1] + 1])

    ep = st.export(f, (torch.randn(7, 6, 6, 12),), dynamic_shapes=({3: Dim("d", max=16)},))
    assert sum(1 for n in ep.graph.nodes if n.op == "call_function") < 40
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2")
    for prog in (ep, loaded):
        _check(prog, f, [(torch.randn(7, 6, 6, d),) for d in (0, 1, 5, 12, 16)])
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(7, 6, 6, 17))

    def whole(x):   # (read as a whole: the count pinned where it varies, each piece kept)
        return torch.stack([p.sum() for p in x.chunk(2)])

    ep = st.export(whole, (torch.randn(6, 3),), dynamic_shapes=({0: Dim("n", min=2,
                                                                        max=16)},))
    _check(ep, whole, [(torch.randn(n, 3),) for n in (2, 3, 7, 16)])
