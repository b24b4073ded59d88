"""A mask read twice for its count (``x[mask]`` then ``mask.nonzero()``): torch's fake
kernels give both one unbacked size, bound by the first op.  The converted program binds
the second op's rows to nothing, as torch.export's own program does: torch's retrace
(``run_decompositions``) of it asserted ``u3 -> u0`` (torch's test_unbacked_slice).  A
mask written in place between the two reads has two counts on both sides."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st
from tests.helpers import assert_close

warnings.filterwarnings("ignore", category=FutureWarning)  # (torch._check_is_size)


class _TopK(torch.nn.Module):  # (torch's test_unbacked_slice, with a dynamic row count)
    def forward(self, scores, score_thr, topk):
        valid_mask = scores > score_thr
        scores = scores[valid_mask]
        valid_idxs = torch.nonzero(valid_mask)
        num_topk = torch.minimum(topk, torch.tensor(valid_idxs.shape[0])).item()
        torch._check_is_size(num_topk)
        torch._check(scores.shape[0] >= num_topk)
        scores, idxs = scores.sort(descending=True)
        topk_idxs = valid_idxs[idxs[:num_topk]]
        keep_idxs, labels = topk_idxs.unbind(dim=1)
        return scores[:num_topk], labels, keep_idxs


class _Rewritten(torch.nn.Module):  # the mask changes between its two reads
    def forward(self, x):
        m = x > 0
        kept = x[m]
        m.logical_not_()
        return kept.sum(), m.nonzero()


def _bindings(tep) -> list[str]:
    return [n.name for n in tep.graph.nodes if n.meta.get("unbacked_bindings")]


def _topk():
    model = _TopK()
    rows = st.Dim("rows", min=0, max=16)
    ep = st.export(model, (torch.rand(4, 3), 0.15, torch.tensor(4)),
                   dynamic_shapes=({0: rows}, None, None))
    return model, ep, ep.to_torch()


def test_one_count_per_mask():
    model, ep, tep = _topk()
    assert "nonzero" not in _bindings(tep) and "index" in _bindings(tep)
    _check_topk(model, ep, tep)


@pytest.mark.slow
def test_one_count_per_mask_survives_torch_retrace():
    model, ep, tep = _topk()
    _check_topk(model, ep, tep, tep.run_decompositions())


def _check_topk(model, *programs):
    torch.manual_seed(0)
    for n, k in [(4, 4), (0, 3), (1, 1), (7, 0), (16, 20), (5, 2)]:
        scores = torch.rand(n, 3)
        want = model(scores, 0.15, torch.tensor(k))
        for prog in programs:
            for a, b in zip(prog.module()(scores, 0.15, torch.tensor(k)), want):
                assert_close(a, b)
    for prog in programs:
        for bad in (torch.rand(17, 3), torch.rand(4, 2)):
            try:
                prog.module()(bad, 0.15, torch.tensor(4))
            except Exception:  # noqa: BLE001 - each side's own error class
                continue
            raise AssertionError(f"{tuple(bad.shape)} was run")


def test_a_mask_written_between_reads_keeps_two_counts():
    model, ep, tep = _rewritten()
    assert len(_bindings(tep)) == 2
    _check_rewritten(model, ep, tep)


@pytest.mark.slow
def test_a_mask_written_between_reads_after_torch_retrace():
    model, ep, tep = _rewritten()
    _check_rewritten(model, tep.run_decompositions())


def _rewritten():
    model = _Rewritten()
    ep = st.export(model, (torch.randn(5),), dynamic_shapes=({0: st.Dim("n", max=32)},))
    return model, ep, ep.to_torch()


def _check_rewritten(model, *programs):
    for n in (5, 0, 1, 9):
        x = torch.randn(n)
        want = model(x)
        for prog in programs:
            got = prog.module()(x)
            assert_close(got[0], want[0])
            assert torch.equal(got[1], want[1])
    for prog in programs:
        with pytest.raises(Exception):  # noqa: B017, PT011 - each side's own error class
            prog.module()(torch.randn(33))
