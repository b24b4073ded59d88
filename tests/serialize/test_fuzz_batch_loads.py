"""Every program of a fuzz batch that exports saves and loads (session 35).

A round-trip property over ``benchmarks/fuzz.py``'s generator: each program of a small
batch (its statement kinds, input layouts and specs drawn as the fuzzer draws them) that
``st.export`` takes is written by ``st.save`` and read by ``st.load`` without a refusal:
a refusal of our own file is a bug of the writer or of the loader's evaluation.  The
batches hold programs the loader refused before session 35 (``torch.cond``'s branches of
other ranks: seed 3471's program 167 of ``--flat``'s layouts; an undeclared ``u4``: seed
3406's program 59 of the default layouts).  (The loaded programs' numbers are
``tests/fuzz``'s round trips' and ``test_nested_split_symbols.py``'s.)
"""

from __future__ import annotations

import io
import itertools
import warnings

import pytest
import torch

import safetrace as st
from benchmarks.fuzz import (
    CROSS_KINDS, GAP_KINDS, KINDS, LAYOUT_KINDS, LONG_KINDS, MIXED_KINDS, MODEL_KINDS,
    OPS_KINDS, REACH_KINDS, SWEEP_KINDS, VALUE_KINDS,
)
from tests.fuzz.engine import Stats, export_classified, program_rngs, random_spec
from tests.fuzz.grammar import LAYOUTS, OUTS, build

_TABLE = {**KINDS, **LONG_KINDS, **LAYOUT_KINDS, **OPS_KINDS, **REACH_KINDS, **CROSS_KINDS,
          **SWEEP_KINDS, **MODEL_KINDS, **VALUE_KINDS, **MIXED_KINDS, **GAP_KINDS}


def _refusals(seed: int, start: int, count: int, flat: bool) -> tuple[int, list[str]]:
    """(programs exported, the load refusals of their saved files) over programs
    ``start .. start + count - 1`` of the fuzzer's run of ``seed`` (its default kinds;
    ``flat``: ``--flat``'s layouts)."""
    layouts, outs = (("flat",), ("tuple",)) if flat else (LAYOUTS, OUTS)
    exported, refused = 0, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rngs = program_rngs(seed, None, None, Stats())
        for i, prng in enumerate(itertools.islice(rngs, start + count)):
            if i < start:
                continue
            program = build(prng, _TABLE, layouts=layouts, outs=outs)
            if not program.stmts:
                continue
            spec, _ = random_spec(prng, program.inputs)
            ep, _, _ = export_classified(program, spec)
            if ep is None:
                continue
            exported += 1
            buf = io.BytesIO()
            st.save(ep, buf)
            try:
                st.load(buf.getvalue())
            except st.LoadError as e:
                refused.append(f"program {i}: {str(e).splitlines()[0]}\n{program.source()}")
    return exported, refused


@pytest.mark.parametrize("seed,start,count,flat", [
    (3406, 40, 24, False),  # (program 59: u4 undeclared)
    (3471, 160, 12, True),  # (program 167: branches of other ranks to the loader)
])
def test_every_saved_program_of_a_fuzz_batch_loads(seed, start, count, flat):
    torch.manual_seed(0)
    exported, refused = _refusals(seed, start, count, flat)
    assert exported >= count // 2
    assert not refused, "\n\n".join(refused)
