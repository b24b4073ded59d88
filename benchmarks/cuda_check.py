"""CUDA check of exported programs (run by hand on a machine with a GPU; CPU falls back).

For each zoo entry named (default: the fast hand-built ones and a few others):
  1. export on CPU as users do, move ``ep.module()`` to the device, compare with eager on the
     device at the case's other sizes, and check the outside input is refused;
  2. export with the model and example inputs already on the device (tracing CUDA tensors),
     same comparisons, then ``to_torch().module()`` on the device;
  3. (``--aoti``) ``st.to_aoti`` of the device program, run at the other sizes and refused
     outside.
Prints one line per step: ``name step ok|FAIL <detail> <seconds>``; exits 0 always (a report).

    PYTHONPATH=. python benchmarks/cuda_check.py [--aoti] [names...]
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
import traceback
import warnings

import torch
from torch.utils import _pytree

sys.path.insert(0, ".")
import safetrace as st  # noqa: E402
from benchmarks.zoo import by_name  # noqa: E402

DEFAULT = ["mlp", "resnet", "transformer_encoder", "lstm_tagger", "tiny_gpt",
           "data_dependent", "bert"]


def to_dev(tree, dev):
    return _pytree.tree_map(lambda t: t.to(dev) if isinstance(t, torch.Tensor) else t, tree)


def close(a, b) -> str:
    la, lb = _pytree.tree_leaves(a), _pytree.tree_leaves(b)
    if len(la) != len(lb):
        return f"{len(la)} outputs vs {len(lb)}"
    worst = 0.0
    for x, y in zip(la, lb):
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
                return f"meta {tuple(x.shape)} {x.dtype} {x.device} vs {tuple(y.shape)} {y.dtype} {y.device}"
            if x.is_floating_point():
                d = (x.float() - y.float()).abs().max().item() if x.numel() else 0.0
                worst = max(worst, d / (1.0 + y.float().abs().max().item() if y.numel() else 1.0))
            elif not torch.equal(x, y):
                return "integer outputs differ"
        elif x != y:
            return f"{x!r} vs {y!r}"
    return "" if worst < 2e-3 else f"relative diff {worst:.2e}"


def compare(fn, model, case, dev) -> str:
    problems = []
    for args, kwargs in case.others:
        args, kwargs = to_dev((args, kwargs), dev)
        with torch.no_grad():
            want = model(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            got = fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        d = close(got, want)
        if d:
            problems.append(d)
    if case.outside is not None:
        args, kwargs = to_dev(case.outside, dev)
        try:
            with torch.no_grad():
                fn(*args, **kwargs)
            problems.append("outside input accepted")
        except Exception:  # noqa: BLE001 - any refusal counts
            pass
    return "; ".join(problems)


def step(name, what, f):
    t = time.perf_counter()
    try:
        detail = f() or ""
        status = "FAIL" if detail else "ok"
    except Exception as exc:  # noqa: BLE001 - a report, not a test
        status, detail = "FAIL", f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        traceback.print_exc(limit=4, file=sys.stderr)
    print(f"{name:22s} {what:18s} {status:4s} {time.perf_counter() - t:7.2f}s {detail}",
          flush=True)


def run(name: str, dev: str, aoti: bool) -> None:
    case = by_name(name).factory()
    model = case.model

    def cpu_export_then_move():
        with torch.no_grad():
            ep = st.export(model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
        m = ep.module().to(dev)
        return compare(m, copy.deepcopy(model).to(dev), case, dev)

    step(name, "cpu-export->dev", cpu_export_then_move)

    held = {}

    def dev_export():
        dmodel = copy.deepcopy(model).to(dev)
        args, kwargs = to_dev((case.args, case.kwargs), dev)
        with torch.no_grad():
            ep = st.export(dmodel, args, kwargs, dynamic_shapes=case.dynamic_shapes)
        held["ep"], held["model"] = ep, dmodel
        return compare(ep.module(), dmodel, case, dev)

    step(name, "dev-export", dev_export)
    if "ep" not in held:
        return

    def dev_to_torch():
        tep = held["ep"].to_torch()
        return compare(tep.module(), held["model"], case, dev)

    step(name, "dev-to_torch", dev_to_torch)

    def dev_save_load():
        import io
        buf = io.BytesIO()
        st.save(held["ep"], buf)
        ep2 = st.load(buf.getvalue(), allow_cuda=True)
        return compare(ep2.module().to(dev), held["model"], case, dev)

    step(name, "save-load->dev", dev_save_load)

    if aoti:
        def dev_aoti():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                path = st.to_aoti(held["ep"], f"/tmp/{name}.pt2")
            runner = torch._inductor.aoti_load_package(path)
            problems = [compare(runner, held["model"], case, dev)]
            # the contract's edges: the package refuses what the program refuses
            from tests.interop.harness import edge_inputs, outcome
            module = copy.deepcopy(held["ep"].module())
            edges = [to_dev(e, dev) for e in edge_inputs(held["ep"])]
            differ = 0
            for args, kwargs in edges:
                with torch.no_grad():
                    a, _ = outcome(module, args, kwargs)
                    b, _ = outcome(runner, args, kwargs)
                differ += a != b
            if differ:
                problems.append(f"{differ}/{len(edges)} edge inputs decided differently")
            return "; ".join(p for p in problems if p)

        step(name, "dev-aoti", dev_aoti)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=DEFAULT)
    ap.add_argument("--aoti", action="store_true")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    print(f"torch {torch.__version__}, device {a.device}"
          f"{' ' + torch.cuda.get_device_name() if a.device == 'cuda' else ''}", flush=True)
    for name in a.names:
        try:
            run(name, a.device, a.aoti)
        except Exception as exc:  # noqa: BLE001
            print(f"{name:22s} {'build':18s} FAIL {type(exc).__name__}: {exc}"[:400], flush=True)


if __name__ == "__main__":
    main()
