"""Every hostile file of ``hostile.py`` is refused within 2 s and 200 MB, touching nothing.

The cases run batched in two subprocesses (``hostile_runner.py``: address space capped,
canary file, process state and terminal output checked per case; each process imports
torch and makes only its categories' programs).  The full-size files (tens of MB: JSON
bombs, long strings, many symbols) run under the slow mark; by default each is loaded
scaled, 1/100 of the size against budgets at 1/100 of their defaults (the same refusal).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests import child
from tests.serialize import hostile

ROOT = Path(__file__).resolve().parents[2]
BATCHES = [["operators", "arguments", "names", "paths", "budgets", "crashes", "container"],
           ["memory", "aliasing", "overflow", "work", "documents", "contracts"]]


def _run(categories: list[str]) -> list[dict]:
    env = dict(os.environ, MALLOC_ARENA_MAX="2", OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = child.run(["-m", "tests.serialize.hostile_runner", *categories], text=True,
                    timeout=600, cwd=ROOT, env=env)  # (forked from a process that imported torch)
    assert out.returncode == 0, out.stderr[-3000:]
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def test_batches_cover_every_category_and_every_full_size_case_is_scaled():
    cases = hostile.cases()
    assert {c.category for c in cases} == {c for b in BATCHES for c in b}
    names = {(c.category, c.name) for c in cases if not c.slow}
    slow = [c for c in cases if c.slow]
    assert slow and all((c.category, f"{c.name}_scaled") in names for c in slow)


@pytest.mark.parametrize("categories", BATCHES, ids=["+".join(b) for b in BATCHES])
def test_hostile_files_are_refused_within_limits(categories):
    _check(_run(categories))


@pytest.mark.slow
def test_full_size_hostile_files_are_refused_within_limits():
    _check(_run(["--slow"]))


def _check(results: list[dict]) -> None:
    summary = results.pop()
    assert summary.get("summary") and summary["cases"] == len(results) > 0
    bad = [f"{r['category']}/{r['name']}: {r['outcome']} {r['problems']} {r['detail'][:200]}"
           for r in results if r["problems"]]
    refused = sum(r["outcome"].startswith("refused") for r in results)
    print(f"{refused} of {len(results)} refused, "
          f"{sum(r['outcome'] == 'accepted, ran' for r in results)} legal within limits")
    assert not bad, "\n".join(bad)
    # a file refused at load leaves the expression intern table as it found it
    for prev, r in zip(results, results[1:]):
        if r["outcome"] == "refused at load":
            assert r["table_growth"] <= prev["table_growth"] + 2, r["name"]
