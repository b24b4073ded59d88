"""``ep.to_torch()`` of in-place writes inside a size split's branches (``torch.cond``) that
the functional form would get wrong: a write through one piece of a view returning several
(``tensor_split``, ``chunk``, ``split``, ``unbind``: no scatter operator reaches the base),
a piece taken before a write into its base and read after it, and writes whose source
aliases the written tensor (eager reads the source while writing: ``index_add_`` of
``v[:1].expand(..)`` into ``v`` adds the already-updated row).  Each converted program
matches eager at the example, at other sizes (0 and 1 where the space holds them), and
refuses an input outside the declared space before running.
(tests/fuzz/test_to_torch_branch_writes.py holds the two fuzz finds.)"""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st


def _split_at_one(v):
    # reads rows 0..min(n, 2): a size split at n == 1 (a cond in the program)
    return sum(v[i] for i in range(min(v.shape[0], 2))) + v.sum()


def _split_le_one(v):
    # sums the dims longer than 1: a size split at n <= 1 (0 on its side)
    return v.sum(dim=[i for i, n in enumerate(v.shape) if n > 1], keepdim=True)


class ThroughPiece(torch.nn.Module):
    def __init__(self, piece, split=_split_at_one):
        super().__init__()
        self.piece, self.split = piece, split

    def forward(self, y):
        v = y.clone()
        p = self.piece(v)
        return v, p, self.split(v)


class PieceReadAfterBaseWrite(torch.nn.Module):
    def forward(self, y):
        v = y.clone()
        first = v.split(1, 0)[0]
        v.mul_(3)
        return first + 0, _split_at_one(v)


class AliasedSource(torch.nn.Module):
    def __init__(self, write):
        super().__init__()
        self.write = write

    def forward(self, y):
        v = y.clone()
        self.write(v)
        return v, _split_at_one(v)


_I = torch.tensor
_PIECES = {  # (a piece of the first rows or the first column, written with -1 or 0)
    "tensor_split": lambda v: v.tensor_split(2, 0)[0].mul_(-1),
    "chunk": lambda v: v.chunk(2, 0)[0].mul_(-1),
    "split": lambda v: v.split(1, 0)[0].mul_(-1),
    "split_with_sizes": lambda v: v.split([1, v.shape[0] - 1], 0)[0].mul_(-1),
    "unbind": lambda v: v.unbind(1)[0].mul_(-1),
    "unbind_index_copy_": lambda v: v.unbind(1)[1].index_copy_(0, _I([0]), _I([9.])),
    "chunk_index_fill_": lambda v: v.chunk(2, 1)[1].index_fill_(0, _I([0]), 0),
    "narrow": lambda v: v.narrow(0, 0, 1).mul_(-1),
    "select": lambda v: v.select(0, 0).mul_(-1),
}

_WRITES = {  # (each source a view of the written tensor; eager reads it while writing)
    "index_add_": lambda v: v.index_add_(0, _I([0, 0]), v[:1].expand(2, *v.shape[1:]),
                                         alpha=2),
    "scatter_add_": lambda v: v.scatter_add_(0, torch.zeros(2, v.shape[1], dtype=torch.long),
                                             v[:1].expand(2, *v.shape[1:])),
    "index_put_accumulate": lambda v: v.index_put_((_I([0, 0]),),
                                                   v[:1].expand(2, *v.shape[1:]),
                                                   accumulate=True),
    "index_add_of_piece": lambda v: v.index_add_(0, _I([0, 0]),
                                                 v.split(1, 0)[0].expand(2, *v.shape[1:])),
}


def _converted(model, example, spec):
    ep = st.export(model, (example,), dynamic_shapes=spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ep, ep.to_torch()


def _check(model, example, spec, others, outside, retraced=False):
    ep, tep = _converted(model, example, spec)
    module = tep.module()
    for x in (example, *others):
        torch.testing.assert_close(module(x.clone()), model(x.clone()))
        torch.testing.assert_close(ep.module()(x.clone()), model(x.clone()))
    with pytest.raises(Exception):
        module(outside)
    if retraced:  # torch's own functionalizing retrace (ONNX, ExecuTorch, AOTInductor's)
        decomposed = tep.run_decompositions().module()
        for x in (example, *others):
            torch.testing.assert_close(decomposed(x.clone()), model(x.clone()))


# (narrow: a branch returning a view of another output, which torch's retrace of
# the cond refuses, "might be aliasing the input or the output"; tensor_split: torch's
# decomposition of a symbolic tensor_split specializes to the example's parity, which the
# deploy tools refuse: test_deploy_refuses_a_symbolic_tensor_split)
_NOT_RETRACED = {"narrow", "tensor_split"}


def _unverified(monkeypatch, name, at_zero=False):
    if name == "tensor_split" or at_zero:
        # (torch's meta rules give piece 0 of a symbolic tensor_split Min(n, n//2), not
        # (n + 1)//2, and a cond output of a chunk whose side holds 0 Min(n, (n + 1)//2),
        # not our u0: the shape check of verify=True refuses; the default path converts)
        monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0")


@pytest.mark.parametrize("name", sorted(_PIECES))
def test_write_through_piece(name, monkeypatch):
    _unverified(monkeypatch, name)
    _check(ThroughPiece(_PIECES[name]), torch.randn(4, 2), ({0: st.Dim("n", min=1, max=64)},),
           [torch.randn(1, 2), torch.randn(3, 2), torch.randn(7, 2)], torch.randn(0, 2),
           retraced=name not in _NOT_RETRACED)


@pytest.mark.parametrize("name", ["tensor_split", "chunk"])
def test_write_through_piece_at_zero(name, monkeypatch):
    _unverified(monkeypatch, name, at_zero=True)
    _check(ThroughPiece(_PIECES[name], _split_le_one), torch.randn(4, 2),
           ({0: st.Dim("n", min=0, max=64)},),
           [torch.randn(0, 2), torch.randn(1, 2), torch.randn(3, 2)], torch.randn(65, 2))


def test_piece_read_after_its_base_is_written():
    _check(PieceReadAfterBaseWrite(), torch.arange(1., 5.), ({0: st.Dim("n", min=1, max=64)},),
           [torch.arange(1., 2.), torch.arange(1., 8.)], torch.ones(0))


@pytest.mark.parametrize("name", sorted(_WRITES))
def test_source_aliasing_the_written_tensor(name):
    _check(AliasedSource(_WRITES[name]), torch.randn(3, 4), ({0: st.Dim("n", min=1, max=64)},),
           [torch.randn(1, 4), torch.randn(2, 4), torch.randn(7, 4)], torch.randn(0, 4))


class TopAliasedIndexAdd(torch.nn.Module):  # (no split: the write in the top graph)
    def forward(self, y):
        v = y.clone()
        v.index_add_(0, _I([0, 0]), v[:1].expand(2, *v.shape[1:]), alpha=2)
        return v


@pytest.mark.parametrize("model", [TopAliasedIndexAdd(), AliasedSource(_WRITES["index_add_"])])
def test_deploy_refuses_a_write_reading_its_own_tensor(model):
    # ONNX, ExecuTorch and AOTInductor retrace into functional operators, which read the
    # aliased source before the write (torch's run_decompositions: 5x row 0, eager 9x)
    ep = st.export(model, (torch.ones(2, 3),), dynamic_shapes=({1: st.Dim("n")},))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.testing.assert_close(ep.to_torch().module()(torch.ones(2, 5)),
                                   model(torch.ones(2, 5)))
    for deploy in (st.to_onnx, st.to_executorch, st.to_aoti):
        with pytest.raises(st.errors.ConversionError, match="writes a tensor in place while "
                                                            "reading it"):
            deploy(ep)


def test_deploy_keeps_a_write_reading_a_copy():
    class Copied(torch.nn.Module):
        def forward(self, y):
            v = y.clone()
            v.index_add_(0, _I([0, 0]), v[:1].clone().expand(2, *v.shape[1:]), alpha=2)
            return v

    ep = st.export(Copied(), (torch.ones(2, 3),), dynamic_shapes=({1: st.Dim("n")},))
    program = st.to_onnx(ep)
    assert program is not None


class Sections(torch.nn.Module):
    def forward(self, y):
        return y.tensor_split(2, 0)[0] * 2


def test_symbolic_tensor_split_retraces_as_eager(monkeypatch):
    _unverified(monkeypatch, "tensor_split")
    # torch's decomposition of tensor_split(y, 2) at the even example cut every size in
    # n // 2 pieces (1 row of 3, eager 2), and the deploy tools refused; the conversion now
    # writes the pieces as slices (interop/sections.py: tests/interop/test_dynamic_sections)
    ep = st.export(Sections(), (torch.randn(4, 2),), dynamic_shapes=({0: st.Dim("n", min=1)},))
    x = torch.randn(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tep = ep.to_torch()
        assert tep.module()(x).shape == Sections()(x).shape == (2, 2)
        assert torch.equal(tep.run_decompositions().module()(x), Sections()(x))
    assert st.to_onnx(ep) is not None
    static = st.export(Sections(), (torch.randn(3, 2),))
    assert st.to_onnx(static) is not None  # (a static size: torch's decomposition is exact)
