"""torchvision's detectors in the zoo: export, generalize, match eager, beside torch.export.

Six detectors with random weights (``weights=None, weights_backbone=None``), eval mode, at a
small resolution (``min_size=max_size=128``; SSDlite resizes to 320 itself) so that one eager
forward stays within seconds on a CPU.  Each has two cases:

- ``<name>``: a low score threshold, so boxes survive (random weights score low);
- ``<name>-empty``: a score threshold no box passes, the case where the post-processing
  meets an empty set of boxes.

The model is called as ``model(list(x))`` for ``x`` of shape (B, 3, H, W), with the spec
``{0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO}``: torchvision iterates over the image list, so
the batch is always specialized (by torch.export too); height and width stay dynamic
where the model allows.

torchvision's C++ kernels load only beside the torch it was built for; elsewhere (the
registry's wheel beside a CPU torch, imported through ``/work/shared/tools/tv_shim.py``)
``tv_ops.install()`` registers plain-torch CPU kernels of ``nms`` and ``roi_align``.
``available()`` says whether torchvision imports and its two ops run here, and
``registry()`` / bench_zoo pick these entries up only then.  Run on its own:

    PYTHONPATH=$PWD .venv/bin/python benchmarks/zoo/detection.py [name ...]
"""

from __future__ import annotations

import copy
import sys
import time
from pathlib import Path
from typing import Any, Callable

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

import safetrace as st  # noqa: E402
from safetrace import Dim  # noqa: E402
from benchmarks.zoo import Case, Entry, tv_ops  # noqa: E402

SIZE = 128
# Candidate counts are kept small so that every batched_nms call sees at most 1000 boxes:
# above that torchvision switches to a per-class loop that cannot be traced (safetrace
# asserts the traced side), and random weights score many boxes equal, which the two
# strategies order differently.
_RCNN = {"min_size": SIZE, "max_size": SIZE, "rpn_pre_nms_top_n_test": 200,
         "rpn_post_nms_top_n_test": 10}
_ONE_STAGE = {"min_size": SIZE, "max_size": SIZE, "topk_candidates": 100}
# name -> (constructor keywords, attribute path of the score threshold, low, impossible)
DETECTORS: dict[str, tuple[dict, str, float, float]] = {
    "fasterrcnn_mobilenet_v3_large_fpn": (_RCNN, "roi_heads.score_thresh", 0.0, 1.01),
    "retinanet_resnet50_fpn": (_ONE_STAGE, "score_thresh", 0.0, 1.01),
    "ssdlite320_mobilenet_v3_large": ({"topk_candidates": 10}, "score_thresh", 0.001, 1.01),
    "fcos_resnet50_fpn": (_ONE_STAGE, "score_thresh", 0.0, 1.01),
    "maskrcnn_resnet50_fpn": (_RCNN, "roi_heads.score_thresh", 0.0, 1.01),
    "keypointrcnn_resnet50_fpn": (_RCNN, "roi_heads.score_thresh", 0.0, 1.01),
}
FAST = ("fasterrcnn_mobilenet_v3_large_fpn", "ssdlite320_mobilenet_v3_large")
# other resolutions the export must serve: the example's, a larger square, and non-square
OTHER_SIZES = ((SIZE, SIZE), (SIZE + 32, SIZE + 32), (SIZE, SIZE + 32), (SIZE + 32, SIZE),
               (96, SIZE))


def available() -> bool:
    """True when torchvision imports and its ops nms and roi_align run on CPU here (its own
    C++ kernels, or the plain-torch ones of ``tv_ops``)."""
    return tv_ops.install()


class ImageList(torch.nn.Module):
    """``detector(list(x))``: the batch tensor as torchvision's list of images."""

    def __init__(self, detector: torch.nn.Module) -> None:
        super().__init__()
        self.detector = detector

    def forward(self, x: torch.Tensor) -> Any:
        return self.detector(list(x))


class PerImage(torch.nn.Module):
    """One program for every batch size: ``images`` (B, 3, H, W) in, each of the detector's
    per-image outputs padded to ``k`` detections and stacked (``boxes`` (B, k, 4), ``scores``
    (B, k), ``labels`` (B, k), masks, keypoints...) with ``valid`` (B, k): which rows are
    detections.  The per-image step is ``st.map`` over the batch: under export one traced
    body (the batch stays symbolic), eagerly a Python loop (torch's eager ``map`` compiles
    its body, which the detectors' cached anchors refuse).  docs/deploying.md shows it."""

    def __init__(self, detector: torch.nn.Module, k: int | None = None) -> None:
        super().__init__()
        self.detector = detector
        heads = getattr(detector, "roi_heads", detector)
        self.k = k if k is not None else heads.detections_per_img

    def one(self, image: torch.Tensor) -> dict[str, torch.Tensor]:
        found = self.detector([image])[0]
        n = found["boxes"].shape[0]  # data-dependent, at most k (the detector's own cap)
        out = {}
        for key, v in found.items():
            out[key] = torch.nn.functional.pad(v, (0, 0) * (v.dim() - 1) + (0, self.k - n))
        out["valid"] = torch.arange(self.k, device=image.device) < n
        return out

    def forward(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        return st.map(self.one, images)


def build(name: str, empty: bool = False) -> torch.nn.Module:
    """The detector `name` (random weights, eval mode), with a threshold that lets boxes
    through, or none (`empty`)."""
    from torchvision.models import detection

    kwargs, attr, low, impossible = DETECTORS[name]
    torch.manual_seed(0)
    model = getattr(detection, name)(weights=None, weights_backbone=None, **kwargs).eval()
    owner_path, _, field = attr.rpartition(".")
    owner = model
    for part in filter(None, owner_path.split(".")):
        owner = getattr(owner, part)
    setattr(owner, field, impossible if empty else low)
    return ImageList(model).eval()


def _factory(name: str, empty: bool) -> Callable[[], Case]:
    def make() -> Case:
        model = build(name, empty)
        g = torch.Generator().manual_seed(1)
        img = lambda *s: torch.rand(*s, generator=g)  # noqa: E731
        auto = Dim.AUTO
        others = [((img(1, 3, h, w),), {}) for h, w in OTHER_SIZES]
        return Case(model, (img(1, 3, SIZE, SIZE),), {}, {"x": {0: auto, 2: auto, 3: auto}},
                    others, outside=((img(1, 3, SIZE),), {}))
    return make


ENTRIES: list[Entry] = [
    Entry(f"{name}{'-empty' if empty else ''}", _factory(name, empty),
          fast=name in FAST and not empty, family="detection",
          note="no box passes the score threshold" if empty else "")
    for name in DETECTORS for empty in (False, True)
]


# -- running on its own ---------------------------------------------------------------------
def _close(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype
                and torch.allclose(a, b, rtol=1e-4, atol=1e-4))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and \
            all(_close(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _outcome(case: Case, module: Any, args: tuple, grad: bool = False) -> str:
    """'match', 'MISMATCH', 'rejected (<error>)' or 'eager raises'; with `grad`, run with
    grad enabled (the weights require grad) and name the outputs whose requires_grad
    differs from eager's (``match (grad differs: masks)``)."""
    with torch.set_grad_enabled(grad):
        try:
            expected = case.model(*copy.deepcopy(args))
        except Exception:  # noqa: BLE001
            return "eager raises"
        try:
            got = module(*args)
        except Exception as exc:  # noqa: BLE001
            return f"rejected ({type(exc).__name__})"
    if not _close(expected, got):
        return "MISMATCH"
    differs = [k for k in expected if isinstance(expected, dict) and isinstance(
        expected[k], torch.Tensor) and expected[k].requires_grad != got[k].requires_grad]
    return f"match (grad differs: {'/'.join(differs)})" if differs else "match"


def _export(which: str, case: Case) -> tuple[Any, float, str]:
    import safetrace as st
    t0 = time.perf_counter()
    try:
        if which == "safetrace":
            ep = st.export(case.model, case.args, dynamic_shapes=case.dynamic_shapes)
        else:
            from benchmarks.common import torch_spec
            ep = torch.export.export(case.model, case.args,
                                     dynamic_shapes=torch_spec(case.dynamic_shapes))
        return ep.module(), time.perf_counter() - t0, ""
    except Exception as exc:  # noqa: BLE001 - the row names the failure
        return None, time.perf_counter() - t0, f"{type(exc).__name__}: {str(exc)[:160]}"


def evaluate(entry: Entry, with_torch: bool = True) -> dict:
    """One row: per exporter, (exported, example result, generalizes, export seconds)."""
    case = entry.factory()
    row: dict = {"name": entry.name}
    for which in ("safetrace", "torch.export") if with_torch else ("safetrace",):
        module, secs, err = _export(which, case)
        if module is None:
            row[which] = {"exported": False, "error": err, "seconds": secs}
            continue
        example = _outcome(case, module, case.args)
        others = [_outcome(case, module, a) for a, _ in case.others]
        row[which] = {"exported": True, "seconds": secs, "example": example,
                      "others": others, "generalizes": all(o == "match" for o in others)}
    return row


def _cell(r: dict) -> str:
    if not r["exported"]:
        return f"fails ({r['error'][:70]})"
    return (f"{r['seconds']:.1f}s ex={r['example']} others={','.join(r['others'])}")


# batch sizes with other resolutions: (B, H, W)
BATCHES = ((1, SIZE, SIZE), (2, SIZE + 32, SIZE), (3, 96, SIZE))


def batched_case(name: str) -> Case:
    """`name`'s detector in ``PerImage``, with ``Dim.AUTO`` on batch, height and width."""
    base, empty = name.removesuffix("-empty"), name.endswith("-empty")
    model = PerImage(build(base, empty).detector).eval()
    g = torch.Generator().manual_seed(1)
    others = [((torch.rand(*b, generator=g),), {}) for b in
              [(n, 3, h, w) for n, h, w in BATCHES]]
    auto = Dim.AUTO
    return Case(model, (torch.rand(2, 3, SIZE, SIZE, generator=g),), {},
                {"images": {0: auto, 2: auto, 3: auto}}, others,
                outside=((torch.rand(0, 3, SIZE, SIZE),), {}))


def main(names: list[str]) -> None:
    if not available():
        print("torchvision does not import here (see /work/shared/tools/tv_shim.py)")
        return
    if names[:1] == ["--batched"]:  # PerImage: one program for every batch size
        # with grad enabled, as a user calls eager (the weights require grad): outputs
        # must match eager's and require grad where eager's do
        torch.set_grad_enabled(True)
        for e in ENTRIES:
            if names[1:] and e.name not in names[1:]:
                continue
            row = {"name": e.name}
            case = batched_case(e.name)
            for which in ("safetrace", "torch.export"):
                module, secs, err = _export(which, case)
                row[which] = {"exported": False, "error": err, "seconds": secs} \
                    if module is None else {
                        "exported": True, "seconds": secs,
                        "example": _outcome(case, module, case.args, grad=True),
                        "others": [_outcome(case, module, a, grad=True)
                                   for a, _ in case.others]}
            print(f"| {e.name} (batches {[b[0] for b in BATCHES]}) | "
                  f"{_cell(row['safetrace'])} | {_cell(row['torch.export'])} |", flush=True)
        return
    torch.set_grad_enabled(False)
    rows = [evaluate(e) for e in ENTRIES if not names or e.name in names]
    for row in rows:
        print(f"| {row['name']} | {_cell(row['safetrace'])} | {_cell(row['torch.export'])} |")
    for which in ("safetrace", "torch.export"):
        ok = [r[which] for r in rows if r[which]["exported"]]
        print(f"{which}: exported {len(ok)}/{len(rows)}, example matches "
              f"{sum(r['example'] == 'match' for r in ok)}/{len(rows)}, generalizes "
              f"{sum(r['generalizes'] for r in ok)}/{len(rows)}")


if __name__ == "__main__":
    main(sys.argv[1:])
