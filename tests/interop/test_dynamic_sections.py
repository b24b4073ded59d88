"""``tensor_split(x, k, dim)`` into sections of a dynamic size through the tools that retrace
``ep.to_torch()``: the conversion writes each piece as its slice with bounds computed in the
graph (``interop/sections.py``), so torch's ``run_decompositions`` (and ONNX, ExecuTorch,
AOTInductor) cut every size as eager does. Before, torch's decomposition of
``aten.tensor_split.sections`` cut by the example's remainder (5 rows as 2 + 2 at an even
example) and the deploy helpers refused the program (``retrace_specializes``)."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st
from safetrace import Dim


class Halves(torch.nn.Module):
    def forward(self, x):
        a, b = x.tensor_split(2, 0)
        return a * 2, b + 1


class Thirds(torch.nn.Module):  # (a split of dim 1; piece 1 read for its size only)
    def forward(self, x):
        a, b, c = x.tensor_split(3, 1)
        return a.sum(1) - c.sum(1) * b.shape[1], c


class InBranch(torch.nn.Module):  # (a split inside a cond branch)
    def forward(self, x):
        def big(u):
            a, b = u.tensor_split(2, 0)
            return a.sum(0) - b.sum(0)
        return torch.cond(x.shape[0] > 4, big, lambda u: u.sum(0), (x,))


CASES = {
    "halves": (Halves(), (6, 3), {0: Dim("n", max=16)}, lambda n: (n, 3)),
    "thirds": (Thirds(), (2, 6), {1: Dim("m", max=16)}, lambda n: (2, n)),
    "in_branch": (InBranch(), (6, 3), {0: Dim("n", max=16)}, lambda n: (n, 3)),
}


def _same(got, want):
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    return len(got) == len(want) and all(
        g.shape == w.shape and torch.allclose(g, w) for g, w in zip(got, want))


@pytest.fixture(autouse=True)
def _default_conversion(monkeypatch):
    # (verify=True runs torch's meta kernel of tensor_split, which sizes piece 0
    # Min(n, n//2) where ours is (n + 1)//2: its shape check refuses; test_branch_view_writes)
    monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0")


@pytest.mark.parametrize("case", sorted(CASES))
def test_run_decompositions_cuts_every_size_as_eager(case):
    model, example, dims, shape = CASES[case]
    ep = st.export(model, (torch.randn(*example),), dynamic_shapes=(dims,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tep = ep.to_torch()
        decomposed = tep.run_decompositions()
    assert not any(n.target is torch.ops.aten.tensor_split.sections
                   for m in tep.graph_module.modules() if isinstance(m, torch.fx.GraphModule)
                   for n in m.graph.nodes)
    for n in range(0, 11):
        x = torch.randn(*shape(n))
        want = model(x)
        for program in (ep.module(), tep.module(), decomposed.module()):
            assert _same(program(x), want), (case, n)
    with pytest.raises(Exception):
        decomposed.module()(torch.randn(*shape(17)))  # (above the Dim's maximum)


def test_onnx_accepts_and_cuts_every_size_as_eager(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    ep = st.export(Halves(), (torch.randn(6, 3),), dynamic_shapes=({0: Dim("n", max=16)},))
    st.to_onnx(ep, str(tmp_path / "m.onnx"))   # (refused before: retrace_specializes)
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"))
    name = sess.get_inputs()[0].name
    for n in range(0, 11):
        x = torch.randn(n, 3)
        got = [torch.from_numpy(a) for a in sess.run(None, {name: x.numpy()})]
        assert _same(got, Halves()(x)), n
    with pytest.raises(Exception):
        sess.run(None, {name: torch.randn(17, 3).numpy()})


@pytest.mark.slow
def test_executorch_and_aoti_cut_every_size_as_eager(tmp_path):
    runtime = pytest.importorskip("executorch.runtime")
    ep = st.export(Halves(), (torch.randn(6, 3),), dynamic_shapes=({0: Dim("n", max=16)},))
    st.to_executorch(ep, str(tmp_path / "m.pte"))
    forward = runtime.Runtime.get().load_program(str(tmp_path / "m.pte")).load_method(
        "forward")
    pkg = st.to_aoti(ep, str(tmp_path / "m.pt2"))
    runner = torch._inductor.aoti_load_package(pkg)
    for n in range(1, 11):  # (0 rows: ExecuTorch's portable kernels refuse empty outputs)
        x = torch.randn(n, 3)
        assert _same(forward.execute([x]), Halves()(x)), n
    for n in range(0, 11):
        x = torch.randn(n, 3)
        assert _same(runner(x), Halves()(x)), n
