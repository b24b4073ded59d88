"""Export cost at realistic model sizes (real layer widths, random weights, offline).

The zoo's tiny models measure per-op overhead; here the same export is measured on
base-size models, where a forward does real work: export time over one eager forward,
export peak memory (tracemalloc, Python allocations) over the parameter bytes, and
torch.export's export time on the same spec.  Needs the `zoo` extra (transformers).
Run: .venv/bin/python benchmarks/bench_realistic.py [--no-torch]
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import safetrace as st  # noqa: E402
from benchmarks.common import median_time as timed  # noqa: E402
from safetrace import Dim  # noqa: E402


def models():
    import transformers as tf

    torch.manual_seed(0)
    gpt2 = tf.GPT2Model(tf.GPT2Config(n_embd=768, n_layer=12, n_head=12, use_cache=False))
    bert = tf.BertModel(tf.BertConfig(hidden_size=768, num_hidden_layers=12,
                                      num_attention_heads=12, intermediate_size=3072))
    ids = torch.randint(0, 1000, (2, 64))
    spec = {"input_ids": (Dim("batch"), Dim("seq", min=2, max=512))}
    mlp = torch.nn.Sequential(*[m for _ in range(8) for m in (torch.nn.Linear(2048, 2048),
                                                              torch.nn.GELU())])
    return [("gpt2-base", gpt2.eval(), (ids,), spec),
            ("bert-base", bert.eval(), (ids,), spec),
            ("mlp-8x2048", mlp.eval(), (torch.randn(32, 2048),), {"input": (Dim("b"), None)})]


def main() -> None:
    torch.set_num_threads(1)
    with_torch = "--no-torch" not in sys.argv
    print(f"{'model':<12}{'params MiB':>11}{'eager ms':>10}{'st ms':>8}{'st/eager':>9}"
          f"{'mem MiB':>9}{'mem/params':>11}{'torch.export s':>16}")
    for name, model, args, spec in models():
        pbytes = sum(t.numel() * t.element_size() for t in model.state_dict().values())
        with torch.no_grad():
            eager = timed(lambda: model(*args))
            st.export(model, args, dynamic_shapes=spec)
            exp = timed(lambda: st.export(model, args, dynamic_shapes=spec))
            tracemalloc.start()
            st.export(model, args, dynamic_shapes=spec)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            ref = "-"
            if with_torch:
                import torch.export as te

                tspec = {k: tuple(te.Dim(d.name, min=d.min, max=None if d.max == float("inf")
                                         else d.max) if isinstance(d, Dim) else d for d in v)
                         for k, v in spec.items()}
                t0 = time.perf_counter()
                try:
                    te.export(model, args, dynamic_shapes=tspec)
                    ref = f"{time.perf_counter() - t0:.1f}"
                except Exception as exc:  # record the reference's failure, keep going
                    ref = type(exc).__name__
        print(f"{name:<12}{pbytes / 2**20:>11.0f}{eager * 1e3:>10.1f}{exp * 1e3:>8.1f}"
              f"{exp / eager:>9.2f}{peak / 2**20:>9.2f}{peak / pbytes * 100:>10.2f}%{ref:>16}")


if __name__ == "__main__":
    main()
