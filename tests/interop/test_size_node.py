"""The conversion's own SymNodes (``interop/size_node.py``) answer ``expr`` and
``maybe_as_int()`` without sympy's ``is_number`` walk; their answers must be torch's
``SymNode``'s, before and after the ShapeEnv makes a replacement, and the program must
behave as before: numerics at other sizes, out-of-space inputs refused, torch's tools."""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.sym_node import SymNode

import safetrace as st
from safetrace.interop.size_node import SizeNode


class _Strided(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.pool = torch.nn.MaxPool2d(2)

    def forward(self, x):
        return torch.relu(self.pool(self.conv(x))) * 2


def _program():
    h, w = st.Dim("h", min=8, max=64), st.Dim("w", min=8, max=64)
    return st.export(_Strided().eval(), (torch.randn(2, 3, 16, 12),),
                     dynamic_shapes={"x": {0: st.Dim("n", min=1, max=8), 2: h, 3: w}})


def _size_nodes(tep):
    out = {}
    for node in tep.graph.nodes:
        v = node.meta.get("val")
        if isinstance(v, torch.Tensor):
            for s in (*v.shape, *v.stride()):
                if isinstance(s, torch.SymInt):
                    out[id(s.node)] = s.node
    return list(out.values())


def _torchs(node):
    return SymNode.expr.fget(node), SymNode.maybe_as_int(node)


def test_size_nodes_answer_as_torchs_symnode(monkeypatch):
    monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0")  # (the default path's values)
    ep = _program()
    ep.to_torch()  # (torch's path the first time for each operation, then the direct one)
    tep = ep.to_torch()
    nodes = _size_nodes(tep)
    ours = [n for n in nodes if isinstance(n, SizeNode)]
    compound = [n for n in ours if not n._expr.is_symbol]
    assert ours and compound  # (the spatial sizes: floor divisions of the input's)
    for n in nodes:
        assert (n.expr, n.maybe_as_int()) == _torchs(n)
        # (an int's node answers its type tests from the class: torch's answers)
        assert (n.is_int(), n.is_float(), n.is_bool()) == (
            SymNode.is_int(n), SymNode.is_float(n), SymNode.is_bool(n))
    # a replacement made later (a guard pins the height to 16): torch's own code answers
    h = next(s for s in tep.graph.find_nodes(op="placeholder")[-1].meta["val"].shape[2:3])
    assert bool(h == 16)
    env = h.node.shape_env
    assert env._replacements_version_counter > 0
    for n in ours:
        assert (n.expr, n.maybe_as_int()) == _torchs(n)
    assert any(n.maybe_as_int() is not None for n in compound)


def test_program_with_size_nodes_runs_and_refuses(monkeypatch):
    monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0")
    ep = _program()
    ep.to_torch()
    tep = ep.to_torch()
    model = ep.module()
    mod = tep.module()
    for shape in ((1, 3, 8, 8), (3, 3, 21, 9), (8, 3, 64, 17)):
        x = torch.randn(*shape)
        torch.testing.assert_close(mod(x), model(x))
    with pytest.raises(Exception):
        mod(torch.randn(2, 3, 7, 12))  # h below its minimum
    core = tep.run_decompositions()
    x = torch.randn(2, 3, 30, 14)
    torch.testing.assert_close(core.module()(x), model(x))
