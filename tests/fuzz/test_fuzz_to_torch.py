"""The fuzzer's ``to_torch`` mode (tests/fuzz/converted.py; the long run:
``benchmarks/fuzz.py --to-torch SHARE``): converted programs run on the engine's inputs
and are held to eager's results and to ``ep.module()``'s refusals."""

from __future__ import annotations

import torch

import safetrace as st
from safetrace import Dim
from tests.fuzz.converted import BAD, WAYS, classify, counter
from tests.fuzz.engine import fuzz, run_input, shrink
from tests.fuzz.test_fuzz_short import OPEN


class _Sum(torch.nn.Module):
    def forward(self, x):
        return (x.sum(0) * 2,)


def _exported():
    d = Dim("d", min=2, max=8)
    return st.export(_Sum(), (torch.randn(3, 4),), dynamic_shapes=({0: d},))


def test_classify_tells_wrong_narrower_wider_and_late_refusals():
    """Stand-in converted modules: another result is WRONG, a guard where ep.module()
    computes is an over-rejection, an operator failing there a crash, eager's result where
    ep.module() refuses an under-rejection; a refusal after operators ran where
    ep.module() refused before any, a late refusal."""
    ep, eager = _exported(), _Sum()
    inside, outside = (torch.randn(5, 4),), (torch.randn(9, 4),)
    ep_in = run_input(eager, ep.module(), inside)
    ep_out = run_input(eager, ep.module(), outside)
    assert ep_in[0] == "ok" and ep_out[0] == "rejected"
    gm = ep.to_torch().module()

    def wrong(x):
        return (x.sum(0) * 3,)

    def guard(x):
        raise AssertionError("Guard failed: x.size()[0] <= 4")

    def index(x):
        raise IndexError("list index out of range")

    assert classify(eager, *ep_in, gm, gm, inside)[0] == "ok"
    assert classify(eager, *ep_out, gm, gm, outside)[0] == "ok"
    assert classify(eager, *ep_in, wrong, gm, inside)[0] == "WRONG"
    assert classify(eager, *ep_in, guard, gm, inside)[0] == "over_rejection"
    assert classify(eager, *ep_in, index, gm, inside)[0] == "crash"
    assert classify(eager, *ep_out, eager, gm, outside)[0] == "under_rejection"

    late = torch.fx.symbolic_trace(_Late())
    assert classify(eager, *ep_out, late, late, outside)[0] == "late_refusal"
    assert classify(eager, *ep_out, gm, gm, outside)[0] == "ok"   # torch's checks: first


class _Late(torch.nn.Module):
    """Sums, then checks the size: a refusal after an operator ran."""

    def forward(self, x):
        s = torch.ops.aten.sum.dim_IntList(x, [0])
        torch.ops.aten._assert_scalar.default(torch.ops.aten.sym_size.int(x, 0) <= 8, "d <= 8")
        return (s * 2,)


def test_short_to_torch_run_finds_no_wrong_result_or_crash():
    """A fixed small run converting every exported program both ways (``to_torch()``,
    ``st.load(st.save bytes).to_torch()``): no WRONG, crash or conversion crash, and the
    converted modules ran on admitted and refused inputs alike."""
    stats = fuzz(seed=34, programs=6, n_inputs=8, avoid=OPEN, to_torch_p=1.0)
    c = stats.counts
    bad = [shrink(f).report() for f in stats.findings
           if f.kind.split(" ")[0] in WAYS and f.kind.split(" ")[1] in BAD][:3]
    assert not bad, stats.line() + "\n\n" + "\n".join(bad)
    for way in WAYS:
        assert c[counter(way, "converted")] >= 4, stats.line()
        assert c[counter(way, "ok")] >= 30, stats.line()
    assert c["rejected"] >= 5, stats.line()
