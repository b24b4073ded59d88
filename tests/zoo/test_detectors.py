"""torchvision's detectors with dynamic resolution (issue 22, item 8).

- the transform's ``min(min_size / min(h, w), max_size / max(h, w))`` of two float size
  expressions stays symbolic (no guard at the example), without torchvision;
- the plain-torch CPU kernels of ``torchvision::nms`` / ``roi_align`` (benchmarks/zoo/tv_ops.py)
  against torchvision's own pure-Python ``_roi_align``, a naive NMS and hand-computed cases;
- the detectors export with ``Dim.AUTO`` on H/W, match eager at the example and at other
  resolutions (non-square included), and reject inputs outside the declared space;
- wrapped in ``detection.PerImage`` (a map over the batch, each image's detections padded
  to the detector's cap with a ``valid`` mask: docs/deploying.md#batched-detectors), each is
  one program for batches of 1, 2 and 3 at other resolutions (``Dim.AUTO`` on B, H, W).

Needs torchvision (imported through /work/shared/tools/tv_shim.py beside a CPU torch); the
tests that do are skipped with that reason elsewhere.  One small detector case runs by
default; the others are marked slow.
"""

from __future__ import annotations

import copy
import sys

import pytest
import torch

import safetrace as st
from benchmarks.zoo import detection
from tests.helpers import assert_close

needs_torchvision = pytest.mark.skipif(
    not detection.available(),
    reason="torchvision does not import here (pip install torchvision; beside a CPU-only "
           "torch also install /work/shared/tools/tv_shim.py as a .pth hook)")


# -- the transform's float min/max, without torchvision -------------------------------------
class Resize(torch.nn.Module):
    """GeneralizedRCNNTransform's resize: the scale is the smaller of two float ratios."""

    def __init__(self, min_size: int, max_size: int) -> None:
        super().__init__()
        self.min_size, self.max_size = min_size, max_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, w = x.shape[-2:]
        scale = min(self.min_size / min(h, w), self.max_size / max(h, w))
        return torch.nn.functional.interpolate(x, scale_factor=scale, mode="bilinear",
                                               recompute_scale_factor=True)


@pytest.mark.parametrize("min_size,max_size", [(128, 128), (128, 160), (800, 1333)])
def test_min_of_float_size_ratios_stays_symbolic(min_size, max_size):
    model = Resize(min_size, max_size)
    auto = st.Dim.AUTO
    ep = st.export(model, (torch.rand(1, 3, 128, 128),),
                   dynamic_shapes={"x": {2: auto, 3: auto}})
    # no condition relating H and W: either ratio may be the smaller one
    assert all(r.lower <= 2 and r.upper == float("inf") or r.upper > 10 ** 6
               for r in ep.range_constraints.values())
    for h, w in [(128, 128), (128, 160), (160, 128), (96, 128), (200, 50), (7, 300), (1, 1)]:
        x = torch.rand(1, 3, h, w)
        assert_close(model(x), ep.module()(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.rand(1, 4, 128, 128))  # channels were static


def test_float_min_survives_save_and_load(tmp_path):
    model = Resize(128, 160)
    ep = st.export(model, (torch.rand(1, 3, 128, 128),),
                   dynamic_shapes={"x": {2: st.Dim.AUTO, 3: st.Dim.AUTO}})
    st.save(ep, tmp_path / "resize.st")
    loaded = st.load(tmp_path / "resize.st")
    for h, w in [(96, 200), (200, 96)]:
        x = torch.rand(1, 3, h, w)
        assert_close(model(x), loaded.module()(x))


def test_max_of_a_float_and_a_symbolic_float_keeps_python_order():
    # min(a, b) is `a` unless b < a: equal values give the first argument
    def f(x):
        n = x.shape[0]
        return x * max(0.5, n / 4) + min(n / 2, n / 2)

    ep = st.export(f, (torch.rand(4),), dynamic_shapes={"x": {0: st.Dim.AUTO}})
    for n in (0, 1, 2, 3, 4, 9):
        x = torch.rand(n)
        assert_close(f(x), ep.module()(x))


# -- the CPU kernels of benchmarks/zoo/tv_ops.py ----------------------------------------------
@needs_torchvision
@pytest.mark.parametrize("trials", [pytest.param(3, id="few"),
                                    pytest.param(12, id="many", marks=pytest.mark.slow)])
def test_roi_align_kernel_matches_torchvisions_python_reference(trials):
    import importlib

    from torchvision.ops import roi_align

    reference = importlib.import_module("torchvision.ops.roi_align")._roi_align.__wrapped__
    g = torch.Generator().manual_seed(0)
    worst = 0.0
    for trial in range(trials):
        h, w = (int(v) for v in torch.randint(3, 20, (2,), generator=g))
        x = torch.rand(2, 3, h, w, generator=g)
        scale = (1.0, 0.5, 0.25)[trial % 3]
        # boxes inside the feature map, where the reference (no out-of-range zeroing) agrees
        x1 = torch.rand(5, generator=g) * (w - 1) / scale
        y1 = torch.rand(5, generator=g) * (h - 1) / scale
        x2 = x1 + torch.rand(5, generator=g) * (w / scale - x1)
        y2 = y1 + torch.rand(5, generator=g) * (h / scale - y1)
        rois = torch.stack([torch.randint(0, 2, (5,), generator=g).float(), x1, y1, x2, y2], 1)
        for ratio in (-1, 2):
            for aligned in (False, True):
                for ph, pw in ((2, 2), (3, 4), (7, 7)):
                    got = roi_align(x, rois, (ph, pw), scale, ratio, aligned)
                    want = reference(x, rois, scale, ph, pw, ratio, aligned)
                    worst = max(worst, (got - want).abs().max().item())
    assert worst < 1e-5


@needs_torchvision
def test_roi_align_kernel_hand_cases():
    from torchvision.ops import roi_align

    x = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    # one sample at (0.5, 0.5): the mean of the four pixels
    assert roi_align(x, torch.tensor([[0, 0.0, 0.0, 1.0, 1.0]]), 1, 1.0, 1).item() == 2.5
    # aligned: the box shifts by -0.5, so [0, 2] samples at 0.5 again
    assert roi_align(x, torch.tensor([[0, 0.0, 0.0, 2.0, 2.0]]), 1, 1.0, 1, True).item() == 2.5
    # a sample beyond the map (y > height) counts as zero, as torchvision's CPU kernel
    assert roi_align(x, torch.tensor([[0, 5.0, 5.0, 9.0, 9.0]]), 1, 1.0, 1).item() == 0.0
    # at the last row and column the sample clamps to them: (1.5, 1.5) -> pixel (1, 1)
    assert roi_align(x, torch.tensor([[0, 1.0, 1.0, 2.0, 2.0]]), 1, 1.0, 1).item() == 4.0
    assert roi_align(x, torch.zeros(0, 5), 3, 1.0, 2).shape == (0, 1, 3, 3)


@needs_torchvision
def test_nms_kernel_against_the_greedy_definition():
    from torchvision.ops import nms

    def greedy(boxes, scores, thr):
        kept = []
        for i in scores.argsort(descending=True, stable=True).tolist():
            a = boxes[i]
            ok = True
            for j in kept:
                b = boxes[j]
                iw = (min(a[2], b[2]) - max(a[0], b[0])).clamp(min=0)
                ih = (min(a[3], b[3]) - max(a[1], b[1])).clamp(min=0)
                inter = iw * ih
                union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
                ok = ok and not inter / union > thr
            if ok:
                kept.append(i)
        return kept

    g = torch.Generator().manual_seed(0)
    for n in (0, 1, 5, 60):
        xy = torch.rand(n, 2, generator=g) * 50
        boxes = torch.cat([xy, xy + torch.rand(n, 2, generator=g) * 20 + 0.1], 1)
        scores = torch.rand(n, generator=g)
        for thr in (0.3, 0.7):
            keep = nms(boxes, scores, thr)
            assert keep.dtype == torch.int64 and keep.tolist() == greedy(boxes, scores, thr)
    # two identical boxes: the first of equal scores is kept
    assert nms(torch.tensor([[0.0, 0, 1, 1]] * 2), torch.ones(2), 0.5).tolist() == [0]


# -- the detectors ------------------------------------------------------------------------------
def _check(name: str, sizes) -> None:
    entry = next(e for e in detection.ENTRIES if e.name == name)
    case = entry.factory()
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        ep = st.export(case.model, case.args, dynamic_shapes=case.dynamic_shapes)
        code = ep.graph_module.code
        assert "torchvision.nms.default" in code
        for h, w in sizes:
            x = case.args[0] if (h, w) == (0, 0) else torch.rand(1, 3, h, w, generator=g)
            expected = case.model(copy.deepcopy(x))
            assert (expected[0]["boxes"].shape[0] == 0) == name.endswith("-empty")
            assert_close(expected, ep.module()(x))
        with pytest.raises(st.InputMismatchError):
            ep.module()(*case.outside[0])      # rank 3: outside the declared space
        with pytest.raises(st.InputMismatchError):
            ep.module()(torch.rand(1, 4, 128, 128))  # channels are static


@needs_torchvision
def test_faster_rcnn_generalizes_to_other_resolutions():
    # the example, a non-square portrait and a smaller non-square landscape
    _check("fasterrcnn_mobilenet_v3_large_fpn", [(0, 0), (160, 128), (96, 128)])


SLOW = ["fasterrcnn_mobilenet_v3_large_fpn-empty", "ssdlite320_mobilenet_v3_large",
        "retinanet_resnet50_fpn", "fcos_resnet50_fpn"]


@needs_torchvision
@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_detector_generalizes_to_other_resolutions(name):
    _check(name, [(0, 0), (128, 160), (160, 128), (96, 128)])


class Paste(torch.nn.Module):
    """Mask R-CNN's post-processing step: each box's mask resized to the box and pasted
    into the image (torchvision loops over the boxes in Python)."""

    def forward(self, masks, boxes, image):
        from torchvision.models.detection import transform

        return transform.paste_masks_in_image(masks, boxes, image.shape[-2:])


def _boxes(n, h, w, g):
    xy = torch.rand(n, 2, generator=g) * torch.tensor([w, h]) - 2
    wh = torch.rand(n, 2, generator=g) * torch.tensor([w, h])
    boxes = torch.cat([xy, xy + wh], 1)
    boxes[:, 0::2] = boxes[:, 0::2].clamp(0, w)  # clipped to the image, as the detector's
    boxes[:, 1::2] = boxes[:, 1::2].clamp(0, h)
    return boxes


@needs_torchvision
def test_mask_paste_exports_without_its_loop_and_matches_eager():
    # the number of boxes and the image size are dynamic; each box's pasted size is data
    g = torch.Generator().manual_seed(0)
    n, auto = st.Dim("n", min=0), st.Dim.AUTO
    ep = st.export(Paste(), (torch.rand(3, 1, 7, 7, generator=g), _boxes(3, 20, 30, g),
                             torch.rand(3, 20, 30)),
                   dynamic_shapes={"masks": {0: n}, "boxes": {0: n},
                                   "image": {1: auto, 2: auto}})
    for n, h, w in [(3, 20, 30), (0, 9, 9), (1, 1, 1), (6, 31, 17), (2, 40, 5)]:
        args = (torch.rand(n, 1, 7, 7, generator=g), _boxes(n, h, w, g), torch.rand(3, h, w))
        assert_close(Paste()(*args), ep.module()(*args))
    # a box whose clipped extent is negative: eager's slices can disagree (it raises); the
    # program refuses such data instead of pasting zeros
    with pytest.raises(RuntimeError, match="paste_masks_in_image"):
        ep.module()(torch.rand(1, 1, 7, 7), torch.tensor([[50.0, 5, 60, 9]]),
                    torch.rand(3, 20, 30))


@needs_torchvision
@pytest.mark.slow
def test_mask_rcnn_generalizes_to_other_resolutions():
    _check("maskrcnn_resnet50_fpn", [(0, 0), (160, 128), (96, 128)])


class Decode(torch.nn.Module):
    """Keypoint R-CNN's decoding step: each box's heatmaps resized (bicubic) to the box's
    size read from data, then an argmax (torchvision loops over the boxes in Python)."""

    def forward(self, maps, rois):
        from torchvision.models.detection import roi_heads

        return roi_heads.heatmaps_to_keypoints(maps, rois)


def _rois(n, g, extent=40.0):
    xy = torch.rand(n, 2, generator=g) * 30
    return torch.cat([xy, xy + torch.rand(n, 2, generator=g) * extent], 1)


@needs_torchvision
def test_keypoint_decoding_exports_as_a_loop_over_boxes_and_matches_eager_exactly():
    # the number of boxes is dynamic; each box's resized heatmap has a size read from data,
    # which lives only inside one iteration of the traced loop
    g = torch.Generator().manual_seed(0)
    n = st.Dim("n", min=0)
    ep = st.export(Decode(), (torch.randn(3, 5, 8, 8, generator=g), _rois(3, g)),
                   dynamic_shapes={"maps": {0: n}, "rois": {0: n}})
    assert "while_loop" in ep.graph_module.code
    for k, extent in [(3, 40.0), (0, 40.0), (1, 0.2), (6, 90.0)]:
        args = (torch.randn(k, 5, 8, 8, generator=g), _rois(k, g, extent))
        expected, got = Decode()(*args), ep.module()(*args)
        assert all(torch.equal(e, o) for e, o in zip(expected, got))
    # a NaN or infinite box: eager's int() raises; the program refuses it, never a value
    for bad in (float("nan"), float("inf")):
        rois = _rois(2, g)
        rois[1, 2] = bad
        with pytest.raises(RuntimeError, match="u0 >= 1"):
            ep.module()(torch.randn(2, 5, 8, 8), rois)


@needs_torchvision
@pytest.mark.slow
def test_keypoint_rcnn_generalizes_to_other_resolutions():
    _check("keypointrcnn_resnet50_fpn", [(0, 0), (160, 128), (96, 128)])


# -- every batch size: the PerImage wrapper (a map over the batch, padded detections) --------
def _check_batched(name: str) -> None:
    case = detection.batched_case(name)
    # grad mode on, as a user calls eager: outputs require grad whenever eager's do
    # (boxes and scores: the weights require grad); a map body that writes its own
    # intermediates (the images' batch, the RoI pooler's result) must not run the
    # weights detached
    assert torch.is_grad_enabled()
    ep = st.export(case.model, case.args, dynamic_shapes=case.dynamic_shapes)
    assert "map_impl" in ep.graph_module.code
    counts = []
    for (x,), _ in case.others:  # batches of 1, 2, 3 at other resolutions
        expected = case.model(copy.deepcopy(x))
        got = ep.module()(x)
        assert_close(expected, got)
        # (every output eager's autograd reaches, the program's does; Mask R-CNN's masks
        # with no box: eager returns a fresh empty tensor, the program's one path stays
        # connected to the weights, its gradient zero)
        assert all(got[k].requires_grad for k, v in expected.items() if v.requires_grad)
        counts.append(expected["valid"].sum(1).tolist())
    assert got["scores"].requires_grad
    assert [len(c) for c in counts] == [1, 2, 3]
    assert all(n == 0 for c in counts for n in c) == name.endswith("-empty")
    with torch.no_grad():
        assert_close(case.model(copy.deepcopy(x)), ep.module()(x))
    with pytest.raises(st.InputMismatchError, match="must be >= 1"):
        ep.module()(*case.outside[0])  # an empty batch: eager cannot stack it
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.rand(2, 4, 128, 128))  # channels are static


@needs_torchvision
@pytest.mark.slow
@pytest.mark.parametrize("name", [e.name for e in detection.ENTRIES])
def test_detector_generalizes_to_other_batch_sizes_and_resolutions(name):
    _check_batched(name)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-m", "slow or not slow"]))
