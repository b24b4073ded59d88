"""`make demo` runs: the tour of the twelve scenarios ends with a saved, loaded and run
program (it broke once, when loading started to refuse untrusted custom ops)."""

from __future__ import annotations

import runpy

import torch


def test_demo_runs_all_twelve_scenarios_to_the_end(capsys):
    # `python -m safetrace.demo`, in this process (a fresh one cost ~3 s of CPU more,
    # importing torch and safetrace), its random draws kept from later tests
    with torch.random.fork_rng():
        runpy.run_module("safetrace.demo", run_name="__main__", alter_sys=True)
    out = capsys.readouterr().out
    assert "Tour complete: 12 scenarios." in out
    assert "same graph True, same outputs True" in out
