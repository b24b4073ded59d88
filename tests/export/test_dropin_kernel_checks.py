"""Requirements torch's kernel checks and its meta function does not (issue 21, torch's
test_multinomial_dynamic): ``torch.multinomial(x, n)`` needs ``0 < n`` and, without
replacement, ``n <= x.shape[-1]``.  torch.export's program accepts every size and its
kernel raises eager's RuntimeError when run; ours refuses before computing (a run-time
check, nothing assumed: the ranges stay torch's), with a RuntimeError naming the kernel's
words, in ``ep.module()`` and in ``ep.to_torch().module()`` (an in-graph assert, not the
AssertionError of torch's guards), also after ``st.save`` / ``st.load``."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn
from torch.export import Dim

import safetrace as st

DYN = Dim.DYNAMIC


class Sample(nn.Module):
    def forward(self, x, y):
        return torch.multinomial(x, y.shape[0])


def _probs(k: int, nonzero: int) -> torch.Tensor:
    """`k` categories, the first `nonzero` of them possible: drawing `nonzero` without
    replacement gives each of those once (sorted: a known answer)."""
    p = torch.zeros(k)
    p[:nonzero] = 1.0
    return p


def _n(n: int) -> torch.Tensor:
    return torch.ones(n, dtype=torch.int64)


def _ranges(ep: Any) -> list:
    return sorted((int(v.lower), str(v.upper)) for v in ep.range_constraints.values())


@pytest.mark.parametrize("spec", [((DYN,), (DYN,)), ((Dim("a"),), (Dim("b"),))],
                         ids=["dynamic", "named"])
def test_the_kernels_checks_raise_its_runtime_error(spec: Any, tmp_path: Any) -> None:
    args = (_probs(4, 4), _n(2))
    ref = torch.export.export(Sample(), args, dynamic_shapes=spec)
    ours = st.export(Sample(), args, dynamic_shapes=spec)
    conv = ours.to_torch()
    # nothing assumed: torch's ranges for named Dims (its Dim.DYNAMIC ones start at 2)
    assert _ranges(conv) == [(0, "int_oo"), (0, "int_oo")]
    if isinstance(spec[0][0], Dim):
        assert _ranges(conv) == _ranges(ref)
    st.save(ours, tmp_path / "p.st")
    modules = [ours.module(), conv.module(), st.load(tmp_path / "p.st").module()]
    for k, n in [(4, 4), (6, 3), (1, 1), (5, 1)]:  # (all `n` possible categories drawn)
        want = torch.sort(Sample()(_probs(k, n), _n(n))).values
        for m in modules + [ref.module()]:
            assert torch.equal(torch.sort(m(_probs(k, n), _n(n))).values, want)
    for k, n, words in [(4, 5, "cannot sample n_sample > prob_dist.size"), (1, 2, "> prob"),
                        (0, 1, "> prob"), (3, 0, "n_sample <= 0")]:
        with pytest.raises(RuntimeError, match=words):  # eager's own
            Sample()(_probs(k, 0) + 1, _n(n))
        with pytest.raises(RuntimeError, match=words):
            ref.module()(_probs(k, 0) + 1, _n(n))
        for m in modules:  # refused before computing, with the kernel's words
            with pytest.raises(RuntimeError, match=words) as got:
                m(_probs(k, 0) + 1, _n(n))
            assert not isinstance(got.value, AssertionError) or \
                isinstance(got.value, st.InputMismatchError), type(got.value)
    with pytest.raises(st.InputMismatchError, match="cannot sample"):
        modules[0](_probs(4, 4), _n(5))


def test_a_static_count_checks_the_dynamic_categories() -> None:
    """n static (2) and x's dim a named Dim from 0: torch exports with no range narrowed
    (its kernel raises below 2); ours keeps x's range and checks x.shape[0] >= 2."""
    args, spec = (_probs(4, 4), _n(2)), ((Dim("a"),), None)
    ref = torch.export.export(Sample(), args, dynamic_shapes=spec)
    ours = st.export(Sample(), args, dynamic_shapes=spec)
    conv = ours.to_torch()
    assert _ranges(conv) == _ranges(ref) == [(0, "int_oo")]
    for m in (ours.module(), conv.module(), ref.module()):
        assert torch.equal(torch.sort(m(_probs(3, 2), _n(2))).values, torch.tensor([0, 1]))
        with pytest.raises(RuntimeError, match="cannot sample n_sample > prob"):
            m(_probs(1, 1), _n(2))
        with pytest.raises(AssertionError, match="Guard failed|must equal|y.shape"):
            m(_probs(4, 4), _n(3))  # the static count: torch's guard and ours


def test_with_replacement_needs_no_check() -> None:
    class WithReplacement(nn.Module):
        def forward(self, x, y):
            return torch.multinomial(x, y.shape[0], replacement=True)

    ours = st.export(WithReplacement(), (_probs(2, 1), _n(3)), dynamic_shapes=((DYN,), (DYN,)))
    assert "cannot sample n_sample >" not in str(ours)
    for m in (ours.module(), ours.to_torch().module()):
        assert torch.equal(m(_probs(2, 1), _n(5)), torch.zeros(5, dtype=torch.int64))
        assert m(_probs(1, 1), _n(1)).shape == (1,)


@pytest.mark.parametrize("spec", [((DYN, DYN), (DYN,)), ((Dim("r"), Dim("k")), None)],
                         ids=["dynamic", "named-static-count"])
def test_an_example_the_kernel_rejects_exports_as_torchs(spec: Any) -> None:
    """torch's test_multinomial_dynamic, last part: 3 samples of 2 categories at the
    example.  torch exports (its meta checks nothing) and its program raises the kernel's
    RuntimeError on that input; so does ours, and both run where the kernel does (also
    after torch's run_decompositions, which runs the graph at the example's sizes)."""
    args = (torch.ones(3, 2), _n(3))
    ref = torch.export.export(Sample(), args, dynamic_shapes=spec)
    ours = st.export(Sample(), args, dynamic_shapes=spec)
    conv = ours.to_torch()
    for m in (ref.module(), ours.module(), conv.module(),
              conv.run_decompositions({}).module()):
        with pytest.raises(RuntimeError, match="cannot sample n_sample > prob"):
            m(*args)
        for rows, k in [(3, 4), (1, 3), (0, 5)]:
            probs = torch.ones(rows, k)
            out = m(probs, _n(3))
            assert out.shape == Sample()(probs, _n(3)).shape == (rows, 3)
            assert torch.equal(torch.sort(out).values[:, :1], torch.zeros(rows, 1).long()) \
                if k == 3 else out.lt(k).all()


def test_exported_again_the_check_keeps_its_kind() -> None:
    """torch's test_retraceability: st.export of the converted module reads its in-graph
    assert as the kernel's check again (a RuntimeError, no guard's AssertionError)."""
    args, spec = (_probs(4, 4), _n(2)), ((DYN,), (DYN,))
    again = st.export(st.export(Sample(), args, dynamic_shapes=spec).to_torch().module(),
                      args, dynamic_shapes=spec)
    assert "eager's kernel raises RuntimeError: aten.multinomial" in str(again)
    for m in (again.module(), again.to_torch().module()):
        assert torch.equal(torch.sort(m(_probs(3, 3), _n(3))).values, torch.arange(3))
        with pytest.raises(RuntimeError, match="cannot sample n_sample > prob") as got:
            m(_probs(2, 2), _n(3))
        assert not isinstance(got.value, AssertionError) or \
            isinstance(got.value, st.InputMismatchError)


class SampleSix(nn.Module):
    def forward(self, x):
        return torch.multinomial(x, 6) * 2


@pytest.mark.parametrize("shape", [(4,), (2, 5)])
def test_static_sizes_the_kernel_rejects_export_a_program_that_always_raises(
        shape: tuple, tmp_path: Any) -> None:
    """Static sizes and an example the kernel rejects (6 samples of fewer categories):
    torch.export exports (its meta checks nothing) and its program raises the kernel's
    RuntimeError at every call; ours exports too (it refused the export before), its
    program raising before computing, with the kernel's words, everywhere it goes (st.load
    refuses its file, naming the op)."""
    x = torch.ones(shape)
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob"):
        SampleSix()(x)  # eager's own
    ref = torch.export.export(SampleSix(), (x,))
    ours = st.export(SampleSix(), (x,))
    st.save(ours, tmp_path / "p.st")
    conv = ours.to_torch()
    with pytest.raises(st.LoadError, match="fails at every call of the program"):
        st.load(tmp_path / "p.st")  # (the loader's own analysis refuses such a file)
    modules = [ref.module(), ours.module(), conv.module(), conv.run_decompositions({}).module(),
               st.export(conv.module(), (x,)).module(),
               torch.export.export(conv.module(), (x,)).module()]
    for m in modules:
        with pytest.raises(RuntimeError, match="cannot sample n_sample > prob") as got:
            m(torch.rand(shape) + 0.1)
        assert not isinstance(got.value, AssertionError) or \
            isinstance(got.value, st.InputMismatchError)
    with pytest.raises(st.InputMismatchError, match="every input breaks a requirement"):
        ours.module()(x)
    # the same model at a count the kernel takes: no check in the program
    fine = st.export(SampleSix(), (torch.ones(7),))
    assert fine.module()(_probs(7, 6)).sort().values.tolist() == [0, 2, 4, 6, 8, 10]


class SamplesInABranch(nn.Module):
    def forward(self, p, x):
        return torch.cond(p.sum() > 0, lambda x: torch.multinomial(x, 6).float().sum(),
                          lambda x: x.sum(), (x,))


class CatchesTheKernel(nn.Module):
    def forward(self, x):
        try:
            return torch.multinomial(x, 6).float().sum()
        except RuntimeError:
            return x.sum()


def test_a_rejected_example_where_eager_may_compute_elsewhere_stays_refused() -> None:
    """Inside a cond branch, or a ``try`` of the program's code, eager computes where the
    other branch runs or the except catches: no program that always raises (it would
    refuse those calls); the export is refused, as before."""
    with pytest.raises(st.OpShapeError, match="cannot sample n_sample > prob"):
        st.export(SamplesInABranch(), (torch.ones(1), torch.ones(4)))
    assert CatchesTheKernel()(torch.ones(4)) == 4.0  # (eager's except side)
    with pytest.raises(st.ExportError, match="cannot sample n_sample > prob"):
        st.export(CatchesTheKernel(), (torch.ones(4),))
