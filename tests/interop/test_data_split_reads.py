"""A data split's reads in ``to_torch()``: the program reads ``x[mask]``'s count in the main
graph (the test) and again in each ``torch.cond`` branch; each branch's check on its own
read (``min(u0, 2) >= 2`` where the test holds) is a fact of that branch only.  Bound to
one torch symbol, the true branch's check narrowed the main graph's read and the false
branch's (``range_constraints`` ``u0: [2, oo]``, an AOTI package refusing ``u0 = 0``, the
false branch's ``x[mask][:2]`` as ``f32[2]``), session 33's finding."""

from __future__ import annotations

import io
import warnings

import pytest
import torch

import safetrace as st
from safetrace import Dim


class _FirstTwoKept(torch.nn.Module):
    def forward(self, x):
        v1 = x.flatten()[x.flatten() > 0][:2]
        return v1 * 2 if v1.shape[0] > 1 else v1.flip(0), x + 1


def _export() -> st.ExportedProgram:
    torch.manual_seed(0)
    return st.export(_FirstTwoKept(), (torch.randn(6, 3, 2),),
                     dynamic_shapes=({0: Dim.AUTO, 2: Dim.AUTO},))


def _converted(ep: st.ExportedProgram, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", st.ConversionWarning)
        return ep.to_torch(**kwargs)


def _inputs() -> list:
    """Inputs whose positive count is 0, 1, 2 and more, at sizes 0 and 1 too."""
    torch.manual_seed(1)
    one = -torch.ones(2, 3, 2)
    one[1, 2, 0] = 3.0
    return [torch.randn(0, 3, 2), -torch.ones(1, 3, 1), torch.tensor([[[1.0], [-1.0], [-2.0]]]),
            one, torch.randn(5, 3, 2).abs() + 0.1, torch.randn(7, 3, 4)]


def _main_read(tep) -> object:
    """torch's symbol for the count the converted program's main graph reads."""
    index = next(n for n in tep.graph_module.graph.nodes
                 if n.target is torch.ops.aten.index.Tensor)
    return index.meta["val"].shape[0].node.expr


def _same_as_eager(run) -> None:
    m = _FirstTwoKept()
    for x in _inputs():
        for got, want in zip(run(x), m(x)):
            torch.testing.assert_close(got, want)


@pytest.mark.parametrize("verify", [False, True])
def test_a_branch_check_does_not_narrow_the_main_graphs_read(verify):
    tep = _converted(_export(), verify=verify)
    u = _main_read(tep)
    assert tep.range_constraints[u].lower == 0, tep.range_constraints
    _same_as_eager(tep.module())
    with pytest.raises(Exception):
        tep.module()(torch.randn(2, 4, 2))  # (dim 1 is 3: out of the declared space)


@pytest.mark.parametrize("verify", [False, True])
def test_the_false_branch_reads_its_own_count(verify):
    """The false branch's ``x[mask][:2]`` has 0 or 1 rows: never torch's static 2 (the
    true branch's answer), which a compiler would build its kernels for.  (The default
    path, fake values from our metadata, matched every branch's read with the main
    graph's torch symbol; ``verify=True`` runs torch's kernels, which make their own.)"""
    tep = _converted(_export(), verify=verify)
    false = tep.graph_module.false_graph_0
    shapes = [tuple(n.meta["val"].shape) for n in false.graph.nodes
              if n.op == "call_function" and isinstance(n.meta.get("val"), torch.Tensor)
              and n.meta["val"].dim() == 1 and n.target is not torch.ops.aten.flatten.using_ints
              and n.target is not torch.ops.aten.gt.Scalar]
    assert shapes and all(not isinstance(s[0], int) for s in shapes), shapes


def test_a_loaded_split_converts():
    """``st.load(...).to_torch()`` failed (``KeyError: sym_size_int``): the loader's budget
    check before ``x[mask]`` counted its result by the ``sym_size`` the graph reads after
    it, and a branch's checks read the main graph's input sizes.  (The default path, fake
    values from the program's metadata: ``verify=True`` refuses it, the file recording the
    true branch's ``x[mask][:2]`` as ``[2]``, true where the branch runs, which torch's
    kernel learns only at the branch's assertion after it.)"""
    buf = io.BytesIO()
    st.save(_export(), buf)
    loaded = st.load(buf.getvalue())
    tep = _converted(loaded, verify=False)
    assert tep.range_constraints[_main_read(tep)].lower == 0, tep.range_constraints
    _same_as_eager(tep.module())
    _same_as_eager(loaded.module())
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.randn(2, 4, 2))


@pytest.mark.slow
def test_the_aoti_package_takes_every_count(tmp_path, monkeypatch):
    """The package refused ``u0 = 0`` ("Expected u0 >= 2 but received 0") where
    ``ep.module()`` and eager compute it (the conversion's default path, as users get it)."""
    monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0")
    path = st.to_aoti(_export(), tmp_path / "split.pt2")
    _same_as_eager(torch._inductor.aoti_load_package(path))
