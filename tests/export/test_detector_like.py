"""Detector-shaped programs without torchvision: a score filter, an nms-like custom op with a
data-dependent count, a RoI-like gather, and the empty result, against eager.

The same steps as torchvision's post-processing (see benchmarks/zoo/detection.py for the
real detectors), small enough for the default test run.
"""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.helpers import assert_close, rejects


@st.custom_op("sttest_det::nms_like")
def nms_like(boxes: torch.Tensor, scores: torch.Tensor, iou: float) -> torch.Tensor:
    """Greedy NMS in PyTorch: indices kept, by decreasing score."""
    order = scores.argsort(descending=True)
    keep = []
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    suppressed = torch.zeros(len(boxes), dtype=torch.bool)
    for i in order.tolist():
        if suppressed[i]:
            continue
        keep.append(i)
        lt = torch.maximum(boxes[i, :2], boxes[:, :2])
        rb = torch.minimum(boxes[i, 2:], boxes[:, 2:])
        inter = (rb - lt).clamp(min=0).prod(1)
        suppressed |= inter / (area[i] + area - inter) > iou
    return torch.tensor(keep, dtype=torch.int64)


@st.register_fake(nms_like)
def _(boxes, scores, iou):
    return boxes.new_empty((st.new_dynamic_size(max=boxes.shape[0]),), dtype=torch.int64)


@st.custom_op("sttest_det::roi_gather")
def roi_gather(feats: torch.Tensor, rois: torch.Tensor) -> torch.Tensor:
    """A RoI-align stand-in: the features of each RoI's source row, scaled by its width."""
    idx = rois[:, 0].long()
    return feats[idx] * (rois[:, 3] - rois[:, 1])[:, None]


@st.register_fake(roi_gather)
def _(feats, rois):
    return feats.new_empty((rois.shape[0], feats.shape[1]))


class Detector(torch.nn.Module):
    """Score filter -> (empty early return) -> nms -> top-k -> RoI gather."""

    def __init__(self, thresh: float = 0.5, early_return: bool = True) -> None:
        super().__init__()
        self.head = torch.nn.Linear(8, 1)
        self.thresh, self.early_return, self.max_det = thresh, early_return, 3

    def forward(self, feats, boxes):
        scores = self.head(feats).sigmoid().squeeze(-1)
        keep = torch.where(scores > self.thresh)[0]
        boxes, scores, feats = boxes[keep], scores[keep], feats[keep]
        if self.early_return and boxes.numel() == 0:  # torchvision's batched_nms does this
            return boxes, scores, feats[:, :2]
        k = nms_like(boxes, scores, 0.5)[: self.max_det]
        rois = torch.cat([k[:, None].to(boxes.dtype), boxes[k]], 1)
        return boxes[k], scores[k], roi_gather(feats, rois)[:, :2]


def _inputs(n, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=g) * 10
    wh = torch.rand(n, 2, generator=g) * 4 + 0.5
    return torch.randn(n, 8, generator=g) * scale, torch.cat([xy, xy + wh], 1)


def _model(**kw):
    torch.manual_seed(0)
    return Detector(**kw).eval()


SPEC = {"feats": {0: Dim("n")}, "boxes": {0: Dim("n")}}


@pytest.mark.parametrize("dynamic", [False, True])
def test_detector_matches_eager_when_boxes_survive(dynamic):
    model = _model()
    ep = st.export(model, _inputs(12, 0), dynamic_shapes=SPEC if dynamic else None)
    text = ep.graph_module.print_readable(print_output=False)
    assert "sttest_det.nms_like.default" in text and "sttest_det.roi_gather.default" in text
    sizes = (12, 1, 3, 40) if dynamic else (12,)
    compared = 0
    for n in sizes:
        for seed in range(3):
            args = _inputs(n, seed)
            expected = model(*args)
            if expected[0].shape[0] == 0:
                continue  # no box survived: the next test
            assert_close(expected, ep.module()(*args))
            compared += 1
    assert compared >= (6 if dynamic else 2)
    if dynamic:
        rejects(ep, (torch.randn(4, 8), torch.randn(5, 4)))


def test_no_surviving_box_takes_the_early_return_as_eager():
    # The early return for an empty set is traced too (the size test's other answer) and
    # the program asks the test where it runs (a torch.cond on it): data taking it is
    # computed as eager computes it (it was refused by a run-time assertion before).
    model = _model(thresh=0.5)
    empty = _inputs(12, 0, scale=0.0)  # every score is sigmoid(bias), below the threshold
    with torch.no_grad():
        model.head.bias.fill_(-5.0)
    assert model(*empty)[0].shape[0] == 0
    ep = st.export(model, _inputs(12, 1, scale=100.0), dynamic_shapes=SPEC)
    assert "the torch.cond's true branch" in str(ep)
    assert_close(model(*empty), ep.module()(*empty))
    full = _inputs(12, 1, scale=100.0)
    assert_close(model(*full), ep.module()(*full))


def test_empty_safe_detector_matches_eager_at_zero():
    # Without the early return every step is defined on zero boxes: no decision, and the
    # program matches eager on empty results too.
    model = _model(early_return=False)
    ep = st.export(model, _inputs(12, 0), dynamic_shapes=SPEC)
    report = st.explain(model, _inputs(12, 0), dynamic_shapes=SPEC)
    assert report.ok and not [s for s in report.settled if s[1] == "size test"]
    with torch.no_grad():
        model.head.bias.fill_(-50.0)
    ep = st.export(model, _inputs(12, 1), dynamic_shapes=SPEC)
    for n in (12, 0, 1):
        args = _inputs(n, 2)
        expected = model(*args)
        assert expected[0].shape[0] == 0
        assert_close(expected, ep.module()(*args))


# -- a per-box Python loop over the detections (Mask R-CNN's mask pasting) -------------------
def paste(mask: torch.Tensor, box: torch.Tensor) -> torch.Tensor:
    """One box's mask scaled by the box's area (the per-box step)."""
    return mask * ((box[2] - box[0]) * (box[3] - box[1]))


class Paster(torch.nn.Module):
    """Detections, then a Python loop over them (`paste_per_box`), or the detections alone
    for the loop to run on the program's output."""

    def __init__(self, paste_per_box: bool) -> None:
        super().__init__()
        self.detector, self.paste_per_box = _model(early_return=False), paste_per_box

    def forward(self, feats, boxes):
        boxes, scores, masks = self.detector(feats, boxes)
        if not self.paste_per_box:
            return boxes, masks
        return torch.stack([paste(m, b) for m, b in zip(masks, boxes)])


def test_loop_over_detections_is_refused_with_the_rewrite_as_code():
    with pytest.raises(st.DataDependentError) as info:
        st.export(Paster(True), _inputs(12, 0), dynamic_shapes=SPEC)
    err = info.value
    assert "test_detector_like.py" in str(err) and "zip(masks, boxes)" in str(err)
    assert "`torch.stack([f(m) for m in masks])` -> `f(masks)`" in err.fix
    assert "`masks = ep.module()(x)` then `[f(m) for m in masks]`" in err.fix
    assert "torchvision" not in err.fix  # (not torchvision's line: the general rewrites)


def test_the_rewrite_exports_and_matches_eager_at_every_count():
    # the message's second rewrite: the program returns the detections, the loop runs on them
    ep = st.export(Paster(False), _inputs(12, 0), dynamic_shapes=SPEC)
    eager = Paster(True)
    compared = 0
    for n in (12, 1, 3, 40, 0):
        for seed in range(2):
            args = _inputs(n, seed)
            boxes, masks = ep.module()(*args)
            if boxes.shape[0] == 0:
                continue  # (torch.stack of no tensors raises in eager)
            compared += 1
            assert_close(eager(*args), torch.stack([paste(m, b) for m, b in zip(masks, boxes)]))
    assert compared >= 6
    rejects(ep, (torch.randn(4, 8), torch.randn(5, 4)))


class PerImage(torch.nn.Module):
    """torchvision's detectors take a list of images and return one dict per image."""

    def forward(self, x):
        return [{"boxes": img.flatten(1).amax(1)} for img in list(x)]


def test_a_batch_dim_on_a_list_of_images_is_refused_naming_the_output_structure():
    # each batch size returns a list of that many dicts: the size split traces each one,
    # but no one graph returns all three structures, so the declared range is refused
    batch = st.Dim("batch", min=1, max=3)
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(PerImage(), (torch.rand(1, 3, 4, 4),), dynamic_shapes={"x": {0: batch}})
    assert "another output structure" in str(info.value.__cause__)
    # Dim.AUTO: the batch is specialized; another batch is refused before anything runs
    ep = st.export(PerImage(), (torch.rand(2, 3, 4, 4),),
                   dynamic_shapes={"x": {0: st.Dim.AUTO, 2: st.Dim.AUTO}})
    x = torch.rand(2, 3, 7, 4)
    assert all(torch.equal(a["boxes"], b["boxes"]) for a, b in zip(PerImage()(x), ep.module()(x)))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.rand(3, 3, 4, 4))
