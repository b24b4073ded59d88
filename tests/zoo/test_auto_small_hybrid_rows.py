"""transformers models of the coverage sweep whose Dim.AUTO program refused length 1 or a
block size's other lengths (session 35):

- bamba, zamba2, falcon_h1, granitemoehybrid (mamba2 layers: a decode branch at length 1
  and the chunked scan's `pad_size > 0`, `L % 8 != 0`): the length Dim's split at 1 had
  its side `L >= 2` refused for the `% 8` condition, which no few ranges express; that
  side is now split on the relation (exporter/splits.py `_relation_side`).
- pegasus_x (`if seq_len % block_size != 0:` with the example a multiple of 4): the
  relation split's side `L % 4 != 0` was refused at L == 0 (`b*L != 0`, where the other
  side runs), and its first side gave the mask's batch a symbol of its own; now the side
  is traced from L == 1 and both sides relate the AUTO dims alike
  (exporter/relation_splits.py `_cut_side`).
- longt5 (`L % 5 != 0` at lengths that are no multiple of its block): as bamba's side.
- sew (`t < 2*((t + 20)//40)` refusing 555 past its example 400, the audio from 100
  samples): the programs compared up to four times the example (auto_small._larger).
Each checked against eager at the sweep's sizes, lengths 0 and 1 among them, and an input
of another rank refused before running."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import safetrace as st  # noqa: E402

TEXT = [(1, 1), (2, 1), (1, 0), (0, 1), (2, 8), (2, 16), (2, 17)]  # (beyond the sweep's)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bamba", "zamba2", "falcon_h1", "granitemoehybrid",
                                  "pegasus_x", "longt5", "sew"])
def test_auto_lengths_match_eager(name):
    from benchmarks.bench_hf_sweep import MODELS, check
    sw = MODELS[name]()
    auto = st.Dim.AUTO
    ep = st.export(sw.model, (), sw.make(*sw.example), dynamic_shapes=sw.spec(auto, auto))
    sizes = [sw.example] + sw.others + (TEXT if sw.size_dim[0] == 2 else [(2, 430), (1, 100)])
    assert check(sw, ep.module(), sizes, lambda b, t: True) == "yes"
    kw = sw.make(*sw.example)
    first = next(iter(kw))
    kw[first] = kw[first][..., None]  # (another rank: outside the space)
    with pytest.raises(st.InputMismatchError):
        ep.module()(**kw)
