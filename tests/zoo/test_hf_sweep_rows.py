"""Rows of the transformers coverage sweep (benchmarks/bench_hf_sweep.py) that a library
fix turned to "yes", run through the sweep's own check (export with named Dims and with
Dim.AUTO; the program against eager at the example and three other sizes, batch 0 and 1
included; the named-Dim program refusing its out-of-space input)."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")


@pytest.mark.slow
@pytest.mark.parametrize("name", [
    "segformer_seg",     # lazy output-capturing hooks: exporter/snapshot.py
    "deformable_detr",   # torch.as_tensor of (h, w) per level: trace/arguments.py
    "mask2former",       # the same, in its pixel decoder
    "longformer_w8",     # stride() of a view whose chunk count may be 1: trace/small_strides.py
    "led_w8",            # the same, its mask filled (masked_fill's layout: trace/layout.py)
])
def test_sweep_row_is_yes(name):
    from benchmarks.bench_hf_sweep import sweep_one
    for row in sweep_one(name, torch_too=False):
        assert row["st"] == "yes", (row["mode"], row["st_msg"])
        assert row["gen"] == "yes", (row["mode"], row["gen"])
        assert row.get("out", "yes") == "yes", row["out"]
