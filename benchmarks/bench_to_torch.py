"""What a deploy path costs: ``ep.to_torch()`` against the export it converts, and
``st.to_onnx`` against ``torch.onnx.export(..., dynamo=True)``, torch measured in the same
process on the same model and spec.

Per model: ``st.export``; ``to_torch()`` (fake values built from our shapes, the default);
``to_torch(verify=True)`` (torch's meta kernels on every node, what to_torch did before);
``torch.export.export``.  Models: the zoo's (hand-written and transformers), tiny
transformers LLMs built from configs (a StaticCache prefill+decode program, seq >= 1, as in
tests/llm), and the Llama-3-8B shape on the meta device (no weights allocated).
``--real``: SmolLM-135M's and GPT-2's shapes on CPU (random weights, ``real_models``).
``--onnx`` adds st.to_onnx vs torch.onnx.export on a few models.  Each time is the best
(the minimum: least disturbed) of ``--repeat`` runs after one warm-up of every path.

Times are in milliseconds; ``--quick`` measures only st.export and to_torch() (no verify,
no torch.export).

``--first`` measures the ONNX paths end to end as a process's first call: per zoo model
and round, two fresh processes (torch, torch.onnx, onnxscript and safetrace imported and
the model built before the clock), one timing ``st.export`` + ``st.to_onnx``, the other
``torch.onnx.export(model, dynamo=True)``; CPU and wall time of that one call, the two
sides alternating, ``--repeat`` rounds.  ``--bytecode cached`` (the default) runs the
children with compiled bytecode for every module they import, as an installed package
has it (pip compiles at install; torch's own is in site-packages): a bytecode cache of
their own (``PYTHONPYCACHEPREFIX``, a temporary directory) filled by one untimed round
first.  ``--bytecode none`` keeps the environment as it is: where
``PYTHONDONTWRITEBYTECODE`` is set (this repository's development machines), safetrace's
~1.9 MB of source is compiled in every process (~0.35 s of CPU) while torch's is not.

Run: .venv/bin/python benchmarks/bench_to_torch.py [--zoo] [--llm] [--big] [--real] [--onnx] [--quick] [--clock cpu] [names]
     .venv/bin/python benchmarks/bench_to_torch.py --floor [--clock cpu] [names]
     .venv/bin/python benchmarks/bench_to_torch.py --first [--repeat N] [--bytecode none] [names]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import logging
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

import safetrace as st  # noqa: E402
from benchmarks.common import torch_spec  # noqa: E402

warnings.filterwarnings("ignore")
logging.getLogger("torch.onnx").setLevel(logging.ERROR)
ONNX_MODELS = ("mlp", "tiny_gpt", "llama", "smollm", "gpt2-124m")
LLM = ("llama", "gemma2", "gpt2", "qwen2", "qwen3", "mistral", "phi3", "gemma", "olmo2",
       "granite", "smollm3")


CLOCK = time.perf_counter  # --clock cpu: time.process_time (this process's CPU time: on a
# machine shared with other jobs, wall time counts their slices too)


def timed(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        gc.collect()
        t0 = CLOCK()
        out = fn()
        times.append(CLOCK() - t0)
    return min(times), out  # the least disturbed run: the machine may be shared


# -- the models ---------------------------------------------------------------------------------
def zoo_models(names: list[str]) -> list:
    from benchmarks.zoo import registry

    out = []
    for e in registry():
        if e.family not in ("hand", "transformers") or (names and e.name not in names):
            continue
        case = e.factory()
        out.append((e.name, case.model, case.args, case.kwargs, case.dynamic_shapes))
    return out


def llm_models(names: list[str]) -> list:
    from tests.llm.test_generate import CACHE, VOCAB, tiny
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    out = []
    for kind in LLM:
        if names and kind not in names:
            continue
        model = tiny(kind)
        model.generation_config.cache_implementation = "static"
        model.generation_config.use_cache = True
        wrapper = TorchExportableModuleWithStaticCache(model, batch_size=1, max_cache_len=CACHE)
        seq = st.Dim("seq", min=1, max=CACHE)
        prompt = torch.randint(0, VOCAB, (1, 5))
        out.append((f"{kind} (static cache)", wrapper, (),
                    {"input_ids": prompt, "cache_position": torch.arange(5)},
                    {"input_ids": {1: seq}, "cache_position": {0: seq}}))
    return out


def big_model() -> tuple:
    """Llama-3-8B's shape (32 layers, 4096 hidden, GQA 32/8) on the meta device."""
    import transformers

    cfg = transformers.LlamaConfig(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
        rope_theta=500000.0)
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(cfg).eval()
    ids = torch.zeros(1, 16, dtype=torch.long, device="meta")
    seq = st.Dim("seq", min=2, max=4096)
    return ("llama-3-8b shape (meta)", model, (ids,), {"use_cache": False},
            {"input_ids": {1: seq}, "use_cache": None})


def real_models(names: list[str]) -> list:
    """``--real``: two small released LLMs' shapes on CPU with random weights, as a user
    exports them (``use_cache=False``, ``seq`` in [2, 2048]): SmolLM-135M (llama
    architecture, 30 layers, hidden 576, GQA 9/3; 135 M parameters) and GPT-2 (124 M)."""
    import transformers

    shapes = {
        "smollm-135m shape": (transformers.LlamaConfig, transformers.LlamaForCausalLM, dict(
            vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
            num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048,
            tie_word_embeddings=True, rope_theta=10000.0)),
        "gpt2-124m shape": (transformers.GPT2Config, transformers.GPT2LMHeadModel, {}),
    }
    out = []
    for name, (config, cls, kw) in shapes.items():
        if names and not any(name.startswith(n) for n in names):
            continue
        torch.manual_seed(0)
        model = cls(config(**kw)).eval()
        ids = torch.randint(0, 1000, (1, 16))
        seq = st.Dim("seq", min=2, max=1024)
        out.append((name, model, (ids,), {"use_cache": False},
                    {"input_ids": {1: seq}, "use_cache": None}))
    return out


# -- one model ----------------------------------------------------------------------------------
def bench(name, model, args, kwargs, spec, repeat: int, onnx: bool,
          quick: bool = False) -> dict:
    row: dict = {"model": name}
    with torch.no_grad():
        export = lambda: st.export(model, args, kwargs, dynamic_shapes=spec)  # noqa: E731
        try:
            export()
            row["st"], ep = timed(export, repeat)
        except Exception as exc:  # noqa: BLE001
            row["error"] = f"st.export: {type(exc).__name__}"
            return row
        try:
            ep.to_torch()
            row["to_torch"], _ = timed(ep.to_torch, repeat)
            if not quick:
                ep.to_torch(verify=True)
                row["verify"], _ = timed(lambda: ep.to_torch(verify=True), repeat)
        except Exception as exc:  # noqa: BLE001
            row["error"] = f"to_torch: {type(exc).__name__}: {str(exc)[:80]}"
            return row
        if quick:
            return row
        tspec = torch_spec(spec)
        t_export = lambda: torch.export.export(model, args, kwargs,  # noqa: E731
                                               dynamic_shapes=tspec)
        try:
            t_export()
            row["torch"], _ = timed(t_export, repeat)
        except Exception as exc:  # noqa: BLE001
            row["torch_error"] = type(exc).__name__
        if onnx:
            row.update(onnx_times(ep, model, args, kwargs, tspec, repeat))
    return row


def onnx_times(ep, model, args, kwargs, tspec, repeat: int) -> dict:
    """st.to_onnx (conversion included) vs torch.onnx.export(model, dynamo=True) (its
    torch.export included), both end to end from the model or the safetrace program."""
    out: dict = {}
    quiet = contextlib.redirect_stdout(io.StringIO())
    try:
        with quiet:
            out["st_onnx"], _ = timed(lambda: st.to_onnx(ep, verbose=False), repeat)
    except Exception as exc:  # noqa: BLE001
        out["st_onnx_error"] = type(exc).__name__
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            out["torch_onnx"], _ = timed(lambda: torch.onnx.export(
                model, args, kwargs=kwargs, dynamic_shapes=tspec, dynamo=True,
                verbose=False), repeat)
    except Exception as exc:  # noqa: BLE001
        out["torch_onnx_error"] = type(exc).__name__
    return out


def warm_up() -> None:
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    x = torch.randn(3, 4)
    spec = {"input": {0: st.Dim("b", max=64)}}
    ep = st.export(m, (x,), dynamic_shapes=spec)
    ep.to_torch(), ep.to_torch(verify=True)
    torch.export.export(m, (x,), dynamic_shapes=torch_spec(spec))


def floor(names: list[str], repeat: int) -> None:
    """The share of ``to_torch()`` spent in torch's own per-conversion objects (``--floor``):
    its ShapeEnv and FakeTensorMode constructors, ``ShapeEnv.create_symbol`` (one per input
    symbol), the user inputs' ``torch.empty`` and the ``ExportedProgram`` constructor
    (with safetrace's lazy graph module, no validation), each timed around its call (mean
    of `repeat` conversions; the share is of those same conversions' total)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.export import ExportedProgram
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    spent: dict[str, float] = {}

    def timing(owner, attr, label):
        fn = getattr(owner, attr)

        def timed_call(*a, **k):
            t0 = CLOCK()
            try:
                return fn(*a, **k)
            finally:
                spent[label] = spent.get(label, 0.0) + CLOCK() - t0
        setattr(owner, attr, timed_call)
        return lambda: setattr(owner, attr, fn)

    print("| model | st.export ms | to_torch ms | ShapeEnv() | FakeTensorMode() | "
          "create_symbol | torch.empty | ExportedProgram() | torch's share |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, model, args, kwargs, spec in zoo_models(names):
        with torch.no_grad():
            ep = st.export(model, args, kwargs, dynamic_shapes=spec)
            t_st, _ = timed(lambda: st.export(model, args, kwargs, dynamic_shapes=spec),
                            repeat)
            t_tt, _ = timed(ep.to_torch, repeat)
            undo = [timing(ShapeEnv, "__init__", "ShapeEnv"),
                    timing(FakeTensorMode, "__init__", "FakeTensorMode"),
                    timing(ShapeEnv, "create_symbol", "create_symbol"),
                    timing(torch, "empty", "empty"),
                    timing(ExportedProgram, "__init__", "ExportedProgram")]
            spent.clear()
            t0 = CLOCK()
            for _ in range(repeat):
                ep.to_torch()
            whole = CLOCK() - t0  # (the same calls: the share is of like with like)
            for u in undo:
                u()
        ms = {k: v / repeat * 1e3 for k, v in spent.items()}
        share = sum(spent.values()) / whole
        print(f"| {name} | {t_st * 1e3:.2f} | {t_tt * 1e3:.2f} | " + " | ".join(
            f"{ms.get(k, 0.0):.3f}" for k in ("ShapeEnv", "FakeTensorMode", "create_symbol",
                                               "empty", "ExportedProgram")) +
            f" | {share:.0%} |", flush=True)


def first_child(side: str, name: str) -> None:
    """One first call in this fresh process: prints its CPU and wall seconds."""
    import onnxscript  # noqa: F401 - imported before the clock on both sides
    import torch.onnx  # noqa: F401

    (_, model, args, kwargs, spec), = zoo_models([name])
    quiet = contextlib.redirect_stdout(io.StringIO())
    c0, w0 = time.process_time(), time.perf_counter()
    with quiet:
        if side == "ours":
            st.to_onnx(st.export(model, args, kwargs, dynamic_shapes=spec), verbose=False)
        else:
            torch.onnx.export(model, args, kwargs=kwargs, dynamic_shapes=torch_spec(spec),
                              dynamo=True, verbose=False)
    print(f"{time.process_time() - c0:.4f} {time.perf_counter() - w0:.4f}")


def first_calls(names: list[str], repeat: int, bytecode: str = "cached") -> None:
    """``--first``: each side's first call in fresh processes, alternating (see above)."""
    import atexit
    import shutil
    import subprocess
    import tempfile

    env = dict(os.environ)
    if bytecode == "cached":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="safetrace-bench-pyc-")
        atexit.register(shutil.rmtree, env["PYTHONPYCACHEPREFIX"], True)  # (~90 MB)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} {platform.machine()} {os.cpu_count()} cpus, "
          f"torch {torch.__version__}; first call in a fresh process, {repeat} rounds; "
          f"bytecode {bytecode}; load average {os.getloadavg()[0]:.1f}")
    print("| model | st.export + st.to_onnx CPU s (min / median) | torch.onnx.export CPU s | "
          "ours wall s (median) | torch wall s |")
    print("|---|---|---|---|---|")
    for name in names or ("mlp", "tiny_gpt", "llama"):
        got: dict = {"ours": [], "torch": []}
        for i in range(repeat + (bytecode == "cached")):
            for side in ("ours", "torch"):
                out = subprocess.run([sys.executable, __file__, "--first-child", side, name],
                                     capture_output=True, text=True, check=True, env=env)
                cpu, wall = map(float, out.stdout.split()[-2:])
                if i or bytecode != "cached":  # (the first cached round fills the cache)
                    got[side].append((cpu, wall))

        def cpu(side):
            xs = [c for c, _ in got[side]]
            return f"{min(xs):.2f} / {statistics.median(xs):.2f}"

        def wall(side):
            return f"{statistics.median(w for _, w in got[side]):.2f}"

        print(f"| {name} | {cpu('ours')} | {cpu('torch')} | {wall('ours')} | "
              f"{wall('torch')} |", flush=True)


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--first-child":
        warnings.filterwarnings("ignore")
        first_child(sys.argv[2], sys.argv[3])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--zoo", action="store_true")
    ap.add_argument("--llm", action="store_true")
    ap.add_argument("--big", action="store_true")
    ap.add_argument("--real", action="store_true")
    ap.add_argument("--onnx", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--first", action="store_true")
    ap.add_argument("--bytecode", choices=("cached", "none"), default="cached")
    o = ap.parse_args()
    if o.first:
        first_calls(o.names, o.repeat, o.bytecode)
        return
    global CLOCK
    CLOCK = time.process_time if o.clock == "cpu" else time.perf_counter
    if o.floor:
        warm_up()
        floor(o.names, o.repeat)
        return
    if not (o.zoo or o.llm or o.big or o.real):
        o.zoo = o.llm = True
    torch.manual_seed(0)
    warm_up()
    models = (zoo_models(o.names) if o.zoo else []) + (llm_models(o.names) if o.llm else []) \
        + (real_models(o.names) if o.real else [])
    print(f"# {time.strftime('%Y-%m-%d')} {platform.machine()} {os.cpu_count()} cpus, "
          f"torch {torch.__version__}; best of {o.repeat}, {o.clock} time")
    print("| model | st.export ms | to_torch ms | to_torch(verify) ms | torch.export ms | "
          "to_torch / st.export | st.export+to_torch / torch.export | st.to_onnx ms | "
          "torch.onnx ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    todo = [(m, False) for m in models] + ([(big_model(), True)] if o.big else [])
    for (name, model, args, kwargs, spec), big in todo:
        onnx = o.onnx and any(name.startswith(k) for k in ONNX_MODELS)
        row = bench(name, model, args, kwargs, spec, 1 if big else o.repeat, onnx, o.quick)
        rows.append(row)
        print(line(row), flush=True)
    done = [r for r in rows if "to_torch" in r]
    ratio = [r["to_torch"] / r["st"] for r in done]
    speed = [r["verify"] / r["to_torch"] for r in done if "verify" in r]
    within = sum(1 for r in done if r["to_torch"] <= r["st"])
    print(f"to_torch <= st.export on {within}/{len(done)} models; median to_torch/st.export "
          f"{statistics.median(ratio):.2f}" + (f"; median speedup over verify=True "
                                                f"{statistics.median(speed):.1f}x" if speed else ""))


def line(r: dict) -> str:
    def f(k):
        v = r.get(k)
        return f"{v * 1e3:.2f}" if isinstance(v, float) else "-"  # (ms)

    if "error" in r:
        return f"| {r['model']} | {r['error']} |"
    ratio = f"{r['to_torch'] / r['st']:.2f}"
    vs = f"{(r['st'] + r['to_torch']) / r['torch']:.2f}" if r.get("torch") else \
        r.get("torch_error", "-")
    return (f"| {r['model']} | {f('st')} | {f('to_torch')} | {f('verify')} | {f('torch')} | "
            f"{ratio} | {vs} | {f('st_onnx') if 'st_onnx' in r else r.get('st_onnx_error', '-')}"
            f" | {f('torch_onnx') if 'torch_onnx' in r else r.get('torch_onnx_error', '-')} |")


if __name__ == "__main__":
    main()
