"""`make demo` runs: the tour of the twelve scenarios ends with a saved, loaded and run
program (it broke once, when loading started to refuse untrusted custom ops)."""

from __future__ import annotations

import pathlib
import subprocess
import sys


def test_demo_runs_all_twelve_scenarios_to_the_end():
    root = pathlib.Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-m", "safetrace.demo"], capture_output=True,
                         text=True, cwd=root, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Tour complete: 12 scenarios." in out.stdout
    assert "same graph True, same outputs True" in out.stdout
