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
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


def pytest_configure(config):
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers or "OMP_NUM_THREADS" in os.environ:
        return
    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    torch.set_num_threads(max(1, (cores or 1) // int(workers)))
