"""The model zoo side by side: safetrace vs torch.export (the reference) vs eager.

For every zoo model (benchmarks/zoo/): export with safetrace and with torch.export (the
same dynamic_shapes spec, translated to torch.export.Dim), check both on inputs of two
other sizes against eager, and print one table row; the last line is

    zoo: exported N/M, generalizes N/M, export_speedup_vs_torch R, export_vs_eager E, call_vs_eager C

(medians over the models), then one line comparing the two exporters (exports, generalizes,
wrong results, cases torch.export generalizes and safetrace does not).  Also: safetrace's
dynamic vs static export time.  "gen" is yes when every other input runs and matches eager,
"rejects" when one is refused (an input check or an error), "WRONG" when one runs and
differs from eager; "match" compares the example input itself.
The timm/torchvision entries (benchmarks/zoo/vision.py) need the zoo venv; elsewhere they
are skipped with the command that builds it.
Run: .venv/bin/python benchmarks/bench_zoo.py [--repeats 3] [--family timm] [--lean] [model ...]
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import signal
import statistics
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import safetrace as st  # noqa: E402
from benchmarks.zoo import registry, vision  # noqa: E402
from benchmarks.common import per_call, torch_spec  # noqa: E402

warnings.filterwarnings("ignore")


# -- measuring ----------------------------------------------------------------------------
def timed(fn, repeats):
    times, out, err = [], None, None
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        try:
            out = fn()
        except Exception as exc:  # noqa: BLE001 - the table names the failure
            err = exc
            break
        times.append(time.perf_counter() - t0)
    return (statistics.median(times) if times else None), out, err


def close(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype
                and torch.allclose(a, b, rtol=1e-4, atol=1e-5))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return a == b


def run_on(case, module, inputs) -> str:
    """'yes' when every input runs and matches eager, 'WRONG' when one runs and differs,
    'rejects' when one is refused (eager itself computes every input of the zoo)."""
    verdict = "yes"
    for args, kwargs in inputs:
        expected = case.model(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        try:
            got = module(*args, **kwargs)
        except Exception:  # noqa: BLE001 - an input check or a failure inside the graph
            verdict = "rejects" if verdict == "yes" else verdict
            continue
        if not close(expected, got):
            verdict = "WRONG"
    return verdict


def generalizes(case, module) -> bool:
    return run_on(case, module, case.others) == "yes"


def nodes(ep) -> int:
    return sum(1 for n in ep.graph.nodes if n.op == "call_function")


def param_bytes(model) -> int:
    seen = {}
    for t in list(model.parameters()) + list(model.buffers()):
        seen[id(t)] = t.numel() * t.element_size()
    return sum(seen.values())


def peak_added(fn) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
    except Exception:  # noqa: BLE001
        pass
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def tensor_peak_added(fn) -> int:
    """Peak tensor storage allocated while `fn` runs (torch's profiler allocation events):
    a copy of the weights would show here; tracemalloc does not see tensor storage."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        try:
            fn()
        except Exception:  # noqa: BLE001
            pass
    current = peak = 0
    for ev in sorted(prof.events(), key=lambda e: e.time_range.start):
        current += ev.self_cpu_memory_usage
        peak = max(peak, current)
    return peak


def err_name(exc) -> str:
    return exc if isinstance(exc, str) else type(exc).__name__


class ExportTimeout(Exception):
    """torch.export ran past --torch-timeout (counted as not exported, named in the table)."""


def _with_timeout(fn, seconds):
    if not seconds:
        return fn

    def run():
        def alarm(signum, frame):
            raise ExportTimeout(f"torch.export took more than {seconds} s")
        old = signal.signal(signal.SIGALRM, alarm)
        signal.alarm(seconds)
        try:
            return fn()
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    return run


def saved(row) -> dict:
    """A row as JSON: failures by class name and message."""
    out = {}
    for k, v in row.items():
        if isinstance(v, BaseException):
            out[k] = type(v).__name__
            out[k + "_msg"] = str(v)[:300]
        else:
            out[k] = v
    return out


def bench(entry, repeats, lean=False, torch_too=True, torch_timeout=0):
    case = entry.factory()
    m, a, k, spec = case.model, case.args, case.kwargs, case.dynamic_shapes
    row = {"name": entry.name}
    with torch.no_grad():
        row["eager_call"] = per_call(lambda: m(*a, **k), budget=0.1 if lean else 0.3)
        try:  # warm-up (per-op plans and caches are per process): steady-state timings
            st.export(m, a, k, dynamic_shapes=spec)
            if not lean:
                st.export(m, a, k)
        except Exception:  # noqa: BLE001 - timed below, where the failure is recorded
            pass
        st_t, st_ep, st_err = timed(lambda: st.export(m, a, k, dynamic_shapes=spec), repeats)
        row["st_export"], row["st_err"] = st_t, st_err
        if st_ep is not None and st_err is None:
            st_mod = st_ep.module()
            row["st_nodes"] = nodes(st_ep)
            row["st_match"] = run_on(case, st_mod, [(a, k)])
            row["st_run"] = run_on(case, st_mod, case.others)
            row["st_gen"] = row["st_run"] == "yes"
            row["st_call"] = per_call(lambda: st_mod(*a, **k), budget=0.1 if lean else 0.3)
            row["params"] = param_bytes(m)
            if not lean:
                row["st_mem"] = peak_added(lambda: st.export(m, a, k, dynamic_shapes=spec))
                row["st_tmem"] = tensor_peak_added(
                    lambda: st.export(m, a, k, dynamic_shapes=spec))
                s_t, _, s_err = timed(lambda: st.export(m, a, k), repeats)
                row["st_static"] = s_t if s_err is None else None
        if not torch_too:
            row["tx_export"], row["tx_err"] = None, RuntimeError("not run (--no-torch)")
            return row
        tspec = torch_spec(spec)
        t_t, t_ep, t_err = timed(_with_timeout(
            lambda: torch.export.export(m, a, k, dynamic_shapes=tspec), torch_timeout), 1)
        row["tx_export"], row["tx_err"] = t_t, t_err
        if t_ep is not None and t_err is None:
            t_mod = t_ep.module()
            row["tx_nodes"] = nodes(t_ep)
            row["tx_run"] = run_on(case, t_mod, case.others)
            row["tx_gen"] = row["tx_run"] == "yes"
            row["tx_call"] = per_call(lambda: t_mod(*a, **k), budget=0.1 if lean else 0.3)
    return row


def fmt_s(x):
    return "-" if x is None else (f"{x * 1e3:.1f}ms" if x < 1 else f"{x:.2f}s")


def fmt_us(x):
    return "-" if x is None else f"{x * 1e6:.0f}"


def fmt_r(x):
    return "-" if x is None else f"{x:.2f}x" if x < 10 else f"{x:.0f}x"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--family", action="append",
                    help="hand, transformers, timm, torchvision (repeatable; default all)")
    ap.add_argument("--lean", action="store_true",
                    help="skip the memory, static-export and long per-call measurements")
    ap.add_argument("--no-torch", action="store_true", help="safetrace only (no reference)")
    ap.add_argument("--torch-timeout", type=int, default=0,
                    help="seconds one torch.export may take (0: no limit)")
    ap.add_argument("--rows-out", help="append each finished row (JSON lines) to this file")
    ap.add_argument("--from-rows", nargs="+",
                    help="print the table of rows saved by --rows-out (no export)")
    ap.add_argument("--compact", action="store_true",
                    help="print the verdict and export-time columns only")
    ap.add_argument("models", nargs="*")
    opts = ap.parse_args()
    torch.set_num_threads(1)
    entries = [e for e in registry() if (not opts.models or e.name in opts.models)
               and (not opts.family or e.family in opts.family)]
    if not vision.available():
        skipped = [e for e in entries if e.family in ("timm", "torchvision")]
        if skipped:
            print(f"skipped {len(skipped)} timm/torchvision entries: {vision.NEEDS}",
                  file=sys.stderr)
        entries = [e for e in entries if e not in skipped]
    rows = []
    if opts.from_rows:
        for path in opts.from_rows:
            rows += [json.loads(line) for line in Path(path).read_text().splitlines() if line]
        entries = []
    else:
        torch.export.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),))  # torch warm-up
    for e in entries:
        t0 = time.perf_counter()
        try:
            rows.append(bench(e, opts.repeats, opts.lean, not opts.no_torch,
                              opts.torch_timeout))
        except Exception as exc:  # noqa: BLE001 - factory or eager failure
            rows.append({"name": e.name, "st_err": exc, "tx_err": exc, "eager_call": None})
        r = rows[-1]
        if opts.rows_out:
            with open(opts.rows_out, "a") as f:
                f.write(json.dumps(saved(r)) + "\n")
        print(f"  done {e.name} ({time.perf_counter() - t0:.0f}s): safetrace "
              f"{r.get('st_run', repr(r.get('st_err'))[:300])}, torch.export "
              f"{r.get('tx_run', repr(r.get('tx_err'))[:300])}", file=sys.stderr, flush=True)

    head = ("| model | safetrace | match | gen | nodes | torch.export | gen | nodes | export st | "
            "export torch | torch/st | st/eager fwd | dyn/static | call µs eager | st | torch | "
            "st/eager | torch/eager | export tensor mem | export Python heap (tracemalloc peak) |")
    if opts.compact:
        head = ("| model | safetrace | match | gen | torch.export | gen | export st | "
                "export torch | torch/st |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    speed, vs_eager, call_ratio, dyn_static, tx_call_ratio = [], [], [], [], []
    tensor_mem: list = []
    n_ok = n_gen = t_ok = t_gen = wrong = 0
    behind = []      # torch.export generalizes, safetrace does not
    for r in rows:
        ok = r.get("st_err") is None and r.get("st_export") is not None
        tok = r.get("tx_err") is None and r.get("tx_export") is not None
        n_ok += ok
        n_gen += bool(ok and r.get("st_gen"))
        t_ok += tok
        t_gen += bool(tok and r.get("tx_gen"))
        wrong += (r.get("st_match") == "WRONG") + (r.get("st_run") == "WRONG")
        if tok and r.get("tx_gen") and not (ok and r.get("st_gen")):
            behind.append(r["name"])
        ratio = r["tx_export"] / r["st_export"] if ok and tok else None
        ve = r["st_export"] / r["eager_call"] if ok else None
        cr = r["st_call"] / r["eager_call"] if ok else None
        tcr = r["tx_call"] / r["eager_call"] if tok else None
        ds = r["st_export"] / r["st_static"] if ok and r.get("st_static") else None
        for lst, v in ((speed, ratio), (vs_eager, ve), (call_ratio, cr), (dyn_static, ds),
                       (tx_call_ratio, tcr)):
            if v is not None:
                lst.append(v)
        has_mem = ok and "st_tmem" in r
        tmem = (f"{r['st_tmem']} B ({100 * r['st_tmem'] / max(r['params'], 1):.1f}%)"
                if has_mem else "-")
        if has_mem:
            tensor_mem.append(r["st_tmem"] / max(r["params"], 1))
        mem = (f"{r['st_mem'] / 1024:.0f} KiB ({100 * r['st_mem'] / max(r['params'], 1):.0f}% "
               f"of {r['params'] / 1024:.0f} KiB params)") if has_mem else "-"
        if opts.compact:
            print(f"| {r['name']} | {'yes' if ok else err_name(r['st_err'])} | "
                  f"{r.get('st_match', '-')} | {r.get('st_run', '-')} | "
                  f"{'yes' if tok else err_name(r['tx_err'])} | {r.get('tx_run', '-')} | "
                  f"{fmt_s(r.get('st_export') if ok else None)} | "
                  f"{fmt_s(r.get('tx_export') if tok else None)} | {fmt_r(ratio)} |")
            continue
        print(f"| {r['name']} | {'yes' if ok else err_name(r['st_err'])} | "
              f"{r.get('st_match', '-')} | {r.get('st_run', '-')} | {r.get('st_nodes', '-')} | "
              f"{'yes' if tok else err_name(r['tx_err'])} | "
              f"{r.get('tx_run', '-')} | {r.get('tx_nodes', '-')} | "
              f"{fmt_s(r.get('st_export') if ok else None)} | "
              f"{fmt_s(r.get('tx_export') if tok else None)} | {fmt_r(ratio)} | {fmt_r(ve)} | "
              f"{fmt_r(ds)} | {fmt_us(r.get('eager_call'))} | {fmt_us(r.get('st_call'))} | "
              f"{fmt_us(r.get('tx_call'))} | {fmt_r(cr)} | {fmt_r(tcr)} | {tmem} | {mem} |")

    def med(xs):
        return statistics.median(xs) if xs else float("nan")

    print(f"\nsafetrace dynamic/static export time: median {med(dyn_static):.2f}x "
          f"(goal <= 1.2x); torch.export call/eager: median {med(tx_call_ratio):.2f}x; "
          f"tensor memory added by export: max {100 * max(tensor_mem, default=0):.1f}% of "
          f"the parameter bytes (goal < 10%)")
    print(f"zoo: exported {n_ok}/{len(rows)}, generalizes {n_gen}/{len(rows)}, "
          f"export_speedup_vs_torch {med(speed):.1f}, export_vs_eager {med(vs_eager):.1f}, "
          f"call_vs_eager {med(call_ratio):.2f}")
    print(f"side by side: safetrace exports {n_ok}/{len(rows)} generalizes {n_gen}/{len(rows)}; "
          f"torch.export exports {t_ok}/{len(rows)} generalizes {t_gen}/{len(rows)}; "
          f"median export speedup {med(speed):.1f}x; wrong results {wrong}; torch.export "
          f"generalizes where safetrace does not: {', '.join(behind) or 'none'}")


if __name__ == "__main__":
    main()
