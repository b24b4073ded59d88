"""Deployment: safetrace programs handed to PyTorch's stack, against torch.export's own.

Per zoo model, in one run: ``st.export`` + ``ep.to_torch()`` time vs ``torch.export.export``
time (the same dynamic_shapes spec); ``validate()``; accept/reject parity of the converted
module with ``ep.module()`` (the example, two other sizes, the out-of-spec input);
``torch.export.unflatten`` (the model's submodule tree rebuilt, eager's numerics at the 3
sizes, the out-of-spec input rejected); ONNX
export + onnxruntime parity at 3 sizes, for ours and for torch.export's program;
AOTInductor compile + parity (3 sizes) for the small models.  The last line is

    deploy: converted N/M, validated N/M, parity N/M, unflatten N/M, onnx ours N/M (torch's K/M),
            onnx ours-fails-where-torch-passes F, aoti N/A, export+to_torch vs torch.export R

(R: median over the models of (st.export + to_torch) / torch.export.export; < 1 is faster).
Run: .venv/bin/python benchmarks/bench_deploy.py [--no-aoti] [--no-onnx] [--aoti m1,m2]
[model ...]
"""

from __future__ import annotations

import argparse
import copy
import gc
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from torch.utils import _pytree  # noqa: E402

import safetrace as st  # noqa: E402
from benchmarks.common import torch_spec  # noqa: E402
from benchmarks.zoo import registry  # noqa: E402

warnings.filterwarnings("ignore")
# torch.onnx logs each missing torchvision op once per export: noise in the table
logging.getLogger("torch.onnx").setLevel(logging.ERROR)
AOTI_DEFAULT = ("mlp", "resnet", "lstm_tagger", "tiny_gpt", "data_dependent",
                "transformer_encoder")


def timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def tensors(tree):
    return [t for t in _pytree.tree_leaves(tree) if isinstance(t, torch.Tensor)]


def close(got, want) -> bool:
    got, want = tensors(got), tensors(want)
    if len(got) != len(want):
        return False
    try:
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-3, atol=1e-4, check_dtype=False)
    except AssertionError:
        return False
    return True


def run(fn, args, kwargs):
    try:
        with torch.no_grad():
            return "ok", fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    except Exception as exc:  # noqa: BLE001 - a rejection, in either side's words
        return "rejected", exc


def parity(ep, tep, case) -> bool:
    ours, theirs = ep.module(), tep.module()
    inputs = [(case.args, case.kwargs)] + case.others
    if case.outside is not None:
        inputs.append(case.outside)
    for args, kwargs in inputs:
        a, out_a = run(ours, args, kwargs)
        b, out_b = run(theirs, args, kwargs)
        if a != b or (a == "ok" and not close(out_b, out_a)):
            return False
    return True


def onnx_parity(program, case, tmp) -> str:
    """'ok' when onnxruntime matches eager at the 3 sizes, else why not."""
    import onnxruntime as ort

    path = os.path.join(tmp, "m.onnx")
    try:
        if isinstance(program, st.ExportedProgram):
            st.to_onnx(program, path)
        else:
            torch.onnx.export(program, dynamo=True, verbose=False).save(path)
        sess = ort.InferenceSession(path)
    except Exception as exc:  # noqa: BLE001
        return f"export: {type(exc).__name__}"
    for args, kwargs in [(case.args, case.kwargs)] + case.others:
        feeds = {i.name: t.numpy() for i, t in zip(sess.get_inputs(), tensors((args, kwargs)))}
        try:
            got = [torch.from_numpy(o) for o in sess.run(None, feeds)]
        except Exception as exc:  # noqa: BLE001
            return f"run: {type(exc).__name__}"
        with torch.no_grad():
            want = case.model(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        if not close(got, tensors(want)[:len(got)]):
            return "mismatch"
    return "ok"


def unflatten_parity(ep, tep, case) -> str:
    """'ok' when torch.export.unflatten rebuilds the model's submodule tree and the result
    matches eager at the 3 sizes (and accepts or rejects the out-of-spec input as
    ``ep.module()`` does), else why not."""
    want = {n for n, _ in case.model.named_modules() if n}
    if not want:
        return "no submodules"
    try:
        tree = torch.export.unflatten(tep)
    except Exception as exc:  # noqa: BLE001
        return f"unflatten: {type(exc).__name__}"
    got = {n for n, _ in tree.named_modules() if n}
    if got != want:
        return f"tree: {len(got & want)}/{len(want)}"
    for args, kwargs in [(case.args, case.kwargs)] + case.others:
        status, out = run(tree, args, kwargs)
        if status != "ok":
            return f"run: {type(out).__name__}"
        with torch.no_grad():
            ref = case.model(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        if not close(out, ref):
            return "mismatch"
    if case.outside is not None and \
            run(tree, *case.outside)[0] != run(ep.module(), *case.outside)[0]:
        return "out-of-spec: differs from ep.module()"
    return "ok"


def aoti_parity(tep, case, tmp) -> str:
    try:
        pkg = torch._inductor.aoti_compile_and_package(
            tep, package_path=os.path.join(tmp, "m.pt2"))
        runner = torch._inductor.aoti_load_package(pkg)
    except Exception as exc:  # noqa: BLE001
        return f"compile: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
    for args, kwargs in [(case.args, case.kwargs)] + case.others:
        with torch.no_grad():
            want = case.model(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            try:
                got = runner(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001
                return f"run: {type(exc).__name__}"
        if not close(got, want):
            return "mismatch"
    return "ok"


def bench(entry, aoti: bool, onnx: bool = True) -> dict:
    row = {"model": entry.name}
    case = entry.factory()
    with torch.no_grad():
        t_st, ep = timed(lambda: st.export(case.model, case.args, case.kwargs,
                                           dynamic_shapes=case.dynamic_shapes))
        try:
            t_conv, tep = timed(ep.to_torch)
        except Exception as exc:  # noqa: BLE001
            row["convert"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
            return row
        row.update(st_export=t_st, to_torch=t_conv, convert="ok")
        try:
            t_torch, ref = timed(lambda: torch.export.export(
                case.model, case.args, case.kwargs,
                dynamic_shapes=torch_spec(case.dynamic_shapes)))
            row["torch_export"] = t_torch
        except Exception as exc:  # noqa: BLE001
            ref = None
            row["torch_export"] = None
            row["torch_error"] = type(exc).__name__
    try:
        tep.validate()
        row["validate"] = "ok"
    except Exception as exc:  # noqa: BLE001
        row["validate"] = type(exc).__name__
    row["parity"] = "ok" if parity(ep, tep, case) else "MISMATCH"
    row["unflatten"] = unflatten_parity(ep, tep, case)
    with tempfile.TemporaryDirectory() as tmp:
        if onnx:
            row["onnx_ours"] = onnx_parity(ep, case, tmp)
            row["onnx_torch"] = onnx_parity(ref, case, tmp) if ref is not None else \
                "no program"
        if aoti:
            row["aoti"] = aoti_parity(tep, case, tmp)
    return row


def warm_up() -> None:
    """One tiny export, conversion and torch.export first: the first call of each pays for
    imports and caches, which would otherwise land on whichever model comes first."""
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    x = torch.randn(3, 4)
    spec = {"input": {0: st.Dim("b", max=64)}}
    st.export(m, (x,), dynamic_shapes=spec).to_torch()
    torch.export.export(m, (x,), dynamic_shapes=torch_spec(spec))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*")
    ap.add_argument("--no-aoti", action="store_true")
    ap.add_argument("--no-onnx", action="store_true", help="skip the ONNX columns (quick)")
    ap.add_argument("--aoti", default=",".join(AOTI_DEFAULT))
    opts = ap.parse_args()
    aoti_models = set() if opts.no_aoti else set(opts.aoti.split(","))
    entries = [e for e in registry() if not opts.models or e.name in opts.models]
    torch.manual_seed(0)
    warm_up()
    print(f"# {time.strftime('%Y-%m-%d')} {platform.machine()} {os.cpu_count()} cpus, "
          f"torch {torch.__version__}")
    print("| model | st.export s | to_torch s | torch.export s | ratio | validate | "
          "parity | unflatten | onnx ours | onnx torch | aoti |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for e in entries:
        row = bench(e, e.name in aoti_models, onnx=not opts.no_onnx)
        rows.append(row)
        ratio = None
        if row.get("torch_export") and row.get("to_torch") is not None:
            ratio = (row["st_export"] + row["to_torch"]) / row["torch_export"]
            row["ratio"] = ratio

        def f(k):
            v = row.get(k)
            return f"{v:.3f}" if isinstance(v, float) else (v if v is not None else "-")
        print(f"| {e.name} | {f('st_export')} | {f('to_torch')} | {f('torch_export')} | "
              f"{f'{ratio:.2f}' if ratio else '-'} | {row.get('validate', row['convert'])} | "
              f"{row.get('parity', '-')} | {row.get('unflatten', '-')} | "
              f"{row.get('onnx_ours', '-')} | "
              f"{row.get('onnx_torch', '-')} | {row.get('aoti', '-')} |", flush=True)
    n = len(rows)
    count = lambda k, v="ok": sum(1 for r in rows if r.get(k) == v)  # noqa: E731
    worse = sum(1 for r in rows if r.get("onnx_torch") == "ok" and r.get("onnx_ours") != "ok")
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    n_aoti = sum(1 for r in rows if "aoti" in r)
    onnx = (f"onnx ours {count('onnx_ours')}/{n} (torch's {count('onnx_torch')}/{n}), onnx "
            f"ours-fails-where-torch-passes {worse}, " if not opts.no_onnx else "onnx skipped, ")
    print(f"deploy: converted {count('convert')}/{n}, validated {count('validate')}/{n}, "
          f"parity {count('parity')}/{n}, unflatten {count('unflatten')}/"
          f"{n - count('unflatten', 'no submodules')}, {onnx}"
          f"aoti {count('aoti')}/{n_aoti}, export+to_torch vs torch.export "
          f"{statistics.median(ratios) if ratios else float('nan'):.2f}")


if __name__ == "__main__":
    main()
