"""grammar_promote's kinds (session 37): numbers made from sizes in narrow and float dtypes,
integer division and modulo of negative values by sizes that can be 0, in-place size
arithmetic on views of a clone.  A short fixed-seed run finds no wrong result and no crash
(its first run found ZeroDivisionError raised by the programs' graphs: test_size_division_
by_zero.py)."""

from __future__ import annotations

import random

import pytest

from tests.fuzz.engine import BAD, fuzz, shrink
from tests.fuzz.grammar import LAYOUTS, OUTS, build
from tests.fuzz.grammar_promote import PROMOTE_KINDS
from tests.fuzz.grammar_typed import DTYPES


def _promote_run(seed, programs, n_inputs):
    stats = fuzz(seed=seed, programs=programs, n_inputs=n_inputs, kinds=dict(PROMOTE_KINDS),
                 layouts=LAYOUTS, outs=OUTS, dtypes=DTYPES)
    bad = [shrink(f).report() for f in stats.findings if f.kind in BAD][:3]
    assert not bad, stats.line() + "\n\n" + "\n".join(bad)
    return stats


def test_promote_kinds_find_no_wrong_result_or_crash():
    stats = _promote_run(3707, 12, 6)
    assert stats.counts["exported"] >= 10, stats.line()


@pytest.mark.slow
def test_promote_kinds_longer_run():
    stats = _promote_run(3707, 80, 24)
    assert stats.counts["exported"] >= 70, stats.line()


def test_promote_statements_are_drawn():
    text = "\n".join(build(random.Random(i), PROMOTE_KINDS, dtypes=DTYPES).source()
                     for i in range(40))
    assert "except (RuntimeError, ZeroDivisionError)" in text and ".to(torch.int8)" in text
