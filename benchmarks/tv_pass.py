"""torchvision models the vision zoo does not have (random weights, eval, no downloads),
through ``st.export`` and ``torch.export`` with the zoo's spec (a named batch 1-64,
``Dim.AUTO`` H and W): does each export, match eager at two other sizes (batch 1 and 3,
other resolutions), and refuse an input with another
channel count before running?

    PYTHONPATH=$PWD:/work/shared/tools nice python -m benchmarks.tv_pass [--no-torch] [names]

(torchvision imports beside a CPU-only torch through /work/shared/tools/tv_shim.py.)
"""

from __future__ import annotations

import argparse
import time

import torch

import safetrace as st
from benchmarks.common import torch_spec

try:
    import tv_shim  # noqa: F401 - torchvision beside a CPU torch, where present
except ImportError:
    pass

from benchmarks.zoo.vision import _image, _tv  # noqa: E402

# (name, builder, its keyword arguments, sizes: (batch, H, W) of the example and two others)
MODELS = [
    ("inception_v3", "inception_v3", {"aux_logits": False, "init_weights": True},
     ((2, 96, 128), (1, 128, 96), (3, 160, 160))),
    ("swin_v2_t", "swin_v2_t", {}, None),     # (torch.export's run of it: minutes; --no-torch)
    ("vgg11_bn", "vgg11_bn", {}, None),
    ("alexnet", "alexnet", {}, None),
    ("efficientnet_v2_s", "efficientnet_v2_s", {}, None),
    ("mobilenet_v2", "mobilenet_v2", {}, None),
    ("mobilenet_v3_large", "mobilenet_v3_large", {}, None),
    ("resnext50_32x4d", "resnext50_32x4d", {}, None),
    ("wide_resnet50_2", "wide_resnet50_2", {}, None),
    ("regnet_x_400mf", "regnet_x_400mf", {}, None),
    ("shufflenet_v2_x1_0", "shufflenet_v2_x1_0", {}, None),
]


def _close(a, b):
    return a.shape == b.shape and torch.allclose(a, b, rtol=1e-4, atol=1e-4)


def _check(model, module, inputs):
    bad = []
    for x in inputs:
        try:
            with torch.no_grad():
                expected = model(x)
        except Exception:  # noqa: BLE001 - eager fails there: the program must raise too
            expected = None
        try:
            with torch.no_grad():
                got = module(x)
        except Exception as exc:  # noqa: BLE001
            if expected is not None:
                bad.append(f"rejects {tuple(x.shape)} ({type(exc).__name__})")
            continue
        if expected is None:
            bad.append(f"runs where eager fails {tuple(x.shape)}")
        elif not _close(got, expected):
            bad.append(f"WRONG {tuple(x.shape)}")
    return "yes" if not bad else "; ".join(bad)


def run(name, builder, kw, sizes, torch_too):
    from benchmarks.zoo import vision
    case = _tv(builder, sizes=sizes or vision.SIZES, num_classes=10, **kw)()
    model = case.model
    (x,), others = case.args, [a[0] for a, _ in case.others]
    b, c, h, w = x.shape
    row = {"model": name}
    t0 = time.perf_counter()
    try:
        ep = st.export(model, (x,), dynamic_shapes=case.dynamic_shapes)
        row["st"], row["st_s"] = "yes", time.perf_counter() - t0
        row["gen"] = _check(model, ep.module(), [x] + others)
        try:
            ep.module()(_image(b, h, w, c + 1))
            row["out"] = "runs"
        except Exception as exc:  # noqa: BLE001
            row["out"] = "yes" if isinstance(exc, st.InputMismatchError) else type(exc).__name__
    except st.ExportError as exc:
        row["st"], row["st_msg"] = f"refused ({type(exc).__name__})", str(exc)[:300]
    if torch_too:
        t0 = time.perf_counter()
        try:
            tep = torch.export.export(model, (x,), dynamic_shapes=torch_spec(case.dynamic_shapes))
            row["tx"], row["tx_s"] = "yes", time.perf_counter() - t0
            row["tx_gen"] = _check(model, tep.module(), others)
        except Exception as exc:  # noqa: BLE001
            row["tx"] = type(exc).__name__
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("names", nargs="*")
    opts = ap.parse_args()
    torch.set_num_threads(1)
    print("| model | st exports | st generalizes | st refuses other channels | "
          "torch exports | torch generalizes | torch/st export time |")
    print("|---|---|---|---|---|---|---|")
    for name, builder, kw, sizes in MODELS:
        if opts.names and name not in opts.names:
            continue
        r = run(name, builder, kw, sizes, not opts.no_torch)
        ratio = f"{r['tx_s'] / r['st_s']:.2g}x" if "tx_s" in r and "st_s" in r else "-"
        print(f"| {name} | {r['st']} | {r.get('gen', '-')} | {r.get('out', '-')} | "
              f"{r.get('tx', '-')} | {r.get('tx_gen', '-')} | {ratio} |", flush=True)
        if "st_msg" in r:
            print(f"<!-- {name}: {r['st_msg']!r} -->", flush=True)


if __name__ == "__main__":
    main()
