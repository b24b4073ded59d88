"""torch.distributed collectives (issue 21): the functional ones
(``torch.distributed._functional_collectives``) and the in-place ``dist.*`` calls are
recorded as torch.export records them, ``_c10d_functional`` nodes with shape rules and a
``wait_tensor`` (a ``copy_`` into the output for the in-place calls).  Numerics run in a
single-process gloo group (world size 1) against eager and torch.export's program, at
other sizes; shapes for larger groups are checked against torch's meta kernels."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import safetrace as st

from tests.export.dropin_check import check_program

dist = torch.distributed
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available in this torch build",
                allow_module_level=True)

import torch.distributed._functional_collectives as funcol  # noqa: E402

c10d = torch.ops._c10d_functional


@pytest.fixture(scope="module", autouse=True)
def _group():
    if dist.is_initialized():
        yield
        return
    dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    try:
        yield
    finally:
        dist.destroy_process_group()


class Functional(nn.Module):
    def forward(self, x):
        g = dist.group.WORLD
        a = funcol.all_reduce(x, "sum", g)
        b = funcol.all_gather_single(x, 0, g)
        c = funcol.reduce_scatter_single(x * 2, "sum", 0, g)
        d = funcol.all_to_all_single(x, None, None, g)
        return a + 1, b, c, d


class InPlace(nn.Module):
    def forward(self, x):
        y = x * 2
        dist.all_reduce(y)
        out = torch.empty_like(x)
        dist.all_gather_into_tensor(out, x + 1)
        scat = torch.empty_like(x)
        dist.reduce_scatter_tensor(scat, x - 1)
        swapped = torch.empty_like(x)
        dist.all_to_all_single(swapped, x * 3)
        parts = [torch.empty_like(x)]
        dist.all_gather(parts, x.cos())
        return y, out, scat, swapped, parts[0]


CASES = {"functional": Functional, "in-place": InPlace}


@pytest.mark.parametrize("name", sorted(CASES))
def test_collectives_export_like_torch(name: str) -> None:
    if name == "functional" and not hasattr(funcol, "all_gather_single"):
        pytest.skip(f"torch {torch.__version__} has no funcol.all_gather_single (torch 2.13 has)")
    model = CASES[name]()
    x = torch.randn(4, 3)
    spec = ({0: torch.export.Dim("n", max=64)},)
    ep = st.export(model, (x,), dynamic_shapes=spec)
    ref = torch.export.export(model, (x,), dynamic_shapes=spec)
    ours = {n.target for n in ep.graph.nodes if n.op == "call_function"}
    theirs = {n.target for n in ref.graph.nodes if n.op == "call_function"}
    collectives = {t for t in theirs if getattr(t, "namespace", "") == "_c10d_functional"}
    assert collectives and collectives <= ours
    inputs = [(x,)] + [(torch.randn(n, 3),) for n in (0, 1, 7, 64)]
    check_program(ep, model, inputs, [(torch.randn(65, 3),), (torch.randn(4, 2),)], ref=ref)
    check_program(ep, ep.to_torch().module(), inputs)  # converted: the same


class Sized(nn.Module):
    """The ops themselves with a group of `size` (not run: the group here has one rank)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def forward(self, x):
        n, name = self.size, dist.group.WORLD.group_name
        return (c10d.all_gather_into_tensor(x, n, name),
                c10d.reduce_scatter_tensor(x, "sum", n, name),
                c10d.all_to_all_single(x, [1] * x.shape[0], [1] * x.shape[0], name))


@pytest.mark.parametrize("size", [2, 4])
def test_shapes_for_a_larger_group_are_torchs(size: int) -> None:
    x = torch.randn(8, 3)
    ep = st.export(Sized(size), (x,))
    out = next(n for n in ep.graph.nodes if n.op == "output").args[0]
    want = Sized(size)(torch.empty(8, 3, device="meta"))  # torch's meta kernels
    assert [tuple(n.meta["val"].shape) for n in out] == [tuple(t.shape) for t in want]
    with pytest.raises(st.OpShapeError, match="multiple of group_size"):
        st.export(Sized(size), (torch.randn(2 * size + 1, 3),))


class Async(nn.Module):
    def forward(self, x):
        y = x.clone()
        work = dist.all_reduce(y, async_op=True)
        work.wait()
        return y


def test_async_op_is_refused_with_the_fix() -> None:
    x = torch.randn(4, 3)
    torch.testing.assert_close(Async()(x), x)  # eager runs it
    with pytest.raises(st.UnsupportedOpError, match=r"torch.distributed.all_reduce\(\.\.\., "
                                                    r"async_op=True\)(.|\n)*Fix: call it "
                                                    r"with async_op=False"):
        st.export(Async(), (x,))



_FRESH = """
import sys
import torch
import torch.distributed as dist
from torch import nn
import safetrace as st
st.export  # (the exporter's modules)
print("after-import", "torch.distributed._functional_collectives" in sys.modules)
{inplace}
dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
x = torch.randn(4, 3)
ep = st.export(InPlace(), (x,), dynamic_shapes=({{0: st.Dim("n", max=64)}},))
print("waits", sum(n.target is torch.ops._c10d_functional.wait_tensor.default
                   for n in ep.graph.nodes))
for n in (0, 5):
    x = torch.randn(n, 3)
    for got, want in zip(ep.module()(x), InPlace()(x)):
        torch.testing.assert_close(got, want)
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_a_fresh_process_imports_funcol_only_for_an_export_in_a_group() -> None:
    """torch's functional collectives (~40 ms to import) are not imported with safetrace's
    exporter; an export's session imports them once a process group exists, before it
    installs the shim that waits on their results: the in-place calls export with a
    wait_tensor per collective, as above, in a process that never imported them itself
    (this module imports them: the child runs InPlace's source alone)."""
    import inspect
    import subprocess
    import sys
    from pathlib import Path

    code = _FRESH.format(inplace=inspect.getsource(InPlace))
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=root, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "after-import False" in out.stdout
    assert "waits 5" in out.stdout
