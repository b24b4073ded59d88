"""``ep.to_torch()`` against ``st.export`` in instructions, not seconds: a count that the
other jobs of a shared machine do not disturb.

Each model runs in a child process under valgrind's callgrind with instrumentation off
(the imports and the warm-up run at valgrind's uninstrumented speed); the child switches
it on with ``callgrind_control`` around `--calls` exports, then around as many
conversions, and dumps each count separately.  ``PYTHONHASHSEED=0`` in the child, so two
runs of one tree give the same counts to within a few hundred instructions per call (set
and dict orders fixed).  What a count leaves out: cache misses.  On a 2-3 ms program the
wall-clock ratio measured after a full collection (``bench_to_torch.py``, each call
timed alone after ``gc.collect()``, as a first call after other work is) is ~10% above
the instruction ratio: both sides start with cold caches, and the conversion touches
more of torch's C++ (the dispatcher, FakeTensor and SymNode construction) than the
export does.

Run: .venv/bin/python benchmarks/instructions.py [--calls N] [names]
     (needs valgrind; ~40 s per model on a loaded 2-core machine)
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ("mlp", "lstm_tagger", "gru_tagger", "data_dependent")


def child(name: str, calls: int) -> None:
    """Inside callgrind: the counted calls of one zoo model."""
    import gc
    import warnings

    sys.path.insert(0, str(ROOT))
    warnings.filterwarnings("ignore")
    import torch

    import safetrace as st
    from benchmarks.zoo import by_name

    case = by_name(name).factory()

    def export():
        return st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)

    def control(*args: str) -> None:
        # (callgrind reads its command file while this process runs Python: busy, not
        # blocked in a wait, until callgrind_control has its answer)
        proc = subprocess.Popen(["callgrind_control", *args, str(os.getpid())],
                                stdout=subprocess.DEVNULL)
        while proc.poll() is None:
            sum(range(200))

    with torch.no_grad():
        ep = export()
        for _ in range(3):
            export(), ep.to_torch()
        gc.collect()
        gc.disable()  # (no collection lands in one count and not the other)
        control("-i", "on")
        for label, fn in (("export", export), ("to_torch", ep.to_torch)):
            control("-z")
            for _ in range(calls):
                fn()
            control("-d", label)
        control("-i", "off")


def count(name: str, calls: int) -> dict[str, float]:
    """Instructions per call of each side, from the child's two dumps."""
    with tempfile.TemporaryDirectory(prefix="safetrace-cg-") as tmp:
        out = Path(tmp) / "cg.out"
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=str(ROOT))
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                        f"--callgrind-out-file={out}", sys.executable, __file__, "--child",
                        name, str(calls)], check=True, env=env, capture_output=True)
        got = {}
        for dump in Path(tmp).glob("cg.out.*"):
            text = dump.read_text(errors="replace")
            label = re.search(r"^desc: Trigger: dump (\S+)", text, re.M)
            total = re.search(r"^summary: (\d+)", text, re.M)
            if label and total:
                got[label.group(1)] = int(total.group(1)) / calls
        return got


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--calls", type=int, default=10)
    o = ap.parse_args()
    print("| model | st.export M instructions | to_torch M instructions | ratio |")
    print("|---|---|---|---|")
    for name in o.names or DEFAULT:
        got = count(name, o.calls)
        print(f"| {name} | {got['export'] / 1e6:.3f} | {got['to_torch'] / 1e6:.3f} | "
              f"{got['to_torch'] / got['export']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
