"""grammar_outside's kinds (session 38): constructs suites written outside the project use
(advanced indexing with size-made and out-of-range indices, reductions over dims that can be
0, sort / topk with k from sizes, writes through unfold / as_strided / expand views,
``where`` with scalars, ``repeat_interleave`` by tensors, dtype changes, Python control flow
and ``try`` on sizes).  A short fixed-seed run finds no wrong result and no crash (``hopsize``
left to the slow run: eager's torch.cond and while_loop compile with dynamo)."""

from __future__ import annotations

import random

import pytest

from tests.fuzz.engine import BAD, fuzz, shrink
from tests.fuzz.grammar import LAYOUTS, OUTS, build
from tests.fuzz.grammar_outside import OUTSIDE_KINDS
from tests.fuzz.grammar_typed import DTYPES

_QUICK = {k: g for k, g in OUTSIDE_KINDS.items() if k != "hopsize"}


def _run(seed, programs, n_inputs, kinds):
    stats = fuzz(seed=seed, programs=programs, n_inputs=n_inputs, kinds=dict(kinds),
                 layouts=LAYOUTS, outs=OUTS, dtypes=DTYPES)
    bad = [shrink(f).report() for f in stats.findings if f.kind in BAD][:3]
    assert not bad, stats.line() + "\n\n" + "\n".join(bad)
    assert stats.counts["over_rejection"] == 0, stats.line()
    return stats


def test_outside_kinds_find_no_wrong_result_or_crash():
    stats = _run(3801, 6, 4, _QUICK)
    assert stats.counts["exported"] >= 4, stats.line()


@pytest.mark.slow
def test_outside_kinds_longer_run():
    from tests.fuzz.hop_oracle import install

    undo = install()   # (eager's while_loop as a Python reference: torch's compiles each call)
    try:
        stats = _run(3802, 120, 24, OUTSIDE_KINDS)
    finally:
        undo()
    assert stats.counts["exported"] >= 90, stats.line()


def test_outside_statements_are_drawn():
    text = "\n".join(build(random.Random(i), _QUICK, dtypes=DTYPES).source()
                     for i in range(40))
    assert "index_put_" in text and "repeat_interleave" in text and "topk" in text
