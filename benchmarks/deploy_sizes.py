"""Deployed artifacts against ``ep.module()`` over a Dim's whole range (session 37, issue 22).

Small programs with size arithmetic (chunk, split, pad, view, cat, arange, interpolate,
strided slices, min/max, floordiv, roll, cumsum; the size split of issue 22's
``unsafe_chunk`` is in tests/interop/test_executorch_sizes.py), each exported twice (``Dim(max=16)``,
admitting 0 and 1, and ``Dim(min=2, max=16)``), lowered with ``st.to_executorch``,
``st.to_onnx`` and (``--aoti``) ``st.to_aoti``; each artifact run at the Dim's min, min+1,
a middle size, its max and the sizes just outside.  Each cell:

* ``match``: every size ``ep.module()`` accepts gives eager's values, every size it refuses
  is refused;
* ``wrong`` (any size gives other values or runs where the program refuses: the finding
  that matters), ``over-refuse`` (refuses a size the program accepts), ``lower-refused``
  (the helper raised a ConversionError: a clean refusal), ``lower-error`` (anything else).

Run: .venv/bin/python -m benchmarks.deploy_sizes [--aoti] [--only name,...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F

import safetrace as st

warnings.filterwarnings("ignore")


def _explicit_split(z):
    k = (z.shape[0] + 1) // 2
    a, b = z.split([k, z.shape[0] - k], 0)
    return a * 2, b + 1


# name -> forward of z: f32[n, 3]
PROGRAMS = {
    "chunk_first": lambda z: z.chunk(2, 0)[0] * 2,
    "unsafe_chunk_last": lambda z: z.unsafe_chunk(2, 0)[-1] * 2,
    "split3_first": lambda z: z.split(3, 0)[0] + 1,
    "split_sizes": _explicit_split,
    "tensor_split_mid": lambda z: z.tensor_split(3, 0)[1] * 3,
    "pad_rows": lambda z: F.pad(z, (0, 0, 1, 2)) + 1,
    "view_flat": lambda z: z.view(-1) * 2,
    "view_pairs": lambda z: z.reshape(-1, 1, 3).sum(1),
    "cat_head": lambda z: torch.cat([z, z[:1]]) * 2,
    "arange_rows": lambda z: z + torch.arange(z.shape[0]).unsqueeze(1),
    "interpolate": lambda z: F.interpolate(z.t().unsqueeze(0), scale_factor=2.0),
    "step2": lambda z: z[::2] * 2,
    "step3_from1": lambda z: z[1::3] + 1,
    "min_head": lambda z: z[: min(z.shape[0], 5)] * 2,
    "max_tail": lambda z: z[max(z.shape[0] - 4, 0):] + 1,
    "floordiv_head": lambda z: z[: z.shape[0] // 2] * 2,
    "mod_head": lambda z: z[: z.shape[0] % 3] + 1,
    "narrow_from1": lambda z: z.narrow(0, 1, z.shape[0] - 1) * 2,
    "roll": lambda z: torch.roll(z, 1, 0),
    "cumsum_mean": lambda z: z.cumsum(0) / (torch.arange(z.shape[0]) + 1).unsqueeze(1),
    "new_rows_max": lambda z: z.new_ones(max(z.shape[0], 1), 3) * z.sum(),
}

LO = {"n0": 0, "n2": 2}
HI = 16


class Wrap(torch.nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, z):
        return self.fn(z)


def _flat(out):
    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def _same(got, want) -> bool:
    got, want = list(got), _flat(want)
    return len(got) == len(want) and all(
        tuple(g.shape) == tuple(w.shape) and torch.allclose(g.float(), w.float(), atol=1e-5,
                                                           equal_nan=True)
        for g, w in zip(got, want))


def _runner(tool: str, ep, tmp: Path):
    if tool == "executorch":
        from executorch.runtime import Runtime

        buffer = st.to_executorch(ep).buffer
        loaded = Runtime.get().load_program(buffer)
        method = loaded.load_method("forward")
        # (the buffer and program stay referenced while the method runs)
        return lambda z, keep=(buffer, loaded): method.execute([z])
    if tool == "onnx":
        import onnxruntime as ort

        st.to_onnx(ep, str(tmp / "m.onnx"), verbose=False)
        sess = ort.InferenceSession(str(tmp / "m.onnx"))
        name = sess.get_inputs()[0].name
        return lambda z: [torch.from_numpy(a) for a in sess.run(None, {name: z.numpy()})]
    runner = torch._inductor.aoti_load_package(st.to_aoti(ep, tmp / "m.pt2", verbose=False))
    return lambda z: _flat(runner(z))


def cell(fn, lo: int, tool: str) -> tuple[str, str]:
    model = Wrap(fn)
    sizes = sorted({lo - 1, lo, lo + 1, (lo + HI) // 2, HI, HI + 1} - {-1})
    try:
        ep = st.export(model, (torch.randn(6, 3),),
                       dynamic_shapes={"z": {0: st.Dim("n", min=lo, max=HI)}})
    except Exception as e:  # noqa: BLE001
        return "export-refused", f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    with tempfile.TemporaryDirectory() as d:
        try:
            run = _runner(tool, ep, Path(d))
        except st.ConversionError as e:
            return "lower-refused", str(e).splitlines()[0][:160]
        except Exception as e:  # noqa: BLE001
            return "lower-error", f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        wrong, over, notes = [], [], []
        for n in sizes:
            z = torch.randn(n, 3)
            try:
                want = ep.module()(z)
            except Exception:  # noqa: BLE001
                want = None
            try:
                got = run(z)
            except Exception:  # noqa: BLE001
                got = None
            if want is None and got is not None:
                wrong.append(f"{n}: ran, program refuses")
            elif want is not None and got is None:
                over.append(n)
            elif want is not None and not _same(got, model(z)):
                wrong.append(f"{n}: other values")
        if wrong:
            return "wrong", "; ".join(wrong)
        if over:
            return "over-refuse", f"refuses n = {over}"
        return "match", ""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--aoti", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--tools", default="executorch,onnx")
    args = ap.parse_args()
    tools = args.tools.split(",") + (["aoti"] if args.aoti else [])
    only = set(filter(None, args.only.split(",")))
    print("| program | Dim | " + " | ".join(tools) + " |")
    print("|---|---|" + "---|" * len(tools))
    notes = []
    for name, fn in PROGRAMS.items():
        if only and name not in only:
            continue
        for label, lo in LO.items():
            row = []
            for tool in tools:
                try:
                    verdict, note = cell(fn, lo, tool)
                except Exception:  # noqa: BLE001
                    verdict, note = "harness-error", traceback.format_exc().splitlines()[-1]
                row.append(verdict)
                if note:
                    notes.append(f"{name} {label} {tool}: {note}")
            print(f"| {name} | min={lo} | " + " | ".join(row) + " |", flush=True)
    print()
    for n in notes:
        print("-", n)


if __name__ == "__main__":
    sys.exit(main())
