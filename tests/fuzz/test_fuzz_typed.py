"""grammar_typed's kinds over inputs of any dtype (session 35: int / bool / half / bfloat16 /
double inputs, 0-d ones; each typed program's accepted input also tried in other dtypes)."""

from __future__ import annotations

import random

import pytest
import torch

from tests.fuzz.engine import BAD, fuzz, make_args, shrink
from tests.fuzz.grammar import LAYOUTS, OUTS, build, typed
from tests.fuzz.grammar_typed import DTYPES, TYPED_KINDS


def _typed_run(seed, programs, n_inputs):
    stats = fuzz(seed=seed, programs=programs, n_inputs=n_inputs, kinds=dict(TYPED_KINDS),
                 layouts=LAYOUTS, outs=OUTS, dtypes=DTYPES)
    bad = [shrink(f).report() for f in stats.findings if f.kind in BAD][:3]
    assert not bad, stats.line() + "\n\n" + "\n".join(bad)
    return stats


def test_typed_kinds_find_no_wrong_result_or_crash():   # (~2 s: a small sample)
    stats = _typed_run(35, 12, 4)
    assert stats.counts["exported"] >= 8, stats.line()
    assert stats.counts["dtype_probes"] >= 4, stats.line()


@pytest.mark.slow   # (~15 s)
def test_typed_kinds_longer_run():
    stats = _typed_run(3501, 120, 10)
    assert stats.counts["exported"] >= 90, stats.line()
    assert stats.counts["over_rejection"] * 200 <= stats.counts["inputs"], stats.line()


def test_typed_programs_take_other_dtypes_and_untyped_ones_stay_as_before():
    drawn = {t.dtype for i in range(30) for _, t in build(random.Random(i), TYPED_KINDS,
                                                          dtypes=DTYPES).inputs}
    assert len(drawn) >= 6 and torch.float32 in drawn
    # without dtypes no draw is added: the short run's programs and inputs are unchanged
    a, b = build(random.Random(7)), build(random.Random(7), dtypes=())
    assert a.source() == b.source()
    shapes = [[2, 3], []]
    assert all(torch.equal(x, y) for x, y in zip(make_args(shapes, 5),
                                                 make_args(shapes, 5, [torch.float32] * 2)))
    g = torch.Generator().manual_seed(0)
    x = torch.randn(50, generator=g)
    assert typed(x, torch.uint8).min() >= 0 and typed(x, torch.bool).dtype == torch.bool
