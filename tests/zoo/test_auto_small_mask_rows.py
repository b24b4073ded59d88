"""transformers models of the coverage sweep whose length 1 Dim.AUTO refused (session 34):

- gpt2, ctrl: `input_ids.view(-1, t)` and `attention_mask.view(batch, -1)` made the ids'
  length `(s2*s3)//s0` of the mask's sizes, and sdpa's `q_length > 1` a check on it: now
  the ids' and the mask's lengths are one Dim split at 1 (exporter/auto_small.py).
- lfm2 (and lfm2_moe, the hybrid models): at length 1 `if inputs_embeds.shape[1] == 1:`
  leaves the mask unread, so that side's mask batch was a size of its own: the side now
  takes it equal to the ids' batch, as the first trace did (exporter/dynamic.py).
- doge: `s1 == min(s1, s3)` (a mask at least as long as the ids) ties the lengths.
Narrower where noted: a mask whose sizes differ from the ids' is refused."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import safetrace as st  # noqa: E402

SIZES = [(2, 12), (1, 9), (1, 1), (2, 1), (1, 0), (0, 5), (0, 1), (3, 20)]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt2", "ctrl", "lfm2", "doge"])
def test_auto_length_one_matches_eager(name):
    from benchmarks.bench_hf_sweep import MODELS, check
    sw = MODELS[name]()
    auto = st.Dim.AUTO
    ep = st.export(sw.model, (), sw.make(*sw.example), dynamic_shapes=sw.spec(auto, auto))
    assert check(sw, ep.module(), SIZES, lambda b, t: True) == "yes"
    kw = sw.make(2, 12)
    kw["input_ids"] = kw["input_ids"][..., None]  # (another rank: outside the space)
    with pytest.raises(st.InputMismatchError):
        ep.module()(**kw)
    kw = sw.make(2, 6)
    kw["attention_mask"] = sw.make(3, 4)["attention_mask"]  # (the trade-off: refused)
    with pytest.raises(st.InputMismatchError):
        ep.module()(**kw)
