"""Export time of safetrace divided by the time of one eager forward (same process).

Goal (issue 2): <= 3x.  Prints one row per model (wall-clock times, and the ratio of
this thread's CPU times, less noisy on a shared machine) and a median line.
Run: .venv/bin/python benchmarks/bench_trace.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import safetrace as st  # noqa: E402
from benchmarks.common import median_time  # noqa: E402
from tests.models import MLP, Attention, ConvNet  # noqa: E402


def main() -> None:
    torch.set_num_threads(1)
    cases = [("mlp", MLP(), (4, 16)), ("convnet", ConvNet(), (2, 3, 16, 16)),
             ("attention", Attention(), (2, 5, 32))]
    ratios = []
    print(f"{'model':<12}{'eager ms':>10}{'export ms':>11}{'ratio':>8}{'cpu ratio':>10}"
          f"{'nodes':>7}")
    for name, model, shape in cases:
        model.eval()
        x = torch.randn(*shape)
        with torch.no_grad():
            model(x)
            eager = median_time(lambda: model(x), 41)
            eager_cpu = median_time(lambda: model(x), 41, time.thread_time)
        st.export(model, (x,))  # warm caches (overload resolution, plans)
        export = median_time(lambda: st.export(model, (x,)), 41)
        export_cpu = median_time(lambda: st.export(model, (x,)), 41, time.thread_time)
        ep = st.export(model, (x,))
        nodes = sum(1 for n in ep.graph.nodes if n.op == "call_function")
        ratios.append(export / eager)
        print(f"{name:<12}{eager * 1e3:>10.3f}{export * 1e3:>11.3f}{export / eager:>8.2f}"
              f"{export_cpu / eager_cpu:>10.2f}{nodes:>7}")
    print(f"export_vs_eager_median: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
