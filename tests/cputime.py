"""CPU time per test, for finding what makes `make test` slow on a shared machine.

Wall times (``--durations``) swing with the machine's load; CPU time (the process's and its
reaped children's, so a test's subprocesses count, and the children tests/child.py forks)
much less.  Opt-in plugin::

    CPUTIME_OUT=/tmp/cpu python -m pytest -n 2 tests -p tests.cputime
    python -m tests.cputime /tmp/cpu [N]     # per directory, file and test, the N largest

Each worker appends one JSON line per test (setup, call and teardown together) and one for
its start-up and collection (``<collection>``: imports of torch, safetrace and every test
module, paid once per worker)."""

from __future__ import annotations

import collections
import glob
import json
import os
import resource
import sys
import time

import pytest

_out = None


def _cpu() -> tuple[float, float]:
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    forked = sys.modules.get("tests.child")  # (children forked by its server, and the server)
    return (me.ru_utime + me.ru_stime,
            kids.ru_utime + kids.ru_stime + (forked.cpu_seconds if forked else 0.0))


def _write(nodeid: str, own: float, child: float) -> None:
    global _out
    if _out is None:
        folder = os.environ.get("CPUTIME_OUT", "cputime")
        os.makedirs(folder, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _out = open(os.path.join(folder, f"{worker}-{os.getpid()}.jsonl"), "a")
    _out.write(json.dumps({"nodeid": nodeid, "self": own, "child": child,
                           "end": time.time()}) + "\n")
    _out.flush()


def pytest_collection_finish(session) -> None:
    _write("<collection>", *_cpu())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own, child = _cpu()
    yield
    own2, child2 = _cpu()
    _write(item.nodeid, own2 - own, child2 - child)


def report(folder: str, n: int = 30) -> None:
    rows = [json.loads(line) for f in glob.glob(os.path.join(folder, "*.jsonl")) for line in open(f)]
    start = [r["self"] + r["child"] for r in rows if r["nodeid"] == "<collection>"]
    rows = [r for r in rows if r["nodeid"] != "<collection>"]
    cpu = {r["nodeid"]: r["self"] + r["child"] for r in rows}
    print(f"{len(rows)} tests, {sum(cpu.values()):.1f} s CPU; start-up and collection per "
          f"worker: {', '.join(f'{s:.1f}' for s in start)} s")
    parts: collections.Counter = collections.Counter()
    files: collections.Counter = collections.Counter()
    for nodeid, t in cpu.items():
        path = nodeid.split("::")[0]
        parts["/".join(path.split("/")[:2])] += t
        files[path] += t
    for title, table in (("directories", parts), ("files", files), ("tests", cpu)):
        print(f"--- {title}")
        for name, t in collections.Counter(table).most_common(n):
            print(f"{t:8.2f}  {name}")
    _tail(folder)


def _tail(folder: str) -> None:
    """The end of the run: when each worker ran its last test, and what ran while the
    other worker was done (the part of the wall time only one core worked)."""
    ends = {}
    for f in glob.glob(os.path.join(folder, "*.jsonl")):
        rows = [json.loads(line) for line in open(f)]
        rows = [r for r in rows if "end" in r and r["nodeid"] != "<collection>"]
        if rows:
            ends[os.path.basename(f)] = rows
    if len(ends) < 2:
        return
    first_done = min(rows[-1]["end"] for rows in ends.values())
    print("--- tail: each worker's last test ends (s after the first worker's last)")
    for name, rows in sorted(ends.items()):
        alone = [r for r in rows if r["end"] > first_done]
        print(f"{rows[-1]['end'] - first_done:8.2f}  {name}: {len(alone)} tests after, "
              + ", ".join(r["nodeid"] for r in alone[-3:]))


if __name__ == "__main__":
    report(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30)
