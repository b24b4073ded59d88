"""One setting for the whole suite: torch's intra-op threads under pytest-xdist.

Each xdist worker is its own process with torch's default of one intra-op thread per core,
so ``-n auto`` on 2 cores runs 2 workers x 2 OpenMP threads: the threads of one worker
spin at their barriers while the other worker holds the cores.  On the 2-core machine
(2026-12-05) the conformance tables' arch2 cases took 57 s of CPU with the default and
15 s with one thread per worker, for the same results.  A worker gets its share of the
cores instead (1 each on 2 cores with ``-n 2``).  ``-n 0`` keeps torch's default, and an
outer ``OMP_NUM_THREADS`` wins.

And one for the property tests: hypothesis draws the same examples on every run
(``derandomize``), so ``make test`` on a clean clone passes or fails the same way each
time (CI on 2026-12-06 failed on an example a random seed drew once).  Fresh random
examples, for a soak: ``HYPOTHESIS_PROFILE=explore``.

And one for the collector: a worker holds some 860,000 objects by the end of its share of
the suite (torch, dynamo, sympy, onnx, 12,000 collected items, the caches the tests fill),
and each full collection walked them all: in a tests/export run (2026-12-07) the
collector took 5-6.5 s of each worker's ~44 s of CPU, 4.2-5 s of it in full collections.
Young collections every 10,000 allocations instead of 700 (a full one ten times rarer)
and what collection leaves frozen out of the full walks (gc.freeze: it is alive until the
run ends anyway) took that to 2.6-2.8 s.  Cyclic garbage is still collected, only later;
tests that need it gone call gc.collect() as before.
"""

from __future__ import annotations

import gc
import os

from hypothesis import settings

settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


def pytest_configure(config):
    gc.set_threshold(10_000, 10, 10)
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers or "OMP_NUM_THREADS" in os.environ:
        return
    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    torch.set_num_threads(max(1, (cores or 1) // int(workers)))


def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()
