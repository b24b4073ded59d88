"""transformers models of the coverage sweep (benchmarks/bench_hf_sweep.py: tiny configs,
random weights, no downloads) exported with Dim.AUTO batch and length, run against eager at
batch 1, length 1 and 0 (exporter/auto_small.py splits those sizes apart):

- mra: its mask squeezed and reshaped to the ids' `batch * heads, length` refused batch 1
  (the mask's batch alone at 1 broke `s0*s1 == s2*s3`): now the batches, and the lengths,
  are split as one Dim each.
- roberta (and the BERT-like models on transformers' sdpa path): `q_length > 1` raised the
  length's range to 2; split at 1, the side's batch range (`b >= 1`, from `b*t != 0`)
  differed from the other side's condition and the sides were not joined: each side's own
  range is now a condition on its region (exporter/splits.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import safetrace as st  # noqa: E402

SIZES = [(2, 12), (1, 9), (1, 1), (2, 1), (1, 0), (0, 5), (3, 20)]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mra", "roberta", "clip_text"])
def test_auto_batch_and_length_one_match_eager(name):
    from benchmarks.bench_hf_sweep import MODELS, check
    sw = MODELS[name]()
    auto = st.Dim.AUTO
    ep = st.export(sw.model, (), sw.make(*sw.example), dynamic_shapes=sw.spec(auto, auto))
    assert check(sw, ep.module(), SIZES, lambda b, t: True) == "yes"
    kw = sw.make(2, 12)
    kw["input_ids"] = kw["input_ids"][..., None]  # (another rank: outside the space)
    with pytest.raises(st.InputMismatchError):
        ep.module()(**kw)
